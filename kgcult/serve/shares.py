"""Each client address's use of the query workers: worker seconds over a sliding window,
and the budget that decides who gives way when the workers are scarce.

A client's use is the worker time of its jobs that falls in the last ``window`` seconds
(finished jobs, and the time so far of its running ones). A client past ``budget``
worker seconds in the window is *over budget*, as WDQS's per-client time budget makes a
client that has spent its minute of query time wait (wikimedia/wikidata-query-rdf
``ThrottlingFilter``: 60 s of processing time refilled each minute, 429 with
``Retry-After`` when spent; docs/wdqs.md). Unlike WDQS, kgcult only acts on the budget
when workers are scarce: a lone user's heavy session on an idle server is never refused.

:class:`Usage` is not thread-safe: the query pool calls it with its lock held.
"""
from __future__ import annotations

import math
from collections import deque

WINDOW_S = 60.0   # s: how far back a client's worker time counts
BUDGET_S = 60.0   # worker seconds per window before a client gives way (WDQS: 60 s a minute)


class Usage:
    """Worker seconds per client over a sliding window."""

    def __init__(self, window: float = WINDOW_S, budget: float = BUDGET_S):
        self.window, self.budget = window, budget
        self._done: dict[str, deque[tuple[float, float]]] = {}  # client -> (start, end) of finished jobs
        self._running: dict[object, tuple[str, float]] = {}    # job key -> (client, start)

    def start(self, key: object, client: str, now: float) -> None:
        self._running[key] = (client, now)

    def finish(self, key: object, now: float) -> None:
        client, start = self._running.pop(key)
        jobs = self._done.setdefault(client, deque())
        jobs.append((start, now))
        self._forget(now)

    def _forget(self, now: float) -> None:
        """Drop jobs that ended before the window (and clients left with none)."""
        horizon = now - self.window
        for client in list(self._done):
            jobs = self._done[client]
            while jobs and jobs[0][1] <= horizon:
                jobs.popleft()
            if not jobs:
                del self._done[client]

    def used(self, client: str, now: float) -> float:
        """Worker seconds of ``client`` in the last window, its running jobs included."""
        return self._finished_in(client, now) + sum(
            min(now - start, self.window) for c, start in self._running.values() if c == client)

    def _finished_in(self, client: str, at: float) -> float:
        horizon = at - self.window
        return sum(max(0.0, min(end, at) - max(start, horizon)) for start, end in self._done.get(client, ()))

    def over_budget(self, client: str, now: float) -> bool:
        return self.used(client, now) > self.budget

    def retry_after(self, client: str, now: float) -> int:
        """Whole seconds (at least 1) until the client's finished jobs alone fall within
        the budget: what a ``Retry-After`` tells it (its running jobs still count then)."""
        lo, hi = 0.0, self.window
        if self._finished_in(client, now) <= self.budget:
            return 1
        for _ in range(30):  # use only falls as the window slides on
            mid = (lo + hi) / 2
            if self._finished_in(client, now + mid) <= self.budget:
                hi = mid
            else:
                lo = mid
        return max(1, math.ceil(hi - 1e-6))

    def running(self) -> dict[object, tuple[str, float]]:
        """Job key -> (client, start) of every running job."""
        return dict(self._running)


__all__ = ["BUDGET_S", "WINDOW_S", "Usage"]
