"""``kgcult serve``: a SPARQL 1.1 Protocol endpoint over the store, with a query page.

* ``/query`` (GET, POST form, POST ``application/sparql-query``): SPARQL queries over the
  union of all graphs (``default-graph-uri`` / ``named-graph-uri`` narrow it, as the
  protocol says). Content negotiation: SPARQL results JSON, XML, CSV, TSV for SELECT and
  ASK; N-Triples, Turtle, RDF/XML, N-Quads, TriG, JSON-LD for CONSTRUCT and DESCRIBE.
* ``/update`` (POST form or ``application/sparql-update``): only with ``writable=True``,
  and only with ``Authorization: Bearer TOKEN``. Without it an update gets 403, on
  ``/update`` and when smuggled through ``/query``.
* ``/``: the query page (``kgcult/web/``), ``/entity/Q123``: what ``kgcult show`` shows,
  ``/api/entity/Q123``: the same card as JSON, ``/api/examples``, ``/api/status``.

Protection: every query runs in a bounded pool of worker threads with a deadline. A query
past its deadline gets 504; a full pool and queue gets 503 (``Retry-After``). pyoxigraph
cannot cancel a running query: the worker stops between result rows, but a query that
spends its time inside one evaluation step (a big aggregate) runs on in its worker
until it finishes. Such runaway queries can occupy at most ``workers`` threads, never
more; the server keeps answering cheap requests from the queue as workers free up.
Results over ``max_rows`` rows (or triples) or ``max_bytes`` serialized bytes are refused
with 507, unless the request asks ``limit-mode=truncate`` (the query page does): then the
first rows are sent with ``X-Kgcult-Truncated: true``.
"""
from __future__ import annotations

import csv
import hashlib
import hmac
import html
import io
import ipaddress
import json
import re
import secrets
import socket
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from xml.sax.saxutils import escape as xml_escape
from xml.sax.saxutils import quoteattr

import pyoxigraph as ox
from pyoxigraph import BlankNode, Literal, NamedNode, RdfFormat

from kgcult import vocab
from kgcult.version import __version__
from kgcult import inspection as inspect
from kgcult.sparql.results import json_term
from kgcult.errors import KgcultError
from kgcult.sparql.text import classify, first_keyword

WEB_DIR = Path(__file__).resolve().parent / "web"

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
_QID_PATH = re.compile(r"^/(api/)?entity/([QP]\d+)$")
_STATIC = {"index.html": "text/html; charset=utf-8", "app.js": "text/javascript; charset=utf-8",
           "style.css": "text/css; charset=utf-8"}

# Example queries of the query page. They read the kgc: closure graphs (built by
# `kgcult closure`), never `+`/`*` property paths.
EXAMPLES = [
    {
        "id": "dishes-per-country",
        "title": "Dishes per country",
        "query": """# Dishes (anything typed as a dish through the closure) per country of origin
SELECT ?country (COUNT(DISTINCT ?dish) AS ?dishes) WHERE {
  ?dish kgc:typedAs wd:Q746549 ;
        wdt:P495 ?country .
}
GROUP BY ?country
ORDER BY DESC(?dishes) ?country
LIMIT 50""",
    },
    {
        "id": "dish-card",
        "title": "A dish card (sushi)",
        "query": """# Everything said about one dish (wd:Q46383 sushi): labels, origin, ingredients, types
SELECT ?property ?value WHERE {
  wd:Q46383 ?property ?value .
  FILTER(?property IN (rdfs:label, schema:description, wdt:P31, wdt:P279,
                       wdt:P495, wdt:P527, wdt:P2012, wdt:P361))
  FILTER(!isLiteral(?value) || LANG(?value) IN ("en", "ja", ""))
}
ORDER BY ?property ?value""",
    },
    {
        "id": "food-hierarchy",
        "title": "Food hierarchy under a class (dish)",
        "query": """# Subclasses of dish (wd:Q746549) at any depth, read from the closure graph;
# depth 1 = a direct subclass
SELECT ?class ?label (COUNT(DISTINCT ?above) + 1 AS ?depth) WHERE {
  ?class kgc:subclassOf wd:Q746549 .
  OPTIONAL { ?class rdfs:label ?label FILTER(LANG(?label) = "en") }
  OPTIONAL { ?class kgc:subclassOf ?above . ?above kgc:subclassOf wd:Q746549 }
}
GROUP BY ?class ?label
ORDER BY ?depth ?label
LIMIT 200""",
    },
    {
        "id": "labels-all-languages",
        "title": "Labels of an entity in all languages",
        "query": """# rdfs:label and skos:altLabel of wd:Q46383 (sushi) in every language
SELECT ?lang ?label ?kind WHERE {
  { wd:Q46383 rdfs:label ?label BIND("label" AS ?kind) }
  UNION
  { wd:Q46383 skos:altLabel ?label BIND("alias" AS ?kind) }
  BIND(LANG(?label) AS ?lang)
}
ORDER BY ?lang ?kind ?label""",
    },
]


# -- configuration --------------------------------------------------------------------

@dataclass
class ServeConfig:
    bind: str = "127.0.0.1"
    port: int = 7878
    writable: bool = False
    token: str | None = None
    timeout: float = 30.0          # seconds per query (and per entity page)
    max_rows: int = 100_000        # rows of a SELECT, triples of a CONSTRUCT
    max_bytes: int = 64 << 20      # serialized response size
    workers: int = 8               # query worker threads (Oxigraph evaluates without the GIL)
    queue: int = 64                # queries waiting for a worker before 503
    queue_timeout: float | None = None  # seconds a query may wait for a worker (default: timeout)
    max_request_bytes: int = 1 << 20
    cors: bool = False
    log: object = None             # callable(str) for the access log, or None
    generated_token: bool = field(default=False, repr=False)


def is_loopback(host: str) -> bool:
    """True if ``host`` (an address or a name) only ever means this machine."""
    host = host.strip("[]")
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    addrs = {i[4][0] for i in infos}
    return bool(addrs) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addrs)


def check_config(cfg: ServeConfig) -> ServeConfig:
    """Refuse unsafe or impossible settings before anything listens."""
    if cfg.token is not None and len(cfg.token) < 8:
        raise KgcultError("--token: use at least 8 characters")
    if cfg.token is not None and not cfg.writable:
        raise KgcultError("--token only makes sense with --writable (the endpoint is read-only without it)")
    if cfg.writable and not cfg.token:
        if not is_loopback(cfg.bind):
            raise KgcultError(
                f"refusing --writable on {cfg.bind}, which is not a loopback address, without "
                "--token: anyone who can reach it could change the store"
            )
        cfg.token = secrets.token_urlsafe(24)
        cfg.generated_token = True
    if cfg.queue_timeout is not None and cfg.queue_timeout < 0:
        raise KgcultError("--queue-timeout must be 0 or more")
    for name in ("timeout", "max_rows", "max_bytes", "workers"):
        if getattr(cfg, name) <= 0:
            raise KgcultError(f"--{name.replace('_', '-')} must be positive")
    if cfg.queue < 0:
        raise KgcultError("--queue must be 0 or more")
    if not 0 <= cfg.port < 65536:
        raise KgcultError(f"--port {cfg.port}: not a TCP port")
    return cfg


# -- content negotiation and serialization ---------------------------------------------

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
            if f.startswith("q="):
                try:
                    q = float(f[2:])
                except ValueError:
                    q = 0.0
        if q > 0:
            items.append((-q, i, mt))
    return [mt for _, _, mt in sorted(items)]


def choose(accepts: list[str], supported: dict, default: str) -> str:
    for mt in accepts:
        if mt in supported:
            return mt
        if mt in ("*/*", "application/*", "text/*"):
            return default
    return default


def _term_xml(t) -> str:
    if isinstance(t, NamedNode):
        return f"<uri>{xml_escape(t.value)}</uri>"
    if isinstance(t, BlankNode):
        return f"<bnode>{xml_escape(t.value)}</bnode>"
    if isinstance(t, Literal):
        if t.language:
            return f"<literal xml:lang={quoteattr(t.language)}>{xml_escape(t.value)}</literal>"
        if t.datatype.value != vocab.XSD + "string":
            return f"<literal datatype={quoteattr(t.datatype.value)}>{xml_escape(t.value)}</literal>"
        return f"<literal>{xml_escape(t.value)}</literal>"
    return f"<literal>{xml_escape(str(t))}</literal>"


def serialize_solutions(names: list[str], rows: list, fmt: str) -> bytes:
    if fmt == "json":
        bindings = [{k: json_term(t) for k, t in zip(names, r) if t is not None} for r in rows]
        return json.dumps({"head": {"vars": names}, "results": {"bindings": bindings}},
                          ensure_ascii=False).encode("utf-8")
    if fmt == "xml":
        out = ['<?xml version="1.0"?>\n<sparql xmlns="http://www.w3.org/2005/sparql-results#">\n<head>']
        out += [f"<variable name={quoteattr(n)}/>" for n in names]
        out.append("</head>\n<results>")
        for r in rows:
            out.append("<result>" + "".join(
                f"<binding name={quoteattr(n)}>{_term_xml(t)}</binding>"
                for n, t in zip(names, r) if t is not None) + "</result>")
        out.append("</results>\n</sparql>\n")
        return "\n".join(out).encode("utf-8")
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\r\n")
        w.writerow(names)
        for r in rows:
            w.writerow(["" if t is None else t.value for t in r])
        return buf.getvalue().encode("utf-8")
    lines = ["\t".join("?" + n for n in names)]  # tsv: terms in N-Triples syntax
    lines += ["\t".join("" if t is None else str(t) for t in r) for r in rows]
    return ("\n".join(lines) + "\n").encode("utf-8")


def serialize_boolean(value: bool, fmt: str) -> bytes:
    if fmt == "xml":
        return ('<?xml version="1.0"?>\n<sparql xmlns="http://www.w3.org/2005/sparql-results#">'
                f"<head/><boolean>{'true' if value else 'false'}</boolean></sparql>\n").encode()
    if fmt in ("csv", "tsv"):
        return (("true" if value else "false") + "\n").encode()
    return json.dumps({"head": {}, "boolean": bool(value)}).encode()


class HttpError(Exception):
    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


@dataclass
class Response:
    status: int
    content_type: str
    body: bytes
    headers: dict = field(default_factory=dict)


# -- the application (everything but HTTP parsing) ----------------------------------------

class SparqlApp:
    """The endpoint's logic over one Store, independent of the HTTP server."""

    def __init__(self, store, cfg: ServeConfig):
        self.store, self.cfg = store, cfg
        self.pool = ThreadPoolExecutor(max_workers=cfg.workers, thread_name_prefix="kgcult-query")
        self.slots = threading.BoundedSemaphore(cfg.workers + cfg.queue)
        self.write_lock = threading.Lock()
        self.stats = {"queries": 0, "timeouts": 0, "busy": 0, "errors": 0, "updates": 0}
        self._stats_lock = threading.Lock()

    def count(self, key: str) -> None:
        with self._stats_lock:
            self.stats[key] += 1

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)

    # run a job in the pool with a deadline
    def run(self, job, *args):
        """Run ``job(*args, deadline, cancel)`` in the pool. The timeout counts from the
        moment a worker starts it; waiting for a worker is bounded by ``queue_timeout``
        (503 past it, and the job is dropped before it starts)."""
        if not self.slots.acquire(blocking=False):
            self.count("busy")
            raise HttpError(503, "the server is busy: all query workers and the queue are taken; retry later",
                            {"Retry-After": "1"})
        cancel, started = threading.Event(), threading.Event()
        box: dict = {}

        def start():
            if cancel.is_set():  # given up while it waited for a worker
                return HttpError(503, "gave up waiting for a query worker")
            box["deadline"] = time.monotonic() + self.cfg.timeout
            started.set()
            return _contained(job, *args, box["deadline"], cancel)

        try:
            fut = self.pool.submit(start)
        except RuntimeError:  # pool shut down
            self.slots.release()
            raise HttpError(503, "the server is shutting down")
        fut.add_done_callback(lambda _f: self.slots.release())
        queue_timeout = self.cfg.queue_timeout if self.cfg.queue_timeout is not None else self.cfg.timeout
        if not started.wait(queue_timeout):
            cancel.set()
            fut.cancel()
            if not started.is_set():
                self.count("busy")
                raise HttpError(503, f"no query worker became free within {queue_timeout:g} s; retry later "
                                     "(kgcult serve --workers / --queue-timeout)", {"Retry-After": "1"})
        try:
            out = fut.result(timeout=max(box["deadline"] - time.monotonic(), 0))
        except FutureTimeout:
            cancel.set()
            self.count("timeouts")
            raise HttpError(504, f"query timed out after {self.cfg.timeout:g} s (kgcult serve --timeout)")
        if isinstance(out, HttpError):
            if out.status == 504:
                self.count("timeouts")
            raise out
        return out

    # SPARQL query
    def query(self, text: str, accept: list[str], default_graphs: list[str], named_graphs: list[str],
              truncate: bool) -> Response:
        kind = classify(text)
        if kind == "update":
            if self.cfg.writable:
                raise HttpError(400, "this is an update: send it to /update, not /query")
            raise HttpError(403, "updates are refused: this endpoint is read-only "
                                 "(start it with `kgcult serve --writable --token ...` to allow them at /update)")
        self.count("queries")
        kwargs: dict = {"prefixes": vocab.PREFIXES}
        try:
            if default_graphs:
                kwargs["default_graph"] = [NamedNode(g) for g in default_graphs]
            else:
                kwargs["use_default_graph_as_union"] = True
            if named_graphs:
                kwargs["named_graphs"] = [NamedNode(g) for g in named_graphs]
        except ValueError as e:
            raise HttpError(400, f"invalid graph IRI: {e}")
        return self.run(self._query_job, text, kwargs, accept, truncate)

    def _query_job(self, text, kwargs, accept, truncate, deadline, cancel) -> Response:
        # pyoxigraph result objects may only be dropped on the thread that made them: keep
        # every reference (locals, tracebacks) inside this worker thread.
        holder: list = []
        try:
            return self._evaluate(holder, text, kwargs, accept, truncate, deadline, cancel)
        except HttpError as e:
            e.__traceback__ = None
            e.__context__ = None
            return e
        except Exception as e:  # noqa: BLE001 - reported as a 500 by the handler
            return HttpError(500, f"query failed: {type(e).__name__}: {e}")
        finally:
            holder.clear()

    def _evaluate(self, holder, text, kwargs, accept, truncate, deadline, cancel) -> Response:
        try:
            result = self.store.ox.query(text, **kwargs)
            holder.append(result)
        except SyntaxError as e:
            raise HttpError(400, f"SPARQL syntax error: {e}")
        except (OSError, ValueError, TypeError) as e:
            raise HttpError(500, f"query failed: {e}")
        headers: dict = {}
        limit = self.cfg.max_rows

        def collect(iterable):
            items = []
            try:
                for i, item in enumerate(iterable):
                    if i >= limit:
                        if truncate:
                            headers["X-Kgcult-Truncated"] = "true"
                            break
                        raise HttpError(507, f"the result has more than {limit} rows; add a LIMIT "
                                             "(or raise kgcult serve --max-rows)",
                                        {"X-Kgcult-Limit": f"rows={limit}"})
                    if i % 16 == 0 and (cancel.is_set() or time.monotonic() > deadline):
                        raise HttpError(504, f"query timed out after {self.cfg.timeout:g} s (kgcult serve --timeout)")
                    items.append(item)
            except (OSError, ValueError) as e:
                raise HttpError(500, f"query failed: {e}")
            return items

        if isinstance(result, ox.QueryBoolean):
            mt = choose(accept, RESULTS_TYPES, "application/sparql-results+json")
            fmt = RESULTS_TYPES[mt]
            return Response(200, RESULTS_MEDIA[fmt] + "; charset=utf-8", serialize_boolean(bool(result), fmt))
        if isinstance(result, ox.QueryTriples):
            mt = choose(accept, RDF_TYPES, "application/n-triples")
            triples = collect(result)
            rdf_format = RDF_TYPES[mt]
            body = ox.serialize(triples, format=rdf_format,
                                **({"prefixes": vocab.PREFIXES} if rdf_format in (RdfFormat.TURTLE, RdfFormat.TRIG) else {}))
            body = body or b""
            headers["X-Kgcult-Rows"] = str(len(triples))
            return self._limit_bytes(Response(200, rdf_format.media_type + "; charset=utf-8", body, headers))
        names = [v.value for v in result.variables]
        mt = choose(accept, RESULTS_TYPES, "application/sparql-results+json")
        fmt = RESULTS_TYPES[mt]
        rows = collect(result)
        rows = [[sol[n] for n in names] for sol in rows]
        headers["X-Kgcult-Rows"] = str(len(rows))
        body = serialize_solutions(names, rows, fmt)
        return self._limit_bytes(Response(200, RESULTS_MEDIA[fmt] + "; charset=utf-8", body, headers))

    def _limit_bytes(self, resp: Response) -> Response:
        if len(resp.body) > self.cfg.max_bytes:
            raise HttpError(507, f"the result is larger than {self.cfg.max_bytes} bytes; add a LIMIT "
                                 "(or raise kgcult serve --max-bytes)", {"X-Kgcult-Limit": f"bytes={self.cfg.max_bytes}"})
        return resp

    # SPARQL update
    def update(self, text: str, authorization: str | None, default_graphs, named_graphs) -> Response:
        if not self.cfg.writable:
            raise HttpError(403, "updates are refused: this endpoint is read-only "
                                 "(start it with `kgcult serve --writable --token ...`)")
        if not authorization or not authorization.startswith("Bearer "):
            raise HttpError(401, "updates need `Authorization: Bearer TOKEN`",
                            {"WWW-Authenticate": 'Bearer realm="kgcult"'})
        given = authorization[len("Bearer "):].strip().encode()
        if not hmac.compare_digest(given, (self.cfg.token or "").encode()):
            raise HttpError(403, "wrong token", {"WWW-Authenticate": 'Bearer realm="kgcult", error="invalid_token"'})
        if default_graphs or named_graphs:
            raise HttpError(400, "using-graph-uri / using-named-graph-uri are not supported; use WITH or GRAPH")
        if classify(text) == "query":
            raise HttpError(400, "this is a query: send it to /query")
        with self.write_lock:
            try:
                self.store.ox.update(text, prefixes=vocab.PREFIXES)
            except SyntaxError as e:
                raise HttpError(400, f"SPARQL syntax error: {e}")
            except OSError as e:
                raise HttpError(500, f"update failed: {e}")
            self.count("updates")
            self.store.mark_closure_stale()
            self.store.record_activity(kind="update", source="kgcult serve /update",
                                       extra={"updateSha256": hashlib.sha256(text.encode()).hexdigest()})
            self.store.flush()
        return Response(204, "text/plain", b"")

    # entity card
    def entity(self, qid: str, lang: str, as_json: bool) -> Response:
        if not re.match(r"^[A-Za-z-]{1,20}$", lang):
            raise HttpError(400, "lang: expected a language tag such as en or zh-hans")

        def job(deadline, cancel):
            try:
                return inspect.show(self.store, qid, lang=lang)
            except KgcultError as e:
                raise HttpError(404, str(e))

        card = self.run(job)
        if as_json:
            return Response(200, "application/json; charset=utf-8",
                            json.dumps(card, ensure_ascii=False, indent=2).encode("utf-8"))
        return Response(200, "text/html; charset=utf-8", render_card(card, lang).encode("utf-8"))

    def status(self) -> dict:
        return {
            "kgcult": __version__, "store": str(getattr(self.store, "location", "")),
            "writable": self.cfg.writable, "closure_stale": bool(self.store.closure_stale),
            "timeout_s": self.cfg.timeout, "max_rows": self.cfg.max_rows, "max_bytes": self.cfg.max_bytes,
            "workers": self.cfg.workers, "stats": dict(self.stats),
        }


def _contained(job, *args):
    """Run ``job`` and return its result or its error as a value, with the traceback
    dropped here: pyoxigraph result objects must be freed on the thread that made them."""
    try:
        return job(*args)
    except HttpError as e:
        e.__traceback__ = None
        e.__context__ = None
        return e
    except Exception as e:  # noqa: BLE001 - becomes a 500 answer, the server goes on
        return HttpError(500, f"internal error: {type(e).__name__}: {e}")


def _entity_link(qid: str, label: str, lang: str) -> str:
    q = html.escape(qid)
    text = html.escape(f"{label} ({qid})" if label else qid)
    if re.match(r"^[QP]\d+$", qid):
        return f'<a href="/entity/{q}?lang={html.escape(lang)}">{text}</a>'
    return text


def render_card(card: dict, lang: str) -> str:
    """The entity page: the card of ``kgcult show`` as HTML (every value escaped)."""
    e = html.escape
    title = f"{card['qid']} {card.get('label') or ''}".strip()
    out = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{e(title)} · kgcult</title><link rel='stylesheet' href='/static/style.css'></head><body>",
        "<header><a href='/'>kgcult</a> · entity</header><main class='card'>",
        f"<h1>{e(card.get('label') or card['qid'])} <span class='qid'>{e(card['qid'])}</span></h1>",
    ]
    desc = card["descriptions"].get(lang) or card["descriptions"].get("en")
    if desc:
        out.append(f"<p class='desc'>{e(desc)}</p>")
    out.append(f"<p class='iri'><a href='{e(card['iri'])}'>{e(card['iri'])}</a></p>")
    out.append("<h2>Labels</h2><table id='labels'><tr><th>language</th><th>label</th><th>aliases</th><th>description</th></tr>")
    langs = sorted(set(card["labels"]) | set(card["aliases"]) | set(card["descriptions"]))
    for l in langs:
        out.append(f"<tr><td>{e(l)}</td><td>{e(card['labels'].get(l, ''))}</td>"
                   f"<td>{e(' | '.join(card['aliases'].get(l, [])))}</td><td>{e(card['descriptions'].get(l, ''))}</td></tr>")
    out.append("</table>")
    if card.get("sitelinks") is not None:
        out.append(f"<p>sitelinks: {int(card['sitelinks'])}</p>")
    out.append("<h2>Claims</h2><table id='claims'><tr><th>property</th><th>value</th></tr>")
    for c in card["claims"]:
        prop = f"{c['property']} ({c['property_label']})" if c["property_label"] else c["property"]
        out.append(f"<tr><td>{e(prop)}</td><td>{_entity_link(c['value'], c.get('value_label', ''), lang)}</td></tr>")
    out.append("</table>")
    if card["ancestors"]:
        out.append("<h2>Ancestors <small>(from the closure graphs)</small></h2><dl id='ancestors'>")
        for k, ys in card["ancestors"].items():
            links = ", ".join(_entity_link(y["qid"], y["label"], lang) for y in ys)
            out.append(f"<dt>{e(k)}</dt><dd>{links}</dd>")
        out.append("</dl>")
    out.append("</main></body></html>\n")
    return "".join(out)


# -- HTTP -----------------------------------------------------------------------------

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes: no 40 ms delayed-ACK stalls
    server_version = f"kgcult/{__version__}"
    app: SparqlApp  # set on the subclass made per server

    def log_message(self, format, *args):  # noqa: A002 - signature from http.server
        log = self.app.cfg.log
        if log:
            log("%s - %s" % (self.address_string(), format % args))

    # helpers
    def _send(self, resp: Response, head_only: bool = False) -> None:
        self.send_response(resp.status)
        self.send_header("Content-Type", resp.content_type)
        self.send_header("Content-Length", str(len(resp.body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        if self.app.cfg.cors:
            self.send_header("Access-Control-Allow-Origin", "*")
        for k, v in resp.headers.items():
            self.send_header(k, v)
        self.end_headers()
        if not head_only and resp.body:
            self.wfile.write(resp.body)

    def _error(self, err: HttpError) -> None:
        if err.status >= 500 and err.status not in (503, 504, 507):
            self.app.count("errors")
        self._send(Response(err.status, "text/plain; charset=utf-8", (err.message + "\n").encode("utf-8"), err.headers))

    def _read_body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raise HttpError(411, "send a Content-Length (chunked requests are not supported)")
        try:
            n = int(length or 0)
        except ValueError:
            raise HttpError(400, "bad Content-Length")
        if n > self.app.cfg.max_request_bytes:
            self.close_connection = True
            raise HttpError(413, f"request body over {self.app.cfg.max_request_bytes} bytes")
        return self.rfile.read(n) if n else b""

    def _params(self) -> tuple[str, dict[str, list[str]], str, bytes]:
        url = urllib.parse.urlsplit(self.path)
        params = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        body = b""
        if self.command == "POST":
            body = self._read_body()
            if ctype == "application/x-www-form-urlencoded":
                try:
                    form = urllib.parse.parse_qs(body.decode("utf-8"), keep_blank_values=True)
                except UnicodeDecodeError:
                    raise HttpError(400, "the form is not UTF-8")
                for k, v in form.items():
                    params.setdefault(k, []).extend(v)
        return url.path, params, ctype, body

    def do_HEAD(self):
        self._dispatch(head_only=True)

    def do_GET(self):
        self._dispatch()

    def do_POST(self):
        self._dispatch()

    def do_OPTIONS(self):
        resp = Response(204, "text/plain", b"", {"Allow": "GET, POST, HEAD, OPTIONS"})
        if self.app.cfg.cors:
            resp.headers.update({"Access-Control-Allow-Methods": "GET, POST, OPTIONS",
                                 "Access-Control-Allow-Headers": "Content-Type, Accept, Authorization"})
        self._send(resp)

    def do_PUT(self):
        self._error(HttpError(405, "method not allowed", {"Allow": "GET, POST, HEAD, OPTIONS"}))

    do_DELETE = do_PATCH = do_PUT

    def _dispatch(self, head_only: bool = False) -> None:
        try:
            path, params, ctype, body = self._params()
            resp = self._route(path, params, ctype, body)
        except HttpError as e:
            self._error(e)
            return
        except (BrokenPipeError, ConnectionResetError):
            return
        except Exception as e:  # a bug: answer 500, keep serving
            self._error(HttpError(500, f"internal error: {type(e).__name__}: {e}"))
            return
        try:
            self._send(resp, head_only)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _route(self, path, params, ctype, body) -> Response:
        app = self.app
        if path in ("/query", "/sparql"):
            return self._query(params, ctype, body)
        if path == "/update":
            if self.command != "POST":
                raise HttpError(405, "updates are sent with POST", {"Allow": "POST"})
            if ctype == "application/sparql-update":
                text = _utf8(body)
            elif "update" in params:
                text = params["update"][0]
            else:
                raise HttpError(400, "no update: send application/sparql-update or an update= form field")
            return app.update(text, self.headers.get("Authorization"), params.get("using-graph-uri", []),
                              params.get("using-named-graph-uri", []))
        if self.command == "POST" and (path in ("/", "/index.html", "/api/examples", "/api/status")
                                       or path.startswith(("/static/", "/entity/", "/api/entity/"))):
            raise HttpError(405, "POST goes to /query or /update", {"Allow": "GET, HEAD"})
        if path in ("/", "/index.html"):
            return _static("index.html")
        if path.startswith("/static/"):
            return _static(path[len("/static/"):])
        m = _QID_PATH.match(path)
        if m:
            lang = (params.get("lang") or ["en"])[0]
            return app.entity(m.group(2), lang, as_json=bool(m.group(1)))
        if path == "/api/examples":
            return _json(EXAMPLES)
        if path == "/api/status":
            return _json(app.status())
        raise HttpError(404, f"no such page: {path}")

    def _query(self, params, ctype, body) -> Response:
        if ctype == "application/sparql-update" or "update" in params:
            if self.app.cfg.writable:
                raise HttpError(400, "updates go to /update, not /query")
            raise HttpError(403, "updates are refused: this endpoint is read-only")
        if self.command == "POST" and ctype == "application/sparql-query":
            text = _utf8(body)
        elif "query" in params:
            if len(params["query"]) > 1:
                raise HttpError(400, "more than one query= parameter")
            text = params["query"][0]
        elif self.command in ("GET", "HEAD") and not params:
            # a browser opening /query: the page
            return _static("index.html")
        else:
            raise HttpError(400, "no query: pass query= (GET or POST form) or POST application/sparql-query")
        if not text.strip():
            raise HttpError(400, "empty query")
        accept = []
        for key in ("format", "output", "results"):
            for v in params.get(key, []):
                mt = FORMAT_NAMES.get(v.lower()) or (v.lower() if "/" in v else None)
                if mt:
                    accept.append(mt)
        accept += parse_accept(self.headers.get("Accept"))
        truncate = (params.get("limit-mode") or [""])[0] == "truncate"
        return self.app.query(text, accept, params.get("default-graph-uri", []),
                              params.get("named-graph-uri", []), truncate)


def _utf8(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise HttpError(400, "the request body is not UTF-8")


def _json(obj) -> Response:
    return Response(200, "application/json; charset=utf-8", json.dumps(obj, ensure_ascii=False).encode("utf-8"))


def _static(name: str) -> Response:
    if name not in _STATIC:
        raise HttpError(404, f"no such file: {name}")
    try:
        data = (WEB_DIR / name).read_bytes()
    except OSError:
        raise HttpError(500, f"the query page is missing from the installation ({WEB_DIR / name})")
    return Response(200, _STATIC[name], data, {"Cache-Control": "no-cache"})


class KgcultServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, store, cfg: ServeConfig):
        self.app = SparqlApp(store, cfg)
        handler = type("BoundHandler", (Handler,), {"app": self.app})
        family = socket.AF_INET6 if ":" in cfg.bind.strip("[]") else socket.AF_INET
        self.address_family = family
        try:
            super().__init__((cfg.bind.strip("[]"), cfg.port), handler)
        except OSError as e:
            self.app.close()
            raise KgcultError(f"cannot listen on {cfg.bind}:{cfg.port}: {e.strerror or e}") from None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def url(self) -> str:
        host = self.app.cfg.bind
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        if host in ("0.0.0.0", "[::]"):
            host = "127.0.0.1"
        return f"http://{host}:{self.port}"

    def start(self) -> "KgcultServer":
        """Serve in a background thread (for tests, benchmarks and notebooks)."""
        self._thread = threading.Thread(target=self.serve_forever, name="kgcult-serve", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.app.close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def open_for_serving(location: str, writable: bool):
    """The embedded store, read-only unless updates are allowed."""
    from kgcult.store.embedded import Store

    if str(location).startswith(("sparql+http://", "sparql+https://")):
        raise KgcultError("kgcult serve serves an embedded store, not a remote endpoint")
    if not writable and not Path(location).exists():
        raise KgcultError(f"no store at {location}: create one with `kgcult load` or `kgcult snapshot import`")
    return Store(location, read_only=not writable)


def make_server(store, cfg: ServeConfig | None = None) -> KgcultServer:
    """A ready (not yet serving) server over ``store``; ``cfg`` is checked first."""
    cfg = check_config(cfg or ServeConfig())
    return KgcultServer(store, cfg)


def serve(store, cfg: ServeConfig | None = None, ready=None) -> None:
    """Serve until interrupted. ``ready(server)`` is called once it listens."""
    server = make_server(store, cfg)
    if ready:
        ready(server)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        server.app.close()


__all__ = ["ServeConfig", "KgcultServer", "SparqlApp", "make_server", "serve", "check_config",
           "is_loopback", "classify", "first_keyword", "parse_accept", "EXAMPLES", "open_for_serving", "render_card"]
