"""The mirror's side of HTTP: its settings (:class:`MirrorConfig`, politeness included)
and :class:`EndpointClient`, which asks a SPARQL endpoint for entity IRIs (SELECT) and for
triples (CONSTRUCT) through :class:`kgcult.sparql.client.SparqlClient` and accepts a body
only once it has parsed completely: a truncated, malformed or HTML body is asked for
again, never half-used. A request that cannot be had raises :class:`MirrorError` naming
the batch."""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Callable

import pyoxigraph as ox
from pyoxigraph import NamedNode

from kgcult.acquire.endpoint.queries import count_query
from kgcult.errors import KgcultError
from kgcult.sparql.client import BadResponse, RemoteError, Reply, RetriesExhausted, RetryBudgetExhausted, SparqlClient
from kgcult.version import __version__

WDQS = "https://query.wikidata.org/sparql"
DEFAULT_USER_AGENT = (
    f"kgcult/{__version__} (Wikidata subgraph mirror for research; "
    "https://w3id.org/kgcult; set --user-agent to add your contact) urllib3/2"
)

# A body in these formats that is cut at a line end still parses: a complete answer is
# recognised by its size, counted by the endpoint first (one extra SELECT per batch).
COUNTED_FORMATS = ("ntriples", "turtle")
FORMATS = {
    # name: (Accept header, pyoxigraph format, content types accepted in the response)
    "rdfxml": ("application/rdf+xml", ox.RdfFormat.RDF_XML, ("application/rdf+xml", "application/xml", "text/xml")),
    "ntriples": ("application/n-triples", ox.RdfFormat.N_TRIPLES, ("application/n-triples", "text/plain")),
    "turtle": ("text/turtle", ox.RdfFormat.TURTLE, ("text/turtle", "application/x-turtle")),
}


class MirrorError(KgcultError):
    """The mirror could not finish (a batch exhausted its retries, a bad endpoint, ...)."""


@dataclass
class MirrorConfig:
    endpoint: str = WDQS
    user_agent: str = DEFAULT_USER_AGENT
    timeout: float = 90.0            # seconds per request (WDQS stops queries at 60 s)
    concurrency: int = 2             # parallel requests (WDQS allows a few per client)
    batch_size: int = 250            # ids per CONSTRUCT (VALUES)
    class_batch_size: int = 250      # classes per enumeration query
    page_size: int = 10000           # rows per enumeration page (keyset paging)
    max_attempts: int = 8            # tries per query
    retry_budget: int = 200          # retries in the whole run
    backoff: float = 1.0             # first backoff (s); doubles each time, with jitter
    max_backoff: float = 120.0
    max_retry_after: float = 600.0   # cap on a server's Retry-After
    construct_format: str = "rdfxml"
    refresh: bool = False
    checkpoint: str | None = None    # default: <store>.mirror-checkpoint.sqlite
    seed: int | None = None          # jitter seed (tests)
    sleep: Callable[[float], None] = time.sleep

    def validate(self) -> None:
        if not re.match(r"^https?://[^\s]+$", self.endpoint or ""):
            raise MirrorError(f"--endpoint {self.endpoint!r} is not an http(s) URL")
        if self.construct_format not in FORMATS:
            raise MirrorError(f"--format must be one of {', '.join(FORMATS)}")
        for name in ("concurrency", "batch_size", "class_batch_size", "page_size", "max_attempts"):
            if getattr(self, name) < 1:
                raise MirrorError(f"{name.replace('_', '-')} must be at least 1")
        if self.timeout <= 0 or self.retry_budget < 0 or self.backoff < 0:
            raise MirrorError("timeout must be > 0, retry budget and backoff >= 0")
        if not self.user_agent or any(c in self.user_agent for c in "\r\n"):
            raise MirrorError("--user-agent must be one non-empty line")


class EndpointClient:
    """SELECTs and CONSTRUCTs for the mirror, with its politeness: User-Agent, timeout,
    Retry-After, exponential backoff with jitter, tries per query and a run-wide retry
    budget (the concurrency limit is the caller's pool of workers)."""

    def __init__(self, config: MirrorConfig):
        self.config = config
        self.http = SparqlClient(
            config.endpoint, user_agent=config.user_agent, timeout=config.timeout, attempts=config.max_attempts,
            backoff=config.backoff, max_backoff=config.max_backoff, max_retry_after=config.max_retry_after,
            retry_budget=config.retry_budget, sleep=config.sleep, seed=config.seed, pool_size=config.concurrency)

    @property
    def retries(self) -> int:
        return self.http.retries

    @property
    def bytes(self) -> int:
        return self.http.bytes

    def close(self) -> None:
        self.http.close()

    def _ask(self, query: str, accept: str, check, what: str):
        try:
            return self.http.query(query, accept, check=check)
        except RetryBudgetExhausted as e:
            raise MirrorError(f"{what}: retry budget of {e.budget} exhausted (last error: {e.last}); "
                              "re-run the same command to resume") from None
        except RetriesExhausted as e:
            raise MirrorError(f"{what}: failed {e.attempts} times, last: {e.problem}; nothing of this "
                              "batch was written; re-run the same command to resume") from None
        except RemoteError as e:
            raise MirrorError(f"{what}: {e}") from None

    def select_iris(self, query: str, var: str, what: str) -> list[str]:
        """The IRIs bound to ``?var`` by a SELECT, in the endpoint's order."""
        def check(reply: Reply) -> list[str]:
            if "json" not in reply.content_type:
                raise BadResponse(f"expected SPARQL JSON results, got {reply.content_type or 'no content type'}")
            try:
                rows = json.loads(reply.body.decode("utf-8"))["results"]["bindings"]
                if not isinstance(rows, list):
                    raise TypeError("bindings is not a list")
                out = []
                for r in rows:
                    t = r[var]
                    if t["type"] != "uri":
                        raise TypeError(f"?{var} is a {t['type']}")
                    try:
                        NamedNode(t["value"])
                    except ValueError:
                        raise TypeError(f"?{var} is not a valid IRI: {t['value'][:200]!r}") from None
                    out.append(t["value"])
                return out
            except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
                raise BadResponse(f"malformed SPARQL JSON results: {e}") from None

        return self._ask(query, "application/sparql-results+json", check, what)

    def count(self, query: str, what: str) -> int:
        """The integer ``?n`` of a one-row SELECT."""
        def check(reply: Reply) -> int:
            if "json" not in reply.content_type:
                raise BadResponse(f"expected SPARQL JSON results, got {reply.content_type or 'no content type'}")
            try:
                rows = json.loads(reply.body.decode("utf-8"))["results"]["bindings"]
                return int(rows[0]["n"]["value"])
            except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError) as e:
                raise BadResponse(f"malformed SPARQL JSON count: {e}") from None

        return self._ask(query, "application/sparql-results+json", check, what)

    def construct(self, query: str, what: str) -> list:
        """The triples of a CONSTRUCT, parsed completely. In N-Triples or Turtle, which
        cannot show a cut at a line end, the endpoint's count of the triples comes first
        and a body with fewer is asked for again."""
        accept, fmt, ctypes = FORMATS[self.config.construct_format]
        expected = 0
        if self.config.construct_format in COUNTED_FORMATS:
            expected = self.count(count_query(query), f"{what} (triple count)")

        def check(reply: Reply) -> list:
            body = reply.body
            if not any(c in reply.content_type for c in ctypes):
                raise BadResponse(f"expected {accept}, got {reply.content_type or 'no content type'}")
            if fmt == ox.RdfFormat.N_TRIPLES and body and not body.endswith(b"\n"):
                raise BadResponse("truncated N-Triples (no final newline)")
            if fmt == ox.RdfFormat.RDF_XML and not rdfxml_complete(body):
                # Oxigraph's RDF/XML parser accepts a document cut short; the root must close
                raise BadResponse("truncated RDF/XML (the rdf:RDF root element is not closed)")
            try:
                triples = [q.triple for q in ox.parse(body, format=fmt)]
            except (SyntaxError, ValueError) as e:
                raise BadResponse(f"unparseable {self.config.construct_format} body: {str(e)[:200]}") from None
            if len(set(triples)) < expected:
                raise BadResponse(f"the body holds {len(set(triples))} triples where the endpoint "
                                  f"counts {expected}: cut short")
            return triples

        return self._ask(query, accept, check, what)


_RDF_ROOT = re.compile(rb"<((?:[A-Za-z_][\w.-]*:)?RDF)(?=[\s/>])")


def rdfxml_complete(body: bytes) -> bool:
    """True when an RDF/XML document ends with the end of its rdf:RDF root element."""
    m = _RDF_ROOT.search(body)
    if not m:
        return False
    tail = body.rstrip()
    if tail.endswith(b"</" + m.group(1) + b">"):
        return True
    # an empty graph: <rdf:RDF .../> as the last tag
    return tail.endswith(b"/>") and b"<" not in tail[m.end():]
