"""How a new version of a subgraph's graph reaches the store, for both sources (the
mirror and the dump ingest; ``spec``: a subgraph spec, its ``graph`` and ``staging_graph``).

The metadata graph records, per target graph, the run that wrote it (``kgc:mirrorRun``).
A graph with nothing to keep (new, or the partial load of an interrupted run) is written
directly and marked ``partial:<run>`` until complete; a graph with content is rebuilt in a
staging graph that replaces it in one SPARQL Update transaction (:func:`swap`), so readers
see the old graph until the new one is whole.

The default graph (the set of every graph's triples, :mod:`kgcult.store.setgraph`): a graph
written directly gets its triples into the default graph as it is written (the writers load
them there too) and is marked pending until :func:`finish`; a staging graph is not in the
set, and :func:`swap` moves its triples in and the replaced graph's out in its transaction.
"""
from __future__ import annotations

from pyoxigraph import Literal, NamedNode

from kgcult import vocab
from kgcult.errors import KgcultError
from kgcult.store import setgraph

PARTIAL = "partial:"
_META = NamedNode(vocab.META_GRAPH)
_RUN = vocab.kgc("mirrorRun")


def marker(store, graph: str) -> str | None:
    """The run that wrote ``graph`` (``partial:<run>`` while it runs), or None."""
    for q in store.quads_for_pattern(NamedNode(graph), _RUN, None, _META):
        return q.object.value
    return None


def is_complete(value: str | None) -> bool:
    """Whether a marker says a run finished writing its graph."""
    return value is not None and not value.startswith(PARTIAL)


def set_marker(store, graph: str, value: str, set_ops: tuple[str, ...] | list[str] = ()) -> None:
    """Record (atomically, with ``set_ops``) which run wrote ``graph``."""
    store.ox.update(" ;\n".join(marker_ops(graph, value) + list(set_ops)))


def marker_ops(graph: str, value: str | None) -> list[str]:
    """Update operations recording which run wrote ``graph`` (None: no run)."""
    g = NamedNode(graph)
    ops = [f"DELETE WHERE {{ GRAPH {_META} {{ {g} {_RUN} ?r }} }}"]
    if value is not None:
        ops.append(f"INSERT DATA {{ GRAPH {_META} {{ {g} {_RUN} {Literal(value)} }} }}")
    return ops


def swap(store, spec, run_id: str) -> None:
    """Replace the target graph by the staging graph, atomically (one SPARQL Update)."""
    t, s, m = spec.graph, spec.staging_graph, vocab.META_GRAPH
    for iri in (t, s):
        if any(c in iri for c in '<>"{}|\\^` \n'):
            raise KgcultError(f"graph IRI {iri!r} is not usable")
    # the old graph's triples leave the default graph unless another graph holds them;
    # the new one's join it
    store.ox.update(" ;\n".join(setgraph.drop_ops(t) + [
        f"ADD SILENT GRAPH <{s}> TO GRAPH <{t}>",
        f"ADD SILENT GRAPH <{s}> TO DEFAULT",
        f"DROP SILENT GRAPH <{s}>",
        f"DELETE WHERE {{ GRAPH <{m}> {{ <{t}> <{_RUN.value}> ?r }} }}",
        f"INSERT DATA {{ GRAPH <{m}> {{ <{t}> <{_RUN.value}> {Literal(run_id)} }} }}"]))


def begin(store, spec, run_id: str) -> str:
    """The (empty) graph to write run ``run_id``'s version of ``spec`` into: the target
    itself, marked partial, when it has nothing to keep; else the staging graph."""
    store.clear_graph(spec.staging_graph)
    if (marker(store, spec.graph) or "").startswith(PARTIAL):
        store.clear_graph(spec.graph)
    if store.triple_count(spec.graph):
        return spec.staging_graph
    set_marker(store, spec.graph, PARTIAL + run_id, setgraph.mark_pending_ops([spec.graph]))
    return spec.graph


def finish(store, spec, run_id: str, written: str) -> None:
    """Make the graph :func:`begin` gave (``written``) the complete version of ``spec``."""
    if written == spec.graph:
        set_marker(store, spec.graph, run_id, setgraph.unmark_pending_ops([spec.graph]))
    else:
        swap(store, spec, run_id)
