"""Benchmark: the first ``kgcult link -i`` right after ``kgcult link index --rebuild``,
side by side with a warm (hundredth) run (issue 32, item 2).

A round, as a new user meets it: the store's ``.link-index`` directory and the model
cache (``$KGCULT_CACHE``) removed, then, each a fresh process, end to end:

1. ``kgcult link index --rebuild``: wall time, peak RSS;
2. the first ``kgcult link -i MENTIONS -o first.jsonl``: mentions/s, peak RSS;
3. the same again (``warm``: every cache on disk, as for the hundredth run).

The code tree a round runs is its ``PYTHONPATH``: ``this`` (this checkout) and, once,
``main`` (``--main PATH``, the checkout before the change: its ``link index`` leaves the
stages' caches to the first link), so the two first runs are measured on the same
machine in one session. Every run's output must be byte-identical (the first and warm
runs of every round, and ``main``'s). The machine is shared: rounds alternate first and
warm runs, figures are medians, and the 1-minute load average is recorded with each run.

    .venv/bin/python bench/link_first.py --store /tmp/x/store --mentions m.jsonl \\
        --main /work/main --rounds 2
Writes bench/results/link_first.json and .md. ``--store`` must be a copy (it is linked
against and its index directory removed).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, save

RESULT_NAME = "link_first"  # bench/results/link_first.{json,md}


def run(tree: Path, env_extra: dict, args: list[str]) -> dict:
    """One kgcult command in a fresh process: wall seconds, peak RSS (MiB), load average."""
    env = dict(os.environ, PYTHONPATH=str(tree), **env_extra)
    load = os.getloadavg()[0]
    t = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "kgcult", *args], env=env, cwd=tree,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.stdout.read(), p.stderr.read()
    _pid, status, usage = os.wait4(p.pid, 0)
    secs = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{args} failed:\n{err[-3000:]}")
    return {"seconds": round(secs, 2), "rss_peak_mib": round(usage.ru_maxrss / 1024, 1),
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
            "load1": round(load, 1), "stdout": out, "stderr": err}


def one_round(tree: Path, label: str, store: Path, mentions: Path, scratch: Path) -> dict:
    cache = scratch / f"model-cache-{label}"
    for d in (Path(f"{store}.link-index"), cache):
        shutil.rmtree(d, ignore_errors=True)
    env = {"KGCULT_CACHE": str(cache)}
    n = sum(1 for line in mentions.open(encoding="utf-8") if line.strip())
    out: dict = {"tree": label}
    r = run(tree, env, ["--store", str(store), "link", "index", "--rebuild"])
    out["index"] = {k: r[k] for k in ("seconds", "cpu_seconds", "rss_peak_mib", "load1")}
    out["index"]["progress_lines"] = [ln for ln in r["stderr"].splitlines() if ln.startswith("link index")]
    for step in ("first", "warm"):
        dest = scratch / f"{label}-{step}.jsonl"
        r = run(tree, env, ["--store", str(store), "link", "-i", str(mentions), "-o", str(dest)])
        out[step] = {k: r[k] for k in ("seconds", "cpu_seconds", "rss_peak_mib", "load1")}
        out[step]["mentions_per_s"] = round(n / r["seconds"], 1)
        out[step]["mentions_per_cpu_s"] = round(n / max(r["cpu_seconds"], 1e-9), 1)
        out[step]["output"] = str(dest)
    out["mentions"] = n
    return out


def identical(paths: list[str]) -> bool:
    first = Path(paths[0]).read_bytes()
    return all(Path(p).read_bytes() == first for p in paths[1:])


def summarize(rounds: list[dict]) -> dict:
    def med(label, step, key):
        vals = [r[step][key] for r in rounds if r["tree"] == label and key in r[step]]
        return statistics.median(vals) if vals else None

    s = {}
    for label in sorted({r["tree"] for r in rounds}):
        s[label] = {f"{step}_{key}": med(label, step, key)
                    for step in ("index", "first", "warm")
                    for key in (("seconds", "cpu_seconds", "rss_peak_mib")
                                + (("mentions_per_s", "mentions_per_cpu_s") if step != "index" else ()))}
    if "this" in s:
        t = s["this"]
        t["first_over_warm_speed"] = round(t["first_mentions_per_s"] / t["warm_mentions_per_s"], 3)
        t["first_over_warm_rss"] = round(t["first_rss_peak_mib"] / t["warm_rss_peak_mib"], 3)
    outs = [r[step]["output"] for r in rounds for step in ("first", "warm")]
    s["byte_identical"] = identical(outs)
    return s


def markdown(res: dict) -> str:
    lines = ["# First `kgcult link -i` after `kgcult link index --rebuild` (issue 32)", "",
             f"{res['when']}; {res['mentions']} mixed mentions (`gen_mentions.py`); store {res['store']}; "
             f"{res['cores']} cores, shared (1-minute load average per run below).", "",
             "| round | tree | index s | index MiB | first s | first /s | first /CPU s | first MiB | warm s | warm /s | warm /CPU s | warm MiB | load (index/first/warm) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(res["rounds"], 1):
        lines.append(f"| {i} | {r['tree']} | {r['index']['seconds']} | {r['index']['rss_peak_mib']} | "
                     f"{r['first']['seconds']} | {r['first']['mentions_per_s']} | {r['first'].get('mentions_per_cpu_s', '')} | "
                     f"{r['first']['rss_peak_mib']} | "
                     f"{r['warm']['seconds']} | {r['warm']['mentions_per_s']} | {r['warm'].get('mentions_per_cpu_s', '')} | "
                     f"{r['warm']['rss_peak_mib']} | "
                     f"{r['index']['load1']}/{r['first']['load1']}/{r['warm']['load1']} |")
    lines += ["", "Medians:", "", "```", json.dumps(res["summary"], indent=2), "```", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", type=Path, required=True, help="a copy of a store (its index is removed)")
    ap.add_argument("--mentions", type=Path, required=True)
    ap.add_argument("--main", type=Path, default=None, help="checkout of the code before the change")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of this checkout")
    ap.add_argument("--append", action="store_true", help="keep the rounds of the last results file")
    ap.add_argument("--scratch", type=Path, default=Path("/tmp/kgcult-bench/link-first"))
    a = ap.parse_args()
    a.scratch.mkdir(parents=True, exist_ok=True)
    plan = ["this"] * a.rounds
    if a.main is not None:
        plan.insert(1 if a.rounds > 1 else 0, "main")
    rounds = []
    last = ROOT / "bench" / "results" / f"{RESULT_NAME}.json"
    if a.append and last.exists():
        rounds = json.loads(last.read_text(encoding="utf-8"))["rounds"]
    for label in plan:  # the results are saved after each round
        tree = ROOT if label == "this" else a.main
        rounds.append(one_round(tree, label, a.store, a.mentions, a.scratch))
        res = {"when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "store": str(a.store),
               "mentions": rounds[0]["mentions"], "cores": os.cpu_count(), "rounds": rounds,
               "summary": summarize(rounds)}
        save(RESULT_NAME, res, markdown(res))


if __name__ == "__main__":
    main()
