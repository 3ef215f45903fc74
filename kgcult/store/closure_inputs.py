"""What each spec's closure was built from, so that a rebuild skips the specs whose input
did not change.

A data change marks the whole closure stale, but most changes (labels, a new dataset's
facts, a refreshed subgraph whose hierarchy stayed the same) leave most hierarchies as they
were. Rewriting an unchanged closure costs as much as the first build, so each spec is
recorded with the fingerprint of its input: the spec itself and the edges of the
properties it follows, as the store holds them. A rebuild recomputes the fingerprint (one
hash over the edges it reads anyway) and keeps a spec whose fingerprint is unchanged.

The record is a store-state value ``kgc:closureInput "<spec IRI> <sha256> <triples>"`` in
the metadata graph (the spec IRI is its ``kgc:graph``). It is removed before the spec's
triples are touched and written after the last, so a build killed in between leaves no
record and the spec is rebuilt.
"""
from __future__ import annotations

import hashlib

from pyoxigraph import Literal, NamedNode, Quad

from kgcult import vocab
from kgcult.store import provenance, setgraph

# Part of every fingerprint: change it when the same edges would give a graph different
# content (a new cycle marking, another derived term), so old records stop matching.
# Version 2: the closure lives in the default graph only; a version-1 record (closure in
# named graphs) never matches, so the next build moves an older store's closure.
ALGORITHM = b"kgcult-closure-2\n"
_RECORD = vocab.kgc("closureInput")


class EdgeDigest:
    """A running sha256 over one property's (subject, object) terms in the order the store
    yields them (its index order: the same content gives the same order)."""

    def __init__(self) -> None:
        self._h = hashlib.sha256()

    def add(self, s: bytes, o: bytes) -> None:
        self._h.update(s)  # terms are "<iri>": concatenation is unambiguous
        self._h.update(o)

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def fingerprint(spec, digests: dict[str, EdgeDigest]) -> str:
    """The spec's definition and the digests of the properties it follows."""
    h = hashlib.sha256(ALGORITHM)
    h.update(f"{spec.name}\n{spec.graph}\n{spec.derived}\n{spec.first or ''}\n".encode())
    for prop in ([spec.first] if spec.first else []) + list(spec.steps):
        h.update(f"{prop} {digests[prop].hexdigest()}\n".encode())
    return h.hexdigest()


def recorded(ox) -> dict[str, tuple[str, int, str | None]]:
    """spec IRI -> (fingerprint, triples, nonce) of the specs built whole by an earlier
    build (the nonce names that write: ``closure_state``; None in older records)."""
    out = {}
    for q in ox.quads_for_pattern(provenance.STATE, _RECORD, None, provenance.META):
        graph, fp, triples, *rest = vocab.value(q.object).split(" ")
        out[graph] = (fp, int(triples), rest[0] if rest else None)
    return out


def forget(ox, graph: str) -> None:
    """Drop a spec's record (before its triples are touched)."""
    for q in list(ox.quads_for_pattern(provenance.STATE, _RECORD, None, provenance.META)):
        if vocab.value(q.object).split(" ", 1)[0] == graph:
            ox.remove(q)


def remember(ox, graph: str, fp: str, triples: int, nonce: str | None = None) -> None:
    """Record a spec written whole from the input with fingerprint ``fp`` (by the write
    named ``nonce``)."""
    forget(ox, graph)
    ox.add(Quad(provenance.STATE, _RECORD, Literal(f"{graph} {fp} {triples}" + (f" {nonce}" if nonce else "")),
                provenance.META))


def still_there(ox, spec, triples: int) -> bool:
    """Whether a recorded closure is still in the store (a cheap check: one of its triples;
    its content is only ever written by the closure build)."""
    return triples == 0 or any(True for _ in ox.quads_for_pattern(None, NamedNode(spec.derived), None,
                                                                  setgraph.DEFAULT))
