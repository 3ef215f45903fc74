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

import os
import urllib.parse
from typing import Iterator

import pyoxigraph as ox
from pyoxigraph import NamedNode, Quad, QueryResultsFormat, RdfFormat

from kgcult import vocab
from kgcult.errors import KgcultError
from kgcult.safe_text import printable
from kgcult.sparql import wdqs
from kgcult.sparql.client import MAX_ANSWER, USER_AGENT, RemoteError, Reply, SparqlClient, split_credentials
from kgcult.sparql.query_text import bind_values, first_keyword
from kgcult.store.base import StoreReads

DEFAULT_TIMEOUT = 300.0
RETRY_STATUS = frozenset({429, 502, 503})
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
                 user_agent: str = USER_AGENT, headers: dict | None = None, max_answer: int | None = None):
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
        return self.client.query(query, accept, params=params)

    # -- querying ---------------------------------------------------------------------

    def query(self, sparql: str, *, graph: str | None = None, bindings: dict | None = None,
              rows: tuple | None = None):
        """Run a query on the endpoint; returns pyoxigraph QuerySolutions, QueryBoolean or
        QueryTriples, as :meth:`kgcult.store.Store.query` does."""
        if bindings or rows:
            sparql = bind_values(sparql, bindings, rows)
        # WDQS drop-in: SERVICE refused before anything is sent, the label service rewritten,
        # WDQS prefixes declared; paths go as written (the endpoint's closure is unknown here)
        sparql = wdqs.prepare(sparql, closure_fresh=None).text
        text = wdqs.prefix_prologue(sparql) + sparql
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
        reply = self._post(text, "application/sparql-results+json, application/sparql-results+xml;q=0.8", graph)
        self._check_truncation(reply)
        ctype = reply.content_type or "application/sparql-results+json"
        results_format = QueryResultsFormat.XML if "xml" in ctype else QueryResultsFormat.JSON
        try:
            parsed = ox.parse_query_results(reply.body, format=results_format)
        except (SyntaxError, ValueError) as e:
            head = reply.body[:300].decode("utf-8", "replace")
            raise RemoteError(self.url, printable(f"the endpoint sent unreadable results ({ctype}): {e}: {head}")) from None
        if not isinstance(parsed, ox.QuerySolutions):
            return parsed
        # pyoxigraph parses a SELECT answer's rows as they are read: a cut or malformed answer
        # would raise a bare SyntaxError in the caller's loop, after some rows were taken as
        # data. The whole answer is read once here (rows not kept), then parsed again for the
        # caller: the same bytes, so the rows it reads are all there are.
        problem = _unreadable_row(parsed)
        # raised with no pyoxigraph object left in this frame: a traceback kept alive (as by a
        # test's excinfo) would otherwise free it on whatever thread collects it, which
        # pyoxigraph's objects refuse ("unsendable, but is being dropped on another thread")
        del parsed
        if problem is not None:
            n, why = problem
            raise RemoteError(self.url, printable(
                f"the endpoint's answer ({ctype}) is cut or malformed at row {n + 1:,} ({n:,} rows "
                f"before it; none used): {why}"))
        return ox.parse_query_results(reply.body, format=results_format)

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
        counts: dict[str, int] = {}
        for row in self.query("SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g"):
            counts[row["g"].value] = int(row["n"].value)
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
        return int(next(iter(rows))["n"].value)

    def get_state(self, name: str) -> str | None:
        rows = self.query("SELECT ?o WHERE { GRAPH ?m { ?s ?p ?o } } LIMIT 1",
                          bindings={"m": NamedNode(vocab.META_GRAPH), "s": NamedNode(_STATE),
                                    "p": vocab.kgc(name)})
        for r in rows:
            return r["o"].value
        return None

    # -- writes: refused ----------------------------------------------------------------

    load = _refused("load files")
    replace_graph = _refused("replace a graph")
    clear_graph = _refused("clear a graph")
    record_activity = _refused("record provenance")
    set_state = remove_state = mark_closure_stale = _refused("change the store state")

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _unreadable_row(rows: ox.QuerySolutions) -> tuple[int, str] | None:
    """(rows read before it, the parser's message) for the first row of ``rows`` that
    cannot be parsed; None when every row can."""
    n = 0
    try:
        for _row in rows:
            n += 1
    except (SyntaxError, ValueError, UnicodeError) as e:
        return n, str(e)
    return None


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
            return (Quad(r["s"], r["p"], r["o"], ox.DefaultGraph()) for r in rows)
        if graph_name is not None:
            bindings["g"] = graph_name
        rows = st.query("SELECT ?s ?p ?o ?g WHERE { GRAPH ?g { ?s ?p ?o } }", bindings=bindings or None)
        return (Quad(r["s"], r["p"], r["o"], r["g"]) for r in rows)

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


__all__ = ["RemoteStore", "RemoteOx", "DEFAULT_TIMEOUT"]
