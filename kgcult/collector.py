"""How kgcult's batch commands run CPython's cyclic garbage collector.

Reference counting frees every object that forms no cycle the moment it is dropped; the
cyclic collector only finds cycles, and to do so walks the objects it tracks: a young
pass every 700 net allocations, the older generations now and then. Loading the label
index's views, the annotator's dictionaries (8 MB of marshalled containers for the place
topic) and the memos creates millions of tracked objects, each load walked over and over
while it grows, for cycles that kgcult's structures do not form.

* :func:`fewer_collections` (``kgcult link``): a young pass every 20,000 allocations, what
  exists before the run frozen (never walked again);
* :func:`paused` (``kgcult annotate``): no pass while the run goes on; the caller
  collects between chunks of rows (:func:`between_chunks`), which bounds what a cycle,
  should one form, may hold.

Either leaves the collector as it found it (a command run in-process by a test or a
notebook changes nothing).
"""
from __future__ import annotations

import gc
from contextlib import contextmanager

GC_THRESHOLDS = (20_000, 20, 20)


@contextmanager
def fewer_collections(thresholds: tuple[int, int, int] = GC_THRESHOLDS):
    """A young pass every ``thresholds[0]`` allocations and what exists now frozen, while
    the block runs."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*thresholds)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


@contextmanager
def paused():
    """The cyclic collector off while the block runs (on again after it, if it was)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def between_chunks(first: bool) -> None:
    """Collect cycles before a chunk of rows that is not the first one (under
    :func:`paused`: what a chunk left in a cycle goes before the next)."""
    if not first:
        gc.collect()
