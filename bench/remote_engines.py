"""Benchmark: kgcult's read commands on Virtuoso Open Source against the embedded store
(issue 39), side by side in one script on one machine.

A copy of the stand-in store with its closure (``--store``, default: loaded here) is
exported as Virtuoso loads it (its named graphs as N-Quads, its default graph (data set and
closure) into one graph, ``tests/virtuoso.py``), loaded into a Virtuoso started here on
127.0.0.1 with Virtuoso's bulk loader, and then each command runs alternately on the
embedded store and on Virtuoso (``--store sparql+http://...?default-graph-uri=...``), in
child processes (``python -m kgcult``): ``build fmlama``, ``build dlama``, ``show``,
``stats``, ``link -i`` of the first ``--mentions`` dev mentions (each engine's link index
built by that first run, as a user's first run builds it). Each output is compared (manifests and the store's name aside). Virtuoso runs with
its result limits raised (``ResultSetMaxRows``, ``MaxSortedTopRows``,
``MaxQueryExecutionTime``), as docs/serve.md advises for big reads; the row-cap paging at
Virtuoso's defaults is measured by ``--paging`` on a capped instance: a SELECT of every
``kgc:typedAs`` pair of the stand-in past a 10,000-row cap, time and peak memory against
the same query with the cap raised.

    .venv/bin/python bench/remote_engines.py [--store PATH] [--runs 1] [--paging]

Figures go to bench/results/remote_engines.{json,md}.
"""
from __future__ import annotations

import argparse
import filecmp
import json
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's kgcult

from common import ROOT, STANDIN, WORK, child_env, load_in_child, require, save
from tests.virtuoso import VirtuosoServer, export_store

COMMANDS = {
    "build fmlama": ["build", "fmlama"],
    "build dlama": ["build", "dlama"],
    "show Q46383 --format json": ["show", "Q46383", "--format", "json"],
    "stats --format json": ["stats", "--format", "json"],
}
BIG = {"ResultSetMaxRows": 1_000_000_000, "MaxSortedTopRows": 1_000_000_000, "MaxQueryExecutionTime": 0,
       "MaxQueryCostEstimationTime": 0}


def run(store: str, args: list[str], out: Path | None, timeout: float = 3600) -> tuple[float, float, bytes]:
    """Seconds, peak RSS (MB) and stdout of ``kgcult --store STORE ARGS`` in a child."""
    full = [sys.executable, "-m", "kgcult", "--store", store, *args] + (["--out", str(out)] if out else [])
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    env = {**child_env(), "KGCULT_REMOTE_TIMEOUT": "3600", "KGCULT_CACHE": str(WORK / "remote_engines" / "cache")}
    r = subprocess.run(full, capture_output=True, env=env, timeout=timeout)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(args)} on {store}: {r.stderr.decode()[-1500:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return dt, max(peak, before) / 1024, r.stdout


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


def paging(store: Path, work: Path, export: tuple[Path, Path]) -> dict:
    """Every ``kgc:typedAs`` pair (115,132 on the stand-in) through Virtuoso's default
    10,000-row cap (paged) and with the cap raised (one answer): time and the client's
    peak RSS."""
    q = "SELECT ?x ?c WHERE { ?x kgc:typedAs ?c }"
    out = {}
    for name, limits in (("cap 10,000 (paged)", {"ResultSetMaxRows": 10000, "MaxSortedTopRows": 10000,
                                                  "MaxQueryExecutionTime": 0, "MaxQueryCostEstimationTime": 0}),
                         ("cap raised (one answer)", BIG)):
        v = VirtuosoServer(work / f"virtuoso-{len(out)}", limits=limits, buffers=170000)
        try:
            v.load(list(export))
            dt, rss, stdout = run(v.url(), ["sparql", q, "--format", "tsv"], None, timeout=7200)
            out[name] = {"seconds": round(dt, 1), "rows": stdout.count(b"\n") - 1, "peak_rss_mb": round(rss)}
        finally:
            v.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", type=Path, default=None, help="a stand-in store with its closure (copied)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--paging", action="store_true", help="also measure a result paged past the row cap")
    ap.add_argument("--mentions", type=int, default=300,
                    help="link -i this many mentions of ../shared/standin/link-dev.jsonl (0: no link)")
    args = ap.parse_args()
    work = WORK / "remote_engines"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    store = work / "store"
    if args.store:
        shutil.copytree(args.store, store)
    else:
        load_in_child(store, [require(STANDIN)], "standin")
    # the embedded store's content hash (a build records it; a remote endpoint's build records
    # none): computed once before timing, as a store that has been built from before has it
    subprocess.run([sys.executable, "-c", "import sys; from kgcult.store import Store; "
                    "from kgcult.store.snapshot import store_content_hash; "
                    "s = Store(sys.argv[1], read_only=True); store_content_hash(s); s.close()", str(store)],
                   env=child_env(), check=True)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    export = export_store(store, work / "export")
    commands = dict(COMMANDS)
    if args.mentions:
        dev = require(STANDIN.parent / "link-dev.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
        (work / "mentions.jsonl").write_text("".join(dev[:args.mentions]), encoding="utf-8")
        commands[f"link -i ({args.mentions} dev mentions)"] = ["link", "-i", str(work / "mentions.jsonl")]
    v = VirtuosoServer(work / "virtuoso", limits=BIG, buffers=170000)
    try:
        t0 = time.perf_counter()
        v.load(list(export))
        load_s = time.perf_counter() - t0
        url = v.url()
        results: dict = {}
        for label, cmd in commands.items():
            times: dict[str, list[float]] = {"embedded": [], "virtuoso": []}
            rss: dict[str, float] = {"embedded": 0.0, "virtuoso": 0.0}
            same = True
            for i in range(args.runs):
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
                              "same_output": same}
            print(label, results[label], flush=True)
    finally:
        v.stop()
    paged = paging(store, work, export) if args.paging else None
    lines = [
        f"Commit `{commit}`. The stand-in store with its closure, and the same data in Virtuoso Open Source "
        f"7.2.5 (Debian's package) on 127.0.0.1 (bulk load {load_s:.0f} s; limits raised as docs/serve.md "
        "advises; the embedded store's content hash computed before, as after any earlier build), each command "
        "in a child process, alternating, "
        f"median of {args.runs} run(s) (`bench/remote_engines.py`):",
        "",
        "| command | embedded s | Virtuoso s | Virtuoso / embedded | output identical |",
        "|---|---|---|---|---|",
    ]
    for label, r in results.items():
        lines.append(f"| `{label}` | {r['embedded_s']} | {r['virtuoso_s']} | {r['ratio']}x | "
                     f"{'yes' if r['same_output'] else 'NO'} |")
    if paged:
        lines += ["", "Every `kgc:typedAs` pair (`kgcult sparql 'SELECT ?x ?c WHERE { ?x kgc:typedAs ?c }' --format tsv`) "
                  "through Virtuoso, at its default row cap (paged by kgcult) and with the cap raised:", "",
                  "| Virtuoso | rows | s | client peak RSS MB |", "|---|---|---|---|"]
        for name, r in paged.items():
            lines.append(f"| {name} | {r['rows']:,} | {r['seconds']} | {r['peak_rss_mb']} |")
    save("remote_engines", {"commit": commit, "load_s": round(load_s, 1), "results": results, "paging": paged},
         "\n".join(lines))


if __name__ == "__main__":
    main()
