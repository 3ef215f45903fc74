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
  is within its budget, has the fewest jobs on workers, then used the workers least
  lately (then the earliest), not simply the earliest;
- a client that has used more than its budget of worker seconds in the last minute
  (:mod:`kgcult.serve.shares`) gets 429 with ``Retry-After`` at once while the workers
  are busy (it is served as before when they are not);
- a request whose client has nothing on a worker and that found no free worker within
  ``preempt_after`` seconds *pre-empts* a job of a client *over its budget*: the
  longest-running job of the heaviest such client (at least twice the worker seconds of the
  waiting one lately plus 2 s, running for at least ``PREEMPT_MIN_RUN`` s) is stopped with
  its worker process, as at the deadline, answered 429 with ``Retry-After``, and the fresh
  worker goes to the waiting request. Pre-emption is judged on budget use, never on who
  arrived last: a client within its budget keeps its worker until its query ends or
  reaches the deadline, however many cheap queries others send meanwhile (before, three
  ``ASK {}`` stopped another client's 15 s query three times out of three); runaway
  queries spend their client's budget, and from then on a client with nothing running
  waits about ``preempt_after`` seconds, not until a runaway's deadline.

Each job names the store directory its worker reads (``views``, see
:mod:`kgcult.serve.checkpoints`): the store itself when it is served read-only, or, with
``--writable``, the newest checkpoint, made after each update; a worker opens a newer
view before the job, so a query sent after an update sees it.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import multiprocessing
import os
import resource
import shutil
import signal
import tempfile
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
from kgcult.serve.shares import WINDOW_S, Usage
from kgcult.store import Store

# Workers are forked from a clean single-threaded server process that has imported this
# module once (Python's forkserver): a replacement starts in milliseconds, and never
# inherits the server's threads or its open store.
_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload([__name__])
PREEMPT_MIN_RUN = 1.0  # s: a job younger than this is never pre-empted (ordinary queries end sooner)
PREEMPT_MARGIN = 2.0   # worker s: a victim's client used at least twice the waiting one's, plus this
KILL_GRACE_S = 1.0  # a worker stops a streaming query itself at the deadline; past this, it is killed

# -- inside a worker process -----------------------------------------------------------------

_worker: dict = {}


def _init_worker(memory: int = 0) -> None:
    """A worker opens the store at its first job (the view the server names then), with
    its address space capped at ``memory`` bytes (0: no cap): a query that needs more
    fails to allocate, and its worker dies and is replaced instead of taking the machine."""
    if memory:
        _few_malloc_arenas()
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    # Die at once on SIGTERM: pebble's own handler is Python code, which cannot run while
    # Oxigraph evaluates in Rust, so pebble would wait 3 s (blocking its other work) and
    # then SIGKILL.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _worker.update(view=None, store=None)


M_ARENA_MAX = -8  # glibc's mallopt() parameter


def _few_malloc_arenas() -> None:
    """Cap glibc's malloc arenas at 2 before the address-space cap: each thread that
    allocates may otherwise reserve a 64 MiB arena (up to 8 per core), address space that
    holds no data but counts against RLIMIT_AS, and how many get reserved depends on thread
    timing; under the cap, RocksDB's thread start then failed now and then on an empty
    query. No-op off glibc."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = getattr(libc, "mallopt", None)
        if mallopt is not None:
            mallopt(M_ARENA_MAX, 2)
    except OSError:
        pass


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
        self._job_ids = itertools.count()
        self._usage = Usage(budget=cfg.client_budget)  # worker seconds per client, last minute
        self._futures: dict[int, object] = {}  # job id -> its pebble future, while it runs
        self._handover: dict[int, int] = {}  # pre-empted job id -> ticket of the request its worker goes to
        self._preempted: set[int] = set()  # job ids stopped to free their worker
        self._closed = False
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
        with self._lock:  # a job scheduled as the pool stopped would never be answered
            self._closed = True
            futures = list(self._futures.values())
        for future in futures:
            future.cancel()  # type: ignore[attr-defined]

    def in_flight(self) -> int:
        """Requests admitted and not yet answered (running or waiting for a worker)."""
        with self._lock:
            return self._admitted_count

    def worker_pids(self) -> set[int]:
        """The process ids of the live workers (pebble's pool internals; for tests and status)."""
        return {w.pid for w in self._pool._pool_manager.worker_manager.workers.values()
                if w.is_alive() and w.pid is not None}

    def query(self, client: str, job: QueryJob) -> Answer:
        """The worker's answer to ``job``. The worker spools into a folder of this job's
        own, removed here however the job ended (answered, pre-empted, past its deadline,
        its worker killed): before, a stopped worker's spool file stayed behind."""
        job_dir = tempfile.mkdtemp(prefix="job-", dir=self.spool_dir)
        try:
            out = self._run(client, query_job, job, job_dir)
            if isinstance(out, Answer) and out.path is not None:  # the body moves out, to be streamed
                kept = os.path.join(self.spool_dir, os.path.basename(job_dir) + "-" + os.path.basename(out.path))
                os.replace(out.path, kept)
                out.path = kept
            return out
        finally:
            shutil.rmtree(job_dir, ignore_errors=True)

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
            with self._lock:
                self._refuse_over_budget(client)
                # wait for one of this client's own slots
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

    def _refuse_over_budget(self, client: str) -> None:
        """429 for a client past its budget while the workers are busy (lock held)."""
        now = time.monotonic()
        if (self._free > 0 and not self._waiting) or not self._usage.over_budget(client, now):
            return
        self.count("limited")
        raise HttpError(429, f"{client} has used {self._usage.used(client, now):.0f} worker seconds in the last "
                             f"{WINDOW_S:g} s, more than its share ({self._usage.budget:g} s; kgcult serve "
                             "--client-budget), and the query workers are busy; retry later",
                        {"Retry-After": str(self._usage.retry_after(client, now))})

    def _take_worker(self, client: str, wait: float) -> bool:
        """Wait up to ``wait`` s for a free worker. A free worker goes to the waiting request
        whose client is within its budget, has the fewest jobs on workers and ahead in
        the queue, then the fewest worker seconds in the last minute less the worker
        seconds handed out while this request waited (workers x seconds waited), then the
        earliest: clients with runaway queries queued cannot make an ordinary client wait
        behind all of them, and a heavy client is delayed by about its extra use divided
        by the workers, never starved. The worker is handed to the chosen request (its
        event set), so a release wakes one thread, not every waiting one. Every
        ``preempt_after`` s of waiting, a request whose client has nothing on a worker
        pre-empts a heavier client's job (:meth:`_preempt_for`)."""
        with self._lock:
            if self._free > 0 and not self._waiting:
                self._grant(client)
                return True
            ticket, granted = next(self._tickets), threading.Event()
            self._waiting[ticket] = (client, granted, time.monotonic())
        end = time.monotonic() + wait
        step = self.cfg.preempt_after
        while (remaining := end - time.monotonic()) > 0:
            if granted.wait(min(remaining, step) if step else remaining):
                return True
            if step:
                self._preempt_for(ticket, client)
        with self._lock:
            if granted.is_set():  # handed over just as the wait ended
                return True
            del self._waiting[ticket]
            return False

    def _preempt_for(self, ticket: int, client: str) -> None:
        """Stop the job of a client over its budget so that its worker goes to request
        ``ticket``, whose client has nothing on a worker and is within its budget. The
        victim: a job running for at least PREEMPT_MIN_RUN s whose client is over its budget
        and has used at least twice the worker seconds of this one lately, plus
        PREEMPT_MARGIN (so clients of equal weight do not take turns killing one another's
        jobs); the client with the most jobs on workers, the most worker seconds, then its
        longest-running job. A client within its budget is never pre-empted."""
        with self._lock:
            now = time.monotonic()
            if (ticket not in self._waiting or self._busy.get(client, 0) or ticket in self._handover.values()
                    or self._usage.over_budget(client, now)):
                return
            mine = self._usage.used(client, now)
            best = None
            for key, (other, start) in self._usage.running().items():
                if other == client or key in self._handover or key not in self._futures or now - start < PREEMPT_MIN_RUN:
                    continue
                if not self._usage.over_budget(other, now):  # within its budget: its worker is its own
                    continue
                used = self._usage.used(other, now)
                if used < 2 * mine + PREEMPT_MARGIN:  # not clearly heavier: equals do not pre-empt one another
                    continue
                rank = (self._busy.get(other, 0), used, now - start)
                if best is None or rank > best[0]:
                    best = (rank, key)
            if best is None:
                return
            key = best[1]
            self._handover[key] = ticket
            self._preempted.add(key)
            future = self._futures[key]
            self.count("preempted")
        future.cancel()  # type: ignore[attr-defined]  # pebble stops the worker; the callback hands it over

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
            keys.append((self._usage.over_budget(c, now), rank,
                         self._usage.used(c, now) - self._age_rate * (now - since), t))
        return min(keys)[-1]

    def _give_back_worker(self, client: str, key: int) -> None:
        with self._lock:
            self._usage.finish(key, time.monotonic())
            self._futures.pop(key, None)
            self._free += 1
            n = self._busy.get(client, 0) - 1
            if n > 0:
                self._busy[client] = n
            else:
                self._busy.pop(client, None)
            ticket = self._handover.pop(key, None)
            if ticket is not None and ticket in self._waiting:  # pre-empted for this request
                waiter, granted, _ = self._waiting.pop(ticket)
                self._grant(waiter)
                granted.set()
            self._dispatch()

    def _on_worker(self, client: str, function, args, wait: float):
        cfg = self.cfg
        if not self._take_worker(client, wait):
            self.count("busy")
            raise HttpError(503, f"no query worker became free within {self._queue_timeout:g} s; retry later "
                                 "(kgcult serve --workers / --queue-timeout)", {"Retry-After": "1"})
        key = next(self._job_ids)
        with self._lock:
            self._usage.start(key, client, time.monotonic())
        try:
            future = self._pool.schedule(function, args, timeout=cfg.timeout + KILL_GRACE_S)
        except RuntimeError:  # the pool is stopping
            self._give_back_worker(client, key)
            raise HttpError(503, "the server is shutting down") from None
        with self._lock:
            self._futures[key] = future
            closed = self._closed
        if closed:
            future.cancel()
        future.add_done_callback(lambda _f: self._give_back_worker(client, key))
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
            with self._lock:
                preempted = key in self._preempted
                self._preempted.discard(key)
                if preempted:
                    now = time.monotonic()
                    used, retry = self._usage.used(client, now), self._usage.retry_after(client, now)
            if preempted:
                raise HttpError(429, f"the query was stopped to free its worker for a client with no query "
                                     f"running: the workers are busy and {client} has used {used:.0f} worker "
                                     f"seconds in the last {WINDOW_S:g} s, more than that client; retry later",
                                {"Retry-After": str(retry), "X-Kgcult-Limit": "preempted"}) from None
            raise HttpError(503, "the server is shutting down") from None
        except Exception as e:  # noqa: BLE001 - raised in the worker (e.g. opening the store)
            raise HttpError(500, f"the query worker failed: {type(e).__name__}: {e}") from None
        if isinstance(out, Answer) and out.status == 504:
            self.count("timeouts")
        return out
