"""What a reader should be told about the store it reads: graphs that an interrupted mirror,
ingest or load left partial, and a closure that is stale while a query reads it.

An unfinished write (load, import, ingest, mirror) names its graphs in the journal beside
the store (:mod:`kgcult.store.recovery`); ``kgc:closureStale`` is in the metadata graph. :func:`notices`
turns them into one-line notices that ``kgcult sparql``, the API and ``kgcult serve`` (the
``X-Kgcult-Notice`` header) pass on, and ``kgcult stats`` lists them.
"""
from __future__ import annotations

import re
from functools import lru_cache

from kgcult import ontology, vocab
from kgcult.store import recovery


def partial_graphs(store) -> list[str]:
    """Graphs an unfinished write (load, import, ingest, mirror) is writing or left, until
    the next writable open rolls it back or finishes it (none for a remote endpoint: the
    journal is beside a store, not behind an endpoint)."""
    return [] if getattr(store, "remote", False) else recovery.partial_graphs(store.location)


@lru_cache(maxsize=1)
def _closure_predicates() -> re.Pattern:
    """The closure's derived properties (ontology/closures.ttl) as they appear in a query:
    ``kgc:typedAs`` or the full IRI."""
    iris = sorted({vocab.value(q.object) for q in ontology.read("closures.ttl")
                   if q.predicate.value == vocab.KGC + "derivedProperty"})
    names = [i[len(vocab.KGC):] for i in iris if i.startswith(vocab.KGC)]
    return re.compile(r"(?:\bkgc:|" + re.escape(vocab.KGC) + r")(?:" + "|".join(map(re.escape, names)) + r")\b")


def reads_closure(query: str) -> bool:
    return bool(_closure_predicates().search(query))


def notices(store, query: str, *, partial: list[str] | None = None, closure_stale: bool | None = None) -> list[str]:
    """The notices for one query over ``store`` (``partial`` and ``closure_stale`` when the
    caller already knows them)."""
    out = []
    partial = partial_graphs(store) if partial is None else partial
    if partial:
        shown = ", ".join(partial[:3]) + (f" and {len(partial) - 3} more" if len(partial) > 3 else "")
        out.append(f"partial graph(s) {shown}: a mirror, ingest, load or snapshot import of them was "
                   "interrupted (or a load or import is running), so answers may lack or mix their data; run "
                   "the mirror or ingest again to complete them (an interrupted load is rolled back, an "
                   "import rolled back or finished, by the next writable open)")
    stale = getattr(store, "closure_stale", False) if closure_stale is None else closure_stale
    if stale and reads_closure(query):
        out.append("the closure is stale (data changed since `kgcult closure`): kgc:typedAs, kgc:broader and "
                   "the other closure properties may be missing or partial; run `kgcult closure`")
    return out
