"""Load the stand-in (1.13 M triples) three ways in one run and compare:

* ``kgcult load`` (one named graph, as kgcult always stores data),
* the ``oxigraph load`` CLI into a named graph (same engine, same layout: the limit),
  and into the default graph (3 indexes instead of 6; for reference),
* rdflib's in-memory Graph parser (what ad-hoc scripts often use).

Targets (issue 2): kgcult >= 0.8x the Oxigraph CLI, >= 4x rdflib.
"""
from __future__ import annotations

import gzip
import shutil
import sys

from common import STANDIN, WORK, require, run, save, timed

VENV_BIN = __import__("pathlib").Path(sys.executable).parent


def main() -> None:
    src = require(STANDIN)
    with gzip.open(src, "rb") as f:
        triples = sum(1 for _ in f)
    WORK.mkdir(parents=True, exist_ok=True)
    results = {}

    def fresh(name):
        d = WORK / name
        shutil.rmtree(d, ignore_errors=True)
        return d

    d = fresh("load-kgcult")
    results["kgcult load"] = run([str(VENV_BIN / "kgcult"), "--store", str(d), "load", str(src), "--no-progress"],
                                 stderr=__import__("subprocess").DEVNULL)
    d = fresh("load-oxigraph-graph")
    results["oxigraph load --graph"] = run([str(VENV_BIN / "oxigraph"), "load", "--location", str(d), "--file", str(src),
                                            "--graph", "https://w3id.org/kgcult/graph/wikidata-standin"],
                                           stderr=__import__("subprocess").DEVNULL)
    d = fresh("load-oxigraph-default")
    results["oxigraph load (default graph)"] = run([str(VENV_BIN / "oxigraph"), "load", "--location", str(d), "--file", str(src)],
                                                   stderr=__import__("subprocess").DEVNULL)
    for name in ("load-kgcult", "load-oxigraph-graph", "load-oxigraph-default"):
        shutil.rmtree(WORK / name, ignore_errors=True)

    import rdflib

    def rdflib_load():
        g = rdflib.Graph()
        with gzip.open(src, "rb") as f:
            g.parse(f, format="nt")
        return len(g)

    n, results["rdflib Graph.parse"] = timed(rdflib_load)
    assert n == triples, (n, triples)

    k = results["kgcult load"]
    rows = []
    for name, secs in results.items():
        rows.append(f"| {name} | {secs:.1f} | {triples / secs:,.0f} | {k and secs / k:.2f}x |")
    vs_cli = results["oxigraph load --graph"] / k
    vs_rdflib = results["rdflib Graph.parse"] / k
    md = f"""### Bulk load of the stand-in ({triples:,} triples, N-Triples .gz)

| loader | seconds | triples/s | kgcult speed relative to it |
|---|---|---|---|
{chr(10).join(rows)}

kgcult vs `oxigraph load --graph` (same engine, same named-graph layout): **{vs_cli:.2f}x** (target >= 0.8x: {'met' if vs_cli >= 0.8 else 'NOT met'}).
kgcult vs rdflib: **{vs_rdflib:.1f}x** (target >= 4x: {'met' if vs_rdflib >= 4 else 'NOT met'}).
Loading into the default graph is faster because Oxigraph keeps 3 indexes for it and 6 for named graphs;
kgcult keeps every subgraph in a named graph by design, so the named-graph CLI run is the like-for-like limit.
"""
    save("load", {"triples": triples, "seconds": results, "ratio_vs_oxigraph_cli": vs_cli,
                  "ratio_vs_rdflib": vs_rdflib}, md)


if __name__ == "__main__":
    main()
