"""A SPARQL Update (``kgcult serve --writable``) keeps the default graph a set
(:mod:`kgcult.store.setgraph`) at the cost of what the update changed, not of the store.
From the update's operations (rdflib's algebra, :func:`kgcult.sparql.update_scope.parse`)
:func:`update_plan` derives which default-graph triples each can change: inserted and
deleted triples (templates: a variable, a blank node or a number literal rdflib may rewrite
is UNDEF in its VALUES row) are copied in or taken out by indexed look-ups, O(N) for N
triples; a graph that CLEAR, DROP, COPY or MOVE empties is captured in a staging graph in
the update's own transaction and its triples leave the default graph unless a visible graph
holds them, O(|g|); anything else (CLEAR NAMED, ...) gets the whole-store
:func:`kgcult.store.setgraph.sync`. The graphs an update can change are journaled before it
(``Store.update``); the default graph's share is a second transaction, with its commit, so
a server killed in between leaves an entry whose graphs the next writable open repairs.

Apart from :mod:`kgcult.store.setgraph` because rdflib (~80 ms to import) is needed here
only: a process that reads a store's side files without opening it (``kgcult annotate``)
does without it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pyoxigraph as ox
import rdflib
from pyoxigraph import Literal, NamedNode
from rdflib.namespace import XSD

from kgcult.store.setgraph import ALL_GRAPHS, CAPTURE, own_filter, visible, visible_filter


_VISIBLE = visible_filter("?h_")
# literals whose lexical form rdflib's parser may not keep (`+2` -> "2", `1e0` -> "1.0")
_REWRITTEN = {XSD.integer, XSD.decimal, XSD.double, XSD.float}


@dataclass
class Plan:
    """What an update does to the default graph: ``before`` runs prepended to the update
    (one transaction); ``after`` is one transaction once it ran; ``full`` asks for the
    whole-store sync instead; ``pending``: the graphs it can change."""
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
        if isinstance(t, rdflib.URIRef):
            return str(NamedNode(str(t)))
        if isinstance(t, rdflib.Literal) and t.datatype not in _REWRITTEN:
            dt = NamedNode(str(t.datatype)) if t.datatype else None
            return str(Literal(str(t), language=t.language, datatype=dt))
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
    return [(str(g) if isinstance(g, rdflib.URIRef) else None, t) for g, t in out]


def update_plan(operations: list, store: ox.Store) -> Plan:
    """The default graph's share of an update on ``store`` (see above)."""
    p = Plan()
    for op in operations:
        name, fields = op.name, dict(op)
        if name in ("InsertData", "DeleteData", "DeleteWhere"):
            for g, t in _quads(op, None):
                _change(p, g, t, insert=name == "InsertData")
        elif name == "Modify":
            with_graph = fields.get("withClause")
            for g, t in _quads(fields.get("delete"), with_graph):
                _change(p, g, t, insert=False)
            for g, t in _quads(fields.get("insert"), with_graph):
                _change(p, g, t, insert=True)
        elif name in ("Clear", "Drop"):
            target = fields.get("graphiri")
            if isinstance(target, rdflib.URIRef):
                _capture(p, str(target))
            else:
                p.full = True  # NAMED (DEFAULT and ALL are refused before)
        elif name in ("Add", "Copy", "Move"):
            source, target = fields.get("graph") or (None, None)
            if source == target:
                continue  # a no-op by the spec
            if name in ("Copy", "Move") and isinstance(target, rdflib.URIRef):
                _capture(p, str(target))
            if name == "Move" and isinstance(source, rdflib.URIRef):
                _capture(p, str(source))
            _add_whole(p, target)
        elif name != "Create":
            p.full = True
    return _finish(p, own_filter("?p", store))


def _change(p: Plan, graph: str | None, triple, insert: bool) -> None:
    """An inserted or deleted triple of a visible (or any: None) graph, for the default graph."""
    if graph is not None and not visible(graph):
        return
    (p._inserts.setdefault(graph, set()) if insert else p._deletes).add(_row(triple))
    _touch(p, graph)


def _touch(p: Plan, graph: str | None) -> None:
    p.pending.add(graph if graph is not None else ALL_GRAPHS)


def _add_whole(p: Plan, graph) -> None:
    if isinstance(graph, rdflib.URIRef) and visible(str(graph)):
        p._added.add(str(graph))
        _touch(p, str(graph))
    elif not isinstance(graph, rdflib.URIRef):
        p.full = True


def _capture(p: Plan, graph: str) -> None:
    if visible(graph) and graph not in p._captured:
        cap = str(NamedNode(CAPTURE + str(len(p._captured))))
        p._captured[graph] = cap
        p.before.append(f"DROP SILENT GRAPH {cap}")
        p.before.append(f"INSERT {{ GRAPH {cap} {{ ?s ?p ?o }} }} WHERE {{ GRAPH <{graph}> {{ ?s ?p ?o }} }}")
        _touch(p, graph)


def _finish(p: Plan, own: str) -> Plan:
    """``own``: the FILTER keeping the closure's own triples (default graph only)."""
    if p.full:
        p.pending.add(ALL_GRAPHS)
        return p  # the caller syncs the whole store
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
    p.after = after
    return p

