"""The default graph as a set, as WDQS has it: Oxigraph's real default graph holds each
triple of the *visible* named graphs (data graphs; not the metadata graph, not staging
graphs) exactly once, and queries read it instead of Oxigraph's union of named graphs,
which counts a triple once per graph that holds it.

The hierarchy closure is the one exception: its triples are written once, into the default
graph only (no named copy: Oxigraph indexes a named-graph quad six times, a default-graph
triple three times). Each closure spec owns a derived property (``kgc:subclassOf``, ...),
registered in the metadata graph (``kgc:store kgc:closureProperty "<spec> <property>"``)
before its first triple is written, and its cycle marks ``x kgc:inCycle <spec>``; default
triples with a registered property or ``kgc:inCycle`` are the closure's, not orphans
(:func:`own_filter`). 
Every write path keeps the invariant ``default == union of the visible graphs`` (as sets):

- additions go to the named graph first, then to the default graph (adding a triple the
  default graph holds is a no-op);
- removals take a triple out of the default graph in the same transaction that takes it
  out of its named graph, and only when no other visible graph holds it (:func:`drop`,
  :func:`delete_ops`);
- a write that is not one transaction (a bulk load) is journaled first
  (:mod:`kgcult.store.recovery`): killed part-way, it is rolled back, or, for an update,
  its graphs are brought into the set (:func:`repair`: each copied into the default graph,
  and default triples that no visible graph holds removed).

A store written by a kgcult before the set (no ``kgc:defaultGraph "set"`` state), or
with its closure still in named graphs, is refused at open (:func:`older_layout`):
docs/store.md ("The default graph is a set") says how to rebuild it.
"""
from __future__ import annotations

import logging
from typing import Iterable

import pyoxigraph as ox
from pyoxigraph import DefaultGraph, Literal, NamedNode, Quad

from kgcult import vocab
from kgcult.store import base

log = logging.getLogger(__name__)

META = NamedNode(vocab.META_GRAPH)
STATE = NamedNode(vocab.KGC + "store")
_FLAG = NamedNode(vocab.KGC + "defaultGraph")
SET = Literal("set")
CAPTURE = vocab.STAGING_GRAPH + "update-capture/"  # a graph's triples before an update emptied it
DEFAULT = DefaultGraph()
BATCH = 100_000  # quads per removal transaction (Oxigraph holds one in memory: ~1.4 KB a quad)
# the mark of a write whose graphs are not known (an update writing GRAPH ?g): the repair
# then adds every visible graph's missing triples (:func:`add_missing`)
ALL_GRAPHS = vocab.KGC + "allGraphs"


visible = base.in_set


# -- the closure's own triples (default graph only) -------------------------------------

_OWN = NamedNode(vocab.KGC + "closureProperty")
IN_CYCLE = NamedNode(vocab.KGC + "inCycle")


def own_properties(store: ox.Store) -> dict[str, set[str]]:
    """spec IRI -> the derived properties its closure triples were written with."""
    out: dict[str, set[str]] = {}
    for q in store.quads_for_pattern(STATE, _OWN, None, META):
        spec, prop = vocab.value(q.object).split(" ", 1)
        out.setdefault(spec, set()).add(prop)
    return out


def own(store: ox.Store, spec: str, prop: str) -> None:
    """Register ``prop`` as the derived property of ``spec``'s closure triples (before the
    first is written: a killed build leaves no unregistered closure triple)."""
    store.add(Quad(STATE, _OWN, Literal(f"{spec} {prop}"), META))


def disown(store: ox.Store, spec: str, prop: str) -> None:
    store.remove(Quad(STATE, _OWN, Literal(f"{spec} {prop}"), META))


def own_filter(var: str, store: ox.Store) -> str:
    """A SPARQL FILTER true when predicate variable ``var`` is not a closure property."""
    props = sorted({p for ps in own_properties(store).values() for p in ps} | {IN_CYCLE.value})
    return f"FILTER({var} NOT IN ({', '.join(f'<{p}>' for p in props)}))"


def drop_property(store: ox.Store, prop: str, obj: NamedNode | None = None) -> None:
    """Remove every default-graph triple with predicate ``prop`` (and object ``obj``), a
    batch per transaction."""
    pattern = f"?s <{prop}> {obj if obj is not None else '?o'}"
    _while(store, f"ASK {{ {pattern} }}",
           f"DELETE {{ {pattern} }} WHERE {{ {{ SELECT * WHERE {{ {pattern} }} LIMIT {BATCH} }} }}")


def _while(store: ox.Store, ask: str, op: str, graph: str = "", what: str = "") -> None:
    """Run an update (one transaction each) while ``ask`` holds; ``what`` it did to
    ``graph``, logged per batch."""
    batches = 0
    while store.query(ask):
        store.update(op)
        batches += 1
        if what:
            log.info("%s: up to %d of its %s", graph, batches * BATCH, what)


def visible_filter(var: str) -> str:
    """A SPARQL FILTER true when graph variable ``var`` names a visible graph."""
    return f'FILTER({var} != {META} && !STRSTARTS(STR({var}), "{vocab.STAGING_GRAPH}"))'


def older_layout(store: ox.Store) -> str | None:
    """What makes a non-empty store one an older kgcult wrote, which this one refuses: no
    ``kgc:defaultGraph "set"`` state (written before the set), or its closure still in named
    graphs (before the closure moved to the default graph). None for a current or empty store."""
    if next(iter(store.quads_for_pattern(None, None, None, None)), None) is None:
        return None
    if not any(True for _ in store.quads_for_pattern(STATE, _FLAG, SET, META)):
        return "its default graph is not the set of its graphs' triples"
    if any(isinstance(g, NamedNode) and vocab.is_derived_graph(g.value) for g in store.named_graphs()):
        return "its closure is in named graphs"
    return None


def flag_op() -> str:
    """The update operation recording that the store keeps the set; every write path's
    first transaction carries it (a new store is written nothing before its first write)."""
    return f"INSERT DATA {{ GRAPH {META} {{ {STATE} {_FLAG} {SET} }} }}"


# -- copying into and removing from the default graph ------------------------------------

def add_graph(store: ox.Store, graph: str) -> None:
    """Put every triple of ``graph`` into the default graph (idempotent), streamed."""
    g = NamedNode(graph)
    store.bulk_extend(Quad(q.subject, q.predicate, q.object, DEFAULT)
                      for q in store.quads_for_pattern(None, None, None, g))
    store.flush()


def _held_elsewhere(graph: NamedNode) -> str:
    return (f"EXISTS {{ GRAPH ?h_ {{ ?s ?p ?o }} FILTER(?h_ != {graph}) "
            f"{visible_filter('?h_')} }}")


def drop_op(graph: NamedNode) -> str:
    """One update removing a batch of triples of ``graph`` and, in the same transaction,
    each from the default graph unless another visible graph holds it."""
    inner = f"SELECT ?s ?p ?o WHERE {{ GRAPH {graph} {{ ?s ?p ?o }} }} LIMIT {BATCH}"
    default = f"BIND(IF({_held_elsewhere(graph)}, ?unbound_, ?o) AS ?d_)" if visible(graph.value) else ""
    return (f"DELETE {{ GRAPH {graph} {{ ?s ?p ?o }} ?s ?p ?d_ }} "
            f"WHERE {{ {{ {inner} }} {default} }}")


def drop(store: ox.Store, graph: str) -> None:
    """Remove a named graph, keeping the set: a batch of its triples per transaction,
    each leaving the default graph only when no other visible graph holds it."""
    g = NamedNode(graph)
    if not store.contains_named_graph(g):
        return
    _while(store, f"ASK {{ GRAPH {g} {{ ?s ?p ?o }} }}", drop_op(g))
    store.remove_graph(g)  # the (now empty) graph name itself


def replace_graph(store: ox.Store, graph: str, source: str) -> None:
    """Make named graph ``graph`` equal to ``source`` (an invisible staging graph), keeping
    the set: batches of triples only ``graph`` holds leave it (and the default graph, unless
    another visible graph holds them), then batches of ``source``'s triples that ``graph``
    lacks enter both. Work follows the difference: re-importing what a graph holds writes
    nothing. Idempotent if killed (each batch is one transaction)."""
    g, src = NamedNode(graph), NamedNode(source)
    extra = f"GRAPH {g} {{ ?s ?p ?o }} FILTER NOT EXISTS {{ GRAPH {src} {{ ?s ?p ?o }} }}"
    default = f"BIND(IF({_held_elsewhere(g)}, ?unbound_, ?o) AS ?d_)" if visible(graph) else ""
    remove = (f"DELETE {{ GRAPH {g} {{ ?s ?p ?o }} ?s ?p ?d_ }} WHERE {{ "
              f"{{ SELECT ?s ?p ?o WHERE {{ {extra} }} LIMIT {BATCH} }} {default} }}")
    _while(store, f"ASK {{ {extra} }}", remove, graph, "old triples removed")
    lacking = f"GRAPH {src} {{ ?s ?p ?o }} FILTER NOT EXISTS {{ GRAPH {g} {{ ?s ?p ?o }} }}"
    into_default = "?s ?p ?o" if visible(graph) else ""
    add = (f"INSERT {{ GRAPH {g} {{ ?s ?p ?o }} {into_default} }} WHERE {{ "
           f"{{ SELECT ?s ?p ?o WHERE {{ {lacking} }} LIMIT {BATCH} }} }}")
    _while(store, f"ASK {{ {lacking} }}", add, graph, "new triples added")


def delete_ops(graph: str, values: str) -> list[str]:
    """Operations deleting triples (``values``: VALUES rows ``(<s> <p> <o>)``) from
    ``graph`` and from the default graph unless another visible graph holds them."""
    g = NamedNode(graph)
    rows = f"VALUES (?s ?p ?o) {{ {values} }}"
    return [f"DELETE {{ GRAPH {g} {{ ?s ?p ?o }} }} WHERE {{ {rows} }}",
            f"DELETE {{ ?s ?p ?o }} WHERE {{ {rows} FILTER NOT {_held_elsewhere(g)} }}"]


def remove_orphans(store: ox.Store) -> int:
    """Remove default-graph triples that no visible graph holds (after a killed write),
    except the closure's own; returns how many. Scans the default graph."""
    return _in_batches(store, f"DELETE {{ ?s ?p ?o }} WHERE {{ {{ SELECT ?s ?p ?o WHERE {{ ?s ?p ?o "
                              f"{own_filter('?p', store)} FILTER NOT EXISTS {{ GRAPH ?h_ {{ ?s ?p ?o }} {visible_filter('?h_')} }} }} "
                              f"LIMIT {BATCH} }} }}")


def add_missing(store: ox.Store) -> int:
    """Add to the default graph every visible graph's triple it lacks (after a write that
    did not keep the set, e.g. a SPARQL Update); returns how many. Scans the named graphs."""
    return _in_batches(store, f"INSERT {{ ?s ?p ?o }} WHERE {{ {{ SELECT DISTINCT ?s ?p ?o WHERE {{ "
                              f"GRAPH ?h_ {{ ?s ?p ?o }} {visible_filter('?h_')} FILTER NOT EXISTS {{ ?s ?p ?o }} }} "
                              f"LIMIT {BATCH} }} }}")


def _in_batches(store: ox.Store, op: str) -> int:
    """Run an update that changes at most BATCH quads until it changes fewer; returns how
    many quads it changed in all (each run is one transaction)."""
    changed = 0
    while True:
        before = len(store)
        store.update(op)
        n = abs(len(store) - before)
        changed += n
        if n < BATCH:
            return changed


def sync(store: ox.Store) -> tuple[int, int]:
    """Make the default graph the set again after named graphs changed in ways not tracked
    (a SPARQL Update whose graphs are not known, :func:`update_plan`): (triples
    removed, triples added). Two scans of the store."""
    return remove_orphans(store), add_missing(store)


# -- repair ----------------------------------------------------------------

def repair(store: ox.Store, graphs: Iterable[str] = ()) -> list[str]:
    """Bring the set up to date for ``graphs`` (an update killed before its second
    transaction): copy each into the default graph, remove default triples no visible graph
    holds. Messages for the log."""
    graphs = sorted(set(graphs))
    if not graphs:
        return []
    for graph in graphs:
        if store.contains_named_graph(NamedNode(graph)):
            add_graph(store, graph)
    if ALL_GRAPHS in graphs:
        add_missing(store)
    orphans = remove_orphans(store)
    for g in list(store.named_graphs()):  # what a killed update captured (update_plan)
        if isinstance(g, NamedNode) and g.value.startswith(CAPTURE):
            drop(store, g.value)
    return [f"the default graph (the set of all graphs' triples) was brought up to date for "
            f"{len(graphs)} graph(s) an interrupted write left pending ({orphans} stale triple(s) removed)"]
