"""Writing SPARQL results: table, csv, tsv, json (W3C SPARQL 1.1 Query Results JSON) and
jsonl for SELECT; the same for ASK; N-Triples for CONSTRUCT and DESCRIBE."""
from __future__ import annotations

import io
import json
from typing import IO

import pyoxigraph as ox
from pyoxigraph import BlankNode, Literal, NamedNode, QueryResultsFormat

from kgcult import vocab

FORMATS = ("table", "csv", "tsv", "json", "jsonl")
_W3C = {"csv": QueryResultsFormat.CSV, "tsv": QueryResultsFormat.TSV, "json": QueryResultsFormat.JSON}
_XSD_STRING = vocab.XSD + "string"


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
        if dt in (vocab.XSD + "integer", vocab.XSD + "int", vocab.XSD + "long"):
            try:
                return int(term.value)
            except ValueError:
                return term.value
        if dt in (vocab.XSD + "decimal", vocab.XSD + "double", vocab.XSD + "float"):
            try:
                return float(term.value)
            except ValueError:
                return term.value
        if dt == vocab.XSD + "boolean":
            return term.value == "true"
        return term.value
    return term.value


def write(result, fmt: str, out: IO[str]) -> int:
    """Write a query result to a text stream; returns the number of rows (or triples)."""
    if isinstance(result, ox.QueryBoolean) or isinstance(result, bool):
        value = bool(result)
        if fmt == "json":
            out.write(json.dumps({"head": {}, "boolean": value}) + "\n")
        elif fmt == "jsonl":
            out.write(json.dumps({"boolean": value}) + "\n")
        else:
            out.write(("true" if value else "false") + "\n")
        return 1
    if isinstance(result, ox.QueryTriples):
        n = 0
        for t in result:
            out.write(f"{t} .\n")
            n += 1
        return n
    # SELECT
    if fmt in _W3C:
        buf = io.BytesIO()
        rows = list(result)
        _serialize_solutions(_Solutions(result.variables, rows), fmt, buf)
        out.write(buf.getvalue().decode("utf-8"))
        if fmt == "json":
            out.write("\n")
        return len(rows)
    names = [v.value for v in result.variables]
    if fmt == "jsonl":
        n = 0
        for sol in result:
            out.write(json.dumps({k: plain(sol[k]) for k in names}, ensure_ascii=False) + "\n")
            n += 1
        return n
    rows = [[compact(sol[k]) for k in names] for sol in result]
    _table(names, rows, out)
    return len(rows)


class _Solutions:
    def __init__(self, variables, rows):
        self.variables, self.rows = variables, rows


def _serialize_solutions(sols: _Solutions, fmt: str, buf: io.BytesIO) -> None:
    names = [v.value for v in sols.variables]
    if fmt == "json":
        bindings = []
        for sol in sols.rows:
            b = {}
            for k in names:
                t = sol[k]
                if t is not None:
                    b[k] = json_term(t)
            bindings.append(b)
        doc = {"head": {"vars": names}, "results": {"bindings": bindings}}
        buf.write(json.dumps(doc, ensure_ascii=False).encode("utf-8"))
    elif fmt == "csv":
        import csv

        text = io.StringIO()
        w = csv.writer(text, lineterminator="\r\n")
        w.writerow(names)
        for sol in sols.rows:
            w.writerow(["" if sol[k] is None else sol[k].value for k in names])
        buf.write(text.getvalue().encode("utf-8"))
    else:  # tsv: W3C SPARQL TSV, terms in Turtle/N-Triples syntax
        lines = ["\t".join("?" + n for n in names)]
        for sol in sols.rows:
            lines.append("\t".join("" if sol[k] is None else str(sol[k]) for k in names))
        buf.write(("\n".join(lines) + "\n").encode("utf-8"))


def json_term(t) -> dict:
    """A term in W3C SPARQL 1.1 Query Results JSON form."""
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
