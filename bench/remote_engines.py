"""Benchmark: kgcult's read commands on Virtuoso Open Source against the embedded store
(issue 39), side by side in one script on one machine.

A copy of the stand-in store with its closure (``--store``, default: loaded here) is
exported as Virtuoso loads it (its named graphs as N-Quads, its default graph (data set and
closure) into one graph, ``tests/virtuoso.py``), loaded into a Virtuoso started here on
127.0.0.1 with Virtuoso's bulk loader, and then each command runs alternately on the
embedded store and on Virtuoso (``--store sparql+http://...?default-graph-uri=...``), in
child processes (``python -m kgcult``): ``build fmlama``, ``build dlama``, ``show``,
``stats`` (``--parts commands``), ``link -i`` of the first ``--mentions`` dev mentions
(``--parts link``; each engine's link index built by that first run, as a user's first run
builds it). Each output is compared (manifests and the store's name aside), and each row
records the load average beside its times. Virtuoso runs with its result limits raised
(``ResultSetMaxRows``, ``MaxSortedTopRows``, ``MaxQueryExecutionTime``), as docs/serve.md
advises for big reads. ``--parts paging``: the row-cap paging at Virtuoso's defaults, a
SELECT past the 10,000-row cap at 1x, 2x and 4x ``PAGE_ROWS`` rows (synthetic graphs),
written to a file, time and the client's peak RSS, against the same with the cap raised.
Parts not measured keep their figures from the last run.

    .venv/bin/python bench/remote_engines.py [--store PATH] [--runs 1] [--parts commands,link,paging]

Figures go to bench/results/remote_engines.{json,md}.
"""
from __future__ import annotations

import argparse
import filecmp
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's kgcult

from common import ROOT, STANDIN, WORK, child_env, load_in_child, require, save
from tests.virtuoso import VirtuosoServer

COMMANDS = {
    "build fmlama": ["build", "fmlama"],
    "build dlama": ["build", "dlama"],
    "show Q46383 --format json": ["show", "Q46383", "--format", "json"],
    "stats --format json": ["stats", "--format", "json"],
}
BIG = {"ResultSetMaxRows": 1_000_000_000, "MaxSortedTopRows": 1_000_000_000, "MaxQueryExecutionTime": 0,
       "MaxQueryCostEstimationTime": 0}


def run(store: str, args: list[str], out: Path | None, timeout: float = 3600,
        stdout_to: Path | None = None) -> tuple[float, float, bytes]:
    """Seconds, peak RSS (MiB, of this child alone: ``wait4``) and stdout of ``kgcult --store
    STORE ARGS`` in a child (its stdout written to ``stdout_to`` when given, and b"" returned)."""
    full = [sys.executable, "-m", "kgcult", "--store", store, *args] + (["--out", str(out)] if out else [])
    env = {**child_env(), "KGCULT_REMOTE_TIMEOUT": "3600", "KGCULT_CACHE": str(WORK / "remote_engines" / "cache")}
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err, (open(stdout_to, "wb") if stdout_to else tempfile.TemporaryFile()) as o:
        p = subprocess.Popen(full, stdout=o, stderr=err, env=env)
        try:
            _, status, ru = os.wait4(p.pid, 0)
        except BaseException:
            p.kill()
            raise
        p.returncode = os.waitstatus_to_exitcode(status)
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(args)} on {store}: {err.read().decode()[-1500:]}")
        o.seek(0)
        stdout = b"" if stdout_to else o.read()
    return dt, ru.ru_maxrss / 1024, stdout


def same_tree(a: Path, b: Path) -> bool:
    fa = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file() and p.name != "MANIFEST.json")
    fb = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file() and p.name != "MANIFEST.json")
    return fa == fb and all(filecmp.cmp(a / f, b / f, shallow=False) for f in fa)


def same_output(args: list[str], x: bytes, y: bytes) -> bool:
    if args[0] == "stats":
        dx, dy = json.loads(x), json.loads(y)
        dx.pop("store"), dy.pop("store")
        return dx == dy
    return x == y


def export_in_child(store: Path, out: Path) -> list[Path]:
    """``tests.virtuoso.export_store`` in a child: this process stays small, since a child's
    ru_maxrss starts at the RSS of the process that forked it (bench/common.py)."""
    subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; "
                    "from tests.virtuoso import export_store; export_store(Path(sys.argv[1]), Path(sys.argv[2]))",
                    str(store), str(out)], env=child_env(), check=True, cwd=ROOT)
    return [out / "named.nq.gz", out / "default.nt.gz"]


def own_rss_mib() -> int:
    """This process's peak RSS: the floor of every child's figure (see export_in_child)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


PAGE_ROWS = 50_000  # rows of the 1x result; 2x and 4x are twice and four times that


def paging(work: Path) -> dict:
    """A SELECT past Virtuoso's default 10,000-row cap at 1x, 2x and 4x ``PAGE_ROWS`` rows
    (synthetic graphs of that many triples, ``kgcult sparql ... --format tsv`` written to a
    file), read page by page by kgcult, and the same with the cap raised (one answer): time
    and the client's peak RSS (``wait4``), each a child process."""
    import gzip

    data = work / "paging.nq.gz"
    with gzip.open(data, "wt", compresslevel=1) as f:
        for k in (1, 2, 4):
            for i in range(k * PAGE_ROWS):
                f.write(f'<urn:kgcult:bench:s{i}> <urn:kgcult:bench:p> "row {i} of the {k}x result" '
                        f"<urn:kgcult:bench:g{k}> .\n")
    out: dict = {}
    for name, limits in (("cap 10,000 (paged)", {"ResultSetMaxRows": 10000, "MaxSortedTopRows": 10000,
                                                  "MaxQueryExecutionTime": 0, "MaxQueryCostEstimationTime": 0}),
                         ("cap raised (one answer)", BIG)):
        v = VirtuosoServer(work / f"virtuoso-paging-{len(out)}", limits=limits, buffers=60000)
        try:
            v.load([data])
            url = v.url(None)
            rows = {}
            for k in (1, 2, 4):
                q = f"SELECT ?s ?o WHERE {{ GRAPH <urn:kgcult:bench:g{k}> {{ ?s <urn:kgcult:bench:p> ?o }} }}"
                dest = work / f"paging-{k}x.tsv"
                dt, rss, _ = run(url, ["sparql", q, "--format", "tsv"], None, timeout=7200, stdout_to=dest)
                with open(dest, "rb") as f:
                    n = sum(1 for _ in f) - 1
                if n != k * PAGE_ROWS:
                    raise SystemExit(f"{name}: {n} rows of the {k}x result, not {k * PAGE_ROWS}")
                rows[f"{k}x"] = {"rows": n, "seconds": round(dt, 1), "peak_rss_mib": round(rss)}
                print("paging", name, k, rows[f"{k}x"], flush=True)
            out[name] = rows
        finally:
            v.stop()
    return out


def load_avg() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def compare(store: Path, url: str, work: Path, commands: dict, runs: int) -> dict:
    """Each command alternately on the embedded store and on Virtuoso: median seconds, peak
    RSS, whether the outputs are the same, and the load average before and after."""
    results: dict = {}
    for label, cmd in commands.items():
        times: dict[str, list[float]] = {"embedded": [], "virtuoso": []}
        rss: dict[str, float] = {"embedded": 0.0, "virtuoso": 0.0}
        same = True
        load_before = load_avg()
        for i in range(runs):
            outs = {}
            for engine, where in (("embedded", str(store)), ("virtuoso", url)):
                o = work / f"out-{engine}-{i}" if cmd[0] == "build" else None
                if o:
                    shutil.rmtree(o, ignore_errors=True)
                dt, peak, stdout = run(where, cmd, o)
                times[engine].append(dt)
                rss[engine] = max(rss[engine], peak)
                outs[engine] = o if o else stdout
            if cmd[0] == "build":
                same &= same_tree(outs["embedded"], outs["virtuoso"])
            else:
                same &= same_output(cmd, outs["embedded"], outs["virtuoso"])
        e, vv = statistics.median(times["embedded"]), statistics.median(times["virtuoso"])
        results[label] = {"embedded_s": round(e, 2), "virtuoso_s": round(vv, 2), "ratio": round(vv / e, 2),
                          "embedded_rss_mib": round(rss["embedded"]), "virtuoso_rss_mib": round(rss["virtuoso"]),
                          "same_output": same, "load_avg": f"{load_before} -> {load_avg()}"}
        print(label, results[label], flush=True)
    return results


PARTS = ("commands", "link", "paging")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", type=Path, default=None, help="a stand-in store with its closure (copied)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--parts", default=",".join(PARTS),
                    help="what to measure, of: commands (the view builds, show, stats), link (link -i of "
                         "--mentions dev mentions), paging (a result past the row cap at 1x, 2x, 4x); parts "
                         "not measured keep their figures in bench/results/remote_engines.json")
    ap.add_argument("--mentions", type=int, default=300,
                    help="link -i this many mentions of ../shared/standin/link-dev.jsonl")
    args = ap.parse_args()
    parts = [p for p in args.parts.split(",") if p]
    if not parts or any(p not in PARTS for p in parts):
        raise SystemExit(f"--parts: a comma-separated list of {', '.join(PARTS)}")
    work = WORK / "remote_engines"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    try:
        old = json.loads((ROOT / "bench" / "results" / "remote_engines.json").read_text())
    except (OSError, ValueError):
        old = {}
    data = {k: old.get(k) for k in ("commands", "link", "paging")}
    if "commands" not in old and old.get("results"):  # the layout before parts
        data["commands"] = {"commit": old.get("commit"), "load_s": old.get("load_s"), "runs": 1,
                            "results": old["results"]}
    commands: dict = {}
    if "commands" in parts:
        commands.update(COMMANDS)
    if "link" in parts:
        dev = require(STANDIN.parent / "link-dev.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
        (work / "mentions.jsonl").write_text("".join(dev[:args.mentions]), encoding="utf-8")
        commands[f"link -i ({args.mentions} dev mentions)"] = ["link", "-i", str(work / "mentions.jsonl")]
    if commands:
        store = work / "store"
        if args.store:
            shutil.copytree(args.store, store)
        else:
            load_in_child(store, [require(STANDIN)], "standin")
        # the embedded store's content hash (a build records it; a remote endpoint's build
        # records none): computed once before timing, as a store built from before has it
        subprocess.run([sys.executable, "-c", "import sys; from kgcult.store import Store; "
                        "from kgcult.store.snapshot import store_content_hash; "
                        "s = Store(sys.argv[1], read_only=True); store_content_hash(s); s.close()", str(store)],
                       env=child_env(), check=True)
        export = export_in_child(store, work / "export")
        v = VirtuosoServer(work / "virtuoso", limits=BIG, buffers=170000)
        try:
            t0 = time.perf_counter()
            v.load(list(export))
            load_s = round(time.perf_counter() - t0, 1)
            results = compare(store, v.url(), work, commands, args.runs)
        finally:
            v.stop()
        link = {k: r for k, r in results.items() if k.startswith("link")}
        if "commands" in parts:
            data["commands"] = {"commit": commit, "load_s": load_s, "runs": args.runs, "bench_rss_mib": own_rss_mib(),
                                "results": {k: r for k, r in results.items() if k not in link}}
        if link:
            data["link"] = {"commit": commit, "load_s": load_s, "runs": args.runs, "bench_rss_mib": own_rss_mib(),
                            "results": link}
    if "paging" in parts:
        load_before = load_avg()
        data["paging"] = {"commit": commit, "page_rows": PAGE_ROWS, "results": paging(work),
                          "load_avg": f"{load_before} -> {load_avg()}", "bench_rss_mib": own_rss_mib()}
    save("remote_engines", {"commit": commit, **data}, markdown(data))


def markdown(data: dict) -> str:
    lines = []
    for part, what in (("commands", "the views, `show` and `stats`"),
                       ("link", "a first `link -i` (each engine's link index built by that run, as a user's "
                                "first run builds it; Virtuoso's keyed by its graph counts and kgcult's records, "
                                "docs/link.md)")):
        d = data.get(part)
        if not d:
            continue
        lines += [
            f"Commit `{d['commit']}`, {what}: the stand-in store with its closure, and the same data in Virtuoso "
            f"Open Source 7.2.5 (Debian's package) on 127.0.0.1 (bulk load {d.get('load_s') or '?'} s; limits "
            "raised as docs/serve.md advises), each command in a child process, alternating, median of "
            f"{d.get('runs', 1)} run(s), on a shared 2-CPU machine; peak RSS per child (`wait4`; the "
            f"benchmark's own, {d.get('bench_rss_mib', '?')} MiB, is its floor) "
            f"(`bench/remote_engines.py --parts {part}`):",
            "",
            "| command | embedded s | Virtuoso s | Virtuoso / embedded | peak RSS MiB (embedded / Virtuoso client) "
            "| output identical | load average (1/5/15 min, before -> after) |",
            "|---|---|---|---|---|---|---|",
        ]
        for label, r in d["results"].items():
            lines.append(f"| `{label}` | {r['embedded_s']} | {r['virtuoso_s']} | {r['ratio']}x | "
                         f"{r.get('embedded_rss_mib', '?')} / {r.get('virtuoso_rss_mib', '?')} | "
                         f"{'yes' if r['same_output'] else 'NO'} | {r.get('load_avg', 'not recorded')} |")
        lines.append("")
    d = data.get("paging")
    if d:
        lines += [
            f"Commit `{d['commit']}`: a SELECT past Virtuoso's default 10,000-row cap, "
            f"`kgcult sparql 'SELECT ?s ?o WHERE {{ GRAPH <g> {{ ?s <p> ?o }} }}' --format tsv` written to a file, "
            f"at 1x, 2x and 4x {d['page_rows']:,} rows (synthetic graphs), read page by page by kgcult, and with "
            f"the cap raised (one answer); the client's peak RSS (`wait4`; the benchmark's own, "
            f"{d.get('bench_rss_mib', '?')} MiB, is the floor of a child's figure); load average {d['load_avg']} "
            "(`bench/remote_engines.py --parts paging`):",
            "",
            "| Virtuoso | rows | s | client peak RSS MiB |",
            "|---|---|---|---|",
        ]
        for name, by in d["results"].items():
            for k, r in by.items():
                lines.append(f"| {name}, {k} | {r['rows']:,} | {r['seconds']} | {r['peak_rss_mib']} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
