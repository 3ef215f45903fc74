"""The metadata graph's provenance records and the store's state (``kgc:store``): what a
data change invalidates (closure freshness, cached hashes, the data version), written as
SPARQL updates, each applied by Oxigraph as one transaction. What steers recovery is not
here: it is the journal beside the store (:mod:`kgcult.store.recovery`).
"""
from __future__ import annotations

import hashlib
import logging
import time
import uuid
from datetime import datetime, timezone
from typing import Iterable

import pyoxigraph as ox
from pyoxigraph import Literal, NamedNode, Quad

from kgcult import vocab
from kgcult.safe_text import strip_credentials
from kgcult.store import setgraph

log = logging.getLogger(__name__)

META = NamedNode(vocab.META_GRAPH)
STATE = NamedNode(vocab.KGC + "store")
INTERRUPTED = "interrupted"

_XSD_BOOL = NamedNode(vocab.XSD + "boolean")
_XSD_INT = NamedNode(vocab.XSD + "integer")
_XSD_DT = NamedNode(vocab.XSD + "dateTime")
_TYPE = NamedNode(vocab.RDF + "type")
# What a data change invalidates: the closure, the cached content hash, the hash of the last
# imported snapshot (the store no longer holds just that), and the data version that keys
# facts cached outside the store (kgcult.store.sidefiles).
_CACHE_STATES = ("closureStale", "contentSha256", "snapshotContentSha256", "dataVersion")
SAVED_STATES = _CACHE_STATES + ("defaultGraph",)  # put back by a load that failed or was rolled back
# fields of the journal records an older kgcult kept in the metadata graph: never
# provenance that a snapshot import may copy
_JOURNAL = ("status", "triplesBefore", "targetWasEmpty", "loadCreates", "loadStage", "savedState", "loadFiles",
            "importTarget", "importFile", "swap")


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def activity(
    *, kind: str, source: str, sha256: str | None = None, graph: str | None = None,
    triples: int | None = None, extra: dict[str, str] | None = None,
) -> tuple[NamedNode, list[Quad]]:
    """A new provenance record (a kgc:Load in the metadata graph): its node and quads.
    A URL ``source`` is recorded without its credentials (``user:pass@``, token or key
    parameters): the metadata graph is exported in snapshots and served."""
    source = strip_credentials(source)
    stamp = now_iso()
    key = hashlib.sha256(f"{kind}|{source}|{graph}|{stamp}|{time.time_ns()}".encode()).hexdigest()[:16]
    node = NamedNode(f"{vocab.GRAPH}meta/activity/{key}")
    k = vocab.kgc
    quads = [
        Quad(node, _TYPE, k("Load"), META),
        Quad(node, k("kind"), Literal(kind), META),
        Quad(node, k("source"), Literal(source), META),
        Quad(node, k("loadedAt"), Literal(stamp, datatype=_XSD_DT), META),
    ]
    if sha256:
        quads.append(Quad(node, k("sourceSha256"), Literal(sha256), META))
    if graph:
        quads.append(Quad(node, k("targetGraph"), NamedNode(graph), META))
    if triples is not None:
        quads.append(Quad(node, k("tripleCount"), _int(triples), META))
    for name, value in (extra or {}).items():
        quads.append(Quad(node, k(name), Literal(str(value)), META))
    return node, quads


def insert_data(quads: Iterable[Quad]) -> str:
    """``INSERT DATA`` of quads (terms written as N-Triples, which SPARQL accepts)."""
    body = " ".join(f"GRAPH {q.graph_name} {{ {q.subject} {q.predicate} {q.object} }}" for q in quads)
    return f"INSERT DATA {{ {body} }}" if body else ""


def delete_fields(node: NamedNode, names: Iterable[str]) -> list[str]:
    return [f"DELETE WHERE {{ GRAPH {META} {{ {node} {vocab.kgc(n)} ?o }} }}" for n in names]


def new_data_version() -> str:
    """A fresh token naming the store's data as it is after a change."""
    return uuid.uuid4().hex


def is_provenance(q: Quad) -> bool:
    """Whether a quad of a snapshot's metadata graph is provenance that an import may copy:
    never the store's state and never a journal field (an in-progress status, a size
    before, a target said to be empty), which the next writable open would act on — a
    snapshot's metadata is data, not instructions (a forged "load in progress" record would
    have the repair delete the graph it names)."""
    if q.subject == STATE:
        return False
    name = q.predicate.value[len(vocab.KGC):] if q.predicate.value.startswith(vocab.KGC) else None
    if name == "status":
        return isinstance(q.object, Literal) and q.object.value == INTERRUPTED
    return name not in _JOURNAL


def stale_ops(data: bool = True) -> list[str]:
    """Operations that mark the closure stale and, when ``data`` changes, drop the cached
    hashes and give the data a new version."""
    if not data:
        return state_ops("closureStale", True)
    return delete_fields(STATE, _CACHE_STATES) + [
        insert_data([Quad(STATE, vocab.kgc("closureStale"), _bool(True), META),
                      Quad(STATE, vocab.kgc("dataVersion"), Literal(new_data_version()), META)]),
        setgraph.flag_op()]


def state_ops(name: str, value: str | bool | int | None) -> list[str]:
    """Operations setting the store-state value ``name`` (None: removing it)."""
    if value is None:
        return delete_fields(STATE, [name])
    lit = _bool(value) if isinstance(value, bool) else _int(value) if isinstance(value, int) else Literal(value)
    return delete_fields(STATE, [name]) + [insert_data([Quad(STATE, vocab.kgc(name), lit, META)])]


def run(store: ox.Store, ops: Iterable[str]) -> None:
    """Apply update operations in one transaction."""
    text = " ;\n".join(op for op in ops if op)
    if text:
        store.update(text)


# -- loads ----------------------------------------------------------------------------

def saved_state(store: ox.Store) -> list[Quad]:
    """The state a data change invalidates, to put back if a load fails cleanly."""
    return [q for name in SAVED_STATES
            for q in store.quads_for_pattern(STATE, vocab.kgc(name), None, META)]


def size(store: ox.Store, graph: str | None) -> int:
    """Triples in ``graph`` (or quads in the whole store)."""
    if graph is None:
        return len(store)
    if not store.contains_named_graph(NamedNode(graph)):
        return 0
    rows = store.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH {NamedNode(graph)} {{ ?s ?p ?o }} }}")
    assert isinstance(rows, ox.QuerySolutions)
    return int(next(iter(rows))["n"].value)


def _int(n: int) -> Literal:
    return Literal(str(n), datatype=_XSD_INT)


def _bool(b: bool) -> Literal:
    return Literal("true" if b else "false", datatype=_XSD_BOOL)
