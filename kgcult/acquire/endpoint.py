"""Mirror Wikidata subgraphs from a WDQS-compatible SPARQL endpoint into the store.

For each subgraph spec (``ontology/subgraphs.ttl``, see :mod:`kgcult.subgraphs`):

1. select members: the roots, then level by level the entities one step below them
   (``?x wdt:P31|wdt:P279 ?c`` with ``?c`` bound by VALUES batches and keyset paging, so
   no property path runs at the endpoint and every query is bounded), plus seeds read
   from the graphs of subgraphs mirrored before;
2. fetch their truthy claims (or labels) in batches: CONSTRUCT + VALUES over at most
   ``batch_size`` ids, restricted to the spec's properties;
3. follow the objects of ``followProperty`` claims to a fixpoint, up to ``followDepth``.

Lossless and resumable: every response is parsed completely before anything is written
(a truncated, malformed or HTML body is retried, never half-loaded); each batch is written
in one transaction; a SQLite checkpoint next to the store memoizes every finished query by
its sha256, so a re-run after a crash or ``kill -9`` skips finished work and ends with the
same triples. A new subgraph is written straight into its (empty) graph, marked
``partial:<run>`` in the metadata graph until complete; ``--refresh`` of an existing one
builds a staging graph that replaces the old graph in one SPARQL Update transaction.
Provenance is recorded and the closure is marked stale. A query that exhausts its retries
(or the run's retry budget) fails the run, naming the batch.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import random
import re
import shutil
import socket
import sqlite3
import threading
import time
import http.client
import urllib.error
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Callable, Iterable

import pyoxigraph as ox
from pyoxigraph import Literal, NamedNode

from kgcult import vocab
from kgcult.version import __version__
from kgcult import resources as resources
from kgcult.sparql import text as sparqlutil
from kgcult.acquire import specs as subgraphs
from kgcult.errors import KgcultError
from kgcult.sparql.text import bind_values
from kgcult.acquire.specs import SubgraphSpec, id_sort_key

WDQS = "https://query.wikidata.org/sparql"
DEFAULT_USER_AGENT = (
    f"kgcult/{__version__} (Wikidata subgraph mirror for research; "
    "https://w3id.org/kgcult; set --user-agent to add your contact) SPARQLWrapper/2"
)
_META = NamedNode(vocab.META_GRAPH)
_MIRROR_RUN = vocab.kgc("mirrorRun")
PARTIAL = "partial:"
_ENTITY = re.compile(r"^[QPL][1-9][0-9]*(?:-[FS][1-9][0-9]*)?$")

FORMATS = {
    # name: (Accept header, pyoxigraph format, content types accepted in the response)
    "rdfxml": ("application/rdf+xml", ox.RdfFormat.RDF_XML, ("application/rdf+xml", "application/xml", "text/xml")),
    "ntriples": ("application/n-triples", ox.RdfFormat.N_TRIPLES, ("application/n-triples", "text/plain")),
    "turtle": ("text/turtle", ox.RdfFormat.TURTLE, ("text/turtle", "application/x-turtle")),
}


class MirrorError(KgcultError):
    """The mirror could not finish (a batch exhausted its retries, a bad endpoint, ...)."""


class RetryableError(Exception):
    """A response that may succeed when asked again (5xx, 429, timeout, truncated, malformed)."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


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


@dataclass
class SubgraphReport:
    name: str
    graph: str
    members: int = 0
    triples: int = 0
    queries: int = 0
    resumed_queries: int = 0
    retries: int = 0
    seconds: float = 0.0
    skipped: str | None = None
    warnings: list[str] = field(default_factory=list)


# -- HTTP: SPARQLWrapper with retries -----------------------------------------------------

class SparqlClient:
    """SPARQLWrapper requests with politeness: User-Agent, timeout, a concurrency limit
    (the caller's pool size), Retry-After on 429, exponential backoff with jitter on 5xx,
    timeouts, resets and unparseable bodies, per-query attempts and a run-wide budget."""

    def __init__(self, config: MirrorConfig):
        self.config = config
        self._lock = threading.Lock()
        self.retries = 0
        self.requests = 0
        self.bytes = 0
        self._rng = random.Random(config.seed)

    # one request, no retry
    def _once(self, query: str, accept: str) -> tuple[bytes, str]:
        from SPARQLWrapper import POST, SPARQLWrapper
        from SPARQLWrapper.SPARQLExceptions import EndPointInternalError, EndPointNotFound, QueryBadFormed, Unauthorized, URITooLong

        sw = SPARQLWrapper(self.config.endpoint, agent=self.config.user_agent)
        sw.setMethod(POST)
        sw.setOnlyConneg(True)
        sw.setTimeout(self.config.timeout)
        sw.setQuery(query)
        sw.addCustomHttpHeader("Accept", accept)
        try:
            res = sw.query()
            body = res.response.read()
            ctype = res.response.headers.get("Content-Type", "") or ""
            res.response.close()
        except urllib.error.HTTPError as e:
            retry_after = _retry_after(e.headers.get("Retry-After") if e.headers else None)
            if e.code == 429 or e.code >= 500 or e.code == 408:
                raise RetryableError(f"HTTP {e.code}", retry_after) from None
            raise MirrorError(f"{self.config.endpoint}: HTTP {e.code} {e.reason}") from None
        except EndPointInternalError:  # SPARQLWrapper's name for HTTP 500
            raise RetryableError("HTTP 500") from None
        except QueryBadFormed as e:
            raise MirrorError(f"{self.config.endpoint} rejected a query as malformed (HTTP 400): "
                              f"{str(e)[:300]}") from None
        except (EndPointNotFound, Unauthorized, URITooLong) as e:
            raise MirrorError(f"{self.config.endpoint}: {type(e).__name__}: {str(e)[:300]}") from None
        except (socket.timeout, TimeoutError):
            raise RetryableError(f"timeout after {self.config.timeout:g} s") from None
        except http.client.IncompleteRead as e:
            raise RetryableError(f"truncated response ({len(e.partial)} bytes read)") from None
        except (http.client.HTTPException, ConnectionError, urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            if isinstance(reason, (ConnectionRefusedError,)) and self.requests == 0:
                raise RetryableError(f"connection refused: {reason}") from None
            raise RetryableError(f"{type(e).__name__}: {reason}") from None
        with self._lock:
            self.requests += 1
            self.bytes += len(body)
        return body, ctype.lower()

    def request(self, query: str, accept: str, parse, what: str):
        """Send ``query`` until ``parse(body, content_type)`` succeeds or retries run out."""
        attempt = 0
        delay = self.config.backoff
        while True:
            attempt += 1
            try:
                body, ctype = self._once(query, accept)
                return parse(body, ctype)
            except RetryableError as e:
                err = e
            if attempt >= self.config.max_attempts:
                raise MirrorError(f"{what}: failed {attempt} times, last: {err}; nothing of this "
                                  "batch was written; re-run the same command to resume")
            with self._lock:
                if self.retries >= self.config.retry_budget:
                    raise MirrorError(f"{what}: retry budget of {self.config.retry_budget} exhausted "
                                      f"(last error: {err}); re-run the same command to resume")
                self.retries += 1
                jitter = self._rng.uniform(0.5, 1.5)
            if err.retry_after is not None:
                wait = min(err.retry_after, self.config.max_retry_after)
            else:
                wait = min(delay * jitter, self.config.max_backoff)
                delay = min(delay * 2, self.config.max_backoff)
            self.config.sleep(wait)

    def select_iris(self, query: str, var: str, what: str) -> list[str]:
        def parse(body: bytes, ctype: str) -> list[str]:
            if "json" not in ctype:
                raise RetryableError(f"expected SPARQL JSON results, got {ctype or 'no content type'}")
            try:
                doc = json.loads(body.decode("utf-8"))
                rows = doc["results"]["bindings"]
                if not isinstance(rows, list):
                    raise TypeError("bindings is not a list")
                out = []
                for r in rows:
                    t = r[var]
                    if t["type"] != "uri":
                        raise TypeError(f"?{var} is a {t['type']}")
                    out.append(t["value"])
                return out
            except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
                raise RetryableError(f"malformed SPARQL JSON results: {e}") from None

        return self.request(query, "application/sparql-results+json", parse, what)

    def construct(self, query: str, what: str, into=None) -> list | int:
        """CONSTRUCT results, parsed completely, as a list of triples; or, with
        ``into=(store, graph)``, loaded into that graph in one transaction (a body that
        does not parse is retried and leaves nothing behind); then the body's size."""
        accept, fmt, ctypes = FORMATS[self.config.construct_format]

        def parse(body: bytes, ctype: str):
            if not any(c in ctype for c in ctypes):
                raise RetryableError(f"expected {accept}, got {ctype or 'no content type'}")
            if fmt == ox.RdfFormat.N_TRIPLES and body and not body.endswith(b"\n"):
                raise RetryableError("truncated N-Triples (no final newline)")
            if fmt == ox.RdfFormat.RDF_XML and not rdfxml_complete(body):
                # Oxigraph's RDF/XML parser accepts a document cut short; the root must close
                raise RetryableError("truncated RDF/XML (the rdf:RDF root element is not closed)")
            try:
                if into is not None:
                    into[0].ox.load(input=body, format=fmt, to_graph=NamedNode(into[1]))
                    return len(body)
                return [q.triple for q in ox.parse(body, format=fmt)]
            except (SyntaxError, ValueError) as e:
                raise RetryableError(f"unparseable {self.config.construct_format} body: {str(e)[:200]}") from None

        return self.request(query, accept, parse, what)


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


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


# -- checkpoint ---------------------------------------------------------------------------

class Checkpoint:
    """SQLite file next to the store: per subgraph, the run in progress and the memoized
    result of every finished query (keyed by the query's sha256)."""

    def __init__(self, path: str):
        self.path = path
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")  # WAL: survives kill -9 (not power loss)
        self.db.execute("CREATE TABLE IF NOT EXISTS runs (subgraph TEXT PRIMARY KEY, run_id TEXT, "
                        "fingerprint TEXT, endpoint TEXT, started TEXT, phase TEXT)")
        self.db.execute("CREATE TABLE IF NOT EXISTS done (subgraph TEXT, key TEXT, value TEXT, "
                        "PRIMARY KEY (subgraph, key))")

    def run(self, subgraph: str) -> dict | None:
        r = self.db.execute("SELECT run_id, fingerprint, endpoint, started, phase FROM runs WHERE subgraph=?",
                            (subgraph,)).fetchone()
        return dict(zip(("run_id", "fingerprint", "endpoint", "started", "phase"), r)) if r else None

    def start(self, subgraph: str, run_id: str, fingerprint: str, endpoint: str, started: str) -> None:
        self.db.execute("BEGIN")
        self.db.execute("DELETE FROM done WHERE subgraph=?", (subgraph,))
        self.db.execute("INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?)",
                        (subgraph, run_id, fingerprint, endpoint, started, "crawl"))
        self.db.execute("COMMIT")

    def set_phase(self, subgraph: str, phase: str) -> None:
        self.db.execute("UPDATE runs SET phase=? WHERE subgraph=?", (phase, subgraph))

    def results(self, subgraph: str) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, value FROM done WHERE subgraph=?", (subgraph,)))

    def put(self, subgraph: str, key: str, value) -> None:
        self.db.execute("INSERT OR REPLACE INTO done VALUES (?,?,?)", (subgraph, key, json.dumps(value)))

    def finish(self, subgraph: str) -> None:
        self.db.execute("BEGIN")
        self.db.execute("DELETE FROM done WHERE subgraph=?", (subgraph,))
        self.db.execute("DELETE FROM runs WHERE subgraph=?", (subgraph,))
        self.db.execute("COMMIT")

    def close(self) -> None:
        self.db.close()


def checkpoint_path(store, config: MirrorConfig) -> str:
    return config.checkpoint or (str(store.location).rstrip("/\\") + ".mirror-checkpoint.sqlite")


def staging_dir(cp_path: str, subgraph: str, run_id: str) -> Path:
    """Where finished batches wait (validated N-Triples, one file per query) until the
    subgraph is complete and bulk-loaded: ``<checkpoint>.staging/<subgraph>/<run>/``."""
    return Path(cp_path + ".staging") / subgraph / run_id


class _ChainedFiles(io.RawIOBase):
    """The concatenation of several files as one binary stream (for one bulk load)."""

    def __init__(self, paths):
        self._paths = list(paths)
        self._f = None

    def readable(self):
        return True

    def readinto(self, b):
        while True:
            if self._f is None:
                if not self._paths:
                    return 0
                self._f = open(self._paths.pop(0), "rb")
            n = self._f.readinto(b)
            if n:
                return n
            self._f.close()
            self._f = None

    def close(self):
        if self._f is not None:
            self._f.close()
        super().close()


# -- queries ------------------------------------------------------------------------------

def template(name: str) -> str:
    path = resources.queries("mirror", name + ".rq")
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise MirrorError(f"{path}: cannot read the query template: {e}") from None


def _rows(var: str, terms: Iterable) -> tuple:
    return ([var], [[t] for t in terms])


def wd_node(qid: str) -> NamedNode:
    return NamedNode(vocab.WD + qid)


_SLOT = re.compile(r"\{\{(\w+)\}\}")


def render(tpl: str, **lists) -> str:
    """Fill the ``{{name}}`` slots of a template with comma-separated RDF terms, each
    serialized by pyoxigraph (kgcult.sparqlutil.term): never raw text."""
    def fill(mt):
        name = mt.group(1)
        if name not in lists:
            raise MirrorError(f"query template slot {{{{{name}}}}} has no value")
        terms = lists[name]
        return ", ".join(str(sparqlutil.term(t)) for t in terms)

    return _SLOT.sub(fill, tpl)


def members_query(tpl: str, classes: list[str], props: list[str], after: str, limit: int) -> str:
    q = render(tpl, properties=[vocab.wdt(p) for p in props], after=[Literal(after)])
    q = bind_values(q, rows=_rows("c", [wd_node(c) for c in classes]))
    return q.rstrip() + f"\nLIMIT {int(limit)}\n"


def statements_query(tpl: str, ids: list[str], props: list[str]) -> str:
    q = render(tpl, properties=[vocab.wdt(p) for p in props])
    return bind_values(q, rows=_rows("s", [wd_node(i) for i in ids]))


def labels_query(tpl: str, ids: list[str], label_props: list[str], langs: list[str],
                 sitelinks: bool = False) -> str:
    q = render(tpl, properties=[NamedNode(p) for p in label_props], languages=[Literal(x) for x in langs],
               plain=[NamedNode(subgraphs.SITELINKS)] if sitelinks else [])
    return bind_values(q, rows=_rows("s", [wd_node(i) for i in ids]))


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def entity_id(term) -> str | None:
    """The id of a wd: entity IRI term (Q42), else None."""
    if isinstance(term, NamedNode) and term.value.startswith(vocab.WD):
        local = term.value[len(vocab.WD):]
        if _ENTITY.match(local):
            return local
    return None


def chunks(items: list, n: int) -> list[list]:
    return [items[i:i + n] for i in range(0, len(items), n)]


# -- the crawl (shared by the endpoint and the dump path) --------------------------------

class Backend:
    """What a crawl needs from a data source. The endpoint backend queries a SPARQL
    endpoint and writes each batch; the dump backend (kgcult.ingest) answers from an
    in-memory edge index."""

    def seeds(self, spec: SubgraphSpec) -> set[str]:
        raise NotImplementedError

    def down(self, spec: SubgraphSpec, level: int, frontier: list[str]) -> set[str]:
        """Entities x with x p c for p in spec.member_properties, c in frontier."""
        raise NotImplementedError

    def fetch(self, spec: SubgraphSpec, level: int, ids: list[str]) -> set[str]:
        """Fetch (write) the members' claims; return entity objects of follow properties."""
        raise NotImplementedError


def crawl(spec: SubgraphSpec, backend: Backend, log=None) -> tuple[set[str], list[str]]:
    """Run the selection of ``spec`` against ``backend``; return (members, warnings).
    Deterministic: levels are sorted and cut into batches the same way on every run."""
    warnings: list[str] = []
    seen = set(spec.roots)
    frontier = sorted(seen, key=id_sort_key)
    for depth in range(spec.member_depth):
        if not frontier or not spec.member_properties:
            break
        new = backend.down(spec, depth, frontier) - seen
        seen |= new
        frontier = sorted(new, key=id_sort_key)
    else:
        if frontier and spec.member_properties and spec.member_depth > 1:
            warnings.append(f"{spec.name}: the member walk stopped at its depth bound {spec.member_depth} "
                            f"(the last level's {len(frontier)} entities were not expanded)")
    members = seen | backend.seeds(spec)
    level_ids = sorted(members, key=id_sort_key)
    done = set(members)
    for depth in range(spec.follow_depth + 1):
        if not level_ids:
            break
        objects = backend.fetch(spec, depth, level_ids)
        new = objects - done
        if depth == spec.follow_depth:
            if new and spec.follow_properties:
                warnings.append(f"{spec.name}: follow depth bound {spec.follow_depth} reached; "
                                f"{len(new)} referenced entities were not followed")
            break
        done |= new
        level_ids = sorted(new, key=id_sort_key)
    if log:
        for w in warnings:
            log(f"warning: {w}")
    return done, warnings


def seeds_from_store(store, spec: SubgraphSpec, specs: dict[str, SubgraphSpec]) -> set[str]:
    """Seeds of ``spec`` read from the local graphs of the subgraphs it names."""
    out: set[str] = set()
    for name in spec.seed_from:
        g = NamedNode(specs[name].graph) if name in specs else NamedNode(vocab.graph_iri(name))
        if spec.seed_all:
            rows = store.ox.query(bind_values(
                "SELECT DISTINCT ?e WHERE { GRAPH ?g { { ?e ?p ?o } UNION { ?s ?p ?e } } "
                f"FILTER(isIRI(?e) && STRSTARTS(STR(?e), {Literal(vocab.WD)})) }}", {"g": g}))
            for r in rows:
                e = entity_id(r["e"])
                if e:
                    out.add(e)
        else:
            for p in spec.seed_properties:
                for q in store.ox.quads_for_pattern(None, vocab.wdt(p), None, g):
                    e = entity_id(q.object)
                    if e:
                        out.add(e)
    return out


class EndpointBackend(Backend):
    def __init__(self, store, specs, client: SparqlClient, checkpoint: Checkpoint, pool: ThreadPoolExecutor,
                 config: MirrorConfig, bar=None):
        self.store, self.specs, self.client, self.cp = store, specs, client, checkpoint
        self.pool, self.config, self.bar = pool, config, bar
        self.tpl = {n: template(n) for n in ("members", "statements", "labels")}
        self.memo: dict[str, str] = {}
        self.keys: list[str] = []
        self.queries = 0
        self.resumed = 0
        self.triples = 0

    def begin(self, spec: SubgraphSpec, staging: Path) -> None:
        self.staging = staging
        staging.mkdir(parents=True, exist_ok=True)
        self.memo = {k: v for k, v in self.cp.results(spec.name).items()
                     if not k.startswith("construct:") or self.batch_file(k).exists()}
        self.keys, self.queries, self.resumed, self.triples = [], 0, 0, 0

    def batch_file(self, key: str) -> Path:
        return self.staging / (key.split(":", 1)[1] + ".nt")

    def batch_files(self) -> list[Path]:
        return [self.batch_file(k) for k in sorted(set(self.keys)) if k.startswith("construct:")]

    def _tick(self, n_triples: int = 0, batches: int = 1) -> None:
        self.triples += max(n_triples, 0)
        if self.bar is not None:
            self.bar.update(batches)
            self.bar.set_postfix(triples=self.triples, MB=round(self.client.bytes / 1e6, 1),
                                 retries=self.client.retries, refresh=False)

    def _add_total(self, n: int) -> None:
        if self.bar is not None:
            self.bar.total = (self.bar.total or 0) + n
            self.bar.refresh()

    def seeds(self, spec):
        return seeds_from_store(self.store, spec, self.specs)

    def down(self, spec, level, frontier):
        tpl = self.tpl["members"]
        props = list(spec.member_properties)
        jobs = []
        for i, chunk in enumerate(chunks(frontier, self.config.class_batch_size)):
            first = members_query(tpl, chunk, props, "", self.config.page_size)
            key = "members:" + sha(first)
            self.keys.append(key)
            jobs.append((key, chunk, f"{spec.name}: enumeration level {level + 1}, class batch {i + 1} "
                                     f"({chunk[0]}..{chunk[-1]}, {len(chunk)} classes)"))
        self._add_total(len(jobs))
        result: set[str] = set()
        pending = {}
        for key, chunk, what in jobs:
            if key in self.memo:
                result.update(json.loads(self.memo[key]))
                self.resumed += 1
                self._tick()
            else:
                pending[self.pool.submit(self._enumerate, tpl, chunk, props, what)] = key
        for fut in _as_completed(pending):
            ids, nq = fut.result()
            self.queries += nq
            self.cp.put(spec.name, pending[fut], ids)
            result.update(ids)
            self._tick()
        return result

    def _enumerate(self, tpl, chunk, props, what) -> tuple[list[str], int]:
        after, out, n = "", [], 0
        for page in range(1_000_000):  # bounded: each page strictly advances the key
            q = members_query(tpl, chunk, props, after, self.config.page_size)
            iris = self.client.select_iris(q, "x", f"{what}, page {page + 1}")
            n += 1
            for iri in iris:
                e = entity_id(NamedNode(iri)) if iri.startswith(vocab.WD) else None
                if e:
                    out.append(e)
            if len(iris) < self.config.page_size:
                break
            if iris[-1] <= after:
                raise MirrorError(f"{what}: the endpoint does not page by ?x order (page {page + 1})")
            after = iris[-1]
        return sorted(set(out), key=id_sort_key), n

    def fetch(self, spec, level, ids):
        jobs = []
        batches = chunks(ids, self.config.batch_size)
        for i, batch in enumerate(batches):
            where = f"{spec.name}: level {level}, batch {i + 1}/{len(batches)} ({batch[0]}..{batch[-1]}, {len(batch)} ids)"
            if spec.is_labels:
                jobs.append((labels_query(self.tpl["labels"], batch, list(spec.label_properties),
                                          list(spec.languages), spec.sitelinks), where + " labels"))
            else:
                jobs.append((statements_query(self.tpl["statements"], batch, list(spec.properties)), where))
        self._add_total(len(jobs))
        follow = {vocab.WDT + p for p in spec.follow_properties}
        objects: set[str] = set()
        pending = {}
        for q, what in jobs:
            key = "construct:" + sha(q)
            self.keys.append(key)
            if key in self.memo:
                objects.update(json.loads(self.memo[key])["objects"])
                self.resumed += 1
                self._tick()
            else:
                pending[self.pool.submit(self._fetch_one, q, what, self.batch_file(key), follow)] = key
        for fut in _as_completed(pending):
            n, objs = fut.result()
            # the batch file is complete (written, fsynced, renamed) before the checkpoint says so
            self.cp.put(spec.name, pending[fut], {"triples": n, "objects": objs})
            self.queries += 1
            objects.update(objs)
            self._tick(n)
        return objects

    def _fetch_one(self, q: str, what: str, path: Path, follow: set[str]) -> tuple[int, list[str]]:
        """In a worker thread: fetch one batch, parse it completely, stage it as a file."""
        triples = self.client.construct(q, what)
        objs = sorted({e for t in triples if t.predicate.value in follow
                       for e in [entity_id(t.object)] if e}, key=id_sort_key)
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            f.write(ox.serialize(triples, format=ox.RdfFormat.N_TRIPLES) if triples else b"")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        return len(triples), objs


def _as_completed(futures: dict):
    from concurrent.futures import as_completed

    try:
        yield from as_completed(futures)
    except BaseException:
        for f in futures:
            f.cancel()
        raise


# -- the command --------------------------------------------------------------------------

def mirror(store, names=None, *, config: MirrorConfig | None = None, specs=None,
           log=None, progress: bool = False) -> list[SubgraphReport]:
    """Mirror the named subgraphs (all when none) from ``config.endpoint`` into ``store``."""
    config = config or MirrorConfig()
    config.validate()
    if getattr(store, "remote", False) or getattr(store, "read_only", False):
        raise MirrorError("mirror writes into an embedded, writable store (not a remote endpoint)")
    specs = specs or subgraphs.load_specs()
    chosen = subgraphs.select(specs, names)
    log = log or (lambda m: None)
    cp = Checkpoint(checkpoint_path(store, config))
    client = SparqlClient(config)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=0, unit="query", desc="mirror", dynamic_ncols=True, leave=True)
    reports = []
    try:
        with ThreadPoolExecutor(max_workers=config.concurrency, thread_name_prefix="kgcult-mirror") as pool:
            backend = EndpointBackend(store, specs, client, cp, pool, config, bar)
            changed: set[str] = set()
            for spec in chosen:
                if bar is not None:
                    bar.set_description(f"mirror {spec.name}")
                # a subgraph seeded from graphs this run changed is re-pulled, too
                force = bool(set(spec.seed_from) & changed)
                rep = _mirror_one(store, spec, backend, cp, config, client, log, force=force)
                if not rep.skipped:
                    changed.add(spec.name)
                reports.append(rep)
    finally:
        if bar is not None:
            bar.close()
        cp.close()
        store.flush()
    return reports


def _marker(store, graph: str) -> str | None:
    for q in store.ox.quads_for_pattern(NamedNode(graph), _MIRROR_RUN, None, _META):
        return q.object.value
    return None


def _mirror_one(store, spec, backend: EndpointBackend, cp: Checkpoint, config, client, log,
                force: bool = False) -> SubgraphReport:
    t0 = time.perf_counter()
    rep = SubgraphReport(spec.name, spec.graph)
    fp = spec.fingerprint()
    run = cp.run(spec.name)
    if run and (run["fingerprint"] != fp or run["endpoint"] != config.endpoint):
        log(f"{spec.name}: the checkpoint is for another spec or endpoint; starting over")
        run = None
    marker = _marker(store, spec.graph)
    if run is None:
        existing = store.triple_count(spec.graph)
        refresh = config.refresh or force
        complete = marker is not None and not marker.startswith(PARTIAL)
        if complete and not refresh:
            rep.skipped = "already mirrored (use --refresh to re-pull and replace it)"
            rep.triples = existing
            log(f"{spec.name}: {rep.skipped}")
            return rep
        if existing and not refresh and marker is None:
            raise MirrorError(f"{spec.name}: graph {spec.graph} already holds {existing} triples that "
                              "`kgcult mirror` did not write; pass --refresh to replace it")
        run = {"run_id": os.urandom(8).hex(), "started": _now()}
        old = Path(cp.path + ".staging") / spec.name
        if old.exists():
            shutil.rmtree(old, ignore_errors=True)
        cp.start(spec.name, run["run_id"], fp, config.endpoint, run["started"])
    else:
        log(f"{spec.name}: resuming run {run['run_id']} from the checkpoint")
    missing = [d for d in spec.seed_from if not store.triple_count(backend.specs[d].graph if d in backend.specs else vocab.graph_iri(d))]
    if missing:
        log(f"warning: {spec.name} is seeded from {', '.join(missing)}, which the store does not hold "
            "(yet): mirror them first, or together with it")
    retries_before = client.retries
    sdir = staging_dir(cp.path, spec.name, run["run_id"])
    backend.begin(spec, sdir)
    members, rep.warnings = crawl(spec, backend, log)  # all memoized when resuming a finished crawl
    rep.members = len(members)
    if _marker(store, spec.graph) != run["run_id"]:
        _load_staged(store, spec, run["run_id"], backend.batch_files())
    rep.triples = store.triple_count(spec.graph)
    rep.queries, rep.resumed_queries = backend.queries, backend.resumed
    rep.retries = client.retries - retries_before
    keys = sorted(set(backend.keys))
    if not _recorded(store, run["run_id"]):  # killed after recording, before cp.finish?
        _record(store, spec, config, run, rep, keys, backend, fp)
    store.mark_closure_stale()
    cp.finish(spec.name)
    shutil.rmtree(sdir.parent, ignore_errors=True)
    rep.seconds = time.perf_counter() - t0
    log(f"{spec.name}: {rep.triples} triples in {spec.graph} ({rep.queries} queries, "
        f"{rep.resumed_queries} resumed from the checkpoint, {rep.retries} retries, {rep.seconds:.1f} s)")
    return rep


def _recorded(store, run_id: str) -> bool:
    for _ in store.ox.quads_for_pattern(None, vocab.kgc("runId"), Literal(run_id), _META):
        return True
    return False


def _record(store, spec, config, run, rep, keys, backend, fp) -> None:
    store.record_activity(
        kind="mirror", source=config.endpoint, sha256=sha("\n".join(keys)), graph=spec.graph,
        triples=rep.triples,
        extra={
            "subgraph": spec.name, "specSha256": fp, "queryCount": len(keys),
            "templateSha256": sha("".join(backend.tpl[n] for n in sorted(backend.tpl))),
            "startedAt": run["started"], "members": rep.members, "userAgent": config.user_agent,
            "runId": run["run_id"],
        },
    )


def _load_staged(store, spec: SubgraphSpec, run_id: str, files: list[Path]) -> None:
    """Bulk-load the staged batch files of a finished crawl. A graph with nothing to keep
    (new, or our own partial load) is loaded directly, marked partial until done; one
    with content (--refresh) is built in a staging graph and swapped in atomically."""
    marker = _marker(store, spec.graph)
    direct = not store.triple_count(spec.graph) or (marker or "").startswith(PARTIAL)
    target = spec.graph if direct else spec.staging_graph
    if direct:
        _set_marker(store, spec.graph, PARTIAL + run_id)
    store.clear_graph(target)
    files = [f for f in files if f.stat().st_size]
    size = sum(f.stat().st_size for f in files)
    if files and size <= 64 << 20:
        # small: one ordinary transaction (the bulk loader's fixed cost dominates here)
        data = b"".join(f.read_bytes() for f in files)
        store.ox.load(input=data, format=ox.RdfFormat.N_TRIPLES, to_graph=NamedNode(target))
    elif files:
        with _ChainedFiles(files) as stream:
            store.ox.bulk_load(input=stream, format=ox.RdfFormat.N_TRIPLES, to_graph=NamedNode(target))
    if direct:
        _set_marker(store, spec.graph, run_id)
    else:
        _swap(store, spec, run_id)


def _swap(store, spec: SubgraphSpec, run_id: str) -> None:
    """Replace the target graph by the staging graph, atomically (one SPARQL Update)."""
    t, s, m = spec.graph, spec.staging_graph, vocab.META_GRAPH
    for iri in (t, s):
        if any(c in iri for c in '<>"{}|\\^` \n'):
            raise MirrorError(f"graph IRI {iri!r} is not usable")
    store.ox.update(
        f"DROP SILENT GRAPH <{t}> ;\n"
        f"ADD SILENT GRAPH <{s}> TO GRAPH <{t}> ;\n"
        f"DROP SILENT GRAPH <{s}> ;\n"
        f"DELETE WHERE {{ GRAPH <{m}> {{ <{t}> <{_MIRROR_RUN.value}> ?r }} }} ;\n"
        f"INSERT DATA {{ GRAPH <{m}> {{ <{t}> <{_MIRROR_RUN.value}> {Literal(run_id)} }} }}"
    )


def _set_marker(store, graph: str, value: str) -> None:
    """Record (atomically) which run wrote ``graph``; ``partial:<run>`` while it runs."""
    g = NamedNode(graph)
    store.ox.update(
        f"DELETE WHERE {{ GRAPH {_META} {{ {g} {_MIRROR_RUN} ?r }} }} ;\n"
        f"INSERT DATA {{ GRAPH {_META} {{ {g} {_MIRROR_RUN} {Literal(value)} }} }}"
    )


def _now() -> str:
    from kgcult.store.embedded import now_iso

    return now_iso()
