"""One throttle for every worker of a client: what WDQS's rate limiting asks of a client.

WDQS (wikimedia/wikidata-query-rdf, ``ThrottlingFilter``) throttles a client (User-Agent
+ IP) whose processing-time bucket (120 s, refilled by 60 s once a minute) or error bucket
(60, refilled by 30 a minute) is empty: HTTP 429 with ``Retry-After`` = the whole seconds
to the next refill (0 to 59; 0 when the refill is under a second away). A client that
takes more than 200 of those in 20 minutes is banned for 24 hours (HTTP 403). Its
maintainers ask for one query at a time, and for a pause of the ``Retry-After`` or a
minute after a 429 (docs/mirror.md cites the sources).

:class:`Throttle` is shared by all the threads of one :class:`~kgcult.sparql.client.SparqlClient`:

* a 429 closes the gate for every worker until ``max(Retry-After, floor)`` has passed
  (``Retry-After: 0`` waits the floor; no header waits ``default_wait``), so no request
  goes out inside the window the server named;
* at most ``parallel`` requests are in flight; one once the client is slowed;
* it counts 429s in a sliding window (20 minutes); from ``slow_at`` on, each 429 closes
  the gate for at least ``slow_wait`` (a refill period) and allows one request at a
  time; at ``stop_at`` it raises :class:`ThrottledTooOften` (well below WDQS's 200), so a
  run stops and resumes later instead of being banned.

Time comes from ``clock`` and waits go through ``sleep``, both replaceable (a test's
scaled clock, or a recording sleep).
"""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable

from kgcult.errors import KgcultError

WINDOW = 20 * 60.0        # WDQS: the throttle bucket holds 200 429s and refills every 20 minutes
BAN_AT = 200              # more than this many 429s in WINDOW: a 24 h ban
FLOOR = 1.0               # Retry-After is floored to whole seconds: 0 means "under a second"
DEFAULT_WAIT = 60.0       # no Retry-After: a refill period (the maintainers' "or 1 minute")
SLOW_AT = 40
SLOW_WAIT = 60.0
STOP_AT = 100


class ThrottledTooOften(KgcultError):
    """The endpoint answered 429 so often that going on would risk a ban."""


class Throttle:
    def __init__(self, *, parallel: int = 4, floor: float = FLOOR, default_wait: float = DEFAULT_WAIT,
                 slow_at: int = SLOW_AT, slow_wait: float = SLOW_WAIT, stop_at: int = STOP_AT,
                 window: float = WINDOW, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        if parallel < 1:
            raise ValueError("parallel must be at least 1")
        self.parallel, self.floor, self.default_wait = parallel, floor, default_wait
        self.slow_at, self.slow_wait, self.stop_at, self.window = slow_at, slow_wait, stop_at, window
        self.clock, self._sleep = clock, sleep
        self._cond = threading.Condition()
        self._open_at = float("-inf")   # no request leaves before this (clock time)
        self._epoch = 0                 # bumped whenever the gate is closed further
        self._in_flight = 0
        self._recent: deque[float] = deque()
        self.throttled = 0              # 429s in all
        self.waited = 0.0               # seconds spent waiting at the gate

    # -- state ----------------------------------------------------------------------------

    def recent(self) -> int:
        """429s in the sliding window."""
        with self._cond:
            self._expire(self.clock())
            return len(self._recent)

    @property
    def slowed(self) -> bool:
        with self._cond:
            self._expire(self.clock())
            return len(self._recent) >= self.slow_at

    def _expire(self, now: float) -> None:
        while self._recent and self._recent[0] <= now - self.window:
            self._recent.popleft()

    def _limit(self) -> int:
        return 1 if len(self._recent) >= self.slow_at else self.parallel

    # -- the gate -------------------------------------------------------------------------

    def acquire(self) -> None:
        """Wait until the gate is open and a slot is free, then take the slot."""
        with self._cond:
            while True:
                delay, epoch = self._open_at - self.clock(), self._epoch
                if delay > 0:
                    self._cond.release()
                    try:
                        self._sleep(delay)
                    finally:
                        self._cond.acquire()
                    self.waited += delay
                    if self._epoch != epoch:
                        continue  # another 429 came meanwhile: wait for its window too
                    # slept as long as asked (a recording sleep does not move the clock)
                    self._open_at = min(self._open_at, self.clock())
                self._expire(self.clock())
                if self._in_flight < self._limit():
                    self._in_flight += 1
                    return
                self._cond.wait()

    def release(self) -> None:
        with self._cond:
            self._in_flight -= 1
            self._cond.notify_all()

    def __enter__(self) -> Throttle:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def throttled_by(self, retry_after: float | None) -> float:
        """Record a 429 that said ``Retry-After: retry_after`` (None: no header); close the
        gate for every worker; return the wait. Raises :class:`ThrottledTooOften` at
        ``stop_at`` 429s in the window."""
        with self._cond:
            now = self.clock()
            self._expire(now)
            self._recent.append(now)
            self.throttled += 1
            n = len(self._recent)
            if n >= self.stop_at:
                raise ThrottledTooOften(
                    f"{n} HTTP 429 (Too Many Requests) answers within {self.window / 60:g} minutes; "
                    f"stopping before the endpoint's ban (WDQS bans a client for 24 h past {BAN_AT} in 20 "
                    "minutes); re-run the same command later to resume")
            wait = self.default_wait if retry_after is None else retry_after
            wait = max(wait, self.floor)
            if n >= self.slow_at:
                wait = max(wait, self.slow_wait)
            self._open_at = max(self._open_at, now + wait)
            self._epoch += 1
            return wait
