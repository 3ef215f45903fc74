"""What a SPARQL Update at `kgcult serve --writable` costs for the default graph to follow it
(the set of the named graphs' triples, issue 28), side by side on one store copy:

- before (main's /update): the update read by rdflib (``translateUpdate``, which reorders
  each block's triples in O(n^2)), run, then ``setgraph.sync`` (two scans of the store);
- after: ``update_scope.parse`` (rdflib without the reordering) and ``Store.update`` (the
  update journaled, then the default graph's share of what it changed with its provenance
  record: O(update), or O(graph) for CLEAR/COPY/MOVE).

Each form runs REPEAT times per side, interleaved, on a copy of the stand-in store (the
store at $KGCULT_BENCH_STORE, default /tmp/kgb/store, copied to a scratch folder first);
each run is undone by its inverse (not timed) so both sides see the same store. Median
seconds per update. Results: bench/results/serve_update.{json,md}.

    .venv/bin/python bench/serve_update.py [--store PATH] [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import require, save

import pyoxigraph as ox
from rdflib.plugins.sparql.algebra import translateUpdate
from rdflib.plugins.sparql.parser import parseUpdate

from kgcult import vocab
from kgcult.sparql import update_scope
from kgcult.store import Store, setgraph

EX = "http://example.org/bench/"
G = f"<{EX}g>"


def _data(n: int) -> str:
    return " ".join(f'<{EX}s{j}> <{EX}p> "value {j}" .' for j in range(n))


FORMS = [  # (name, update, its inverse)
    ("INSERT DATA, 1 triple", f"INSERT DATA {{ GRAPH {G} {{ {_data(1)} }} }}",
     f"DROP SILENT GRAPH {G}"),
    ("INSERT DATA, 2000 triples", f"INSERT DATA {{ GRAPH {G} {{ {_data(2000)} }} }}",
     f"DROP SILENT GRAPH {G}"),
    ("DELETE DATA, 1 triple", f"DELETE DATA {{ GRAPH <{vocab.GRAPH}standin> {{ wd:Q17 rdfs:label \"Japan\"@en }} }}",
     f"INSERT DATA {{ GRAPH <{vocab.GRAPH}standin> {{ wd:Q17 rdfs:label \"Japan\"@en }} }}"),
    ("DELETE/INSERT WHERE, 1 entity", f"DELETE {{ GRAPH <{vocab.GRAPH}standin> {{ wd:Q17 rdfs:label ?l }} }} "
     f"INSERT {{ GRAPH {G} {{ wd:Q17 rdfs:label ?l }} }} WHERE {{ GRAPH <{vocab.GRAPH}standin> {{ wd:Q17 rdfs:label ?l }} }}",
     f"ADD {G} TO <{vocab.GRAPH}standin> ; DROP SILENT GRAPH {G}"),
]


def _run_old(store: ox.Store, text: str) -> None:
    prologue = "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in vocab.PREFIXES.items())
    translateUpdate(parseUpdate(prologue + text))  # main's update_scope: rdflib's own translation
    store.update(text, prefixes=vocab.PREFIXES)
    setgraph.sync(store)


def _run_new(store: Store, text: str) -> None:
    store.update(text, update_scope.parse(text, vocab.PREFIXES))


def _undo(store: Store, text: str) -> None:
    _run_new(store, text)  # restores the set too (checked against the full sync below)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", default=os.environ.get("KGCULT_BENCH_STORE", "/tmp/kgb/store"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    src = require(Path(args.store))
    with tempfile.TemporaryDirectory(prefix="kgcult-bench-update-") as tmp:
        path = Path(tmp) / "store"
        shutil.copytree(src, path)
        store = Store(path)  # a store written before the set is migrated to it first (once)
        size = len(store.ox)
        rows, data = [], {"store_quads": size, "repeat": args.repeat, "forms": {}}
        for name, text, inverse in FORMS:
            times: dict[str, list[float]] = {"before": [], "after": []}
            for _ in range(args.repeat):
                for side, fn, target in (("before", _run_old, store.ox), ("after", _run_new, store)):
                    t0 = time.perf_counter()
                    fn(target, text)
                    times[side].append(time.perf_counter() - t0)
                    _undo(store, inverse)
            assert setgraph.sync(store.ox) == (0, 0), "the new path left the default graph out of step"
            before, after = statistics.median(times["before"]), statistics.median(times["after"])
            data["forms"][name] = {"before_s": times["before"], "after_s": times["after"],
                                   "median_before_s": before, "median_after_s": after, "speedup": before / after}
            rows.append(f"| {name} | {before:.3f} | {after:.4f} | {before / after:.0f}x |")
            print(rows[-1], flush=True)
        store.close()
    md = (f"Default graph following an update (issue 28 follow-up), store of {size:,} quads "
          f"(the stand-in with its closure), median of {args.repeat} interleaved runs:\n\n"
          "| update | before: rdflib translation + update + full sync (s) | after: parse + Store.update (s) | speedup |\n"
          "|---|---:|---:|---:|\n" + "\n".join(rows))
    save("serve_update", data, md)


if __name__ == "__main__":
    main()
