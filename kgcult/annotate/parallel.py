"""Annotating a file on several cores: the rows of a chunk grouped by language, each
language annotated whole by whichever worker process is free next (the dearest first),
each worker with its own :class:`~kgcult.annotate.annotator.Annotator` over the same
label index, the results put back in input order.

A row's spans depend on the row alone (the annotator's memos only save work), so the
output is the one a single process writes, byte for byte, whatever the number of
workers. A worker reads only the dictionaries, word lists and romanizers of the languages
it is given: splitting by language keeps each lazily loaded part in one process.

The workers are forked (``multiprocessing``'s ``fork`` start method: the modules already
imported are shared, a worker starts in milliseconds) before any index is opened in
them; where ``fork`` is not offered, or for a few rows, one process does it all.
"""
from __future__ import annotations

import multiprocessing
import os
from typing import Iterable, Iterator

from kgcult import collector
from kgcult.annotate.annotator import Annotator
from kgcult.annotate.grammar import grammar
from kgcult.annotate.rows import TextRow

CHUNK = 4096      # rows read, split and written back at a time
MIN_ROWS = 32     # fewer rows than this in a chunk: annotated in this process
MAX_JOBS = 4      # workers by default at most (each loads its languages' parts)

_WORKER: dict = {}


def default_jobs() -> int:
    """The cores this process may run on, at most :data:`MAX_JOBS`."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        n = os.cpu_count() or 1
    return max(1, min(n, MAX_JOBS))


ACROSS_COST = 8  # a text in a language that goes across scripts costs about this many times
                 # one in a language that does not (dev half: 10-15 ms against 1.2 ms a text)


def split(rows: list[TextRow]) -> list[list[int]]:
    """The row indexes of each language (each language's word lists, segmenter and
    romanizers then load in one worker only), the dearest first (characters, times
    :data:`ACROSS_COST` in a language whose grammar sends words across scripts); rows in
    input order within a language. The workers take them in this order, each the next one
    as soon as it is free. Deterministic."""
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault(r.lang, []).append(i)
    cost = {lg: ACROSS_COST if grammar(lg).across else 1 for lg in groups}
    weight = {k: cost[k] * sum(len(rows[i].text) for i in v) for k, v in groups.items()}
    return [groups[k] for k in sorted(groups, key=lambda k: (-weight[k], k))]


def _init(location, options: dict) -> None:
    _WORKER["annotator"] = Annotator.open(location, **options)
    _WORKER["chunk"] = None


def _work(task: tuple[int, int, list[TextRow]]) -> tuple[int, list[dict]]:
    """(the language's place in the chunk's list, its rows' results)."""
    chunk, k, rows = task
    ann = _WORKER["annotator"]
    if _WORKER["chunk"] != chunk:  # cycles collected once per chunk, not per language
        collector.between_chunks(first=_WORKER["chunk"] is None)
        _WORKER["chunk"] = chunk
    return k, [ann.annotate_row(r) for r in rows]


def annotate_rows(ann: Annotator, rows: Iterable[TextRow], jobs: int = 1) -> Iterator[tuple[TextRow, dict]]:
    """(row, ``{"id", "spans"}``) per row, in input order; with ``jobs`` > 1 and ``ann`` over an
    index on disk (``ann.location``), the rows of each chunk of :data:`CHUNK` are
    annotated by ``jobs`` worker processes (:func:`split`), else by ``ann`` here. The
    cyclic garbage collector is paused meanwhile, here and in the workers, and run
    between chunks (``kgcult/collector.py``: loading the dictionaries took it ~15% of the
    CPU of a fresh run on the dev texts)."""
    ctx = None
    if jobs > 1 and ann.location is not None and "fork" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("fork")
    pool = None
    with collector.paused():
        try:
            chunk: list[TextRow] = []
            n = 0  # chunks done
            for r in rows:
                chunk.append(r)
                if len(chunk) >= CHUNK:
                    collector.between_chunks(n == 0)
                    pool = yield from _chunk(ann, chunk, jobs, ctx, pool, n)
                    chunk, n = [], n + 1
            if chunk:
                collector.between_chunks(n == 0)
                pool = yield from _chunk(ann, chunk, jobs, ctx, pool, n)
        finally:
            if pool is not None:
                pool.terminate()
                pool.join()


def _chunk(ann: Annotator, chunk: list[TextRow], jobs: int, ctx, pool, n: int):
    if ctx is None or len(chunk) < MIN_ROWS:
        for r in chunk:
            yield r, ann.annotate_row(r)
        return pool
    groups = split(chunk)
    if pool is None:
        pool = ctx.Pool(min(jobs, len(groups)), initializer=_init,
                        initargs=(ann.location, {"max_chars": ann.max_chars}))
    out: list = [None] * len(chunk)
    tasks = [(n, k, [chunk[i] for i in g]) for k, g in enumerate(groups)]
    for k, res in pool.imap_unordered(_work, tasks, chunksize=1):
        for i, r in zip(groups[k], res):
            out[i] = r
    yield from zip(chunk, out)
    return pool


class Preparing:
    """:meth:`Annotator.prepare` of the index beside ``location``, run in a forked process
    while the caller goes on (``kgcult link index`` builds the linker's caches meanwhile:
    two cores, the two halves side by side); :meth:`result` waits for its summary. Where
    ``fork`` is not offered, it runs at :meth:`result`."""

    def __init__(self, location):
        self.location = location
        self._proc = None
        self._conn = None
        if "fork" in multiprocessing.get_all_start_methods():
            ctx = multiprocessing.get_context("fork")
            self._conn, child = ctx.Pipe(duplex=False)
            self._proc = ctx.Process(target=_prepare_child, args=(location, child), daemon=True)
            self._proc.start()
            child.close()

    def result(self) -> dict:
        if self._proc is None:
            return Annotator.open(self.location).prepare()
        assert self._conn is not None
        try:
            ok, value = self._conn.recv()
        except EOFError:
            ok, value = False, "the process preparing the annotator ended without a summary"
        self._proc.join()
        if not ok:
            raise RuntimeError(value)
        return value


def _prepare_child(location, conn) -> None:
    try:
        conn.send((True, Annotator.open(location).prepare()))
    except BaseException as e:  # noqa: BLE001 - reported to the parent, which raises it
        conn.send((False, f"preparing the annotator: {type(e).__name__}: {e}"))
    finally:
        conn.close()
