"""Assemble BENCHMARKS.md from the Markdown fragments the benchmarks wrote to
bench/results/<name>.md (each with its machine and date).

Every section says which commit recorded its figures and when (from git: the last commit
that changed ``bench/results/<name>.md``), and, when the code it describes (:data:`COVERS`)
changed after that commit, that it describes an older layout and which script reruns it.
A section of the current BENCHMARKS.md that no results file gives (written by hand, or
whose results file is gone) is kept as it is, where it was, not dropped."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORDER = ["load", "load_interrupt", "snapshot_import", "closure", "closure_rebuild", "closure_query", "mirror", "mirror_projection", "ingest", "ingest_bz2", "views",
         "build_repeat", "link", "link_scale", "link_first", "link_first_store", "link_long", "link_long_mention", "link_scripts", "annotate", "probe", "serve", "page",
         "serve_runaway", "wdqs", "setgraph", "serve_update", "remote_engines", "synth"]
TITLES = {
    "load": "Loading (issue 2)",
    "snapshot_import": "Snapshot import at the speed of load (issue 30)",
    "load_interrupt": "Load progress by triples; Ctrl-C stops a load (issue 31)",
    "closure_query": "Closure graphs vs property paths (issue 2)",
    "mirror": "Mirroring (issue 3)",
    "mirror_projection": "The default mirror on the public WDQS: a projection (issue 27)",
    "views": "Dataset views (issue 4)",
    "build_repeat": "A repeat build costs its queries (issue 31)",
    "link_first": "A first link as fast as the hundredth (issue 32, item 2)",
    "link_long_mention": "One long mention: linear stages (issue 30)",
    "link": "Entity linking (issue 5)",
    "link_scripts": "Linking names across scripts and attached grammar (issue 37)",
    "annotate": "Entity spans in raw model output: `kgcult annotate` (issue 37)",
    "probe": "Probing (issue 6)",
    "serve": "SPARQL endpoint (issue 7)",
    "synth": "CultureSynth keywords and synthesis (issue 8)",
    "closure": "Closure at Oxigraph's write rate (issue 32)",
    "closure_rebuild": "Closure rebuilds keep unchanged graphs",
    "ingest": "Whole-dump ingest: one parallel pass, and Spark (issue 14)",
    "link_scale": "Link index on disk at scale (issue 15)",
    "link_long": "A long `link -i`: bounded memos (issue 15)",
    "page": "The query page with a 100,000-row result (issue 31)",
    "serve_runaway": "Runaway queries from many addresses against the endpoint (issues 12, 30)",
    "wdqs": "WDQS queries unchanged: label service and closure paths (issue 13)",
    "setgraph": "The default graph as a set, against the union (issue 28)",
    "serve_update": "The default graph follows an `/update` at the cost of what it changed (issue 28 follow-up)",
    "load-x10": "Loading 10x the stand-in (issue 15)",
    "link_first_store": "A first link on a freshly loaded store, and `link index`, against the load (issue 41)",
    "ingest_bz2": "Parallel `.bz2` ingest without lbzip2 (issue 41)",
    "remote_engines": "Read commands on Virtuoso against the embedded store (issue 39)",
}
# the code each section's figures describe: a commit changing it after the figures were
# recorded makes the section describe an older layout (said in the section) until rerun
COVERS = {
    "load": ["kgcult/store/loading.py", "kgcult/store/setgraph.py", "kgcult/store/rdfio.py"],
    "load-x10": ["kgcult/store/loading.py", "kgcult/store/setgraph.py", "kgcult/store/rdfio.py"],
    "load_interrupt": ["kgcult/store/loading.py", "kgcult/store/loadjournal.py"],
    "snapshot_import": ["kgcult/store/snapshot.py", "kgcult/store/loading.py"],
    "closure": ["kgcult/store/hierarchy.py", "kgcult/store/closure_write.py", "kgcult/store/intgraph.py"],
    "closure_rebuild": ["kgcult/store/hierarchy.py", "kgcult/store/closure_write.py", "kgcult/store/closure_state.py"],
    "closure_query": ["queries/views", "kgcult/store/hierarchy.py"],
    "mirror": ["kgcult/acquire/endpoint", "kgcult/acquire/crawl.py"],
    "mirror_projection": ["kgcult/acquire/endpoint"],
    "ingest": ["kgcult/acquire/dump"],
    "ingest_bz2": ["kgcult/acquire/dump/reader.py"],
    "views": ["kgcult/views", "queries/views"],
    "build_repeat": ["kgcult/views", "kgcult/store/facts.py"],
    "link": ["kgcult/link"],
    "link_scale": ["kgcult/link/index"],
    "link_first": ["kgcult/link", "kgcult/cli/link.py"],
    "link_first_store": ["kgcult/link/index", "kgcult/link/caches.py", "kgcult/cli/link.py"],
    "link_long": ["kgcult/link"],
    "link_long_mention": ["kgcult/link/stages", "kgcult/link/semantic"],
    # the annotator and the cross-script linker read their grammar and readings as data
    "link_scripts": ["kgcult/link", "ontology/link-affixes.json", "ontology/han-readings.json"],
    "annotate": ["kgcult/annotate", "kgcult/link", "ontology/annotate-grammar.json",
                 "ontology/link-affixes.json", "ontology/han-readings.json"],
    "probe": ["kgcult/probe"],
    "serve": ["kgcult/serve"],
    "page": ["kgcult/serve/web"],
    "serve_runaway": ["kgcult/serve"],
    "serve_update": ["kgcult/store/setgraph.py", "kgcult/store/update_plan.py", "kgcult/serve"],
    "wdqs": ["kgcult/sparql"],
    "setgraph": ["kgcult/store/setgraph.py"],
    "synth": ["kgcult/synth"],
    "remote_engines": ["kgcult/store/remote.py", "kgcult/sparql/client.py"],
}


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def _recorded(name: str) -> tuple[str, str] | None:
    """(short commit, date) of the last commit that changed the section's figures: its
    ``.json`` (the ``.md`` alone when there is none; a fragment's text may be edited later
    without its figures changing)."""
    for ext in ("json", "md"):
        if (ROOT / "bench" / "results" / f"{name}.{ext}").exists():
            out = _git("log", "-1", "--format=%h %cd", "--date=short", "--", f"bench/results/{name}.{ext}")
            if out:
                return tuple(out.split(" ", 1))  # type: ignore[return-value]
    return None


def _changed_since(commit: str, paths: list[str]) -> list[tuple[str, str, str]]:
    """(commit, date, path) of the code under ``paths`` changed after ``commit``."""
    out = []
    for p in paths:
        line = _git("log", "-1", "--format=%h %cd", "--date=short", f"{commit}..HEAD", "--", p)
        if line:
            c, d = line.split(" ", 1)
            out.append((c, d, p))
    return out


SCRIPTS = {"ingest_bz2": "bench/ingest.py bz2", "load-x10": "bench/load.py --scale 10"}
MEASURED_AT = re.compile(r"at commit `([0-9a-f]{7,40})`")


def _measured_at(name: str) -> tuple[str, str] | None:
    """(commit, date) a fragment's own header names (bench/common.save writes it), when
    that commit is in this branch's history (not one a rebase left behind)."""
    head = (ROOT / "bench" / "results" / f"{name}.md").read_text().split("\n", 1)[0]
    m = MEASURED_AT.search(head)
    if not m or subprocess.run(["git", "-C", str(ROOT), "merge-base", "--is-ancestor", m.group(1), "HEAD"],
                               capture_output=True).returncode != 0:
        return None
    return m.group(1), _git("log", "-1", "--format=%cd", "--date=short", m.group(1))


def provenance(name: str) -> str:
    """The line under a section's heading: the commit and date that recorded its figures
    and, when the code it describes changed since, that it describes an older layout."""
    script = SCRIPTS.get(name, f"bench/{name}.py")
    own = _measured_at(name)
    rec = own or _recorded(name)
    if rec is None:
        return "_Figures not yet committed: recorded by the working tree that wrote this file._"
    commit, date = rec
    line = (f"_`{script}` reruns them._" if own else
            f"_Figures recorded in commit `{commit}` ({date}); `{script}` reruns them._")
    stale = _changed_since(commit, COVERS.get(name, []))
    if stale:
        said = ", ".join(f"`{p}` (`{c}`, {d})" for c, d, p in stale)
        line += (f"\n_Older than the code it describes: {said} changed since; these figures "
                 "describe the layout before those commits until the script is rerun._")
    return line


def kept_sections(text: str, produced: set[str]) -> list[tuple[str | None, str, str]]:
    """Sections of the current BENCHMARKS.md (``## title`` to the next) that no results
    file gives: (the title of the section before it, its title, its text)."""
    out = []
    prev = None
    for part in re.split(r"(?m)^(?=## )", text):
        if not part.startswith("## "):
            continue
        title = part.splitlines()[0][3:].strip()
        if title not in produced:
            out.append((prev, title, part.rstrip() + "\n"))
        prev = title
    return out


def main() -> None:
    results = ROOT / "bench" / "results"
    names = [n for n in ORDER if (results / f"{n}.md").exists()]
    names += sorted(p.stem for p in results.glob("*.md") if p.stem not in ORDER)
    target = ROOT / "BENCHMARKS.md"
    titles = {n: TITLES.get(n, n) for n in names}
    kept = kept_sections(target.read_text() if target.exists() else "", set(titles.values()))
    parts = [
        "# Benchmarks\n",
        "Generated by `make bench` (`bench/report.py`) from the figures each script in `bench/`",
        "records in `bench/results/<name>.json` and `.md`. Every comparison runs side by side in",
        "one script on one machine, and targets are ratios against that baseline, because these",
        "machines are shared and noisy. Absolute times vary from run to run; the ratios are the",
        "claim. Data: `../shared/standin/` (1.13 M triples) unless a section says otherwise.",
        "Each section names the commit that recorded its figures, and says so when the code it",
        "describes changed after that commit (the figures then describe the older layout).\n",
    ]

    placed: set[str] = set()

    def add_kept(after: str | None) -> None:
        for prev, title, body in kept:
            if prev == after and title not in placed:
                placed.add(title)
                parts.append(body)
                add_kept(title)

    add_kept(None)
    for n in names:
        parts.append(f"## {titles[n]}\n")
        parts.append(provenance(n) + "\n")
        body = (results / f"{n}.md").read_text().strip()
        # each fragment's headings go one level below its section heading
        body = "\n".join("#" + line if line.startswith("#") else line for line in body.splitlines())
        parts.append(body + "\n")
        add_kept(titles[n])
    for _prev, title, body in kept:  # after a section that is gone: at the end
        if title not in placed:
            placed.add(title)
            parts.append(body)
    target.write_text("\n".join(parts))
    print(f"BENCHMARKS.md: {len(names)} sections from results, {len(kept)} kept as they were")


if __name__ == "__main__":
    main()
