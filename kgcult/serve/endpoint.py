"""The endpoint's logic, apart from HTTP: queries and entity cards run in query worker
processes (:mod:`kgcult.serve.workers`) with deadlines, result limits and per-client
admission; token-checked updates run here, in the server process, which alone holds a
writable store.

A query past its deadline gets 504 and its worker is stopped and replaced; a client with
too many queries in flight gets 429; a full pool and queue gets 503 (``Retry-After``).
Results over ``max_bytes`` serialized bytes get 507 (by default there is no row cap, as
on WDQS: only the deadline and this byte bound); with ``max_rows`` set, more rows do too.
A request that asks ``limit-mode=truncate`` gets the first ``max_rows`` (or 100 000) rows
with ``X-Kgcult-Truncated: true`` instead. A result is written into a spool (memory up to 1 MiB, then
a file) while it is produced, and streamed to the client from there.
"""
from __future__ import annotations

import hmac
import threading

from kgcult import langtags, vocab
from kgcult.errors import KgcultError
from kgcult.serve.checkpoints import Checkpoints, StoreView
from kgcult.serve.config import ServeConfig
from kgcult.serve.answer import TRUNCATE_ROWS, Answer, QueryJob
from kgcult.serve.protocol import HttpError, QueryRequest, Reply, UpdateRequest
from kgcult.serve import spool
from kgcult.serve.spool import IN_MEMORY, stream_file
from kgcult.serve.workers import QueryPool
from kgcult.sparql import nesting, service_guard, update_scope, wdqs
from kgcult.store import base
from kgcult.sparql.query_text import classify
from kgcult.version import __version__


class SparqlApp:
    """The endpoint over one embedded Store: what each request gets, whatever carries it."""

    def __init__(self, store, cfg: ServeConfig):
        if getattr(store, "remote", False):
            raise KgcultError("kgcult serve serves an embedded store, not a remote endpoint")
        self.store, self.cfg = store, cfg
        self.write_lock = threading.Lock()
        self.stats = {"queries": 0, "timeouts": 0, "busy": 0, "limited": 0, "errors": 0, "updates": 0,
                      "memory": 0, "preempted": 0}
        self._stats_lock = threading.Lock()
        self._spool_dir = spool.spool_folder()  # removed at close, or by the next server if this one is killed
        # with --writable, workers read checkpoints (the live store changes under them)
        self.views = Checkpoints(store) if cfg.writable else StoreView(store.location)
        self.pool = QueryPool(self.views, cfg, self._spool_dir.name, self.count)

    def count(self, key: str) -> None:
        with self._stats_lock:
            self.stats[key] += 1

    def close(self) -> None:
        self.pool.close()
        self._spool_dir.cleanup()
        self.views.close()

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
        _check_nesting(req.text, "query")
        self.count("queries")
        cfg = self.cfg
        job = QueryJob(req.text, tuple(req.default_graphs), tuple(req.named_graphs), tuple(req.accept),
                       req.truncate, cfg.max_rows, cfg.max_bytes, cfg.timeout, req.offset, req.rows, req.total)
        return _reply(self.pool.query(req.client, job))

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
        _check_nesting(req.text, "update")
        with self.write_lock:
            try:
                wdqs.refuse_services(req.text)  # no request on a query's behalf (docs/wdqs.md)
                service_guard.refuse_services(req.text, "update")  # as the engine reads it
                operations = update_scope.parse(req.text, vocab.PREFIXES)
                refused = update_scope.refused_write(operations, base.is_reserved)
                if refused:  # kgcult's own graphs steer nothing, but they are not a client's to write
                    raise HttpError(400, refused)
                refused = update_scope.first_default_write(operations)
                if refused:
                    raise HttpError(400, f"{refused}: kgcult's default graph is the set of its named graphs' "
                                         "triples (each once, as on WDQS); write to a named graph "
                                         "(GRAPH <g> { ... }, WITH <g>, INTO GRAPH <g>)")
                # journaled, with its provenance; the default graph follows the named graphs,
                # at the cost of what changed
                self.store.update(req.text, operations)
            except KgcultError as e:
                raise HttpError(400, str(e)) from None
            except SyntaxError as e:
                raise HttpError(400, f"SPARQL syntax error: {e}") from None
            except OSError as e:
                raise HttpError(500, f"update failed: {e}") from None
            self.count("updates")
            assert isinstance(self.views, Checkpoints)  # a writable endpoint reads checkpoints
            self.views.make()  # the checkpoint queries read from now on
        return Reply(204, "text/plain", b"")

    # -- entity cards and status ---------------------------------------------------------

    def entity_card(self, qid: str, lang: str, client: str = "") -> dict:
        """The card of ``kgcult show`` (404 for an entity the store does not hold)."""
        try:
            lang = langtags.parse(lang, "lang")
        except KgcultError as e:
            raise HttpError(400, str(e)) from None
        out = self.pool.card(client, qid, lang)
        if isinstance(out, Answer):
            _reply(out)  # raises the error it carries
        return out

    def status(self) -> dict:
        return {
            "kgcult": __version__, "store": str(getattr(self.store, "location", "")),
            "writable": self.cfg.writable, "closure_stale": bool(self.store.closure_stale),
            "timeout_s": self.cfg.timeout, "max_rows": self.cfg.max_rows, "max_bytes": self.cfg.max_bytes,
            "limits": {"timeout_s": self.cfg.timeout, "max_rows": self.cfg.max_rows,
                       "max_bytes": self.cfg.max_bytes, "in_memory_bytes": IN_MEMORY,
                       "truncate_rows": self.cfg.max_rows or TRUNCATE_ROWS,
                       "queue_timeout_s": self.pool._queue_timeout, "max_request_bytes": self.cfg.max_request_bytes},
            "workers": self.cfg.workers, "per_client": self.pool.per_client,
            "worker_memory": self.pool.memory, "per_client_connections": self.cfg.per_client_connections,
            "client_budget_s": self.cfg.client_budget, "preempt_after_s": self.cfg.preempt_after,
            "stats": dict(self.stats),
        }


def _check_nesting(text: str, what: str) -> None:
    """400 for a text nested too deep for the engine, before it reaches a parser (a worker
    would die of it; an update would take the server process down)."""
    try:
        nesting.check(text, what)
    except KgcultError as e:
        raise HttpError(400, str(e)) from None


def _reply(answer: Answer) -> Reply:
    """A worker's answer as the server's reply (an error answer is raised as HttpError)."""
    if answer.status >= 400:
        raise HttpError(answer.status, (answer.body or b"").decode("utf-8", "replace").rstrip("\n"), answer.headers)
    if answer.path is not None:
        return Reply(answer.status, answer.content_type, stream_file(answer.path),
                     {**answer.headers, "Content-Length": str(answer.size)})
    return Reply(answer.status, answer.content_type, answer.body or b"", answer.headers)
