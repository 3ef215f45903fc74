"""Load test of issue 30 item 4 (after issue 12 item 10): runaway queries from many
addresses against `kgcult serve`, side by side with the server at the merge base with
main (the `kgcult` package there, unpacked from git into a scratch directory and run the
same way).

Twenty clients, each from its own loopback address (127.0.0.66-85), keep two connections
each busy with a runaway query (a triple cross product COUNT over wdt:P495, ~10^11
combinations, evaluated inside one step and bounded in memory): 40 runaways for 8
workers, each re-sent as soon as it is answered. Meanwhile two probe threads send
ordinary queries (the seeded mix of bench/serve.py), each from a fresh address
(127.0.1.x, never used before), one after another with a 0.5 s pause. Server settings are
the defaults (8 workers, queue 64, queue timeout = timeout, per-client cap 4) with a 10 s
timeout. Records, per server, the probes' statuses and latency (the target: every probe
answered, p99 well under the timeout), the runaway clients' statuses, and the peak
memory of the server with its worker processes.

    .venv/bin/python bench/serve_runaway.py [--store PATH] [--seconds 25]

Results: bench/results/serve_runaway.json and serve_runaway.md.
"""
from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import random
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pyoxigraph
import serve as serve_bench
from common import ROOT, save

from kgcult.sparql.query_text import bind_values

TIMEOUT_S = 10
RUNAWAY_ADDRESSES = 20
RUNAWAY_PER_ADDRESS = 2
PROBES = 2
PROBE_PAUSE_S = 0.5
RUNAWAY = ("runaway", "SELECT (COUNT(*) AS ?n) WHERE { ?a wdt:P495 ?b . ?c wdt:P495 ?d . ?e wdt:P495 ?f }")


def start(pythonpath: Path, store: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.Popen(
        [sys.executable, "-m", "kgcult.cli", "--store", str(store), "serve", "--port", str(port), "--quiet",
         "--timeout", str(TIMEOUT_S)],
        cwd=pythonpath, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def tree_rss(pid: int) -> int:
    """Resident memory of a process and all its descendants (started by any thread), bytes."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                total += next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (OSError, StopIteration):
            pass
    return total


FRESH = (f"127.0.{1 + n // 250}.{1 + n % 250}" for n in itertools.count())


def client(port: int, source: str, end: float, seed: int, entities: list[str], out: list, runaway: bool) -> None:
    rng = random.Random(seed)
    classes = [m[0] for m in serve_bench.MIX]
    weights = [m[1] for m in serve_bench.MIX]
    templates = {m[0]: m[2] for m in serve_bench.MIX}

    def connect():
        return http.client.HTTPConnection("127.0.0.1", port, timeout=120, source_address=(source, 0))

    conn = connect()
    while time.monotonic() < end:
        if not runaway:  # a probe: every query from a fresh address
            conn.close()
            source = next(FRESH)
            conn = connect()
        if runaway:
            cls, query = RUNAWAY
        else:
            cls = rng.choices(classes, weights)[0]
            query = templates[cls]
            if "?x" in query:
                query = bind_values(query, {"x": pyoxigraph.NamedNode(rng.choice(entities))})
        body = urllib.parse.urlencode({"query": serve_bench.PREFIXES + query})
        t0 = time.perf_counter()
        try:
            conn.request("POST", "/query", body, {"Content-Type": "application/x-www-form-urlencoded",
                                                   "Accept": "application/sparql-results+json"})
            resp = conn.getresponse()
            data = resp.read()
            status = resp.status
            if status == 200:
                json.loads(data)
        except (OSError, http.client.HTTPException, ValueError) as e:
            status = f"error: {type(e).__name__}"
            conn.close()
            conn = connect()
        out.append((cls, status, time.perf_counter() - t0))
        if not runaway:
            time.sleep(PROBE_PAUSE_S)
    conn.close()


def run_load(port: int, pid: int, seconds: float, entities: list[str]) -> dict:
    ordinary, runaway = [], []
    end = time.monotonic() + seconds
    threads = [threading.Thread(target=client, args=(port, f"127.0.0.{66 + i}", end, i, entities, runaway, True))
               for i in range(RUNAWAY_ADDRESSES) for _ in range(RUNAWAY_PER_ADDRESS)]
    probes = [threading.Thread(target=client, args=(port, "", end, 1000 + i, entities, ordinary, False))
              for i in range(PROBES)]
    peak = [tree_rss(pid)]
    stop = threading.Event()

    def sample():
        while not stop.wait(0.5):
            peak.append(tree_rss(pid))

    sampler = threading.Thread(target=sample)
    sampler.start()
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(1.5)  # the runaways take every worker first
    for t in probes:
        t.start()
    for t in threads + probes:
        t.join(seconds + 180)
    wall = time.perf_counter() - t0
    stop.set()
    sampler.join()
    statuses = lambda rows: {str(s): sum(1 for r in rows if r[1] == s) for s in sorted({r[1] for r in rows}, key=str)}  # noqa: E731
    ok = sorted(r[2] for r in ordinary if r[1] == 200)
    return {
        "wall_s": round(wall, 1),
        "ordinary_requests": len(ordinary), "ordinary_ok": len(ok),
        "ordinary_failed": len(ordinary) - len(ok), "ordinary_statuses": statuses(ordinary),
        "ordinary_throughput_rps": round(len(ok) / wall, 1),
        "ordinary_p50_ms": round(serve_bench.pct(ok, 50) * 1000, 1), "ordinary_p99_ms": round(serve_bench.pct(ok, 99) * 1000, 1),
        "ordinary_max_ms": round(max(ok, default=float("nan")) * 1000, 1),
        "ordinary_all_ms_p50": round(serve_bench.pct([r[2] for r in ordinary], 50) * 1000, 1),
        "runaway_statuses": statuses(runaway),
        "peak_rss_mb": round(max(peak) / 2**20), "rss_before_mb": round(peak[0] / 2**20),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store")
    ap.add_argument("--seconds", type=float, default=20)
    args = ap.parse_args()
    store = serve_bench.pick_store(args.store)
    entities, triples = serve_bench.dishes(store)
    old_root, base = serve_bench.old_package()
    runs = {}
    before, after = f"kgcult serve at the merge base ({base})", "kgcult serve, this branch (budgets, pre-emption)"
    for name, root in ((before, old_root), (after, ROOT)):
        port = serve_bench.free_port()
        proc = start(root, store, port)
        try:
            serve_bench.wait_up(f"http://127.0.0.1:{port}/query", proc)
            print(f"{name}: {RUNAWAY_ADDRESSES} x {RUNAWAY_PER_ADDRESS} runaways + {PROBES} fresh-address probes "
                  f"for {args.seconds:g} s ...", file=sys.stderr)
            runs[name] = run_load(port, proc.pid, args.seconds, entities)
            runs[name]["loadavg_1min_after"] = round(os.getloadavg()[0], 2)
        finally:
            proc.kill()
            proc.wait(30)
        print(f"  {runs[name]}", file=sys.stderr)
    new, old = runs[after], runs[before]
    met = new["ordinary_failed"] == 0 and new["ordinary_ok"] > 0 and new["ordinary_p99_ms"] < TIMEOUT_S * 1000 / 2
    lines = [
        "### `kgcult serve`: runaway queries from 20 addresses, an ordinary query from a fresh one (issue 30, item 4)",
        "",
        f"Store {store} ({triples:,} triples). For {args.seconds:g} s, {RUNAWAY_ADDRESSES} clients (one loopback "
        f"address each) keep {RUNAWAY_PER_ADDRESS} connections each busy with a runaway query (`{RUNAWAY[1]}`, "
        f"~10^11 combinations counted inside one evaluation step): {RUNAWAY_ADDRESSES * RUNAWAY_PER_ADDRESS} "
        f"runaways for 8 workers, each re-sent as soon as it is answered. {PROBES} probe threads send the query "
        f"mix of bench/serve.py one after another ({PROBE_PAUSE_S:g} s apart), every query from a fresh address. "
        f"Both servers: `kgcult serve --timeout {TIMEOUT_S}`, defaults otherwise (8 workers, queue 64, queue "
        "timeout = timeout, per-client cap 4; this branch: budget 60 worker-s a minute, pre-emption after 1 s). "
        "Clients share the machine's 2 cores with the servers and with other jobs (load average after each run).",
        "",
        "| server | probes ok | probes failed (status: count) | probe p50, ms | p99, ms | max, ms | "
        "runaway clients (status: count) | peak RSS (with workers) | load avg after |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in runs.items():
        failed = {s: n for s, n in r["ordinary_statuses"].items() if s != "200"}
        lines.append(f"| {name} | {r['ordinary_ok']} | {r['ordinary_failed']}"
                     f"{' (' + ', '.join(f'{s}: {n}' for s, n in failed.items()) + ')' if failed else ''} | "
                     f"{r['ordinary_p50_ms']} | {r['ordinary_p99_ms']} | {r['ordinary_max_ms']} | "
                     f"{', '.join(f'{s}: {n}' for s, n in r['runaway_statuses'].items())} | "
                     f"{r['rss_before_mb']} → {r['peak_rss_mb']} MB | {r['loadavg_1min_after']} |")
    ratio = old["ordinary_all_ms_p50"] / new["ordinary_all_ms_p50"] if new["ordinary_all_ms_p50"] else float("nan")
    lines += ["", f"Median probe latency (answered or not): {old['ordinary_all_ms_p50']} ms before, "
                  f"{new['ordinary_all_ms_p50']} ms after (**{ratio:.1f}x** faster). Target (every probe from a fresh "
                  f"address answered, p99 under half the {TIMEOUT_S} s timeout, while the runaways run): "
                  f"**{'met' if met else 'NOT met'}**."]
    save("serve_runaway", {"store": str(store), "triples": triples, "seconds": args.seconds, "timeout_s": TIMEOUT_S,
                           "runaway_query": RUNAWAY[1], "runaway_addresses": RUNAWAY_ADDRESSES,
                           "runaway_per_address": RUNAWAY_PER_ADDRESS, "probes": PROBES, "runs": runs,
                           "probe_p50_ratio": round(ratio, 2), "target_met": met},
         "\n".join(lines))


if __name__ == "__main__":
    main()
