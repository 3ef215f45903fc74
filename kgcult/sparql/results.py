"""SPARQL results, written one way for ``kgcult sparql`` and ``kgcult serve``.

The W3C formats (JSON, XML, CSV, TSV) come from pyoxigraph's serializer; kgcult adds only
what pyoxigraph has no form for: the CLI's table and jsonl, and serializing a list of
rows (a result cut at the server's row limit) rather than a live result.
CONSTRUCT and DESCRIBE print as N-Triples.
"""
from __future__ import annotations

import json
from typing import IO, Iterable, Sequence

import pyoxigraph as ox
from pyoxigraph import BlankNode, Literal, NamedNode, QueryResultsFormat

from kgcult import vocab

FORMATS = ("table", "csv", "tsv", "json", "jsonl")  # of `kgcult sparql`
W3C = {"json": QueryResultsFormat.JSON, "xml": QueryResultsFormat.XML,
       "csv": QueryResultsFormat.CSV, "tsv": QueryResultsFormat.TSV}
_INTEGERS = {vocab.XSD + t for t in ("integer", "int", "long")}
_DECIMALS = {vocab.XSD + t for t in ("decimal", "double", "float")}


def tsv(variables: Sequence[str], rows: Iterable[Sequence]) -> bytes:
    """Solutions as W3C SPARQL TSV, terms in N-Triples syntax (a row: terms or None, in
    the order of ``variables``; a pyoxigraph QuerySolution is one)."""
    lines = ["\t".join("?" + v for v in variables)]
    lines += ["\t".join("" if t is None else str(t) for t in row) for row in rows]
    return ("\n".join(lines) + "\n").encode("utf-8")


def serialize_rows(variables: Sequence[str], rows: Iterable[Sequence], fmt: str) -> bytes:
    """A list of solutions in a W3C format (``json``, ``xml``, ``csv``, ``tsv``).

    pyoxigraph serializes only its own result iterators, so the rows reach it as TSV,
    which keeps every term exactly."""
    data = tsv(variables, rows)
    if fmt == "tsv":
        return data
    return ox.parse_query_results(data, format=W3C["tsv"]).serialize(format=W3C[fmt])


def serialize_boolean(result: ox.QueryBoolean, fmt: str) -> bytes:
    """An ASK answer in a W3C format."""
    return result.serialize(format=W3C[fmt])


def compact(term) -> str:
    """A short human form of a term for tables: ``wd:Q42``, ``"chili"@en``, ``42``."""
    if term is None:
        return ""
    if isinstance(term, NamedNode):
        iri = term.value
        for prefix, base in vocab.PREFIXES.items():
            if iri.startswith(base) and iri[len(base):].replace("_", "").replace("-", "").isalnum():
                return f"{prefix}:{iri[len(base):]}"
        return f"<{iri}>"
    if isinstance(term, BlankNode):
        return f"_:{term.value}"
    if isinstance(term, Literal):
        if term.language:
            return f"{term.value}@{term.language}"
        return term.value
    return str(term)


def plain(term):
    """JSON-friendly value for jsonl: IRIs and strings as str, numbers and booleans as such."""
    if term is None:
        return None
    if isinstance(term, Literal):
        dt = term.datatype.value
        try:
            if dt in _INTEGERS:
                return int(term.value)
            if dt in _DECIMALS:
                return float(term.value)
        except ValueError:
            return term.value
        if dt == vocab.XSD + "boolean":
            return term.value == "true"
    return term.value


def write(result, fmt: str, out: IO[str]) -> int:
    """Write a query result in a :data:`FORMATS` format to a text stream; returns the
    number of rows (or triples)."""
    if isinstance(result, ox.QueryBoolean):
        if fmt == "jsonl":
            out.write(json.dumps({"boolean": bool(result)}) + "\n")
        elif fmt == "table":
            out.write(("true" if result else "false") + "\n")
        else:
            out.write(serialize_boolean(result, fmt).decode("utf-8").rstrip("\n") + "\n")
        return 1
    if isinstance(result, ox.QueryTriples):
        n = 0
        for t in result:
            out.write(f"{t} .\n")
            n += 1
        return n
    names = [v.value for v in result.variables]
    if fmt == "jsonl":
        n = 0
        for sol in result:
            out.write(json.dumps({k: plain(sol[k]) for k in names}, ensure_ascii=False) + "\n")
            n += 1
        return n
    rows = list(result)
    if fmt in W3C:
        text = serialize_rows(names, rows, fmt).decode("utf-8")
        out.write(text if text.endswith("\n") else text + "\n")
    else:
        _table(names, [[compact(t) for t in sol] for sol in rows], out)
    return len(rows)


def _table(names: list[str], rows: list[list[str]], out: IO[str], max_width: int = 60) -> None:
    def clip(s: str) -> str:
        s = s.replace("\n", "\\n").replace("\t", " ")
        return s if len(s) <= max_width else s[: max_width - 1] + "…"

    rows = [[clip(c) for c in r] for r in rows]
    widths = [max([len(n)] + [len(r[i]) for r in rows]) for i, n in enumerate(names)]
    fmt = " | ".join("{:<%d}" % w for w in widths)
    out.write(fmt.format(*names).rstrip() + "\n")
    out.write("-+-".join("-" * w for w in widths) + "\n")
    for r in rows:
        out.write(fmt.format(*r).rstrip() + "\n")
    out.write(f"({len(rows)} row{'s' if len(rows) != 1 else ''})\n")
