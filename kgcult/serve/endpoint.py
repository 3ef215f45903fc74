"""The endpoint's logic, apart from HTTP: queries run in a bounded pool of worker threads
with deadlines and result limits, token-checked updates, entity cards and status.

Every query runs in the pool with a deadline. A query past its deadline gets 504; a full
pool and queue gets 503 (``Retry-After``). pyoxigraph cannot cancel a running query: the
worker stops between result rows, but a query that spends its time inside one evaluation
step (a big aggregate) runs on in its worker until it finishes. Such runaway queries can
occupy at most ``workers`` threads, never more; cheap requests are answered from the
queue as workers free up. Results over ``max_rows`` rows (or triples) or ``max_bytes``
serialized bytes get 507, unless the request asks ``limit-mode=truncate``: then the first
rows are sent with ``X-Kgcult-Truncated: true``.
"""
from __future__ import annotations

import hashlib
import hmac
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

import pyoxigraph as ox
from pyoxigraph import NamedNode, RdfFormat

from kgcult import inspection, langtags, vocab
from kgcult.errors import KgcultError
from kgcult.serve.config import ServeConfig
from kgcult.serve.protocol import (RDF_TYPES, RESULTS_MEDIA, RESULTS_TYPES, HttpError, QueryRequest, Reply,
                                   UpdateRequest, choose)
from kgcult.sparql import results, wdqs
from kgcult.sparql.text import classify
from kgcult.version import __version__

_TURTLE_LIKE = (RdfFormat.TURTLE, RdfFormat.TRIG)


class SparqlApp:
    """The endpoint over one Store: what each request gets, whatever carries it."""

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

    # -- the pool ------------------------------------------------------------------------

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
            raise HttpError(503, "the server is shutting down") from None
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
            raise self._timed_out() from None
        if isinstance(out, HttpError):
            if out.status == 504:
                self.count("timeouts")
            raise out
        return out

    def _timed_out(self) -> HttpError:
        return HttpError(504, f"query timed out after {self.cfg.timeout:g} s (kgcult serve --timeout)")

    # -- queries -------------------------------------------------------------------------

    def refuse_update(self) -> None:
        """An update sent where queries go: pointed at /update, or refused (read-only)."""
        if self.cfg.writable:
            raise HttpError(400, "this is an update: send it to /update, not /query")
        raise HttpError(403, "updates are refused: this endpoint is read-only "
                             "(start it with `kgcult serve --writable --token ...` to allow them at /update)")

    def query(self, req: QueryRequest) -> Reply:
        if classify(req.text) == "update":
            self.refuse_update()
        self.count("queries")
        kwargs: dict = {"prefixes": wdqs.PREFIXES}
        try:
            if req.default_graphs:
                kwargs["default_graph"] = [NamedNode(g) for g in req.default_graphs]
            else:
                kwargs["use_default_graph_as_union"] = True
            if req.named_graphs:
                kwargs["named_graphs"] = [NamedNode(g) for g in req.named_graphs]
        except ValueError as e:
            raise HttpError(400, f"invalid graph IRI: {e}") from None
        return self.run(self._query_job, req, kwargs)

    def _query_job(self, req: QueryRequest, kwargs: dict, deadline: float, cancel: threading.Event) -> Reply:
        # pyoxigraph result objects may only be dropped on the thread that made them: keep
        # every reference (locals, tracebacks) inside this worker thread.
        holder: list = []
        try:
            return self._evaluate(holder, req, kwargs, deadline, cancel)
        except HttpError as e:
            e.__traceback__ = None
            e.__context__ = None
            return e
        except Exception as e:  # noqa: BLE001 - reported as a 500
            return HttpError(500, f"query failed: {type(e).__name__}: {e}")
        finally:
            holder.clear()

    def _evaluate(self, holder: list, req: QueryRequest, kwargs: dict, deadline: float,
                  cancel: threading.Event) -> Reply:
        try:  # WDQS drop-in (docs/wdqs.md): label service, SERVICE refused, closure paths
            prepared = wdqs.prepare(req.text, closure_fresh=None if req.default_graphs or req.named_graphs
                                    else not self.store.closure_stale)
            result = self.store.ox.query(prepared.text, **kwargs)
            holder.append(result)
        except KgcultError as e:
            raise HttpError(400, str(e)) from None
        except SyntaxError as e:
            raise HttpError(400, str(wdqs.syntax_error(req.text, prepared.text, e))) from None
        except (OSError, ValueError, TypeError) as e:
            raise HttpError(500, f"query failed: {e}") from None
        headers: dict = {"X-Kgcult-Notice": prepared.notice_header} if prepared.notices else {}
        limit = self.cfg.max_rows

        def collect(iterable) -> list:
            items = []
            try:
                for i, item in enumerate(iterable):
                    if i >= limit:
                        if req.truncate:
                            headers["X-Kgcult-Truncated"] = "true"
                            break
                        raise HttpError(507, f"the result has more than {limit} rows; add a LIMIT "
                                             "(or raise kgcult serve --max-rows)",
                                        {"X-Kgcult-Limit": f"rows={limit}"})
                    if i % 16 == 0 and (cancel.is_set() or time.monotonic() > deadline):
                        raise self._timed_out()
                    items.append(item)
            except (OSError, ValueError) as e:
                raise HttpError(500, f"query failed: {e}") from None
            return items

        if isinstance(result, ox.QueryBoolean):
            fmt = RESULTS_TYPES[choose(req.accept, RESULTS_TYPES, "application/sparql-results+json")]
            return Reply(200, RESULTS_MEDIA[fmt] + "; charset=utf-8", results.serialize_boolean(bool(result), fmt),
                         headers)
        if isinstance(result, ox.QueryTriples):
            rdf_format = RDF_TYPES[choose(req.accept, RDF_TYPES, "application/n-triples")]
            triples = collect(result)
            body = ox.serialize(triples, format=rdf_format,
                                **({"prefixes": vocab.PREFIXES} if rdf_format in _TURTLE_LIKE else {}))
            headers["X-Kgcult-Rows"] = str(len(triples))
            return self._limit_bytes(Reply(200, rdf_format.media_type + "; charset=utf-8", body or b"", headers))
        fmt = RESULTS_TYPES[choose(req.accept, RESULTS_TYPES, "application/sparql-results+json")]
        rows = collect(result)
        headers["X-Kgcult-Rows"] = str(len(rows))
        body = results.serialize_rows([v.value for v in result.variables], rows, fmt)
        return self._limit_bytes(Reply(200, RESULTS_MEDIA[fmt] + "; charset=utf-8", body, headers))

    def _limit_bytes(self, reply: Reply) -> Reply:
        if len(reply.body) > self.cfg.max_bytes:
            raise HttpError(507, f"the result is larger than {self.cfg.max_bytes} bytes; add a LIMIT "
                                 "(or raise kgcult serve --max-bytes)", {"X-Kgcult-Limit": f"bytes={self.cfg.max_bytes}"})
        return reply

    # -- updates -------------------------------------------------------------------------

    def update(self, req: UpdateRequest) -> Reply:
        if not self.cfg.writable:
            raise HttpError(403, "updates are refused: this endpoint is read-only "
                                 "(start it with `kgcult serve --writable --token ...`)")
        auth = req.authorization
        if not auth or not auth.startswith("Bearer "):
            raise HttpError(401, "updates need `Authorization: Bearer TOKEN`",
                            {"WWW-Authenticate": 'Bearer realm="kgcult"'})
        given = auth[len("Bearer "):].strip().encode()
        if not hmac.compare_digest(given, (self.cfg.token or "").encode()):
            raise HttpError(403, "wrong token", {"WWW-Authenticate": 'Bearer realm="kgcult", error="invalid_token"'})
        if req.using_graphs or req.using_named_graphs:
            raise HttpError(400, "using-graph-uri / using-named-graph-uri are not supported; use WITH or GRAPH")
        if classify(req.text) == "query":
            raise HttpError(400, "this is a query: send it to /query")
        with self.write_lock:
            try:
                wdqs.refuse_services(req.text)  # no request on a query's behalf (docs/wdqs.md)
                self.store.ox.update(req.text, prefixes=vocab.PREFIXES)
            except KgcultError as e:
                raise HttpError(400, str(e)) from None
            except SyntaxError as e:
                raise HttpError(400, f"SPARQL syntax error: {e}") from None
            except OSError as e:
                raise HttpError(500, f"update failed: {e}") from None
            self.count("updates")
            self.store.mark_closure_stale()
            self.store.record_activity(kind="update", source="kgcult serve /update",
                                       extra={"updateSha256": hashlib.sha256(req.text.encode()).hexdigest()})
            self.store.flush()
        return Reply(204, "text/plain", b"")

    # -- entity cards and status ---------------------------------------------------------

    def entity_card(self, qid: str, lang: str) -> dict:
        """The card of ``kgcult show`` (404 for an entity the store does not hold)."""
        try:
            lang = langtags.parse(lang, "lang")
        except KgcultError as e:
            raise HttpError(400, str(e)) from None

        def job(deadline, cancel):
            try:
                return inspection.show(self.store, qid, lang=lang)
            except KgcultError as e:
                raise HttpError(404, str(e)) from None

        return self.run(job)

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
