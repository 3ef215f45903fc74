"""Benchmark: what progress by triples costs a load, and how long Ctrl-C takes to stop one
(issue 31), this checkout side by side with the commit before (``--main PATH``).

1. ``kgcult load FILE --graph g`` into a fresh store, each a fresh process (its working
   directory the tree, so ``-m kgcult`` imports that tree), with the progress on (the
   default: stderr is a pipe, so periodic log lines; this checkout counts triples, the
   one before compressed bytes) and off (``--no-progress``); trees and modes alternate
   round by round; medians of wall and CPU seconds (the child's user + system time,
   steadier than wall time on a shared machine).
2. Ctrl-C: the same load, a real SIGINT sent ``--after`` seconds after it started (mid
   load); the seconds from the signal to the process's exit, its exit code and last line,
   then the seconds of the next writable open (which rolls the load back here; the commit
   before rolled back before exiting) and whether the store is then empty of the graph.

The machine is shared: the 1-minute load average is recorded with each run.

    python bench/load_interrupt.py --main /work/main --input /tmp/x/standin-300k.nt.gz
Writes bench/results/load_interrupt.json and .md.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, STANDIN, WORK, save

GRAPH = "https://w3id.org/kgcult/graph/g"
OPEN = "import sys; from kgcult.store import Store; s = Store(sys.argv[1]); print(s.graph_counts()); s.close()"


def env(tree: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(tree)}


def load(tree: Path, src: Path, store: Path, progress: bool) -> dict:
    shutil.rmtree(store, ignore_errors=True)
    load1 = os.getloadavg()[0]
    t = time.perf_counter()
    # progress on: the default (log lines, stderr being a pipe); off: --no-progress
    p = subprocess.Popen([sys.executable, "-m", "kgcult", "--store", str(store), "load", str(src), "--graph", "g",
                          *([] if progress else ["--no-progress"])], env=env(tree), cwd=tree,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    secs = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(err[-2000:])
    lines = [x for x in err.splitlines() if x.startswith("load")]
    return {"seconds": round(secs, 2), "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
            "load1": round(load1, 1), "progress_lines": lines}


def interrupt(tree: Path, src: Path, store: Path, after: float) -> dict:
    shutil.rmtree(store, ignore_errors=True)
    p = subprocess.Popen([sys.executable, "-m", "kgcult", "--store", str(store), "load", str(src), "--graph", "g"],
                         env=env(tree), cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(after)
    load1 = os.getloadavg()[0]
    sent = time.perf_counter()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate()
    to_exit = time.perf_counter() - sent
    t = time.perf_counter()
    opened = subprocess.run([sys.executable, "-c", OPEN, str(store)], env=env(tree), cwd=tree,
                            capture_output=True, text=True)
    reopen = time.perf_counter() - t
    return {"seconds_to_exit": round(to_exit, 2), "exit_code": p.returncode,
            "last_line": (err.strip().splitlines() or [""])[-1],
            "next_open_seconds": round(reopen, 2), "graph_after_next_open": GRAPH in opened.stdout,
            "load1": round(load1, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--main", type=Path, required=True, help="checkout of the commit before")
    ap.add_argument("--input", type=Path, default=STANDIN)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--after", type=float, default=4.0, help="seconds into the load to send SIGINT")
    args = ap.parse_args()
    trees = {"this": ROOT, "before": args.main.resolve()}
    work = WORK / "load_interrupt"
    work.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[dict]] = {f"{t} {m}": [] for t in trees for m in ("progress", "no progress")}
    for _ in range(args.rounds):
        for t, tree in trees.items():
            for mode in ("progress", "no progress"):
                runs[f"{t} {mode}"].append(load(tree, args.input, work / "s", mode == "progress"))
    stops = {t: interrupt(tree, args.input, work / "s", args.after) for t, tree in trees.items()}
    shutil.rmtree(work, ignore_errors=True)
    med = {k: statistics.median(r["seconds"] for r in v) for k, v in runs.items()}
    cpu = {k: statistics.median(r["cpu_seconds"] for r in v) for k, v in runs.items()}
    ratio = (med["this progress"] / med["this no progress"]) / (med["before progress"] / med["before no progress"])
    cpu_ratio = (cpu["this progress"] / cpu["this no progress"]) / (cpu["before progress"] / cpu["before no progress"])
    rows = [f"| {k} | {med[k]:.1f} | {cpu[k]:.1f} | {', '.join(str(r['seconds']) for r in v)} | "
            f"{', '.join(str(r['load1']) for r in v)} |" for k, v in runs.items()]
    stop_rows = [f"| {t} | {s['seconds_to_exit']:.1f} | {s['exit_code']} | {s['next_open_seconds']:.1f} | "
                 f"{'yes' if s['graph_after_next_open'] else 'no'} | {s['load1']} | {s['last_line'][:140]} |"
                 for t, s in stops.items()]
    lines = [
        f"### Load progress by triples and Ctrl-C ({args.input.name})",
        "",
        f"Fresh store each run, {args.rounds} round(s), trees and modes alternating; wall seconds (median).",
        "",
        "| tree, progress | median wall s | median CPU s | wall s of each run | load avg |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"Cost of progress (progress/no-progress of this tree over the same ratio before): wall **{ratio:.3f}x**, "
        f"CPU **{cpu_ratio:.3f}x**; this tree over the one before, progress on: wall "
        f"**{med['this progress'] / med['before progress']:.3f}x**, CPU **{cpu['this progress'] / cpu['before progress']:.3f}x**.",
        "",
        f"Ctrl-C (SIGINT) {args.after:.0f} s into the load:",
        "",
        "| tree | s to exit | exit code | next writable open s | graph left after it | load avg | last line |",
        "|---|---|---|---|---|---|---|",
        *stop_rows,
    ]
    save("load_interrupt", {"input": str(args.input), "runs": runs, "median_seconds": med, "median_cpu_seconds": cpu,
                            "progress_cost_ratio": ratio, "progress_cost_cpu_ratio": cpu_ratio, "ctrl_c": stops},
         "\n".join(lines))


if __name__ == "__main__":
    main()
