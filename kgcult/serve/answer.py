"""Answering one query inside a query worker: :func:`evaluate_query` hands the query text
to the engine (the one place that does), :func:`answer_query` writes the result out row by
row into a :class:`~kgcult.serve.spool.Spool` while it enforces the row limit, the byte
limit and the deadline, and returns an :class:`Answer` (plain data, sent back to the
server process).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import IO, cast

import pyoxigraph as ox
from pyoxigraph import NamedNode, RdfFormat

from kgcult import vocab
from kgcult.errors import KgcultError
from kgcult.serve.protocol import RDF_TYPES, RESULTS_MEDIA, RESULTS_TYPES, HttpError, choose
from kgcult.serve.spool import Spool, TooLarge
from kgcult.sparql import results, wdqs
from kgcult.store import health

_TURTLE_LIKE = (RdfFormat.TURTLE, RdfFormat.TRIG)
CHECK_EVERY = 16  # rows between two looks at the clock
TRUNCATE_ROWS = 100_000  # rows a limit-mode=truncate request gets when the server has no --max-rows


@dataclass(frozen=True)
class QueryJob:
    """What a worker needs to answer a query (plain data: it crosses a process boundary)."""
    text: str
    default_graphs: tuple = ()
    named_graphs: tuple = ()
    accept: tuple = ()
    truncate: bool = False
    max_rows: int | None = None
    max_bytes: int = 1 << 30
    timeout: float = 60.0
    offset: int = 0            # a SELECT's rows from offset ...
    rows: int | None = None    # ... at most this many (the query page's paging)
    total: bool = False        # count every row of a SELECT (X-Kgcult-Total-Rows)


@dataclass
class Answer:
    """A worker's answer: status, type, headers, and the body in memory or in a file."""
    status: int
    content_type: str
    headers: dict = field(default_factory=dict)
    body: bytes | None = b""
    path: str | None = None  # a spooled body (kgcult.serve.spool.stream_file sends it)
    size: int = 0


def evaluate_query(store, text: str, default_graphs=(), named_graphs=()):
    """Evaluate SPARQL query text on ``store`` (a kgcult Store); return pyoxigraph's live
    result and the :class:`kgcult.sparql.wdqs.Prepared` query (its notices). The default
    graph is the set of every data graph's triples and the closure's (each once, as on WDQS:
    ``kgcult.store.setgraph``) unless ``default_graphs`` names some. Every query the
    server answers goes through here, and through the WDQS drop-in step first
    (docs/wdqs.md: prefixes, the label service, SERVICE refused, closure paths)."""
    kwargs: dict = {"prefixes": wdqs.PREFIXES}
    try:
        if default_graphs:
            kwargs["default_graph"] = [NamedNode(g) for g in default_graphs]
        if named_graphs:
            kwargs["named_graphs"] = [NamedNode(g) for g in named_graphs]
    except ValueError as e:
        raise HttpError(400, f"invalid graph IRI: {e}") from None
    try:
        prepared = wdqs.prepare(text, closure_fresh=None if default_graphs or named_graphs
                                else not store.closure_stale)
    except KgcultError as e:
        raise HttpError(400, str(e)) from None
    try:
        return store.evaluate(prepared.text, **kwargs), prepared
    except SyntaxError as e:
        raise HttpError(400, str(wdqs.syntax_error(text, prepared.text, e))) from None
    except (OSError, ValueError, TypeError) as e:
        raise HttpError(500, f"query failed: {e}") from None


def answer_query(store, job: QueryJob, spool_dir: str | None) -> Answer:
    """Evaluate ``job`` and write its result; errors become error answers."""
    deadline = time.monotonic() + job.timeout
    spool = Spool(job.max_bytes, spool_dir)
    try:
        return _answer(store, job, spool, deadline)
    except HttpError as e:
        spool.discard()
        return error_answer(e)
    except TooLarge:
        spool.discard()
        return error_answer(HttpError(507, f"the result is larger than {job.max_bytes} bytes; add a LIMIT "
                                           "(or raise kgcult serve --max-bytes)",
                                      {"X-Kgcult-Limit": f"bytes={job.max_bytes}"}))
    except MemoryError:  # past the worker's memory cap in Python code (kgcult.serve.workers)
        spool.discard()
        return error_answer(HttpError(507, "the query needed more memory than a query worker may use "
                                           "(kgcult serve --worker-memory)", {"X-Kgcult-Limit": "memory"}))
    except Exception as e:  # noqa: BLE001 - reported as a 500, the worker goes on
        spool.discard()
        return error_answer(HttpError(500, f"query failed: {type(e).__name__}: {e}"))


def error_answer(e: HttpError) -> Answer:
    body = (e.message + "\n").encode("utf-8")
    return Answer(e.status, "text/plain; charset=utf-8", dict(e.headers), body, None, len(body))


def timed_out(timeout: float) -> HttpError:
    return HttpError(504, f"query timed out after {timeout:g} s (kgcult serve --timeout)")


def _answer(store, job: QueryJob, spool: Spool, deadline: float) -> Answer:
    result, prepared = evaluate_query(store, job.text, job.default_graphs, job.named_graphs)
    if time.monotonic() > deadline:
        raise timed_out(job.timeout)
    notices = prepared.notices + health.notices(store, job.text, partial=store.partial_graphs())
    headers: dict = {"X-Kgcult-Notice": " | ".join(n.replace("\n", " ") for n in notices)} if notices else {}
    if isinstance(result, ox.QueryBoolean):
        fmt = RESULTS_TYPES[choose(list(job.accept), RESULTS_TYPES, "application/sparql-results+json")]
        body = results.serialize_boolean(bool(result), fmt)
        return Answer(200, RESULTS_MEDIA[fmt] + "; charset=utf-8", headers, body, None, len(body))
    paged = not isinstance(result, ox.QueryTriples) and bool(job.offset or job.rows is not None or job.total)
    window_cap = None
    if paged and job.truncate and job.max_rows is None:
        # the query page: TRUNCATE_ROWS bounds what one answer writes (the window), not the
        # rows it may page through or count (before, the result itself was cut at 100,000
        # rows: "next" stopped there and the count said 100000 for 1.2 M rows)
        window_cap = TRUNCATE_ROWS
        counted = _limited(result, replace(job, truncate=False), headers, deadline)
    else:
        counted = _limited(result, job, headers, deadline)
    if isinstance(result, ox.QueryTriples):
        rdf_format = RDF_TYPES[choose(list(job.accept), RDF_TYPES, "application/n-triples")]
        content_type = rdf_format.media_type + "; charset=utf-8"
        ox.serialize(counted, cast("IO[bytes]", spool), format=rdf_format,  # it only calls write()
                     prefixes=vocab.PREFIXES if rdf_format in _TURTLE_LIKE else None)
    else:
        fmt = RESULTS_TYPES[choose(list(job.accept), RESULTS_TYPES, "application/sparql-results+json")]
        content_type = RESULTS_MEDIA[fmt] + "; charset=utf-8"
        results.write_rows([v.value for v in result.variables],
                           _window(counted, job, headers, window_cap) if paged else counted, fmt, spool.write)
    headers["X-Kgcult-Rows"] = str(headers.pop("_shown", headers.get("_rows", 0)))
    headers.pop("_rows", None)
    spooled, path = spool.finish()
    return Answer(200, content_type, headers, spooled, path, spool.size)


def _window(rows, job: QueryJob, headers: dict, cap: int | None = None):
    """Rows ``offset`` .. ``offset + rows`` of a SELECT (the query page asks one page at a
    time, so its first rows come without the whole result being written). Past the
    window: ``X-Kgcult-More`` says whether a row follows (one more row is read), or, with
    ``total``, ``X-Kgcult-Total-Rows`` counts them all (read, not written). ``cap``: at
    most this many rows written however many are asked for (``X-Kgcult-Truncated`` when
    the window was cut there)."""
    it = iter(rows)
    read = shown = 0
    more = cut = False
    limit = job.rows
    if cap is not None and (limit is None or limit > cap):
        limit, cut = cap, True
    for row in it:
        read += 1
        if read <= job.offset:
            continue
        if limit is not None and shown >= limit:
            more = True  # this row lies past the window
            if cut:
                headers["X-Kgcult-Truncated"] = "true"
            break
        shown += 1
        headers["_shown"] = shown
        yield row
    headers["_shown"] = shown
    if job.total:
        headers["X-Kgcult-Total-Rows"] = str(read + sum(1 for _ in it))
    else:
        headers["X-Kgcult-More"] = "true" if more else "false"


def _limited(rows, job: QueryJob, headers: dict, deadline: float):
    """The rows of a live result, stopped at the row limit if the server has one (507, or
    cut with ``X-Kgcult-Truncated`` in truncate mode, which cuts at TRUNCATE_ROWS when the
    server has none) and at the deadline (504)."""
    n = 0
    cap = job.max_rows if job.max_rows is not None else (TRUNCATE_ROWS if job.truncate else None)
    try:
        for row in rows:
            if cap is not None and n >= cap:
                if job.truncate:
                    headers["X-Kgcult-Truncated"] = "true"
                    break
                raise HttpError(507, f"the result has more than {cap} rows; add a LIMIT "
                                     "(or raise kgcult serve --max-rows)", {"X-Kgcult-Limit": f"rows={cap}"})
            if n % CHECK_EVERY == 0 and time.monotonic() > deadline:
                raise timed_out(job.timeout)
            n += 1
            headers["_rows"] = n
            yield row
    except (OSError, ValueError) as e:
        raise HttpError(500, f"query failed: {e}") from None
