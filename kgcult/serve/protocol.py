"""The SPARQL 1.1 Protocol: what a query or update request asks for, content
negotiation, and the answers and errors the endpoint gives (status, type, body)."""
from __future__ import annotations

import re

import urllib.parse
from dataclasses import dataclass, field
from typing import Iterable

from pyoxigraph import RdfFormat
from werkzeug.wrappers import Request

RESULTS_TYPES = {
    "application/sparql-results+json": "json",
    "application/json": "json",
    "application/sparql-results+xml": "xml",
    "application/xml": "xml",
    "text/xml": "xml",
    "text/csv": "csv",
    "text/tab-separated-values": "tsv",
}
RESULTS_MEDIA = {
    "json": "application/sparql-results+json",
    "xml": "application/sparql-results+xml",
    "csv": "text/csv",
    "tsv": "text/tab-separated-values",
}
RDF_TYPES = {
    "application/n-triples": RdfFormat.N_TRIPLES,
    "text/plain": RdfFormat.N_TRIPLES,
    "text/turtle": RdfFormat.TURTLE,
    "application/x-turtle": RdfFormat.TURTLE,
    "application/rdf+xml": RdfFormat.RDF_XML,
    "application/n-quads": RdfFormat.N_QUADS,
    "application/trig": RdfFormat.TRIG,
    "application/ld+json": RdfFormat.JSON_LD,
}
# short names accepted in ``format=`` / ``output=`` parameters (SPARQLWrapper, Virtuoso style)
FORMAT_NAMES = {
    "json": "application/sparql-results+json", "xml": "application/sparql-results+xml",
    "csv": "text/csv", "tsv": "text/tab-separated-values",
    "nt": "application/n-triples", "ntriples": "application/n-triples",
    "n-triples": "application/n-triples", "turtle": "text/turtle", "ttl": "text/turtle",
    "rdfxml": "application/rdf+xml", "rdf+xml": "application/rdf+xml",
    "nq": "application/n-quads", "nquads": "application/n-quads", "trig": "application/trig",
    "json-ld": "application/ld+json", "jsonld": "application/ld+json",
}
FORM = "application/x-www-form-urlencoded"
SPARQL_QUERY = "application/sparql-query"
SPARQL_UPDATE = "application/sparql-update"


class HttpError(Exception):
    """An answer other than success: status, message (the plain-text body), headers."""

    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


@dataclass
class Reply:
    """A successful answer, before it becomes an HTTP response."""
    status: int
    content_type: str
    body: bytes | Iterable[bytes]   # bytes, or pieces of a spooled body (with Content-Length in headers)
    headers: dict = field(default_factory=dict)


@dataclass(frozen=True)
class QueryRequest:
    text: str
    accept: list[str]               # media types, best first
    default_graphs: list[str]
    named_graphs: list[str]
    truncate: bool                  # limit-mode=truncate: cut at the row limit instead of 507
    client: str = ""                 # the client's address (per-client admission)
    offset: int = 0                  # offset=N: a SELECT's rows from the N+1th (kgcult's paging)
    rows: int | None = None          # rows=N: at most N rows of a SELECT (X-Kgcult-More says if more follow)
    total: bool = False              # total=true: X-Kgcult-Total-Rows counts every row of a SELECT


@dataclass(frozen=True)
class UpdateRequest:
    text: str
    authorization: str | None
    using_graphs: list[str]
    using_named_graphs: list[str]


_QVALUE = re.compile(r"0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?")


def parse_accept(header: str | None) -> list[str]:
    """Media types of an Accept header, best first (q values, then order)."""
    if not header:
        return []
    items = []
    for i, part in enumerate(header.split(",")):
        fields = [f.strip() for f in part.split(";")]
        mt = fields[0].lower()
        if not mt:
            continue
        q = 1.0
        for f in fields[1:]:
            if f.startswith("q="):  # RFC 9110's qvalue, ASCII digits (float() also reads "١.٥", "1_0")
                q = float(f[2:]) if _QVALUE.fullmatch(f[2:]) else 0.0
        if q > 0:
            items.append((-q, i, mt))
    return [mt for _, _, mt in sorted(items)]


def choose(accepts: list[str], supported: dict, default: str) -> str:
    """The first accepted media type we serve; ``default`` for wildcards or none."""
    for mt in accepts:
        if mt in supported:
            return mt
        if mt in ("*/*", "application/*", "text/*"):
            return default
    return default


def params(request: Request) -> dict[str, list[str]]:
    """The request's parameters: the query string and, for a POSTed form, its fields."""
    out = {k: list(v) for k, v in request.args.lists()}
    if request.method == "POST" and request.mimetype == FORM:
        try:
            form = urllib.parse.parse_qs(body(request).decode("utf-8"), keep_blank_values=True)
        except UnicodeDecodeError:
            raise HttpError(400, "the form is not UTF-8") from None
        for k, v in form.items():
            out.setdefault(k, []).extend(v)
    return out


def body(request: Request) -> bytes:
    """The request body (the server refuses one over the size limit with 413)."""
    if request.headers.get("Transfer-Encoding", "").lower() == "chunked":
        raise HttpError(411, "send a Content-Length (chunked requests are not supported)")
    return request.get_data(cache=True) if request.method == "POST" else b""


def sends_update(request: Request, fields: dict[str, list[str]]) -> bool:
    """True if a request to /query carries an update (body type or ``update=`` field)."""
    return request.mimetype == SPARQL_UPDATE or "update" in fields


def query_request(request: Request, fields: dict[str, list[str]]) -> QueryRequest | None:
    """The query a request asks for; None for a bare GET (a browser opening /query)."""
    if request.method == "POST" and request.mimetype == SPARQL_QUERY:
        text = _utf8(body(request))
    elif "query" in fields:
        if len(fields["query"]) > 1:
            raise HttpError(400, "more than one query= parameter")
        text = fields["query"][0]
    elif request.method in ("GET", "HEAD") and not fields:
        return None
    else:
        raise HttpError(400, "no query: pass query= (GET or POST form) or POST application/sparql-query")
    if not text.strip():
        raise HttpError(400, "empty query")
    accept = []
    for key in ("format", "output", "results"):
        for v in fields.get(key, []):
            mt = FORMAT_NAMES.get(v.lower()) or (v.lower() if "/" in v else None)
            if mt:
                accept.append(mt)
    accept += parse_accept(request.headers.get("Accept"))
    return QueryRequest(text, accept, fields.get("default-graph-uri", []), fields.get("named-graph-uri", []),
                        (fields.get("limit-mode") or [""])[0] == "truncate", request.remote_addr or "",
                        _count(fields, "offset") or 0, _count(fields, "rows"),
                        (fields.get("total") or [""])[0].lower() in ("true", "1"))


def _count(fields: dict[str, list[str]], name: str) -> int | None:
    """A paging parameter: a whole number of rows, 0 or more (None when absent)."""
    values = fields.get(name)
    if not values:
        return None
    # ASCII digits only: str.isdigit() also takes "²" (int() then raised: 500) and "١٢"
    # (which int() read as 12)
    if len(values) > 1 or not (values[0].isascii() and values[0].isdigit()) or len(values[0]) > 12:
        raise HttpError(400, f"{name}={values[0]!r}: give one whole number of rows, 0 or more")
    return int(values[0])


def update_request(request: Request, fields: dict[str, list[str]]) -> UpdateRequest:
    """The update a POST to /update carries."""
    if request.mimetype == SPARQL_UPDATE:
        text = _utf8(body(request))
    elif "update" in fields:
        text = fields["update"][0]
    else:
        raise HttpError(400, "no update: send application/sparql-update or an update= form field")
    return UpdateRequest(text, request.headers.get("Authorization"), fields.get("using-graph-uri", []),
                         fields.get("using-named-graph-uri", []))


def _utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise HttpError(400, "the request body is not UTF-8") from None
