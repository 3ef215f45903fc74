"""Load test of issue 12 item 10: runaway queries against `kgcult serve`, side by side with
the thread-pool design it replaced (the `kgcult` package at the merge base with main,
unpacked from git into a scratch directory and run the same way).

One client (one loopback address, 127.0.0.66) keeps 8 connections busy with a runaway
query (a triple cross product COUNT over wdt:P495, ~10^11 combinations, evaluated inside
one step and bounded in memory), sending the next as soon as one is answered; meanwhile
40 ordinary clients, each from its own loopback address, send the seeded mix of
bench/serve.py on keep-alive connections. Server settings are the defaults (8 workers,
queue 64, queue timeout = timeout) with a 5 s timeout. Records, per server, every ordinary
request that failed (the target: none), the runaway client's statuses, throughput,
latency, and the peak memory of the server with its worker processes.

    .venv/bin/python bench/serve_runaway.py [--store PATH] [--seconds 20]

Results: bench/results/serve_runaway.json and serve_runaway.md.
"""
from __future__ import annotations

import argparse
import http.client
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

TIMEOUT_S = 5
RUNAWAY_CONNECTIONS = 8
ORDINARY_CLIENTS = 40
RUNAWAY_SOURCE = "127.0.0.66"
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


def client(port: int, source: str, end: float, seed: int, entities: list[str], out: list, runaway: bool) -> None:
    rng = random.Random(seed)
    classes = [m[0] for m in serve_bench.MIX]
    weights = [m[1] for m in serve_bench.MIX]
    templates = {m[0]: m[2] for m in serve_bench.MIX}

    def connect():
        return http.client.HTTPConnection("127.0.0.1", port, timeout=120, source_address=(source, 0))

    conn = connect()
    while time.monotonic() < end:
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
    conn.close()


def run_load(port: int, pid: int, seconds: float, entities: list[str]) -> dict:
    ordinary, runaway = [], []
    end = time.monotonic() + seconds
    threads = [threading.Thread(target=client, args=(port, RUNAWAY_SOURCE, end, i, entities, runaway, True))
               for i in range(RUNAWAY_CONNECTIONS)]
    threads += [threading.Thread(target=client, args=(port, f"127.0.0.{100 + i}", end, 1000 + i, entities,
                                                      ordinary, False)) for i in range(ORDINARY_CLIENTS)]
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
    for t in threads:
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
    for name, root in ((f"kgcult serve, thread pool (merge base {base})", old_root),
                       ("kgcult serve, worker processes (this branch)", ROOT)):
        port = serve_bench.free_port()
        proc = start(root, store, port)
        try:
            serve_bench.wait_up(f"http://127.0.0.1:{port}/query", proc)
            print(f"{name}: {ORDINARY_CLIENTS} ordinary clients + {RUNAWAY_CONNECTIONS} runaway connections "
                  f"for {args.seconds:g} s ...", file=sys.stderr)
            runs[name] = run_load(port, proc.pid, args.seconds, entities)
            runs[name]["loadavg_1min_after"] = round(os.getloadavg()[0], 2)
        finally:
            proc.kill()  # the thread-pool server would keep its runaway threads going
            proc.wait(30)
        print(f"  {runs[name]}", file=sys.stderr)
    new = runs["kgcult serve, worker processes (this branch)"]
    met = new["ordinary_failed"] == 0 and new["ordinary_ok"] > 0
    lines = [
        "### `kgcult serve` with runaway queries (issue 12, item 10)",
        "",
        f"Store {store} ({triples:,} triples). For {args.seconds:g} s, one client ({RUNAWAY_SOURCE}) keeps "
        f"{RUNAWAY_CONNECTIONS} connections busy with a runaway query (`{RUNAWAY[1]}`, ~10^11 combinations "
        f"counted inside one evaluation step), re-sent as soon as it is answered, while {ORDINARY_CLIENTS} "
        "ordinary clients (one loopback address each) send the query mix of bench/serve.py. "
        f"Both servers: `kgcult serve --timeout {TIMEOUT_S}`, defaults otherwise (8 workers, queue 64, queue "
        "timeout = timeout; the new one: per-client cap 4). Clients share the machine's 2 cores with the "
        "servers and with other jobs (load average after each run in the table).",
        "",
        "| server | ordinary ok | ordinary failed (status: count) | ordinary req/s | p50, ms | p99, ms | "
        "runaway client (status: count) | peak RSS (with workers) | load avg after |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in runs.items():
        failed = {s: n for s, n in r["ordinary_statuses"].items() if s != "200"}
        lines.append(f"| {name} | {r['ordinary_ok']} | {r['ordinary_failed']}"
                     f"{' (' + ', '.join(f'{s}: {n}' for s, n in failed.items()) + ')' if failed else ''} | "
                     f"{r['ordinary_throughput_rps']} | {r['ordinary_p50_ms']} | {r['ordinary_p99_ms']} | "
                     f"{', '.join(f'{s}: {n}' for s, n in r['runaway_statuses'].items())} | "
                     f"{r['rss_before_mb']} → {r['peak_rss_mb']} MB | {r['loadavg_1min_after']} |")
    lines += ["", f"Target (no ordinary request fails while the runaways run; they get 504 at the deadline or "
                  f"429 at their cap): **{'met' if met else 'NOT met'}**."]
    save("serve_runaway", {"store": str(store), "triples": triples, "seconds": args.seconds, "timeout_s": TIMEOUT_S,
                           "runaway_query": RUNAWAY[1], "runaway_connections": RUNAWAY_CONNECTIONS,
                           "ordinary_clients": ORDINARY_CLIENTS, "runs": runs, "target_met": met},
         "\n".join(lines))


if __name__ == "__main__":
    main()
