"""A remote SPARQL 1.1 endpoint as a read-only store: ``--store sparql+https://host/path``.

:class:`RemoteStore` offers the read interface of :class:`kgcult.store.Store` (``query``,
``select``, ``graph_counts``, ``triple_count``, ``data_graphs``, ``quads``,
``provenance``, ``get_state``) over the SPARQL 1.1 Protocol (through
:class:`kgcult.sparql.client.SparqlClient`: busy or failing endpoints and refused
connections are retried, a query whose answer had started or timed out is not), and
returns real pyoxigraph
result objects (parsed from SPARQL results JSON / N-Triples), so the views, the linker,
``show`` and ``stats`` run unchanged against QLever, a WDQS mirror, ``oxigraph serve`` or
``kgcult serve``.

Default graph: kgcult queries expect one default graph holding every triple once (as
WDQS's). Queries are sent as written, so the default graph is the endpoint's: QLever and
WDQS serve one graph, a set; ``kgcult serve`` serves its store's set; ``oxigraph serve``
over a kgcult store directory serves that set as its default graph (with
``--union-default-graph`` it would add every named graph's copy: duplicates kgcult cannot
remove, docs/store.md). Query parameters in the store URL are sent with every request,
which is how endpoint options are passed.

The closure (``kgc:typedAs``, ``kgc:subclassOf``, ...) is not computed here: the
endpoint must hold it in its default graph (serve a kgcult store, or load the closure
triples exported from one). ``closure_stale`` is therefore always False.
"""
from __future__ import annotations

import itertools
import json
import os
import re
import urllib.parse
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator

import pyoxigraph as ox
from pyoxigraph import NamedNode, Quad, QueryResultsFormat, RdfFormat

from kgcult import ontology, vocab
from kgcult.errors import KgcultError
from kgcult.safe_text import printable
from kgcult.sparql import wdqs
from kgcult.sparql.client import MAX_ANSWER, USER_AGENT, RemoteError, Reply, SparqlClient, split_credentials
from kgcult.sparql.query_text import bind_values, first_keyword
from kgcult.sparql.tokens import tokenize
from kgcult.store.base import StoreReads

DEFAULT_TIMEOUT = 300.0
RETRY_STATUS = frozenset({429, 502, 503})
# rows of one VALUES block sent at a time: Virtuoso 7.2 refuses a few thousand (SP030 "Too
# many arguments", SQ199 "Maximum size (32767) of a code vector exceeded")
VALUES_ROWS = 1000
_STATE = vocab.KGC + "store"


def _query_form(text: str) -> str:
    """'select' | 'ask' | 'construct' | 'describe' (defaults to 'select')."""
    w = first_keyword(text)
    return w if w in ("ask", "construct", "describe") else "select"


def _refused(what: str):
    """A write method of the store interface, refused on a read-only endpoint."""
    def write(self, *args, **kwargs):
        raise KgcultError(f"{self.location} is read-only: cannot {what} on a remote endpoint "
                          "(use an embedded store, --store PATH)")

    return write


class RemoteStore(StoreReads):
    """A read-only store backed by a remote SPARQL 1.1 query endpoint."""

    remote = True
    read_only = True
    closure_stale = False

    def __init__(self, url: str, *, timeout: float | None = None, retries: int = 2,
                 user_agent: str = USER_AGENT, headers: dict | None = None, max_answer: int | None = None,
                 values_rows: int | None = None, page_rows: int | None = None):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise KgcultError(f"not an http(s) SPARQL endpoint: {url!r} (use sparql+https://host/path)")
        # user:password@ in the URL: sent as Basic auth to this origin only, never shown
        with_credentials = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path or "/", "", ""))
        self.url = split_credentials(with_credentials)[0]
        self.location = "sparql+" + url
        # URL parameters (e.g. ?union-default-graph for oxigraph serve) go with every request
        self.extra_params = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        env_timeout = os.environ.get("KGCULT_REMOTE_TIMEOUT")
        self.timeout = float(timeout if timeout is not None else env_timeout or DEFAULT_TIMEOUT)
        env_cap = os.environ.get("KGCULT_REMOTE_MAX_ANSWER")
        try:
            cap = int(max_answer if max_answer is not None else env_cap or MAX_ANSWER)
        except ValueError:
            raise KgcultError(f"KGCULT_REMOTE_MAX_ANSWER={env_cap!r} is not a number of bytes") from None
        self.values_rows: int = _positive("KGCULT_REMOTE_VALUES_ROWS", values_rows, VALUES_ROWS) or VALUES_ROWS
        # an engine that cuts a SELECT at a row cap without saying so (QLever): the cap
        self.page_rows = _positive("KGCULT_REMOTE_PAGE_ROWS", page_rows, None)
        # the graphs the store URL makes the default graph: not counted as named graphs
        self.default_graphs = frozenset(v for k, v in self.extra_params if k == "default-graph-uri")
        headers = dict(headers or {})
        token = os.environ.get("KGCULT_REMOTE_TOKEN")
        if token:
            headers.setdefault("Authorization", f"Bearer {token}")
        # a query whose answer had started, timed out or failed on the server (500, 504: often
        # the endpoint's own timeout) is not run again: it would be as slow; busy answers are
        self.client = SparqlClient(with_credentials, user_agent=user_agent, headers=headers, timeout=self.timeout,
                                   attempts=retries + 1, max_retry_after=30.0, retry_reads=False,
                                   retry_status=RETRY_STATUS, max_answer=cap)
        self._named: bool | None = None

    def __repr__(self) -> str:
        return f"RemoteStore({self.url!r})"

    # -- HTTP ---------------------------------------------------------------------------

    def _post(self, query: str, accept: str, graph: str | None) -> Reply:
        params = [(k, v) for k, v in self.extra_params
                  if not (graph and k in ("union-default-graph", "default-graph-uri"))]
        if graph:
            params.append(("default-graph-uri", graph))
        try:
            return self.client.query(query, accept, params=params)
        except RemoteError as e:
            line = explain_refusal(self.url, e.status, e.problem)
            if line is None:
                raise
            raise RemoteError(self.url, line.split(": ", 1)[1], status=e.status) from None

    # -- querying ---------------------------------------------------------------------

    def query(self, sparql: str, *, graph: str | None = None, bindings: dict | None = None,
              rows: tuple | None = None):
        """Run a query on the endpoint; returns pyoxigraph QuerySolutions, QueryBoolean or
        QueryTriples, as :meth:`kgcult.store.Store.query` does.

        ``rows`` longer than ``values_rows`` are sent as several queries, one VALUES block
        each; their solutions (their ASK answers: any of them) are the answer. A SELECT whose
        answer the endpoint cut at its row cap is read again page by page (see
        :meth:`_pages`); either way the solutions come as a :class:`RemoteSolutions`."""
        if rows and _query_form(sparql) in ("select", "ask"):
            variables, values = rows
            values = values if isinstance(values, list) else list(values)
            if len(values) > self.values_rows:
                chunks = [values[i:i + self.values_rows] for i in range(0, len(values), self.values_rows)]
                if _query_form(sparql) == "ask":
                    return any(bool(self._query(sparql, graph, None, (variables, c))) for c in chunks)
                first = self._query(sparql, graph, None, (variables, chunks[0]))
                names = [v.value for v in first.variables]
                return RemoteSolutions(names, itertools.chain(
                    first, *(_lazy(self._query, sparql, graph, None, (variables, c)) for c in chunks[1:])))
        return self._query(sparql, graph, bindings, rows)

    def _query(self, sparql: str, graph: str | None, bindings: dict | None, rows: tuple | None):
        if bindings or rows:
            sparql = bind_values(sparql, bindings, rows)
        # WDQS drop-in: SERVICE refused before anything is sent, the label service rewritten,
        # WDQS prefixes declared; paths go as written (the endpoint's closure is unknown here)
        sparql = wdqs.prepare(sparql, closure_fresh=None).text
        prologue = wdqs.prefix_prologue(sparql)
        text = prologue + sparql
        form = _query_form(sparql)
        if form in ("construct", "describe"):
            reply = self._post(text, "application/n-triples, text/turtle;q=0.9, application/n-quads;q=0.8, "
                                     "application/rdf+xml;q=0.7", graph)
            self._check_truncation(reply)
            ctype = reply.content_type or "application/n-triples"
            fmt = RdfFormat.from_media_type(ctype)
            if fmt is None:  # never guessed: an HTML page or a results document read as N-Triples is empty
                raise RemoteError(self.url, f"the endpoint answered a {form.upper()} with {printable(ctype[:80])}, "
                                            "not an RDF syntax kgcult reads (N-Triples, N-Quads, Turtle, TriG, "
                                            "RDF/XML, JSON-LD)")
            try:
                # by the answer's real syntax; the triples of every graph of a quad syntax
                # (N-Quads, TriG) go to the one graph a CONSTRUCT answers (before, an N-Quads
                # answer was loaded into its named graphs and read back as empty)
                scratch = ox.Store()
                scratch.extend(ox.Quad(q.subject, q.predicate, q.object, ox.DefaultGraph())
                               for q in ox.parse(reply.body, format=fmt))
            except (SyntaxError, ValueError) as e:
                raise RemoteError(self.url, f"the endpoint sent unreadable {ctype}: {printable(str(e)[:300])}") from None
            # a real QueryTriples, as the embedded store returns
            return scratch.query("CONSTRUCT WHERE { ?s ?p ?o }")
        reply, n = self._select(text, graph)
        if form == "ask":
            return self._boolean(reply)
        cap = self._cap(reply, n)
        if cap is None:
            return self._solutions(reply)
        names = [v.value for v in self._solutions(reply).variables]
        return RemoteSolutions(names, self._pages(prologue, sparql, names, graph, cap))

    def pages(self, sparql: str, names: list[str], rows: int, *, graph: str | None = None) -> "RemoteSolutions":
        """The solutions of a SELECT that projects ``names``, read ``rows`` at a time (fewer
        where the engine's own row cap is lower) in a stable order, whatever the size of
        the whole answer: for reads too big to hold as one answer (the link index's names),
        at the cost of one sort per page on the engine."""
        sparql = wdqs.prepare(sparql, closure_fresh=None).text
        return RemoteSolutions(names, self._pages(wdqs.prefix_prologue(sparql), sparql, names, graph, rows))

    def _select(self, text: str, graph: str | None) -> tuple[Reply, int]:
        """The endpoint's answer to a SELECT or ASK, read whole once (see :meth:`_solutions`),
        with its number of rows."""
        reply = self._post(text, "application/sparql-results+json, application/sparql-results+xml;q=0.8", graph)
        reply = Reply(reply.status, reply.content_type, reply.headers, _bnodes_readable(reply.body))
        ctype = reply.content_type or "application/sparql-results+json"
        try:
            parsed = ox.parse_query_results(reply.body, format=_results_format(ctype))
        except (SyntaxError, ValueError) as e:
            head = reply.body[:300].decode("utf-8", "replace")
            raise RemoteError(self.url, printable(f"the endpoint sent unreadable results ({ctype}): {e}: {head}")) from None
        if not isinstance(parsed, ox.QuerySolutions):
            return reply, 0
        # pyoxigraph parses a SELECT answer's rows as they are read: a cut or malformed answer
        # would raise a bare SyntaxError in the caller's loop, after some rows were taken as
        # data. The whole answer is read once here (rows not kept), then parsed again for the
        # caller: the same bytes, so the rows it reads are all there are.
        n, why = _count_rows(parsed)
        # raised with no pyoxigraph object left in this frame: a traceback kept alive (as by a
        # test's excinfo) would otherwise free it on whatever thread collects it, which
        # pyoxigraph's objects refuse ("unsendable, but is being dropped on another thread")
        del parsed
        if why is not None:
            raise RemoteError(self.url, printable(
                f"the endpoint's answer ({ctype}) is cut or malformed at row {n + 1:,} ({n:,} rows "
                f"before it; none used): {why}"))
        return reply, n

    def _boolean(self, reply: Reply):
        """An ASK answer as pyoxigraph's QueryBoolean. Virtuoso 7 answers ASK in SPARQL
        results JSON with a table (``__ASK_RETVAL``: one row holding 1 when true, none when
        false), which would otherwise read as a true value whatever it says."""
        parsed = self._solutions(reply)
        if not isinstance(parsed, ox.QuerySolutions):
            return parsed
        value = False
        for row in parsed:
            t = next((x for x in row if x is not None), None)
            value = value or (t is not None and t.value not in ("0", "false"))
        return ox.parse_query_results(b'{"head": {}, "boolean": %s}' % (b"true" if value else b"false"),
                                      format=QueryResultsFormat.JSON)

    def _solutions(self, reply: Reply):
        ctype = reply.content_type or "application/sparql-results+json"
        return ox.parse_query_results(reply.body, format=_results_format(ctype))

    def _cap(self, reply: Reply, n: int) -> int | None:
        """The endpoint's row cap when it cut this answer at it, else None. Virtuoso says so
        (``X-SPARQL-MaxRows``, also on an answer of exactly that many rows), kgcult serve
        too (``X-Kgcult-Truncated``); QLever does not: ``page_rows`` is its cap."""
        hdrs = reply.headers
        if "x-sparql-maxrows" in hdrs:
            try:
                cap = int(hdrs["x-sparql-maxrows"])
            except ValueError:
                cap = n
            return cap if n >= cap > 0 else None
        if hdrs.get("x-kgcult-truncated") == "true":
            return n or None
        if self.page_rows and n >= self.page_rows:
            return self.page_rows
        return None

    def _pages(self, prologue: str, sparql: str, names: list[str], graph: str | None, cap: int):
        """The whole answer of a SELECT that the endpoint cuts at ``cap`` rows, ``cap`` rows
        at a time: the query as a subquery ordered by every variable it projects (a stable
        order), read with OFFSET/LIMIT. The ORDER BY stays inside (Virtuoso refuses a sorted
        OFFSET past its MaxSortedTopRows), so each page costs the engine the sort, and only
        one page is held here at a time. A query with its own ORDER BY keeps its order."""
        head, body = split_prologue(sparql)
        keys = " ".join("?" + v for v in names)  # projected in the answer's order
        if has_top_level(body, "ORDER"):
            inner = body
        else:
            inner = f"SELECT {keys} WHERE {{ {{\n{body}\n}} }} ORDER BY {keys}"
        offset = 0
        while True:
            text = (f"{prologue}{head}SELECT {keys} WHERE {{ {{\n{inner}\n}} }} OFFSET {offset} LIMIT {cap}")
            reply, n = self._select(text, graph)
            engine_cap = self._cap(reply, n)
            if engine_cap is not None and engine_cap < cap:
                # pages asked bigger than the engine's own cap: the rows it sent are the first
                # of this page in the stable order; the next pages are asked at its cap
                cap = engine_cap
            page = self._solutions(reply)
            got = [v.value for v in page.variables]
            if got != names:
                raise RemoteError(self.url, f"paging a result past the endpoint's cap of {cap:,} rows: the pages "
                                            f"project {got}, not {names}")
            yield from page
            del page, reply  # one page held at a time
            if n < cap:
                return
            offset += n

    def _check_truncation(self, reply: Reply) -> None:
        hdrs = reply.headers
        if hdrs.get("x-kgcult-truncated") == "true" or "x-sparql-maxrows" in hdrs:
            raise RemoteError(self.url, "the endpoint truncated the result "
                              f"({hdrs.get('x-sparql-maxrows') or hdrs.get('x-kgcult-rows')} rows); "
                              "raise its row limit or narrow the query")

    @property
    def ox(self) -> "RemoteOx":
        """A read-only stand-in for the part of pyoxigraph's Store API that kgcult's modules
        use directly (``quads_for_pattern``, ``len``, ``named_graphs``), answered with
        SPARQL on the endpoint."""
        return RemoteOx(self)

    def _has_named_graphs(self) -> bool:
        if self._named is None:
            self._named = bool(self.query("ASK { GRAPH ?g { ?s ?p ?o } }"))
        return self._named

    # -- graphs -----------------------------------------------------------------------

    def graph_counts(self) -> dict[str, int]:
        """Triples per named graph; the engine's own graphs (Virtuoso's ``virtrdf#``, ...:
        ``ontology/engines.json``) and the graphs the store URL makes the default graph
        (``default-graph-uri``) left out; an endpoint without other graphs reports its
        default graph as ``""``."""
        counts: dict[str, int] = {}
        for row in self.query("SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g"):
            g, n = row["g"], row["n"]
            if g is None or n is None:  # Virtuoso answers an empty GRAPH pattern with one empty row
                continue
            if is_system_graph(g.value) or g.value in self.default_graphs:
                continue
            counts[g.value] = int(n.value)
        if not counts:  # an endpoint without named graphs (QLever, WDQS): one default graph
            n = self.triple_count()
            if n:
                counts[""] = n
        return dict(sorted(counts.items()))

    def triple_count(self, graph: str | None = None) -> int:
        if graph:
            rows = self.query("SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }",
                              bindings={"g": NamedNode(graph)})
        else:
            rows = self.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
        row = next(iter(rows), None)
        return int(row["n"].value) if row is not None and row["n"] is not None else 0

    def has_closure(self) -> bool:
        """Whether the endpoint's default graph holds kgcult's closure (any ``kgc:typedAs``)."""
        return bool(self.query("ASK { ?s kgc:typedAs ?o }"))

    def require_closure(self) -> None:
        """Raise, with what to do, when the endpoint holds no kgcult closure: the views,
        ``show``'s ancestors, ``stats``' root counts and the linker's topics read it."""
        if not self.has_closure():
            raise KgcultError(
                f"{self.location} holds no kgcult closure (no kgc:typedAs triple in its default graph): "
                "compute it with `kgcult closure --export closure.nt.gz` on an embedded copy of the hierarchy "
                "and load that file into the endpoint's default graph (docs/serve.md, \"The closure on a "
                "remote engine\")")

    def get_state(self, name: str) -> str | None:
        rows = self.query("SELECT ?o WHERE { GRAPH ?m { ?s ?p ?o } } LIMIT 1",
                          bindings={"m": NamedNode(vocab.META_GRAPH), "s": NamedNode(_STATE),
                                    "p": vocab.kgc(name)})
        for r in rows:
            if r["o"] is not None:
                return r["o"].value
        return None

    # -- writes: refused ----------------------------------------------------------------

    load = _refused("load files")
    clear_graph = _refused("clear a graph")
    writing = update = _refused("write to it")
    set_state = _refused("change the store state")

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.client.close()


def _positive(env: str, given: int | None, default: int | None) -> int | None:
    raw = given if given is not None else os.environ.get(env)
    if raw is None or raw == "":
        return default
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n <= 0:
        raise KgcultError(f"{env}={raw!r} is not a positive number of rows")
    return n


def _results_format(ctype: str) -> QueryResultsFormat:
    return QueryResultsFormat.XML if "xml" in ctype else QueryResultsFormat.JSON


def _count_rows(rows: ox.QuerySolutions) -> tuple[int, str | None]:
    """(rows read, None), or (rows read before it, the parser's message) for the first row
    of ``rows`` that cannot be parsed."""
    n = 0
    try:
        for _row in rows:
            n += 1
    except (SyntaxError, ValueError, UnicodeError) as e:
        return n, str(e)
    return n, None


# Virtuoso names blank nodes "nodeID://b10001" in SPARQL results JSON, which is not a blank
# node label (pyoxigraph refuses it: "Invalid bnode value"); the label is kept, made valid
_VIRTUOSO_BNODE = re.compile(rb'("type"\s*:\s*"bnode"\s*,\s*"value"\s*:\s*")nodeID://([^"]*)"')
_BNODE_CHARS = re.compile(rb"[^A-Za-z0-9_-]")


def _bnodes_readable(body: bytes) -> bytes:
    if b"nodeID://" not in body:
        return body
    return _VIRTUOSO_BNODE.sub(lambda m: m.group(1) + b"vnode_" + _BNODE_CHARS.sub(b"_", m.group(2)) + b'"', body)


def _bound(row, names: str) -> bool:
    """Every variable of ``names`` bound (Virtuoso's one empty row for an empty GRAPH)."""
    return all(row[n] is not None for n in names)


def _lazy(run, *args):
    """The rows of ``run(*args)``, asked for when the first one is wanted."""
    yield from run(*args)


def split_prologue(sparql: str) -> tuple[str, str]:
    """(the query's own PREFIX/BASE declarations, the query from its first keyword on)."""
    for t in tokenize(sparql):
        if t.is_word("SELECT", "ASK", "CONSTRUCT", "DESCRIBE"):
            return sparql[:t.start] + "\n", sparql[t.start:]
    return "", sparql


def has_top_level(body: str, word: str) -> bool:
    """Whether ``word`` (a keyword) appears outside every brace of the query ``body``."""
    depth = 0
    for t in tokenize(body):
        if t.is_punct("{"):
            depth += 1
        elif t.is_punct("}"):
            depth -= 1
        elif depth == 0 and t.is_word(word):
            return True
    return False


class RemoteSolutions:
    """A SELECT's solutions read from several answers (VALUES blocks sent in parts, pages of
    a capped result): ``variables`` and the rows (pyoxigraph ``QuerySolution``), read once,
    as pyoxigraph's ``QuerySolutions``; the next answer is asked for when its rows are
    wanted, so one answer is held at a time."""

    def __init__(self, names: list[str], rows):
        self.variables = [ox.Variable(n) for n in names]
        self._rows = iter(rows)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._rows)


class RemoteOx:
    """The read part of ``pyoxigraph.Store`` over a :class:`RemoteStore` (SPARQL queries).
    Writes raise KgcultError: a remote endpoint is read-only here."""

    def __init__(self, store: RemoteStore):
        self._store = store

    def quads_for_pattern(self, subject=None, predicate=None, object=None, graph_name=None) -> Iterator[Quad]:  # noqa: A002
        st = self._store
        bindings = {k: t for k, t in (("s", subject), ("p", predicate), ("o", object)) if t is not None}
        if isinstance(graph_name, ox.DefaultGraph) or (graph_name is None and not st._has_named_graphs()):
            # the endpoint's default graph: the union on kgcult/oxigraph, everything on QLever/WDQS
            if isinstance(graph_name, ox.DefaultGraph) and st._has_named_graphs():
                return iter(())  # union-default-graph endpoints keep no separate default graph
            rows = st.query("SELECT ?s ?p ?o WHERE { ?s ?p ?o }", bindings=bindings or None)
            return (Quad(r["s"], r["p"], r["o"], ox.DefaultGraph()) for r in rows if _bound(r, "spo"))
        if graph_name is not None:
            bindings["g"] = graph_name
        rows = st.query("SELECT ?s ?p ?o ?g WHERE { GRAPH ?g { ?s ?p ?o } }", bindings=bindings or None)
        return (Quad(r["s"], r["p"], r["o"], r["g"]) for r in rows
                if _bound(r, "spog") and (graph_name is not None or not is_system_graph(r["g"].value)))

    def named_graphs(self) -> Iterator[NamedNode]:
        return (NamedNode(g) for g in self._store.graph_counts() if g)

    def contains_named_graph(self, graph) -> bool:
        return bool(self._store.query("ASK { GRAPH ?g { ?s ?p ?o } }", bindings={"g": graph}))

    def __len__(self) -> int:
        return sum(self._store.graph_counts().values())

    def query(self, query: str, **kwargs):
        graph = kwargs.get("default_graph")
        if isinstance(graph, list) and len(graph) == 1:
            graph = graph[0]
        return self._store.query(query, graph=graph.value if isinstance(graph, NamedNode) else None)

    def __getattr__(self, name):
        if name in ("add", "extend", "remove", "update", "load", "bulk_load", "bulk_extend", "clear",
                    "clear_graph", "remove_graph", "add_graph", "flush", "optimize", "backup"):
            raise KgcultError(f"{self._store.location} is read-only: cannot {name} on a remote endpoint")
        raise AttributeError(name)


# -- what kgcult knows about SPARQL engines (ontology/engines.json): the graphs an engine
# keeps for itself, and its refusals, each turned into one line naming the limit and the
# setting to change (instead of an HTTP 500 with the engine's whole error page)


@dataclass(frozen=True)
class Refusal:
    engine: str
    pattern: re.Pattern
    limit: str
    setting: str


@dataclass(frozen=True)
class Engines:
    graphs: frozenset[str]
    prefixes: tuple[str, ...]
    refusals: tuple[Refusal, ...]


@lru_cache(maxsize=1)
def engines() -> Engines:
    data = json.loads(ontology.path_of("engines.json").read_text(encoding="utf-8"))
    graphs = frozenset(g["iri"] for g in data["system_graphs"] if "iri" in g)
    prefixes = tuple(g["prefix"] for g in data["system_graphs"] if "prefix" in g)
    refusals = tuple(Refusal(r["engine"], re.compile(r["pattern"]), r["limit"], r["setting"])
                     for r in data["refusals"])
    return Engines(graphs, prefixes, refusals)


def is_system_graph(iri: str) -> bool:
    """A graph an engine keeps for itself (Virtuoso's ``virtrdf#``, ...), not data."""
    e = engines()
    return iri in e.graphs or iri.startswith(e.prefixes)


def explain_refusal(endpoint: str, status: int | None, body: str) -> str | None:
    """One line for an engine's refusal of a query (HTTP 4xx/5xx with the engine's message),
    naming the engine's limit and the setting to change; None when it is none we know."""
    if status is None or status < 400:
        return None
    body = body.replace("\\n", "\n")  # the error's body, its newlines written as escapes
    for r in engines().refusals:
        m = r.pattern.search(body)
        if m:
            first = next((ln.strip() for ln in body.splitlines() if r.pattern.search(ln)), m.group(0))
            return printable(f"{endpoint}: {r.engine} refused the query: {first[:300]} -- its limit: {r.limit}; "
                             f"to change it: {r.setting}")
    return None


__all__ = ["RemoteStore", "RemoteOx", "DEFAULT_TIMEOUT"]
