"""Which graphs a SPARQL Update writes: kgcult's default graph is the set of its named
graphs' triples (``kgcult.store.setgraph``), so an update may write named graphs only;
:func:`default_graph_write` names the first operation that would write the default graph.
The update is read with rdflib's SPARQL parser and algebra (not by patterns over its text).
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

from rdflib import URIRef, Variable
from rdflib.plugins.sparql import algebra
from rdflib.plugins.sparql.algebra import translateUpdate
from rdflib.plugins.sparql.parser import parseUpdate

from kgcult.errors import KgcultError

_WHOLE = ("DEFAULT", "ALL")


def parse(text: str, prefixes: dict[str, str] | None = None) -> list:
    """The operations of update ``text`` (``prefixes`` predeclared) as rdflib's algebra."""
    prologue = "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in (prefixes or {}).items())
    try:
        tree = parseUpdate(prologue + text)
        with _written_order():
            return list(translateUpdate(tree).algebra)
    except Exception as e:  # noqa: BLE001 - rdflib raises pyparsing's and its own errors
        raise KgcultError(f"SPARQL update syntax error: {e}") from None


_swap = threading.Lock()


def _triples(parts) -> list:
    """rdflib's ``algebra.triples`` without its reordering (for its own evaluation, in
    O(n^2): 25 s for a 2000-triple ``INSERT DATA``): the blocks in their written order."""
    flat = [term for part in parts for term in part]
    if len(flat) % 3:
        raise KgcultError("a block of triples does not split into triples")
    return [(flat[i], flat[i + 1], flat[i + 2]) for i in range(0, len(flat), 3)]


@contextmanager
def _written_order():
    """While rdflib translates an update, its blocks keep their written order: kgcult reads
    the operations, it never evaluates them with rdflib (the order changes nothing else)."""
    with _swap:
        original, algebra.triples = algebra.triples, _triples
        try:
            yield
        finally:
            algebra.triples = original


def default_graph_write(text: str, prefixes: dict[str, str] | None = None) -> str | None:
    """The first operation of update ``text`` (``prefixes`` predeclared) that writes the
    default graph (its SPARQL form, e.g. ``INSERT DATA``), or None when every operation
    names its graph(s)."""
    return first_default_write(parse(text, prefixes))


def first_default_write(operations: list) -> str | None:
    """:func:`default_graph_write` over operations :func:`parse` returned."""
    for op in operations:
        name, fields = op.name, dict(op)  # CompValue.get() is not dict.get()
        if name in ("InsertData", "DeleteData", "DeleteWhere") and fields.get("triples"):
            return {"InsertData": "INSERT DATA", "DeleteData": "DELETE DATA", "DeleteWhere": "DELETE WHERE"}[name]
        if name == "Modify" and fields.get("withClause") is None:
            for clause in ("delete", "insert"):
                part = fields.get(clause)
                if part is not None and dict(part).get("triples"):
                    return f"{clause.upper()} {{ ... }} without GRAPH or WITH"
        if name == "Load" and fields.get("graphiri") is None:
            return "LOAD without INTO GRAPH"
        if name in ("Clear", "Drop") and fields.get("graphiri") in _WHOLE:
            return f"{name.upper()} {fields.get('graphiri')}"
        if name in ("Add", "Move", "Copy"):
            source, target = fields.get("graph") or (None, None)
            if target == "DEFAULT" or (name == "Move" and source == "DEFAULT"):
                return f"{name.upper()} ... DEFAULT"
    return None


def refused_write(operations: list, reserved) -> str | None:
    """Why kgcult refuses the update whose ``operations`` :func:`parse` returned, or None:
    ``LOAD`` (the server would fetch whatever URL it names: kgcult sends no request on a
    query's behalf), and any write to a graph ``reserved(iri)`` holds (kgcult's own:
    metadata, closures, staging). A graph chosen at run time (``GRAPH ?g`` in a template,
    ``CLEAR``/``DROP NAMED``) could be one of them, so it is refused too: name the graph."""
    for op in operations:
        name, fields = op.name, dict(op)
        if name == "Load":
            return ("LOAD: kgcult sends no request on a query's behalf, and an update may not make it fetch a "
                    "URL; load files with `kgcult load FILE --graph NAME`")
        written: list = []
        if name in ("InsertData", "DeleteData", "DeleteWhere"):
            written += list(dict(fields.get("quads") or {}))
        elif name == "Modify":
            if fields.get("withClause") is not None:
                written.append(fields["withClause"])
            for clause in ("delete", "insert"):
                part = fields.get(clause)
                if part is not None:
                    written += list(dict(dict(part).get("quads") or {}))
        elif name in ("Clear", "Drop", "Create"):
            written.append(fields.get("graphiri"))
        elif name in ("Add", "Copy", "Move"):
            source, target = fields.get("graph") or (None, None)
            written += [target, source] if name == "Move" else [target]
        for g in written:
            if isinstance(g, URIRef):
                if reserved(str(g)):
                    return (f"{_FORM.get(name, name.upper())} writes graph <{g}>, which is kgcult's own "
                            "(metadata, closures, staging): updates may write data graphs only")
            elif g not in _WHOLE and g is not None:
                what = "NAMED" if g == "NAMED" else f"GRAPH ?{g}" if isinstance(g, Variable) else str(g)
                return (f"{_FORM.get(name, name.upper())} with {what}: a graph chosen when the update runs could be "
                        "one of kgcult's own (metadata, closures, staging); name each graph it writes "
                        "(GRAPH <g> { ... }, WITH <g>)")
    return None


_FORM = {"InsertData": "INSERT DATA", "DeleteData": "DELETE DATA", "DeleteWhere": "DELETE WHERE",
         "Modify": "DELETE/INSERT", "Clear": "CLEAR", "Drop": "DROP", "Create": "CREATE",
         "Add": "ADD", "Copy": "COPY", "Move": "MOVE"}
