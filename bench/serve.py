"""Bounded load test of `kgcult serve` on loopback, side by side with `oxigraph serve-read-only`
(the Rust server of the same Oxigraph version, union default graph) as the baseline.

Each server gets the same workload: N concurrent clients (default 50) for S seconds
(default 20), each on its own keep-alive connection from its own loopback address, sending a seeded random mix of cheap
and expensive SPARQL queries over the same store; plus one client that sends a
deliberately too-expensive query every 4 s, which the server's timeout (1 s) must cut
(504 from kgcult serve). Records throughput, p50/p99 latency per query class, and every
failed request. Stops by itself; both servers are stopped at the end.

    .venv/bin/python bench/serve.py [--store PATH] [--clients 50] [--seconds 20]

Store: --store, else $KGCULT_BENCH_STORE, else /tmp/kgcult-standin-store (the stand-in,
1.13 M triples with closures) when present, else a store built from the seed in
$KGCULT_BENCH_DIR. Results: bench/results/serve.json and serve.md.
"""
from __future__ import annotations

import argparse
import glob
import io
import http.client
import json
import os
import random
import statistics
import subprocess
import tarfile
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, WORK, save

from kgcult import vocab
from kgcult.sparql.query_text import bind_values

TIMEOUT_S = 5
SLOW_EVERY_S = 4.0

# (class, weight, query template); ?x is bound per request to a random dish
MIX = [
    ("label", 40, "SELECT ?l WHERE { ?x rdfs:label ?l }"),
    ("ask", 10, "ASK { ?x kgc:typedAs wd:Q746549 }"),
    ("dish-card", 20, """SELECT ?property ?value WHERE { ?x ?property ?value .
        FILTER(?property IN (rdfs:label, schema:description, wdt:P31, wdt:P279, wdt:P495, wdt:P527))
        FILTER(!isLiteral(?value) || LANG(?value) IN ("en", "ja", "")) }"""),
    ("ancestors", 15, """SELECT ?y ?l WHERE { ?x kgc:typedAs ?y OPTIONAL { ?y rdfs:label ?l FILTER(LANG(?l) = "en") } }"""),
    ("dishes-per-country", 5, """SELECT ?country (COUNT(DISTINCT ?dish) AS ?dishes) WHERE {
        ?dish kgc:typedAs wd:Q746549 ; wdt:P495 ?country } GROUP BY ?country ORDER BY DESC(?dishes) LIMIT 50"""),
    ("origin-join", 10, """SELECT ?other ?l WHERE { ?x wdt:P495 ?c . ?other wdt:P495 ?c ; kgc:typedAs wd:Q746549 .
        OPTIONAL { ?other rdfs:label ?l FILTER(LANG(?l) = "en") } } LIMIT 200"""),
]
# a join of ~10^9 pairs that streams a trickle of rows (a server can stop it between rows)
SLOW = ("deliberate-timeout", """SELECT ?a ?c WHERE { ?a kgc:typedAs ?b . ?c kgc:typedAs ?b
    FILTER(STRENDS(STR(?a), "77") && STRENDS(STR(?c), "77")) }""")
PREFIXES = "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in vocab.PREFIXES.items())


def pick_store(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    if os.environ.get("KGCULT_BENCH_STORE"):
        return Path(os.environ["KGCULT_BENCH_STORE"])
    if Path("/tmp/kgcult-standin-store").exists():
        return Path("/tmp/kgcult-standin-store")
    from kgcult.store import hierarchy
    from kgcult.store import Store

    path = WORK / "serve-seed-store"
    if not path.exists():
        s = Store(path)
        s.load(sorted(glob.glob(str(ROOT / "dumps" / "seed" / "source" / "*.ttl"))))
        hierarchy.build(s)
        s.close()
    return path


def dishes(store_path: Path, n: int = 400) -> list[str]:
    from kgcult.store import Store

    with Store(store_path, read_only=True) as s:
        rows = s.select("SELECT DISTINCT ?d WHERE { ?d kgc:typedAs wd:Q746549 ; wdt:P495 ?c } ORDER BY ?d LIMIT %d" % n)
        count = s.triple_count()
    return [r["d"].value for r in rows], count


def wait_up(url: str, proc: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            q = urllib.parse.urlencode({"query": "ASK {}"})
            urllib.request.urlopen(f"{url}?{q}", timeout=2).read()
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"{url} did not come up in {seconds} s")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def old_package() -> tuple[Path, str]:
    """The kgcult package as it was where this branch left main (the baseline server)."""
    base = subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    target = WORK / "serve-merge-base" / base[:12]
    if not (target / "kgcult").exists():
        data = subprocess.run(["git", "archive", base, "kgcult", "queries", "ontology"], cwd=ROOT, capture_output=True, check=True).stdout
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(target)
    return target, base[:12]


def start_kgcult(store: Path, port: int, root: Path = ROOT) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "kgcult.cli", "--store", str(store), "serve", "--port", str(port), "--quiet",
         "--timeout", str(TIMEOUT_S), "--queue", "256"],
        cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def start_thread_pool(store: Path, port: int) -> subprocess.Popen:
    """The `kgcult serve` this branch changes (the package at the merge base with main)."""
    return start_kgcult(store, port, old_package()[0])


def start_oxigraph(store: Path, port: int) -> subprocess.Popen:
    exe = Path(sys.executable).with_name("oxigraph")
    return subprocess.Popen(
        [str(exe), "serve-read-only", "--location", str(store), "--bind", f"127.0.0.1:{port}",
         "--timeout-s", str(TIMEOUT_S)],  # the store's default graph is the set (docs/store.md)
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def client(port: int, path: str, end: float, seed: int, entities: list[str], out: list, slow: bool = False) -> None:
    """One user: its own keep-alive connection from its own loopback address (kgcult serve
    caps the queries in flight per client address)."""
    rng = random.Random(seed)
    source = ("127.0.0.%d" % (100 + seed % 100), 0)
    classes = [m[0] for m in MIX]
    weights = [m[1] for m in MIX]
    templates = {m[0]: m[2] for m in MIX}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=source)
    next_slow = time.monotonic() + 1.0
    while True:
        now = time.monotonic()
        if now >= end:
            break
        if slow:
            if now < next_slow:
                time.sleep(min(next_slow - now, end - now))
                continue
            next_slow += SLOW_EVERY_S
            cls, query = SLOW
        else:
            cls = rng.choices(classes, weights)[0]
            query = bind_values(templates[cls], {"x": __import__("pyoxigraph").NamedNode(rng.choice(entities))}) \
                if "?x" in templates[cls] else templates[cls]
        body = urllib.parse.urlencode({"query": PREFIXES + query})
        t0 = time.perf_counter()
        try:
            conn.request("POST", path, body, {"Content-Type": "application/x-www-form-urlencoded",
                                               "Accept": "application/sparql-results+json"})
            resp = conn.getresponse()
            data = resp.read()
            status = resp.status
            if status == 200:
                try:
                    json.loads(data)  # a complete, well-formed answer
                except ValueError:
                    status = "200 with a truncated body"
        except (OSError, http.client.HTTPException, ValueError) as e:
            status = f"error: {type(e).__name__}: {e}"
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=source)
        out.append((cls, status, time.perf_counter() - t0))
    conn.close()


def load(port: int, path: str, clients: int, seconds: float, entities: list[str]) -> dict:
    results: list = []
    end = time.monotonic() + seconds
    threads = [threading.Thread(target=client, args=(port, path, end, 1000 + i, entities, results))
               for i in range(clients - 1)]
    threads.append(threading.Thread(target=client, args=(port, path, end, 99, entities, results, True)))
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 120)
    wall = time.perf_counter() - t0
    return summarize(results, wall)


def pct(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def summarize(results: list, wall: float) -> dict:
    ok = [r for r in results if r[1] == 200]
    deliberate = [r for r in results if r[0] == SLOW[0]]
    failed = [r for r in results if r[1] != 200 and r[0] != SLOW[0]]
    per_class = {}
    for cls in [m[0] for m in MIX] + [SLOW[0]]:
        lat = [r[2] for r in results if r[0] == cls and (r[1] == 200 or cls == SLOW[0])]
        statuses: dict = {}
        for r in results:
            if r[0] == cls:
                statuses[str(r[1])] = statuses.get(str(r[1]), 0) + 1
        per_class[cls] = {"requests": sum(statuses.values()), "statuses": statuses,
                          "p50_ms": round(pct(lat, 50) * 1000, 1), "p99_ms": round(pct(lat, 99) * 1000, 1)}
    lat_ok = [r[2] for r in ok]
    return {
        "wall_s": round(wall, 2), "requests": len(results), "ok": len(ok),
        "throughput_rps": round(len(ok) / wall, 1),
        "p50_ms": round(pct(lat_ok, 50) * 1000, 1), "p99_ms": round(pct(lat_ok, 99) * 1000, 1),
        "mean_ms": round(statistics.fmean(lat_ok) * 1000, 1) if lat_ok else None,
        "deliberate_timeouts": {str(k): v for k, v in per_class[SLOW[0]]["statuses"].items()},
        "deliberate": len(deliberate),
        "failed": len(failed), "failed_examples": [list(map(str, f)) for f in failed[:10]],
        "per_class": per_class,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--no-baseline", action="store_true", help="skip the oxigraph serve run")
    ap.add_argument("--no-merge-base", "--no-thread-pool", dest="no_thread_pool", action="store_true",
                    help="skip the run of kgcult serve as it is at the merge base with main")
    args = ap.parse_args()
    store = pick_store(args.store)
    entities, triples = dishes(store)
    if not entities:
        raise SystemExit(f"{store}: no dishes (kgc:typedAs wd:Q746549): run `kgcult closure` on it")
    runs = {}
    servers = [("kgcult serve", start_kgcult, "/query")]
    if not args.no_baseline:
        servers.append(("oxigraph serve-read-only", start_oxigraph, "/query"))
    if not args.no_thread_pool:
        servers.append((f"kgcult serve, merge base {old_package()[1]}", start_thread_pool, "/query"))
    for name, start, path in servers:
        port = free_port()
        proc = start(store, port)
        try:
            wait_up(f"http://127.0.0.1:{port}{path}", proc)
            print(f"{name}: {args.clients} clients for {args.seconds:g} s ...", file=sys.stderr)
            load_before = os.getloadavg()[0]
            runs[name] = load(port, path, args.clients, args.seconds, entities)
            runs[name]["loadavg_1min_before"] = round(load_before, 2)
            runs[name]["loadavg_1min_after"] = round(os.getloadavg()[0], 2)
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
        r = runs[name]
        print(f"  {r['ok']} ok in {r['wall_s']} s: {r['throughput_rps']} req/s, p50 {r['p50_ms']} ms, "
              f"p99 {r['p99_ms']} ms, failed {r['failed']}, deliberate {r['deliberate_timeouts']}", file=sys.stderr)
    k = runs["kgcult serve"]
    ok_target = k["failed"] == 0 and k["deliberate"] > 0 and all(s != "200" for s in k["deliberate_timeouts"])
    lines = [
        "### `kgcult serve` under load (loopback)",
        "",
        f"Store {store} ({triples:,} triples with closures); {args.clients} concurrent keep-alive clients "
        f"for {args.seconds:g} s: {args.clients - 1} send a seeded mix of cheap and expensive SPARQL queries "
        f"(weights: {', '.join(f'{c} {w}' for c, w, _ in MIX)}), one sends a deliberately too-expensive query "
        f"every {SLOW_EVERY_S:g} s; server timeout {TIMEOUT_S} s, default settings otherwise (8 query worker processes, "
        "at most 4 queries in flight per client address; each client has its own loopback address). Baselines: "
        "Oxigraph's own Rust server (`oxigraph serve-read-only` over the store's default graph, same version, same store, "
        "same workload) and `kgcult serve` as it was before this branch (the package at the merge base with "
        "main, run the same way). "
        "Clients run in one Python process on the same 2 cores, which other engineers' jobs share "
        "(load average in the table), so absolute figures are a floor and the ratio is noisy.",
        "",
        "| server | requests ok | throughput, req/s | p50, ms | p99, ms | failed | deliberate timeouts (status: count) | load avg before → after |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in runs.items():
        lines.append(f"| {name} | {r['ok']} | {r['throughput_rps']} | {r['p50_ms']} | {r['p99_ms']} | {r['failed']} | "
                     f"{', '.join(f'{s}: {n}' for s, n in r['deliberate_timeouts'].items())} | "
                     f"{r['loadavg_1min_before']} → {r['loadavg_1min_after']} |")
    lines += ["", "Per query class, `kgcult serve` (p50 / p99 ms of successful requests):", "",
              "| class | requests | p50 | p99 |", "|---|---|---|---|"]
    for cls, c in k["per_class"].items():
        lines.append(f"| {cls} | {c['requests']} | {c['p50_ms']} | {c['p99_ms']} |")
    if "oxigraph serve-read-only" in runs:
        o = runs["oxigraph serve-read-only"]
        ratio = k["throughput_rps"] / o["throughput_rps"] if o["throughput_rps"] else float("nan")
        lines += ["", f"Throughput ratio kgcult serve / oxigraph serve: **{ratio:.2f}x**; "
                      f"p99 ratio {k['p99_ms'] / o['p99_ms']:.2f}x." if o["p99_ms"] else ""]
    pool = next((r for n, r in runs.items() if n.startswith("kgcult serve, merge base")), None)
    if pool and pool["throughput_rps"]:
        lines += ["", f"Throughput ratio kgcult serve (this branch) / the merge base, same run: "
                      f"**{k['throughput_rps'] / pool['throughput_rps']:.2f}x**; p99 ratio "
                      f"{k['p99_ms'] / pool['p99_ms']:.2f}x." if pool["p99_ms"] else ""]
    lines += ["", f"Target (no failed requests other than the deliberate timeouts, which are cut with 504): "
                  f"**{'met' if ok_target else 'NOT met'}**."]
    if k["failed"]:
        lines.append(f"Failures: {k['failed_examples']}")
    save("serve", {"store": str(store), "triples": triples, "clients": args.clients, "seconds": args.seconds,
                   "timeout_s": TIMEOUT_S, "mix": {c: w for c, w, _ in MIX}, "runs": runs, "target_met": ok_target},
         "\n".join(lines))


if __name__ == "__main__":
    main()
