"""Query workers: a pool of processes (pebble's ``ProcessPool``), each with the store
opened read-only, that answer queries and entity cards. A job past its deadline is
stopped with its process, and pebble starts a fresh one in its place: a runaway query
(a big ``COUNT``, a join that never yields a row, a call that never returns) frees its
worker at the deadline instead of holding it until it ends.

Admission happens in the server process, before a job reaches a worker:

- at most ``workers + queue`` requests are admitted at once; more get 503 at once;
- one client (by address) has at most ``per_client`` requests past this point; its
  further requests wait for one of them to finish, at most ``queue_timeout``, then 429;
- a request waits for a free worker until ``queue_timeout`` (counted from admission) has
  passed, then 503; a worker that becomes free goes to the waiting request whose client
  has the fewest jobs on workers (then the earliest), not simply the earliest.

Each job names the store directory its worker reads (``views``, see
:mod:`kgcult.serve.checkpoints`): the store itself when it is served read-only, or, with
``--writable``, the newest checkpoint, made after each update; a worker opens a newer
view before the job, so a query sent after an update sees it.
"""
from __future__ import annotations

import itertools
import multiprocessing
import os
import resource
import signal
import threading
import time
from concurrent.futures import CancelledError
from concurrent.futures import TimeoutError as FutureTimeout

from pebble import ProcessExpired, ProcessPool

from kgcult import inspection
from kgcult.errors import KgcultError
from kgcult.serve.config import ServeConfig
from kgcult.serve.answer import Answer, QueryJob, answer_query, error_answer, timed_out
from kgcult.serve.protocol import HttpError
from kgcult.store import Store

# Workers are forked from a clean single-threaded server process that has imported this
# module once (Python's forkserver): a replacement starts in milliseconds, and never
# inherits the server's threads or its open store.
_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload([__name__])
SPENT_HALF_LIFE = 60.0  # s: how long a client's use of the workers counts against it when they are scarce
KILL_GRACE_S = 1.0  # a worker stops a streaming query itself at the deadline; past this, it is killed

# -- inside a worker process -----------------------------------------------------------------

_worker: dict = {}


def _init_worker(memory: int = 0) -> None:
    """A worker opens the store at its first job (the view the server names then), with
    its address space capped at ``memory`` bytes (0: no cap): a query that needs more
    fails to allocate, and its worker dies and is replaced instead of taking the machine."""
    if memory:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    # Die at once on SIGTERM: pebble's own handler is Python code, which cannot run while
    # Oxigraph evaluates in Rust, so pebble would wait 3 s (blocking its other work) and
    # then SIGKILL.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _worker.update(view=None, store=None)


def _store(view: str) -> Store:
    """This worker's read-only store, opened anew when the server has a newer view."""
    if _worker["view"] != view:
        if _worker["store"] is not None:
            _worker["store"].close()
            _worker["store"] = None
        _worker["store"] = Store(view, read_only=True)
        _worker["view"] = view
    return _worker["store"]


def query_job(view: str, job: QueryJob, spool_dir: str) -> Answer:
    return answer_query(_store(view), job, spool_dir)


def card_job(view: str, qid: str, lang: str):
    """The card of ``kgcult show`` (an error answer for an entity the store does not hold)."""
    try:
        return inspection.show(_store(view), qid, lang=lang)
    except KgcultError as e:
        return error_answer(HttpError(404, str(e)))


# -- in the server process ---------------------------------------------------------------------

MIN_WORKER_MEMORY = 1 << 30  # a worker with the store open maps ~0.5 GiB before any query


def default_worker_memory(workers: int) -> int:
    """Three quarters of the machine's memory shared by the workers, at least 1 GiB each:
    every worker at its limit at once still leaves the server and the system a quarter."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 0
    return max(MIN_WORKER_MEMORY, total * 3 // 4 // max(workers, 1))


def worker_memory(cfg: ServeConfig) -> int:
    """The address-space cap of each worker in bytes (0: none)."""
    return default_worker_memory(cfg.workers) if cfg.worker_memory is None else cfg.worker_memory


def out_of_memory(memory: int) -> HttpError:
    return HttpError(507, f"the query needed more memory than a query worker may use ({memory >> 20} MiB; "
                          "kgcult serve --worker-memory); it was stopped and its worker replaced",
                     {"X-Kgcult-Limit": f"memory={memory}"})


class QueryPool:
    """Worker processes that answer queries and entity cards, with admission control."""

    def __init__(self, views, cfg: ServeConfig, spool_dir: str, count):
        self.cfg, self.spool_dir, self.count = cfg, spool_dir, count
        self.views = views  # gives the store directory a job reads (StoreView or Checkpoints)
        self.per_client = cfg.per_client or max(1, cfg.workers // 2)
        self._admitted = threading.BoundedSemaphore(cfg.workers + cfg.queue)
        self._free = cfg.workers  # workers not running a job (guarded by _lock)
        self._busy: dict[str, int] = {}  # client address -> its jobs on a worker
        # ticket (arrival order) -> (client, set when a worker is handed to it, waiting since)
        self._waiting: dict[int, tuple[str, threading.Event, float]] = {}
        self._age_rate = float(cfg.workers)  # worker seconds the others get per second of waiting
        self._tickets = itertools.count()
        self._spent: dict[str, tuple[float, float]] = {}  # client -> (worker seconds, decayed; as of when)
        self._queue_timeout = cfg.queue_timeout if cfg.queue_timeout is not None else cfg.timeout
        self._running: dict[str, int] = {}  # client address -> its requests on a worker or waiting for one
        self._admitted_count = 0
        self._lock = threading.Condition()
        self.memory = worker_memory(cfg)
        self._pool = ProcessPool(max_workers=cfg.workers, initializer=_init_worker, initargs=(self.memory,),
                                 context=_CONTEXT)

    def close(self) -> None:
        self._pool.stop()
        self._pool.join(10)

    def in_flight(self) -> int:
        """Requests admitted and not yet answered (running or waiting for a worker)."""
        with self._lock:
            return self._admitted_count

    def worker_pids(self) -> set[int]:
        """The process ids of the live workers (pebble's pool internals; for tests and status)."""
        return {w.pid for w in self._pool._pool_manager.worker_manager.workers.values()
                if w.is_alive() and w.pid is not None}

    def query(self, client: str, job: QueryJob) -> Answer:
        return self._run(client, query_job, job, self.spool_dir)

    def card(self, client: str, qid: str, lang: str):
        return self._run(client, card_job, qid, lang)

    def _run(self, client: str, function, *args):
        if not self._admitted.acquire(blocking=False):
            self.count("busy")
            raise HttpError(503, "the server is busy: all query workers and the queue are taken; retry later",
                            {"Retry-After": "1"})
        with self._lock:
            self._admitted_count += 1
        try:
            deadline = time.monotonic() + self._queue_timeout
            with self._lock:  # wait for one of this client's own slots
                if not self._lock.wait_for(lambda: self._running.get(client, 0) < self.per_client,
                                           timeout=self._queue_timeout):
                    self.count("limited")
                    raise HttpError(429, f"too many queries at once from {client}: at most {self.per_client} run "
                                         f"at a time and none finished within {self._queue_timeout:g} s "
                                         "(kgcult serve --per-client)", {"Retry-After": "1"})
                self._running[client] = self._running.get(client, 0) + 1
            view = self.views.acquire()
            try:
                return self._on_worker(client, function, (view, *args), max(deadline - time.monotonic(), 0))
            finally:
                self.views.release(view)
                with self._lock:
                    self._running[client] -= 1
                    if not self._running[client]:
                        del self._running[client]
                    self._lock.notify_all()
        finally:
            with self._lock:
                self._admitted_count -= 1
            self._admitted.release()

    def _take_worker(self, client: str, wait: float) -> bool:
        """Wait up to ``wait`` s for a free worker. A free worker goes to the waiting request
        whose client has the fewest jobs on workers and ahead in the queue, then the lowest
        worker seconds the client used lately (halved every SPENT_HALF_LIFE s) less the
        worker seconds handed out while this request waited (workers x seconds waited),
        then the earliest: clients with runaway queries queued cannot make an ordinary
        client wait behind all of them, and a heavy client is delayed by about its extra
        use divided by the workers, never starved. The worker is handed to the chosen request (its
        event set), so a release wakes one thread, not every waiting one."""
        with self._lock:
            if self._free > 0 and not self._waiting:
                self._grant(client)
                return True
            ticket, granted = next(self._tickets), threading.Event()
            self._waiting[ticket] = (client, granted, time.monotonic())
        if granted.wait(wait):
            return True
        with self._lock:
            if granted.is_set():  # handed over just as the wait ended
                return True
            del self._waiting[ticket]
            return False

    def _grant(self, client: str) -> None:
        self._free -= 1
        self._busy[client] = self._busy.get(client, 0) + 1

    def _dispatch(self) -> None:
        """Hand free workers to waiting requests, best first (with the lock held)."""
        while self._free > 0 and self._waiting:
            client, granted, _ = self._waiting.pop(self._next_waiting())
            self._grant(client)
            granted.set()

    def _next_waiting(self) -> int:
        now = time.monotonic()
        ahead: dict[str, int] = {}
        keys: list = []
        for t in sorted(self._waiting):
            c, _, since = self._waiting[t]
            rank = self._busy.get(c, 0) + ahead.get(c, 0)
            ahead[c] = ahead.get(c, 0) + 1
            # worker seconds used lately, less what the wait has given everyone else since
            keys.append((rank, self._spent_by(c, now) - self._age_rate * (now - since), t))
        return min(keys)[2]

    def _spent_by(self, client: str, now: float) -> float:
        spent, at = self._spent.get(client, (0.0, now))
        return spent * 0.5 ** ((now - at) / SPENT_HALF_LIFE)

    def _give_back_worker(self, client: str, started: float) -> None:
        with self._lock:
            now = time.monotonic()
            self._spent[client] = (self._spent_by(client, now) + now - started, now)
            if len(self._spent) > 4096:  # forget the clients that have not used a worker lately
                self._spent = {c: v for c, v in self._spent.items() if self._spent_by(c, now) > 0.01}
            self._free += 1
            n = self._busy.get(client, 0) - 1
            if n > 0:
                self._busy[client] = n
            else:
                self._busy.pop(client, None)
            self._dispatch()

    def _on_worker(self, client: str, function, args, wait: float):
        cfg = self.cfg
        if not self._take_worker(client, wait):
            self.count("busy")
            raise HttpError(503, f"no query worker became free within {self._queue_timeout:g} s; retry later "
                                 "(kgcult serve --workers / --queue-timeout)", {"Retry-After": "1"})
        try:
            future = self._pool.schedule(function, args, timeout=cfg.timeout + KILL_GRACE_S)
        except RuntimeError:  # the pool is stopping
            self._give_back_worker(client, time.monotonic())
            raise HttpError(503, "the server is shutting down") from None
        started = time.monotonic()
        future.add_done_callback(lambda _f: self._give_back_worker(client, started))
        try:
            out = future.result()
        except (FutureTimeout, TimeoutError):  # pebble stopped the worker at the deadline
            self.count("timeouts")
            raise timed_out(cfg.timeout) from None
        except ProcessExpired as e:
            if self.memory and e.exitcode in (-signal.SIGABRT, -signal.SIGKILL, -signal.SIGSEGV):
                self.count("memory")
                raise out_of_memory(self.memory) from None
            raise HttpError(500, f"the query worker died ({e}); the query was not answered") from None
        except CancelledError:
            raise HttpError(503, "the server is shutting down") from None
        except Exception as e:  # noqa: BLE001 - raised in the worker (e.g. opening the store)
            raise HttpError(500, f"the query worker failed: {type(e).__name__}: {e}") from None
        if isinstance(out, Answer) and out.status == 504:
            self.count("timeouts")
        return out
