"""SPARQL results, written one way for ``kgcult sparql`` and ``kgcult serve``: the W3C
forms (JSON, XML, CSV, TSV) of solutions, written piece by piece as a live result yields
them (:func:`write_rows`; the server stops it at its row and byte limits), plus the CLI's
table and jsonl.
CONSTRUCT and DESCRIBE print as N-Triples.

pyoxigraph's own serializers are not used: they only take a live result, and they write
other bytes (compact JSON, XML on one line) than kgcult always has, which its manifests
and users' scripts may rely on.
"""
from __future__ import annotations

import csv
import io
import json
import unicodedata
from typing import IO, Callable, Iterable, Sequence
from xml.sax.saxutils import escape as xml_escape
from xml.sax.saxutils import quoteattr

import pyoxigraph as ox
from pyoxigraph import BlankNode, Literal, NamedNode

from kgcult import vocab
from kgcult.safe_text import csv_row

FORMATS = ("table", "csv", "tsv", "json", "jsonl")  # of `kgcult sparql`
W3C = ("json", "xml", "csv", "tsv")
_INTEGERS = {vocab.XSD + t for t in ("integer", "int", "long")}
_DECIMALS = {vocab.XSD + t for t in ("decimal", "double", "float")}
_XSD_STRING = vocab.XSD + "string"


def json_term(t) -> dict:
    """A term in W3C SPARQL 1.1 Query Results JSON form (a triple term as its N-Triples text)."""
    if isinstance(t, NamedNode):
        return {"type": "uri", "value": t.value}
    if isinstance(t, BlankNode):
        return {"type": "bnode", "value": t.value}
    if isinstance(t, Literal):
        d = {"type": "literal", "value": t.value}
        if t.language:
            d["xml:lang"] = t.language
        elif t.datatype.value != _XSD_STRING:
            d["datatype"] = t.datatype.value
        return d
    return {"type": "triple", "value": str(t)}


def _xml_term(t) -> str:
    if isinstance(t, NamedNode):
        return f"<uri>{xml_escape(t.value)}</uri>"
    if isinstance(t, BlankNode):
        return f"<bnode>{xml_escape(t.value)}</bnode>"
    if isinstance(t, Literal):
        if t.language:
            return f"<literal xml:lang={quoteattr(t.language)}>{xml_escape(t.value)}</literal>"
        if t.datatype.value != _XSD_STRING:
            return f"<literal datatype={quoteattr(t.datatype.value)}>{xml_escape(t.value)}</literal>"
        return f"<literal>{xml_escape(t.value)}</literal>"
    return f"<literal>{xml_escape(str(t))}</literal>"


def write_rows(variables: Sequence[str], rows: Iterable[Sequence], fmt: str, write: Callable[[str], object]) -> int:
    """Write solutions in a W3C format (``json``, ``xml``, ``csv``, ``tsv``) piece by piece
    as ``rows`` yields them (the server streams a live result through this); a row holds
    terms or None in the order of ``variables`` (a pyoxigraph QuerySolution is one).
    Returns the number of rows written."""
    names = list(variables)
    n = 0
    if fmt == "json":
        write('{"head": {"vars": ' + json.dumps(names, ensure_ascii=False) + '}, "results": {"bindings": [')
        for r in rows:
            binding = {k: json_term(t) for k, t in zip(names, r) if t is not None}
            write((", " if n else "") + json.dumps(binding, ensure_ascii=False))
            n += 1
        write("]}}")
    elif fmt == "xml":
        write('<?xml version="1.0"?>\n<sparql xmlns="http://www.w3.org/2005/sparql-results#">\n<head>\n')
        for name in names:
            write(f"<variable name={quoteattr(name)}/>\n")
        write("</head>\n<results>\n")
        for r in rows:
            write("<result>" + "".join(f"<binding name={quoteattr(k)}>{_xml_term(t)}</binding>"
                                       for k, t in zip(names, r) if t is not None) + "</result>\n")
            n += 1
        write("</results>\n</sparql>\n")
    elif fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\r\n")

        def line(cells) -> None:
            w.writerow(cells)
            write(buf.getvalue())
            buf.seek(0)
            buf.truncate()

        line(names)
        for r in rows:
            line(csv_row(["" if t is None else str(t) if isinstance(t, ox.Triple) else t.value for t in r]))
            n += 1
    else:  # tsv: terms in N-Triples syntax
        write("\t".join("?" + k for k in names) + "\n")
        for r in rows:
            write("\t".join("" if t is None else str(t) for t in r) + "\n")
            n += 1
    return n


def serialize_boolean(value: bool, fmt: str) -> bytes:
    """An ASK answer in a W3C format."""
    if fmt == "xml":
        return ('<?xml version="1.0"?>\n<sparql xmlns="http://www.w3.org/2005/sparql-results#">'
                f"<head/><boolean>{'true' if value else 'false'}</boolean></sparql>\n").encode()
    if fmt in ("csv", "tsv"):
        return (("true" if value else "false") + "\n").encode()
    return json.dumps({"head": {}, "boolean": bool(value)}).encode()


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
            out.write(serialize_boolean(bool(result), fmt).decode("utf-8").rstrip("\n") + "\n")
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
    if fmt in W3C:
        n = write_rows(names, result, fmt, out.write)
        if fmt == "json":
            out.write("\n")
        return n
    rows = [[compact(t) for t in sol] for sol in result]
    _table(names, rows, out)
    return len(rows)


def char_width(ch: str) -> int:
    """Columns a character takes on a terminal: 2 for East Asian wide and fullwidth (CJK,
    Hangul, kana), 0 for combining marks and format characters, else 1."""
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(s: str) -> int:
    return sum(char_width(ch) for ch in s)


def _table(names: list[str], rows: list[list[str]], out: IO[str], max_width: int = 60) -> None:
    """An aligned text table; widths are terminal columns, so CJK and Hangul line up."""
    def clip(s: str) -> str:
        s = s.replace("\n", "\\n").replace("\t", " ")
        if display_width(s) <= max_width:
            return s
        kept, used = [], 0
        for ch in s:
            w = char_width(ch)
            if used + w > max_width - 1:
                break
            kept.append(ch)
            used += w
        return "".join(kept) + "…"

    def pad(s: str, width: int) -> str:
        return s + " " * (width - display_width(s))

    rows = [[clip(c) for c in r] for r in rows]
    widths = [max([display_width(n)] + [display_width(r[i]) for r in rows]) for i, n in enumerate(names)]
    out.write(" | ".join(pad(c, w) for c, w in zip(names, widths)).rstrip() + "\n")
    out.write("-+-".join("-" * w for w in widths) + "\n")
    for r in rows:
        out.write(" | ".join(pad(c, w) for c, w in zip(r, widths)).rstrip() + "\n")
    out.write(f"({len(rows)} row{'s' if len(rows) != 1 else ''})\n")
