"""kgcult's closure as a file, for an engine that holds the data but not the closure
(``kgcult closure --export closure.nt.gz``): every spec's derived-property triples and its
cycle marks (``x kgc:inCycle <spec>``), as the embedded store's default graph holds them,
written as N-Triples (gzip when the name ends in ``.gz``) for the engine's bulk loader
(Virtuoso's ``ld_dir``, QLever's index input): docs/serve.md, "The closure on a remote
engine". Streamed: memory does not grow with the closure."""
from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import IO, Iterator, cast

import pyoxigraph as ox
from pyoxigraph import NamedNode

from kgcult import vocab
from kgcult.errors import KgcultError
from kgcult.store.hierarchy import ClosureSpec, load_specs


def closure_triples(store, specs: list[ClosureSpec] | None = None) -> Iterator[ox.Triple]:
    """The closure's triples in the store's default graph, spec by spec."""
    cycle = NamedNode(vocab.KGC + "inCycle")
    for spec in specs if specs is not None else load_specs():
        for q in store.ox.quads_for_pattern(None, NamedNode(spec.derived), None, ox.DefaultGraph()):
            yield q.triple
        for q in store.ox.quads_for_pattern(None, cycle, NamedNode(vocab.KGC + spec.name), ox.DefaultGraph()):
            yield q.triple


def export(store, path: str | os.PathLike, specs: list[ClosureSpec] | None = None) -> int:
    """Write the closure to ``path`` (N-Triples, gzip for ``.gz``), whole or not at all;
    returns the number of triples."""
    if getattr(store, "remote", False):
        raise KgcultError("the closure is exported from an embedded store (the endpoint holds no closure to export)")
    target = Path(path)
    tmp = target.with_name(f".{target.name}.part")
    n = 0

    def counted() -> Iterator[ox.Triple]:
        nonlocal n
        for t in closure_triples(store, specs):
            n += 1
            yield t

    try:
        with open(tmp, "wb") as raw:
            out = cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0)
                       if target.suffix == ".gz" else raw)
            ox.serialize(counted(), out, format=ox.RdfFormat.N_TRIPLES)
            out.close()
        os.replace(tmp, target)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise KgcultError(f"{target}: cannot write the closure: {e.strerror or e}") from None
    return n


__all__ = ["export", "closure_triples"]
