"""The default graph follows a SPARQL Update at the cost of what the update changed, not
of the store (issue 28's set, :mod:`kgcult.store.setgraph`).

From the update's operations (rdflib's algebra, :func:`kgcult.sparql.update_scope.parse`)
:func:`plan` derives, per operation, which default-graph triples it can change:

- ``INSERT DATA`` / ``DELETE DATA`` / ``DELETE WHERE`` and the templates of
  ``DELETE/INSERT ... WHERE``: one row ``(s p o)`` per triple (template); a variable, a blank
  node, or a number literal (rdflib's parser rewrites lexical forms such as ``+2``,
  ``1e0``; Oxigraph stores numbers by value, so they would match, but nothing here
  depends on it) is ``UNDEF`` in the row, so a row stands for every triple it could be. Inserted rows are
  copied into the default graph from the graph they were written to (``GRAPH <g>``, or
  any visible graph for ``GRAPH ?g``); deleted rows leave the default graph when no
  visible graph holds them any more (never the closure's own triples, which live in the
  default graph only: :func:`setgraph.own_filter`). Both are Oxigraph updates over the rows (indexed
  look-ups), so an update of N triples costs O(N).
- ``CLEAR`` / ``DROP GRAPH <g>``, ``COPY`` / ``MOVE`` (which empty a graph): the graph's
  triples are copied into a staging graph (invisible) in the update's own transaction,
  and afterwards those that no visible graph holds leave the default graph: O(|g|).
  ``LOAD ... INTO GRAPH <g>`` and ``ADD`` / ``COPY`` / ``MOVE`` targets: g is copied into
  the default graph: O(|g|).
- ``CLEAR NAMED`` / ``DROP NAMED`` and anything else: the whole-store sync
  (:func:`setgraph.sync`), as before.

Crash story: the graphs an update can change are marked pending (and captured) in the
update's own transaction (the ``before`` operations run prepended to it); the default
graph's share and the unmarking are one second transaction. A server killed in between
leaves the marks, and the next writable open repairs them (:func:`setgraph.repair`; an
update whose graphs are not known marks :data:`setgraph.ALL_GRAPHS`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pyoxigraph as ox
from rdflib import Literal, URIRef
from rdflib.namespace import XSD

from kgcult.store import setgraph

CAPTURE = setgraph.CAPTURE  # a graph's triples before an update emptied it
# literals whose lexical form rdflib's parser may not keep (`+2` -> "2", `1e0` -> "1.0")
_REWRITTEN = {XSD.integer, XSD.decimal, XSD.double, XSD.float}
_VISIBLE = setgraph.visible_filter("?h_")


@dataclass
class Plan:
    """What an update does to the default graph: ``before`` runs prepended to the update
    (one transaction); ``after`` is one transaction once it ran; ``full`` asks for the
    whole-store sync instead."""
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    full: bool = False
    pending: set[str] = field(default_factory=set)
    _inserts: dict[str | None, set[str]] = field(default_factory=dict)   # graph (IRI or None: any) -> rows
    _deletes: set[str] = field(default_factory=set)
    _added: set[str] = field(default_factory=set)      # graphs copied whole into the default graph
    _captured: dict[str, str] = field(default_factory=dict)


def _term(t) -> str:
    """A term as it goes into a VALUES row: UNDEF where the row must match any term."""
    try:
        if isinstance(t, URIRef):
            return str(ox.NamedNode(str(t)))
        if isinstance(t, Literal) and t.datatype not in _REWRITTEN:
            dt = ox.NamedNode(str(t.datatype)) if t.datatype else None
            return str(ox.Literal(str(t), language=t.language, datatype=dt))
    except ValueError:
        pass
    return "UNDEF"  # a variable, a blank node, a literal rdflib may have rewritten


def _row(triple) -> str:
    return "(" + " ".join(_term(t) for t in triple) + ")"


def _quads(clause, default_graph) -> list[tuple[str | None, tuple]]:
    """(graph, triple) of a data block or template: graph an IRI string, or None for a
    variable graph (any graph)."""
    if clause is None:
        return []
    fields = dict(clause)
    out = [(default_graph, t) for t in fields.get("triples") or []]
    for g, triples in (fields.get("quads") or {}).items():
        out += [(g, t) for t in triples]
    return [(str(g) if isinstance(g, URIRef) else None, t) for g, t in out]


def plan(operations: list, store: ox.Store) -> Plan:
    """The default graph's share of an update on ``store`` (see the module docstring)."""
    p = Plan()
    for op in operations:
        name, fields = op.name, dict(op)
        if name in ("InsertData", "DeleteData", "DeleteWhere"):
            for g, t in _quads(op, None):
                _insert(p, g, t) if name == "InsertData" else _delete(p, g, t)
        elif name == "Modify":
            with_graph = fields.get("withClause")
            for g, t in _quads(fields.get("delete"), with_graph):
                _delete(p, g, t)
            for g, t in _quads(fields.get("insert"), with_graph):
                _insert(p, g, t)
        elif name == "Load":
            _add_whole(p, fields.get("graphiri"))
        elif name in ("Clear", "Drop"):
            target = fields.get("graphiri")
            if isinstance(target, URIRef):
                _capture(p, str(target))
            else:
                p.full = True  # NAMED (DEFAULT and ALL are refused before)
        elif name in ("Add", "Copy", "Move"):
            source, target = fields.get("graph") or (None, None)
            if source == target:
                continue  # a no-op by the spec
            if name in ("Copy", "Move") and isinstance(target, URIRef):
                _capture(p, str(target))
            if name == "Move" and isinstance(source, URIRef):
                _capture(p, str(source))
            _add_whole(p, target)
        elif name != "Create":
            p.full = True
    return _finish(p, setgraph.own_filter("?p", store))


def _insert(p: Plan, graph: str | None, triple) -> None:
    if graph is not None and not setgraph.visible(graph):
        return
    p._inserts.setdefault(graph, set()).add(_row(triple))
    _touch(p, graph)


def _delete(p: Plan, graph: str | None, triple) -> None:
    if graph is not None and not setgraph.visible(graph):
        return
    p._deletes.add(_row(triple))
    _touch(p, graph)


def _touch(p: Plan, graph: str | None) -> None:
    p.pending.add(graph if graph is not None else setgraph.ALL_GRAPHS)


def _add_whole(p: Plan, graph) -> None:
    if isinstance(graph, URIRef) and setgraph.visible(str(graph)):
        p._added.add(str(graph))
        _touch(p, str(graph))
    elif not isinstance(graph, URIRef):
        p.full = True


def _capture(p: Plan, graph: str) -> None:
    if setgraph.visible(graph) and graph not in p._captured:
        cap = str(ox.NamedNode(CAPTURE + str(len(p._captured))))
        p._captured[graph] = cap
        p.before.append(f"DROP SILENT GRAPH {cap}")
        p.before.append(f"INSERT {{ GRAPH {cap} {{ ?s ?p ?o }} }} WHERE {{ GRAPH <{graph}> {{ ?s ?p ?o }} }}")
        _touch(p, graph)


def _finish(p: Plan, own: str) -> Plan:
    """``own``: the FILTER keeping the closure's own triples (default graph only)."""
    if p.full:
        p.pending.add(setgraph.ALL_GRAPHS)
    p.before = setgraph.mark_pending_ops(p.pending) + p.before
    if p.full:
        p.after = []  # the caller syncs the whole store, then unmarks
        return p
    after = []
    for graph, rows in sorted(p._inserts.items(), key=lambda kv: str(kv[0])):
        where = f"GRAPH <{graph}> {{ ?s ?p ?o }}" if graph is not None else f"GRAPH ?h_ {{ ?s ?p ?o }} {_VISIBLE}"
        after.append(f"INSERT {{ ?s ?p ?o }} WHERE {{ VALUES (?s ?p ?o) {{ {' '.join(sorted(rows))} }} "
                     f"{where} FILTER NOT EXISTS {{ ?s ?p ?o }} }}")
    if p._deletes:
        after.append(f"DELETE {{ ?s ?p ?o }} WHERE {{ VALUES (?s ?p ?o) {{ {' '.join(sorted(p._deletes))} }} "
                     f"?s ?p ?o {own} FILTER NOT EXISTS {{ GRAPH ?h_ {{ ?s ?p ?o }} {_VISIBLE} }} }}")
    for graph in sorted(p._added):
        after.append(f"INSERT {{ ?s ?p ?o }} WHERE {{ GRAPH <{graph}> {{ ?s ?p ?o }} FILTER NOT EXISTS {{ ?s ?p ?o }} }}")
    for cap in p._captured.values():
        after.append(f"DELETE {{ ?s ?p ?o }} WHERE {{ GRAPH {cap} {{ ?s ?p ?o }} {own} "
                     f"FILTER NOT EXISTS {{ GRAPH ?h_ {{ ?s ?p ?o }} {_VISIBLE} }} }}")
        after.append(f"DROP SILENT GRAPH {cap}")
    p.after = after + setgraph.unmark_pending_ops(p.pending)
    return p


def run(store: ox.Store, text: str, operations: list, prefixes: dict[str, str]) -> None:
    """Run update ``text`` (``operations``: its parse) on ``store`` and bring the default
    graph up to date with it, keeping the crash story (see the module docstring)."""
    p = plan(operations, store)
    store.update(" ;\n".join(p.before + [text]) if p.before else text, prefixes=prefixes)
    if p.full:
        setgraph.sync(store)
        setgraph.unmark_pending(store, p.pending)
    elif p.after:
        store.update(" ;\n".join(p.after))
