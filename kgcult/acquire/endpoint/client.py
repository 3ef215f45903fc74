"""The mirror's side of HTTP: its settings (:class:`MirrorConfig`, politeness included)
and :class:`EndpointClient`, which asks a SPARQL endpoint for entity IRIs (SELECT) and for
triples (CONSTRUCT) through :class:`kgcult.sparql.client.SparqlClient` and accepts a body
only once it has parsed completely: a truncated, malformed or HTML body is asked for
again, never half-used. A request that cannot be had raises :class:`MirrorError` naming
the batch.

Politeness (docs/mirror.md, "Within WDQS's rules"): on a public endpoint
(:data:`kgcult.sparql.etiquette.PUBLIC_HOSTS`) one query at a time unless told otherwise
(at most WDQS's 5), and a User-Agent with the user's contact is required; every worker
shares the client's one :class:`~kgcult.sparql.throttle.Throttle` (429s spend no tries).
A CONSTRUCT answered in another RDF format than the one asked for (QLever before mid-2026
sent Turtle whatever the Accept header) is parsed as what the Content-Type says; Turtle
and N-Triples are then checked against the endpoint's count of the batch."""
from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import Callable

import pyoxigraph as ox
import urllib3
from pyoxigraph import NamedNode

from kgcult.acquire.endpoint.queries import count_query
from kgcult.errors import KgcultError
from kgcult.sparql import etiquette, throttle
from kgcult.sparql.client import (MAX_ANSWER, BadResponse, RemoteError, Reply, RetriesExhausted, RetryBudgetExhausted,
                                   SparqlClient, json_answer)

log = logging.getLogger(__name__)
WDQS = "https://query.wikidata.org/sparql"
LIBRARY = f"urllib3/{urllib3.__version__}"
DEFAULT_USER_AGENT = etiquette.user_agent_for(None, LIBRARY)  # private endpoints only
PRIVATE_CONCURRENCY = 2

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
    user_agent: str | None = None    # None: kgcult's, with ``contact`` (required on public hosts)
    contact: str | None = None       # e-mail or URL for the User-Agent (Wikimedia's policy)
    timeout: float = 90.0            # seconds per request (WDQS stops queries at 60 s)
    concurrency: int | None = None   # parallel requests; None: 1 on public hosts, else 2
    batch_size: int = 250            # ids per CONSTRUCT (VALUES)
    class_batch_size: int = 250      # classes per enumeration query
    page_size: int = 10000           # rows per enumeration page (keyset paging)
    max_attempts: int = 8            # tries per query
    retry_budget: int = 200          # retries in the whole run
    backoff: float = 1.0             # first backoff (s); doubles each time, with jitter
    max_backoff: float = 120.0
    max_retry_after: float = 600.0   # cap on a server's Retry-After
    construct_format: str = "rdfxml"
    max_answer: int = MAX_ANSWER     # decoded bytes of one answer; a larger one stops the run
    refresh: bool = False
    checkpoint: str | None = None    # default: <store>.mirror-checkpoint.sqlite
    throttle_floor: float = throttle.FLOOR        # least wait after a 429 (Retry-After: 0 included)
    throttle_slow_at: int = throttle.SLOW_AT      # 429s in 20 min from which each waits a minute
    throttle_stop_at: int = throttle.STOP_AT      # 429s in 20 min at which the run stops (WDQS bans past 200)
    seed: int | None = None          # jitter seed (tests)
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic  # the throttle's time (a test's scaled clock)

    def validate(self) -> None:
        """Check the settings and fill in the defaults that depend on the endpoint
        (``concurrency``, ``user_agent``)."""
        if not (self.endpoint or "").strip():
            raise MirrorError("--endpoint is empty: give the SPARQL endpoint's URL (or leave the option out for WDQS)")
        if not re.match(r"^https?://[^\s]+$", self.endpoint):
            raise MirrorError(f"--endpoint {self.endpoint!r} is not an http(s) URL")
        public = etiquette.is_public(self.endpoint)
        if self.concurrency is None:
            self.concurrency = 1 if public else PRIVATE_CONCURRENCY
        if public and self.concurrency > etiquette.WDQS_MAX_PARALLEL:
            raise MirrorError(f"--concurrency {self.concurrency}: {etiquette.host_of(self.endpoint)} allows at most "
                              f"{etiquette.WDQS_MAX_PARALLEL} parallel queries per client (its maintainers ask for 1)")
        if self.user_agent is not None and (not self.user_agent or any(c in self.user_agent for c in "\r\n")):
            raise MirrorError("--user-agent must be one non-empty line")
        if self.contact is not None and any(c in self.contact for c in "\r\n()"):
            raise MirrorError("--contact must be one line without parentheses")
        try:
            etiquette.check_user_agent(self.endpoint, self.user_agent, self.contact)
        except etiquette.UserAgentError as e:
            raise MirrorError(str(e)) from None
        if self.user_agent is None:
            self.user_agent = etiquette.user_agent_for(self.contact, LIBRARY)
        if public:
            self.throttle_floor = max(self.throttle_floor, throttle.FLOOR)
        if not 0 < self.throttle_slow_at <= self.throttle_stop_at <= throttle.BAN_AT:
            raise MirrorError(f"the 429 limits must satisfy 0 < slow-at <= stop-at <= {throttle.BAN_AT}")
        if self.construct_format not in FORMATS:
            raise MirrorError(f"--format must be one of {', '.join(FORMATS)}")
        for name in ("concurrency", "batch_size", "class_batch_size", "page_size", "max_attempts"):
            if getattr(self, name) < 1:
                raise MirrorError(f"{name.replace('_', '-')} must be at least 1")
        if self.timeout <= 0 or self.retry_budget < 0 or self.backoff < 0:
            raise MirrorError("timeout must be > 0, retry budget and backoff >= 0")


class EndpointClient:
    """SELECTs and CONSTRUCTs for the mirror, with its politeness: User-Agent, timeout,
    Retry-After, exponential backoff with jitter, tries per query and a run-wide retry
    budget (the concurrency limit is the caller's pool of workers)."""

    def __init__(self, config: MirrorConfig):
        self.config = config
        if config.concurrency is None or config.user_agent is None:
            config.validate()
        assert config.concurrency is not None and config.user_agent is not None  # validate() sets both
        gate = throttle.Throttle(parallel=config.concurrency, floor=config.throttle_floor,
                                 slow_at=config.throttle_slow_at, stop_at=config.throttle_stop_at,
                                 clock=config.clock, sleep=config.sleep)
        self.http = SparqlClient(
            config.endpoint, user_agent=config.user_agent, timeout=config.timeout, attempts=config.max_attempts,
            backoff=config.backoff, max_backoff=config.max_backoff, max_retry_after=config.max_retry_after,
            retry_budget=config.retry_budget, sleep=config.sleep, seed=config.seed, pool_size=config.concurrency,
            throttle=gate, max_answer=config.max_answer)
        self._warned_format = False

    @property
    def retries(self) -> int:
        return self.http.retries

    @property
    def bytes(self) -> int:
        return self.http.bytes

    @property
    def throttled(self) -> int:
        """HTTP 429 answers (rate limit) so far."""
        return self.http.throttled

    @property
    def deadline_cuts(self) -> int:
        """Answers the endpoint's deadline cut (5xx, 200 with a cut body, QLever's 429)."""
        return self.http.deadline_cuts

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
                rows = json_answer(reply.body, self.http.endpoint)["results"]["bindings"]
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
                rows = json_answer(reply.body, self.http.endpoint)["results"]["bindings"]
                return int(rows[0]["n"]["value"])
            except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError) as e:
                raise BadResponse(f"malformed SPARQL JSON count: {e}") from None

        return self._ask(query, "application/sparql-results+json", check, what)

    def construct(self, query: str, what: str) -> list:
        """The triples of a CONSTRUCT, parsed completely. In N-Triples or Turtle, which
        cannot show a cut at a line end, the endpoint's count of the triples comes first
        and a body with fewer is asked for again; an answer in one of those formats where
        RDF/XML was asked for is counted when it arrives."""
        name = self.config.construct_format
        accept = FORMATS[name][0]
        expected: list[int] = []
        if name in COUNTED_FORMATS:
            expected.append(self.count(count_query(query), f"{what} (triple count)"))

        def check(reply: Reply) -> list:
            got = format_of(reply.content_type)
            if got is None:
                raise BadResponse(f"expected {accept}, got {reply.content_type or 'no content type'}")
            if got != name:
                self._note_format(got)
            triples = parse_construct(reply.body, got)
            if got in COUNTED_FORMATS and not expected:
                expected.append(self.count(count_query(query), f"{what} (triple count)"))
            n = len(set(triples))
            if expected and n < expected[0]:
                raise BadResponse(f"the body holds {n} triples where the endpoint counts {expected[0]}: cut short")
            return triples

        return self._ask(query, accept, check, what)

    def _note_format(self, got: str) -> None:
        if not self._warned_format:
            self._warned_format = True
            log.warning("%s answers CONSTRUCT in %s although %s was asked for (QLever did before mid-2026); "
                        "parsing it as %s, with the endpoint's count of each batch", self.http.endpoint, got,
                        self.config.construct_format, got)


def format_of(content_type: str) -> str | None:
    """The name in FORMATS of an RDF content type, or None."""
    for name, (_, _, ctypes) in FORMATS.items():
        if any(c in content_type for c in ctypes):
            return name
    return None


def parse_construct(body: bytes, name: str) -> list:
    """The triples of a CONSTRUCT answer in format ``name``, or :class:`BadResponse`."""
    fmt = FORMATS[name][1]
    if fmt == ox.RdfFormat.N_TRIPLES and body and not body.endswith(b"\n"):
        raise BadResponse("truncated N-Triples (no final newline)")
    if fmt == ox.RdfFormat.RDF_XML and not rdfxml_complete(body):
        # Oxigraph's RDF/XML parser accepts a document cut short; the root must close
        raise BadResponse("truncated RDF/XML (the rdf:RDF root element is not closed)")
    try:
        return [q.triple for q in ox.parse(body, format=fmt)]
    except (SyntaxError, ValueError) as e:
        raise BadResponse(f"unparseable {name} body: {str(e)[:200]}") from None


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
