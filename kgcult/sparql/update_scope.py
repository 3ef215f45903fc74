"""Which graphs a SPARQL Update writes: kgcult's default graph is the set of its named
graphs' triples (``kgcult.store.setgraph``), so an update may write named graphs only;
:func:`default_graph_write` names the first operation that would write the default graph.
The update is read with rdflib's SPARQL parser and algebra (not by patterns over its text).
"""
from __future__ import annotations

from rdflib.plugins.sparql.algebra import translateUpdate
from rdflib.plugins.sparql.parser import parseUpdate

from kgcult.errors import KgcultError

_WHOLE = ("DEFAULT", "ALL")


def parse(text: str, prefixes: dict[str, str] | None = None) -> list:
    """The operations of update ``text`` (``prefixes`` predeclared) as rdflib's algebra."""
    prologue = "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in (prefixes or {}).items())
    try:
        return list(translateUpdate(parseUpdate(prologue + text)).algebra)
    except Exception as e:  # noqa: BLE001 - rdflib raises pyparsing's and its own errors
        raise KgcultError(f"SPARQL update syntax error: {e}") from None


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
