"""Benchmark: `kgcult mirror` of the stand-in from a local `oxigraph serve`, against the
transfer limit of the same endpoint.

* mirror: every subgraph of ontology/subgraphs.ttl, default batch sizes, into a fresh
  store (enumeration, paged queries, checkpoints, staging graphs, atomic swaps included);
  triples/s over the wall time.
* transfer limit: for each subgraph, ONE unpaged CONSTRUCT returning exactly the same
  triples (its members bound in one VALUES block, its properties/languages likewise),
  from the same endpoint, same format (RDF/XML), parsed completely; summed over subgraphs.
  This is what a client could at best get from that endpoint for that content.

Target: mirror throughput >= 0.5x the transfer limit. Writes bench/results/mirror.json and
bench/results/mirror.md. Needs ../shared/standin/wikidata-standin.nt.gz.

    .venv/bin/python bench/mirror.py [--concurrency 4] [--runs 1]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
STANDIN = ROOT.parent / "shared" / "standin" / "wikidata-standin.nt.gz"
RESULTS = ROOT / "bench" / "results"

import pyoxigraph as ox  # noqa: E402

from kgcult import mirror as m  # noqa: E402
from kgcult import subgraphs, vocab  # noqa: E402
from kgcult.sparqlutil import values_clause  # noqa: E402
from kgcult.store import Store  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(workdir: Path):
    exe = Path(sys.executable).with_name("oxigraph")
    exe = str(exe) if exe.exists() else shutil.which("oxigraph")
    loc = workdir / "server"
    t0 = time.perf_counter()
    subprocess.run([exe, "load", "--location", str(loc), "--file", str(STANDIN)], check=True, capture_output=True)
    load_s = time.perf_counter() - t0
    port = free_port()
    proc = subprocess.Popen([exe, "serve", "--location", str(loc), "--bind", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    return proc, f"http://127.0.0.1:{port}/query", load_s


def single_construct(url: str, spec, subjects: list[str]) -> tuple[int, float, int]:
    """One unpaged CONSTRUCT of the subgraph's content; (triples, seconds, bytes)."""
    # the query shapes the mirror uses (one VALUES block: Oxigraph is slow with several)
    ids = values_clause(["s"], [[ox.NamedNode(vocab.WD + s)] for s in subjects])
    if spec.is_labels:
        props = ", ".join(str(ox.NamedNode(p)) for p in spec.label_properties)
        langs = ", ".join(str(ox.Literal(x)) for x in spec.languages)
        q = (f"PREFIX wikibase: <{vocab.WIKIBASE}>\nCONSTRUCT {{ ?s ?p ?o . ?s wikibase:sitelinks ?n }} WHERE {{ {ids} "
             f"{{ ?s ?p ?o FILTER(?p IN ({props}) && LANG(?o) IN ({langs})) }} UNION {{ ?s wikibase:sitelinks ?n }} }}")
    else:
        props = ", ".join(str(vocab.wdt(p)) for p in spec.properties)
        q = f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ {ids} ?s ?p ?o FILTER(?p IN ({props})) }}"
    client = m.SparqlClient(m.MirrorConfig(endpoint=url, timeout=600))
    t0 = time.perf_counter()
    before = client.bytes
    triples = client.construct(q, f"{spec.name} (single CONSTRUCT)")
    return len(set(triples)), time.perf_counter() - t0, client.bytes - before


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", type=int, default=2, help="mirror concurrency (default 2, the WDQS-polite default)")
    ap.add_argument("--batch-size", type=int, default=250)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    if not STANDIN.exists():
        print(f"{STANDIN} not found", file=sys.stderr)
        return 2
    import signal

    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))  # stop the server on timeout/kill
    work = Path(tempfile.mkdtemp(prefix="kgcult-bench-mirror-"))
    proc, url, load_s = start_server(work)
    try:
        specs = subgraphs.load_specs()
        cfg = m.MirrorConfig(endpoint=url, concurrency=args.concurrency, batch_size=args.batch_size)
        t0 = time.perf_counter()
        with Store(work / "store") as st:
            reports = m.mirror(st, config=cfg, specs=specs)
            mirror_s = time.perf_counter() - t0
            per = {}
            for r in reports:
                subj = sorted({q.subject.value[len(vocab.WD):] for q in st.quads(r.graph)
                               if q.subject.value.startswith(vocab.WD)})
                per[r.name] = {"triples": r.triples, "queries": r.queries, "subjects": subj}
        total = sum(v["triples"] for v in per.values())
        # the transfer limit, measured right after, same endpoint, same format
        limit_s = 0.0
        limit_bytes = 0
        for name, v in per.items():
            n, s, b = single_construct(url, specs[name], v["subjects"])
            if n != v["triples"]:
                raise SystemExit(f"{name}: single CONSTRUCT gave {n} triples, mirror {v['triples']}")
            v["single_construct_s"] = round(s, 3)
            limit_s += s
            limit_bytes += b
            del v["subjects"]
        mirror_rate = total / mirror_s
        limit_rate = total / limit_s
        ratio = mirror_rate / limit_rate
        result = {
            "benchmark": "mirror",
            "date": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
            "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} CPUs (shared), Python {platform.python_version()}, pyoxigraph {ox.__version__}",
            "source": str(STANDIN.name),
            "server_load_s": round(load_s, 1),
            "concurrency": args.concurrency,
            "batch_size": args.batch_size,
            "format": cfg.construct_format,
            "triples": total,
            "mirror_s": round(mirror_s, 2),
            "mirror_triples_per_s": round(mirror_rate),
            "mirror_queries": sum(v["queries"] for v in per.values()),
            "single_construct_s": round(limit_s, 2),
            "single_construct_triples_per_s": round(limit_rate),
            "single_construct_bytes": limit_bytes,
            "ratio_to_transfer_limit": round(ratio, 3),
            "target": 0.5,
            "target_met": ratio >= 0.5,
            "per_subgraph": per,
        }
    finally:
        proc.terminate()
        proc.wait(10)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "mirror.json").write_text(json.dumps(result, indent=2) + "\n")
    rows = "\n".join(f"| {k} | {v['triples']:,} | {v['queries']} | {v['single_construct_s']} |"
                     for k, v in result["per_subgraph"].items())
    md = f"""### mirror (bench/mirror.py)

{result['date']}, {result['machine']}.
`kgcult mirror` of every subgraph of `ontology/subgraphs.ttl` from a local `oxigraph serve` loaded
with the stand-in ({result['source']}), concurrency {result['concurrency']}, batch size {result['batch_size']},
{result['format']}, into a fresh store; against the transfer limit: one unpaged CONSTRUCT per subgraph
returning the same triples from the same endpoint, same format, parsed completely.

| | triples | seconds | triples/s |
|---|---|---|---|
| mirror ({result['mirror_queries']} queries, checkpoints, staging, swaps) | {total:,} | {result['mirror_s']} | {result['mirror_triples_per_s']:,} |
| single unpaged CONSTRUCT per subgraph | {total:,} | {result['single_construct_s']} | {result['single_construct_triples_per_s']:,} |

Ratio to the transfer limit: **{result['ratio_to_transfer_limit']}x** (target >= 0.5x: {'met' if result['target_met'] else 'NOT met'}).

| subgraph | triples | mirror queries | single CONSTRUCT s |
|---|---|---|---|
{rows}
"""
    (RESULTS / "mirror.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
