"""Binding values into SPARQL queries without formatting user text into them.

``bind_values(query, {"x": term, ...})`` puts ``VALUES (?x ...) { (<term> ...) }`` at the
start of the query's WHERE group. Terms are pyoxigraph terms serialized by pyoxigraph
(N-Triples syntax, with quotes, backslashes and newlines escaped), so a mention such as
``"} DROP ALL #`` stays a literal. This works the same on the embedded store and on a
remote endpoint, and, unlike Oxigraph's ``substitutions``, for variables that are not
projected.
"""
from __future__ import annotations

import re
from typing import Iterable, Mapping, Sequence

from pyoxigraph import BlankNode, Literal, NamedNode

from kgcult.errors import KgcultError

_VAR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_WHERE = re.compile(r"where\b", re.I)


def term(value) -> NamedNode | Literal:
    """A pyoxigraph term from a term or a plain Python value (str -> plain literal)."""
    if isinstance(value, (NamedNode, Literal)):
        return value
    if isinstance(value, BlankNode):
        raise KgcultError("blank nodes cannot be bound into a query")
    if isinstance(value, bool):
        return Literal("true" if value else "false", datatype=NamedNode("http://www.w3.org/2001/XMLSchema#boolean"))
    if isinstance(value, int):
        return Literal(str(value), datatype=NamedNode("http://www.w3.org/2001/XMLSchema#integer"))
    if isinstance(value, str):
        return Literal(value)
    raise KgcultError(f"cannot bind a {type(value).__name__} into a query")


def values_clause(variables: Sequence[str], rows: Iterable[Sequence]) -> str:
    """``VALUES (?a ?b) { (t t) ... }`` with every term serialized by pyoxigraph.
    A row item of None becomes UNDEF."""
    for v in variables:
        if not _VAR.match(v):
            raise KgcultError(f"invalid SPARQL variable name {v!r}")
    head = " ".join("?" + v for v in variables)
    body = []
    for row in rows:
        if len(row) != len(variables):
            raise KgcultError("VALUES row has the wrong number of terms")
        body.append("(" + " ".join("UNDEF" if t is None else str(term(t)) for t in row) + ")")
    return f"VALUES ({head}) {{ {' '.join(body)} }}"


def _where_brace(query: str) -> int:
    """Index of the ``{`` opening the WHERE group, skipping comments, strings and IRIs."""
    i, n = 0, len(query)
    where_seen = False
    construct = re.match(r"\s*(?:(?:prefix|base)[^\n]*\n\s*|#[^\n]*\n\s*)*construct\b", query, re.I) is not None
    while i < n:
        c = query[i]
        if c == "#":
            j = query.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if c in "\"'":
            quote = query[i:i + 3] if query[i:i + 3] in ('"""', "'''") else c
            j = i + len(quote)
            while j < n and not query.startswith(quote, j):
                j += 2 if query[j] == "\\" else 1
            i = j + len(quote)
            continue
        if c == "<":
            j = query.find(">", i)
            if j > 0 and not any(ch in query[i + 1:j] for ch in " \n\t{}"):
                i = j + 1
                continue
        if c.lower() == "w" and _WHERE.match(query, i) and (i == 0 or not query[i - 1].isalnum()):
            where_seen = True
            i += 5
            continue
        if c == "{" and (where_seen or not construct):
            return i
        i += 1
    raise KgcultError("cannot find the WHERE clause of the query to bind values into")


def bind_values(query: str, bindings: Mapping[str, object] | None = None,
                rows: tuple[Sequence[str], Iterable[Sequence]] | None = None) -> str:
    """Return ``query`` with one row of ``bindings`` (variable -> value), or several
    ``rows`` = (variables, rows), bound by a VALUES block at the start of its WHERE group."""
    if bindings:
        clause = values_clause(list(bindings), [list(bindings.values())])
    elif rows:
        clause = values_clause(*rows)
    else:
        return query
    at = _where_brace(query) + 1
    return f"{query[:at]} {clause} {query[at:]}"


_UPDATE_KEYWORDS = {"insert", "delete", "load", "clear", "drop", "create", "add", "move", "copy", "with"}
_QUERY_KEYWORDS = {"select", "ask", "construct", "describe"}


def first_keyword(text: str) -> str | None:
    """The first keyword after the prologue (PREFIX/BASE declarations and comments),
    lower-cased: ``select``, ``construct``, ``insert``, ... (None if there is none)."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        else:
            m = re.match(r"(?i)(prefix\s+[^\s:]*:\s*<[^>]*>|base\s*<[^>]*>)", text[i:])
            if m:
                i += m.end()
                continue
            word = re.match(r"[A-Za-z]+", text[i:])
            return word.group(0).lower() if word else None
    return None


def classify(text: str) -> str | None:
    """'query' or 'update' from the first keyword after the prologue (None if unknown).
    A hint for a clear refusal only: /query hands the text to Oxigraph's query parser,
    which never executes an update whatever this says."""
    w = first_keyword(text)
    if w in _UPDATE_KEYWORDS:
        return "update"
    if w in _QUERY_KEYWORDS:
        return "query"
    return None
