"""Crash safety for writes that cannot be one transaction: bulk loads and snapshot imports.

Oxigraph's bulk loader commits on its own, so a load's data cannot share a transaction
with its provenance record. Loads are journaled per command by
:mod:`kgcult.store.loadjournal` (all or nothing across the command's files); this module
holds what it builds on (provenance records, the state a data change invalidates) and the
repair of the per-file records an older kgcult wrote:

1. before the bulk load, one transaction marks the closure stale, drops the cached content
   hash and writes the load's provenance record with ``kgc:status "in-progress"``, the
   target graph's size before and whether that graph was empty;
2. after it, one transaction completes the record (``kgc:tripleCount``, no status).

A process killed in between leaves an in-progress record. The next writable open
(:func:`repair`) rolls a load into a graph that was empty back (clears that graph and
drops the record), or, when the graph held data before, keeps what landed and marks the
record ``interrupted`` with the triples it added. A snapshot import is journaled by one
record of its own (below): killed while loading into empty graphs it is rolled back, killed
after its commit (``--replace``) it is finished.

Updates here are SPARQL updates: Oxigraph applies each one as a single transaction.
"""
from __future__ import annotations

import hashlib
import logging
import time
from pathlib import Path
import uuid
from datetime import datetime, timezone
from typing import Iterable

import pyoxigraph as ox
from pyoxigraph import Literal, NamedNode, Quad

from kgcult import vocab
from kgcult.safe_text import strip_credentials
from kgcult.errors import KgcultError
from kgcult.store import setgraph, snapshot_stream

log = logging.getLogger(__name__)

META = NamedNode(vocab.META_GRAPH)
STATE = NamedNode(vocab.KGC + "store")
IMPORT_STAGING = vocab.STAGING_GRAPH + "snapshot-import/"
IN_PROGRESS, INTERRUPTED = "in-progress", "interrupted"

_XSD_BOOL = NamedNode(vocab.XSD + "boolean")
_XSD_INT = NamedNode(vocab.XSD + "integer")
_XSD_DT = NamedNode(vocab.XSD + "dateTime")
_TYPE = NamedNode(vocab.RDF + "type")
# What a data change invalidates: the closure, the cached content hash, the hash of the last
# imported snapshot (the store no longer holds just that), and the data version that keys
# facts cached outside the store (kgcult.store.facts).
_CACHE_STATES = ("closureStale", "contentSha256", "snapshotContentSha256", "dataVersion")
SAVED_STATES = _CACHE_STATES + ("defaultGraph",)  # put back by a load that failed or was rolled back
_SAVED_STATES = SAVED_STATES
# fields of an unfinished record: a per-file one (older kgcult) or a load command's
# (kgcult.store.loadjournal); never provenance that a snapshot import may copy
_JOURNAL = ("status", "triplesBefore", "targetWasEmpty", "loadCreates", "loadStage", "savedState", "loadFiles")


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


def stale_ops() -> list[str]:
    """Operations that mark the closure stale, drop the cached hashes and give the data a
    new version."""
    return delete_fields(STATE, _CACHE_STATES) + [
        insert_data([Quad(STATE, vocab.kgc("closureStale"), _bool(True), META),
                      Quad(STATE, vocab.kgc("dataVersion"), Literal(new_data_version()), META)]),
        setgraph.flag_op()]


def run(store: ox.Store, ops: Iterable[str]) -> None:
    """Apply update operations in one transaction."""
    text = " ;\n".join(op for op in ops if op)
    if text:
        store.update(text)


# -- loads ----------------------------------------------------------------------------

def saved_state(store: ox.Store) -> list[Quad]:
    """The state a data change invalidates, to put back if a load fails cleanly."""
    return [q for name in _SAVED_STATES
            for q in store.quads_for_pattern(STATE, vocab.kgc(name), None, META)]


def begin_load(store: ox.Store, *, kind: str, source: str, sha256: str, graph: str | None,
               before: int, target_empty: bool, pending: Iterable[str] = ()) -> NamedNode:
    """Journal a load about to start (closure stale + an in-progress record + its graphs
    pending for the default graph's set, see ``setgraph``), atomically."""
    node, quads = activity(kind=kind, source=source, sha256=sha256, graph=graph)
    k = vocab.kgc
    quads += [Quad(node, k("status"), Literal(IN_PROGRESS), META),
              Quad(node, k("triplesBefore"), _int(before), META),
              Quad(node, k("targetWasEmpty"), _bool(target_empty), META)]
    run(store, stale_ops() + [insert_data(quads)] + setgraph.mark_pending_ops(pending))
    return node


def finish_load(store: ox.Store, node: NamedNode, triples: int, pending: Iterable[str] = ()) -> None:
    """Complete the record of a load whose data is committed (and, with ``pending``, whose
    triples are in the default graph too)."""
    run(store, delete_fields(node, _JOURNAL) + [
        insert_data([Quad(node, vocab.kgc("tripleCount"), _int(triples), META)])]
        + setgraph.unmark_pending_ops(pending))


def abort_load(store: ox.Store, node: NamedNode, state: list[Quad], pending: Iterable[str] = ()) -> None:
    """Forget a load that failed and was rolled back: drop its record, restore the state."""
    run(store, [f"DELETE WHERE {{ GRAPH {META} {{ {node} ?p ?o }} }}"]
        + delete_fields(STATE, _SAVED_STATES) + [insert_data(state)] + setgraph.unmark_pending_ops(pending))


# -- repair on open -----------------------------------------------------------------

def unfinished(store: ox.Store) -> list[dict]:
    """In-progress load records: {node, graph, before, empty}."""
    out = []
    for q in store.quads_for_pattern(None, vocab.kgc("status"), Literal(IN_PROGRESS), META):
        node = q.subject
        if not isinstance(node, NamedNode) or not node.value.startswith(f"{vocab.GRAPH}meta/activity/"):
            continue
        fields = {p.predicate.value[len(vocab.KGC):]: vocab.value(p.object)
                  for p in store.quads_for_pattern(node, None, None, META)}
        out.append({
            "node": node,
            "graph": fields.get("targetGraph"),
            "before": int(fields.get("triplesBefore", 0)),
            "empty": fields.get("targetWasEmpty") == "true",
            "source": fields.get("source", "?"),
        })
    return out


def repair(store: ox.Store) -> list[str]:
    """Repair what a killed load or snapshot import left; return one message per repair."""
    messages = []
    for rec in unfinished(store):
        node, graph = rec["node"], rec["graph"]
        if graph and rec["empty"]:
            setgraph.drop(store, graph)  # idempotent if killed again here
            run(store, stale_ops() + [f"DELETE WHERE {{ GRAPH {META} {{ {node} ?p ?o }} }}"])
            messages.append(f"an interrupted load of {rec['source']} into {graph} was rolled back")
            continue
        added = size(store, graph) - rec["before"]
        if added <= 0:  # killed before the bulk load committed: nothing landed
            run(store, stale_ops() + [f"DELETE WHERE {{ GRAPH {META} {{ {node} ?p ?o }} }}"])
            messages.append(f"an interrupted load of {rec['source']} had not written anything")
        else:
            run(store, stale_ops() + delete_fields(node, _JOURNAL) + [insert_data([
                Quad(node, vocab.kgc("status"), Literal(INTERRUPTED), META),
                Quad(node, vocab.kgc("tripleCount"), _int(added), META)])])
            messages.append(f"a load of {rec['source']} was interrupted: kept the {added} triples "
                            f"it added to {graph or 'the store'} (recorded as interrupted)")
    messages += _repair_imports(store)
    staging = [g for g in store.named_graphs() if isinstance(g, NamedNode) and g.value.startswith(IMPORT_STAGING)]
    for g in staging:
        store.remove_graph(g)
    if staging:
        messages.append(f"dropped {len(staging)} staging graph(s) of an interrupted snapshot import")
    return messages


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


# -- snapshot imports -------------------------------------------------------------------
# One record per import, ``meta/swap/<id>``, names each data graph the import writes
# (``kgc:importTarget``: readers see these graphs as partial while it exists, see
# ``health``) and has a status:
# - LOADING: every target was empty; the snapshot's files are being bulk-loaded straight into
#   them. A kill is rolled back by the next writable open (the targets dropped), as a
#   killed ``kgcult load`` into an empty graph is.
# - REPLACING: the import is committed (provenance and state written with the record) and
#   each target is being made equal to its file (``kgc:importFile``: path, content sha256,
#   count, graph), checked and parsed whole before the commit. A kill is finished by the
#   next writable open from the same files (checked again); if they are gone or changed,
#   the record stays (the graphs are reported partial) until an import of them succeeds.
# - IN_PROGRESS: a swap of staging graphs recorded by an older kgcult; finished on open.

LOADING, REPLACING = "loading", "replacing"
IMPORT_TARGET = vocab.kgc("importTarget")
_FILE = vocab.kgc("importFile")
_SWAP = vocab.kgc("swap")


def stage_graph(index: int) -> NamedNode:
    return NamedNode(f"{IMPORT_STAGING}{index}")


def _import_node() -> NamedNode:
    key = hashlib.sha256(f"{time.time_ns()}|{uuid.uuid4()}".encode()).hexdigest()[:16]
    return NamedNode(f"{vocab.GRAPH}meta/swap/{key}")


def _forget(node: NamedNode) -> str:
    return f"DELETE WHERE {{ GRAPH {META} {{ {node} ?p ?o }} }}"


def _begin(store: ox.Store, status: str, targets: list[str], ops: list[str], extra=()) -> NamedNode:
    node = _import_node()
    quads = [Quad(node, vocab.kgc("status"), Literal(status), META)]
    quads += [Quad(node, IMPORT_TARGET, NamedNode(t), META) for t in targets]
    quads += [Quad(node, p, o, META) for p, o in extra]
    run(store, ops + [insert_data(quads)] + setgraph.mark_pending_ops(targets))
    return node


def begin_import(store: ox.Store, targets: list[str], ops: list[str]) -> NamedNode:
    """Journal an import that bulk-loads straight into ``targets`` (all empty), with
    ``ops`` (the stale marks), in one transaction; the targets are pending for the set."""
    return _begin(store, LOADING, targets, ops)


def finish_import(store: ox.Store, node: NamedNode, targets: list[str], ops: list[str]) -> None:
    """The import's data is whole: drop its record (and the records of earlier imports of
    the same graphs that could not be finished) and write ``ops``, in one transaction."""
    stale = [other for other, _ in _unfinished_imports(store)
             if other != node and set(import_targets(store, other)) <= set(targets)]
    run(store, [_forget(n) for n in [node, *stale]] + ops + setgraph.unmark_pending_ops(targets))


def abort_import(store: ox.Store, node: NamedNode, targets: list[str], state: list[Quad]) -> None:
    """Roll back an import that failed while loading: drop its targets (which were empty),
    its record, and put back the state it invalidated."""
    for t in targets:
        setgraph.drop(store, t)
    run(store, [_forget(node)] + delete_fields(STATE, _SAVED_STATES) + [insert_data(state)]
        + setgraph.unmark_pending_ops(targets))


def begin_replace(store: ox.Store, files: list[tuple[str, dict]], ops: list[str]) -> NamedNode:
    """Commit an import that replaces graphs: the record (its files, to finish it from),
    with ``ops`` (stale marks, provenance, state), in one transaction."""
    targets = [entry["iri"] for _, entry in files]
    extra = [(_FILE, Literal("\t".join([path, entry["content_sha256"], str(entry["triples"]), entry["iri"]])))
             for path, entry in files]
    return _begin(store, REPLACING, targets, ops, extra)


def replace_files(store: ox.Store, node: NamedNode) -> list[tuple[str, dict]]:
    out = []
    for q in store.quads_for_pattern(node, _FILE, None, META):
        path, sha, triples, iri = vocab.value(q.object).split("\t")
        out.append((path, {"content_sha256": sha, "triples": int(triples), "iri": iri, "file": path}))
    return sorted(out, key=lambda f: f[1]["iri"])


def _finish_swap(store: ox.Store, node: NamedNode) -> None:
    """Finish a swap of staging graphs that an older kgcult recorded: make each target equal
    to its staging graph, then forget the swap."""
    pairs = [tuple(NamedNode(x) for x in vocab.value(q.object).split(" "))
             for q in store.quads_for_pattern(node, _SWAP, None, META)]
    for stage, target in pairs:
        if not store.contains_named_graph(stage):
            continue
        if target.value == vocab.META_GRAPH:
            store.bulk_extend(Quad(s.subject, s.predicate, s.object, target)
                              for s in store.quads_for_pattern(None, None, None, stage))
            store.flush()
        else:
            setgraph.replace_graph(store, target.value, stage.value)
        setgraph.drop(store, stage.value)
    run(store, [_forget(node)])


def _unfinished_imports(store: ox.Store) -> list[tuple[NamedNode, str]]:
    """(record, status) of every import a killed process left."""
    return [(q.subject, vocab.value(q.object))
            for q in store.quads_for_pattern(None, vocab.kgc("status"), None, META)
            if isinstance(q.subject, NamedNode) and q.subject.value.startswith(f"{vocab.GRAPH}meta/swap/")]


def import_targets(store: ox.Store, node: NamedNode) -> list[str]:
    return sorted(vocab.value(q.object) for q in store.quads_for_pattern(node, IMPORT_TARGET, None, META))


def _repair_imports(store: ox.Store) -> list[str]:
    messages = []
    for node, status in _unfinished_imports(store):
        targets = import_targets(store, node)
        if status == LOADING:
            for t in targets:
                setgraph.drop(store, t)
            run(store, stale_ops() + [_forget(node)])
            messages.append(f"an interrupted snapshot import into {len(targets)} empty graph(s) was rolled back "
                            f"({', '.join(targets)})")
        elif status == REPLACING:
            messages.append(_finish_replace(store, node, targets))
        else:
            _finish_swap(store, node)
            messages.append("finished a snapshot import that was interrupted while swapping its graphs in")
    return messages


def _finish_replace(store: ox.Store, node: NamedNode, targets: list[str]) -> str:
    files = replace_files(store, node)
    log.warning("finishing a snapshot import that was interrupted while replacing %s, from %s "
                "(about as long as a load of them)", ", ".join(targets), ", ".join(p for p, _ in files))
    try:
        graph_files = [snapshot_stream.GraphFile(Path(path), entry) for path, entry in files]
        kept = [snapshot_stream.parse_digests(f, True) for f in graph_files]  # all checked first
        for f, keep in zip(graph_files, kept):
            snapshot_stream.replace_graph(store, f, keep)
    except KgcultError as e:
        return (f"could not finish a snapshot import interrupted while replacing {', '.join(targets)}: {e}; "
                "these graphs stay reported as partial until `kgcult snapshot import --replace` of them succeeds")
    finish_import(store, node, targets, [])
    return f"finished a snapshot import that was interrupted while replacing {', '.join(targets)}"
