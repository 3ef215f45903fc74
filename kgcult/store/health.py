"""What a reader should be told about the store it reads: graphs that an interrupted mirror,
ingest or load left partial, and a closure that is stale while a query reads it.

An unfinished write (load, import, ingest, mirror) names its graphs in the journal beside
the store (:mod:`kgcult.store.recovery`); ``kgc:closureStale`` is in the metadata graph, as
are the ``kgc:mirrorRun "partial:<run>"`` marks an older kgcult left. :func:`notices`
turns them into one-line notices that ``kgcult sparql``, the API and ``kgcult serve`` (the
``X-Kgcult-Notice`` header) pass on, and ``kgcult stats`` lists them.
"""
from __future__ import annotations

import re
from functools import lru_cache

from pyoxigraph import NamedNode

from kgcult import ontology, vocab
from kgcult.store import recovery
from kgcult.store.loading import PARTIAL, RUN as _RUN

_META = NamedNode(vocab.META_GRAPH)


def partial_graphs(store) -> list[str]:
    """Graphs an unfinished write (load, import, ingest, mirror) is writing or left, until
    the next writable open rolls it back or finishes it, and those an older kgcult's killed
    mirror or ingest marked partial."""
    if getattr(store, "remote", False):
        # rows with an unbound value are skipped: Virtuoso answers a GRAPH pattern that matches
        # nothing with one row that binds nothing
        rows = store.query("SELECT ?g ?r WHERE { GRAPH ?m { ?g ?run ?r } }",
                           bindings={"m": _META, "run": _RUN})
        marks = [(r["g"].value, r["r"].value) for r in rows if r["g"] is not None and r["r"] is not None]
        writing: list[str] = []  # the journal is beside the store, not behind the endpoint
    else:
        marks = [(vocab.value(q.subject), vocab.value(q.object))
                 for q in store.ox.quads_for_pattern(None, _RUN, None, _META)]
        writing = recovery.partial_graphs(store.location)
    return sorted({g for g, run in marks if run.startswith(PARTIAL)} | set(writing))


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
