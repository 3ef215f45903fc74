"""`kgcult snapshot import` against `kgcult load` of the same data, side by side (issue 30,
deliverable 7: import within 1.2x of load in wall time and in peak RSS).

Setup (not measured): the stand-in's three files (``wikidata-standin.nt.gz``,
``dlama-supplement.nt.gz``, ``wikidata-standin-off-hierarchy.nt.gz``, 1.15 M triples in three
graphs) are loaded into a store and exported as a snapshot; a second store holds the
stand-in under another graph name (a big store holding other graphs).

Measured, each command in its own process (wall time; peak RSS = ``ru_maxrss`` of the
waited child), alternating, ``--repeat`` times, the fastest of each kept:

* ``load`` into a fresh store vs ``snapshot import`` into a fresh store;
* the same two into a copy of the store holding other graphs;
* ``snapshot import --replace`` into a copy of a store that holds the same graphs with the
  same content (a re-import), and with other content (its big graph held 18,010 other
  triples: the import removes those and loads 1.13 M).

    python bench/snapshot_import.py [--repeat N]
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from common import SHARED, WORK, child_env, require, save

FILES = [SHARED / "standin" / n for n in ("wikidata-standin.nt.gz", "dlama-supplement.nt.gz",
                                          "wikidata-standin-off-hierarchy.nt.gz")]
KGCULT = [sys.executable, "-m", "kgcult.cli"]
MEASURE = """
import json, resource, subprocess, sys, time
t = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(json.dumps({"seconds": time.perf_counter() - t,
                  "rss_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def kgcult(store: Path, *args: str) -> list[str]:
    return [*KGCULT, "--store", str(store), *args]


def measure(cmd: list[str]) -> dict:
    out = subprocess.run([sys.executable, "-c", MEASURE, *cmd], check=True, capture_output=True, text=True,
                         env=child_env())
    return json.loads(out.stdout.strip().splitlines()[-1])


def quiet(cmd: list[str]) -> None:
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=child_env())


def keep_fastest(results: dict, name: str, run: dict) -> None:
    if name not in results or run["seconds"] < results[name]["seconds"]:
        results[name] = run


def fresh_copy(src: Path, dst: Path) -> Path:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    return dst


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    for f in FILES:
        require(f)
    work = WORK / "snapshot_import"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    files = [str(f) for f in FILES]
    loaded, snap, other, changed = work / "loaded", work / "snap", work / "other", work / "changed"
    quiet(kgcult(loaded, "load", *files, "--no-progress"))
    quiet(kgcult(loaded, "snapshot", "export", str(snap)))
    quiet(kgcult(other, "load", files[0], "--graph", "other-standin", "--no-progress"))
    quiet(kgcult(changed, "load", files[1], "--graph", "wikidata-standin", "--no-progress"))
    triples = json.loads((snap / "MANIFEST.json").read_text())["triples"]

    results: dict[str, dict] = {}
    run = work / "run"
    for done in range(1, args.repeat + 1):  # alternating, so that each sees the same machine
        shutil.rmtree(run, ignore_errors=True)
        keep_fastest(results, "load, fresh store", measure(kgcult(run, "load", *files, "--no-progress")))
        shutil.rmtree(run, ignore_errors=True)
        keep_fastest(results, "import, fresh store", measure(kgcult(run, "snapshot", "import", str(snap))))
        keep_fastest(results, "load, store holding other graphs",
                     measure(kgcult(fresh_copy(other, run), "load", *files, "--no-progress")))
        keep_fastest(results, "import, store holding other graphs",
                     measure(kgcult(fresh_copy(other, run), "snapshot", "import", str(snap))))
        keep_fastest(results, "import --replace, same content",
                     measure(kgcult(fresh_copy(loaded, run), "snapshot", "import", "--replace", str(snap))))
        keep_fastest(results, "import --replace, other content",
                     measure(kgcult(fresh_copy(changed, run), "snapshot", "import", "--replace", str(snap))))
        report(results, triples, done)  # after each round, so that a cut run keeps its figures
    shutil.rmtree(work, ignore_errors=True)


def report(results: dict, triples: int, repeat: int) -> None:
    base = results["load, fresh store"]
    ratios = {}
    for name, r in results.items():
        ref = results["load, store holding other graphs"] if "other graphs" in name else base
        ratios[name] = {"time": r["seconds"] / ref["seconds"], "rss": r["rss_kib"] / ref["rss_kib"]}
    met = lambda ok: "met" if ok else "NOT met"  # noqa: E731
    rows = [f"| {name} | {r['seconds']:.1f} | {r['rss_kib'] / 1024:,.0f} | {ratios[name]['time']:.2f}x | "
            f"{ratios[name]['rss']:.2f}x |" for name, r in results.items()]
    fresh, into_other = ratios["import, fresh store"], ratios["import, store holding other graphs"]
    ok = all(x <= 1.2 for x in (fresh["time"], fresh["rss"], into_other["time"], into_other["rss"]))
    lines = [
        f"### `snapshot import` vs `load` of the stand-in ({triples:,} triples in 3 graphs)",
        "",
        f"Each command run {repeat} time(s) in its own process, alternating; the fastest of each is "
        "shown. Ratios are against `load` into the same kind of store (a fresh one; for \"store "
        "holding other graphs\", a store already holding the 1.13 M-triple stand-in under another "
        "graph name); the `--replace` rows against `load` into a fresh store.",
        "",
        "| command | seconds | peak RSS (MB) | time vs load | RSS vs load |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"Issue 30 target (import within 1.2x of load, time and peak RSS, into a fresh store and into "
        f"a store holding other graphs): {met(ok)}. An import into empty graphs bulk-loads the "
        "snapshot's files straight into their graphs (checked first, hashed again on the way in); "
        "`--replace` parses every file first, removes what each target holds that the snapshot lacks, "
        "then bulk-loads the files (a removal is an Oxigraph transaction: the \"other content\" row "
        "pays for removing the old triples).",
    ]
    save("snapshot_import", {"triples": triples, "repeat": repeat, "runs": results, "ratios": ratios},
         "\n".join(lines))


if __name__ == "__main__":
    main()
