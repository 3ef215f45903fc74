"""kgcult/collector.py: the batch commands' garbage-collector policy leaves the collector
as it found it, and the collection between chunks frees what a chunk left in a cycle."""
from __future__ import annotations

import gc
import weakref

from kgcult import collector


class Node:
    pass


def test_paused_then_restored_and_cycles_freed_between_chunks():
    assert gc.isenabled()
    with collector.paused():
        assert not gc.isenabled()
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle: reference counting alone never frees it
        ref = weakref.ref(a)
        del a, b
        collector.between_chunks(first=True)  # before the first chunk: nothing run
        assert ref() is not None
        collector.between_chunks(first=False)
        assert ref() is None
    assert gc.isenabled()


def test_paused_leaves_a_disabled_collector_disabled():
    gc.disable()
    try:
        with collector.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_fewer_collections_restores_thresholds_and_unfreezes():
    before = gc.get_threshold()
    with collector.fewer_collections((12_345, 7, 7)):
        assert gc.get_threshold() == (12_345, 7, 7) and gc.get_freeze_count() > 0
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_annotate_rows_runs_with_the_collector_paused(monkeypatch):
    from kgcult.annotate import parallel
    from kgcult.annotate.rows import TextRow

    seen = []

    class Fake:
        location = None

        def annotate_row(self, r):
            seen.append(gc.isenabled())
            return {"id": r.id, "spans": []}

    rows = [TextRow(id=i, text="x", lang="en", topic="food", country=None) for i in range(3)]
    out = list(parallel.annotate_rows(Fake(), rows, jobs=1))
    assert [r["id"] for _row, r in out] == [0, 1, 2] and seen == [False] * 3 and gc.isenabled()
