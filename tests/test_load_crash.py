"""A load killed with SIGKILL (issue 12 item 3): the next writable open repairs the store,
so no data is left without its provenance record and the closure is never left "fresh".

The child process is a real `kgcult`-library load; it is killed with a real SIGKILL
(by itself at a precise point, or by this test at a random moment of the bulk load)."""
from __future__ import annotations

import gzip
import os
import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kgcult import vocab
from kgcult.store import Store, journal

ROOT = Path(__file__).resolve().parent.parent

# The child: load FILE into STORE (graph GRAPH), SIGKILL itself at POINT:
#   begin  - right after the journal entry, before the bulk load
#   commit - right after the bulk load committed, before the record is completed
#   done   - right after the record was completed
#   none   - print BEGIN after the journal entry and wait for the parent's kill
CHILD = textwrap.dedent("""
    import os, signal, sys
    from kgcult.store import Store, embedded, journal
    store_dir, path, graph, point = sys.argv[1:5]

    def die():
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    begin, bulk, finish = journal.begin_load, embedded.Store._bulk_load, journal.finish_load
    def begin_load(*a, **k):
        node = begin(*a, **k)
        if point == "begin":
            die()
        print("BEGIN", flush=True)
        return node
    def bulk_load(self, *a, **k):
        bulk(self, *a, **k)
        if point == "commit":
            die()
    def finish_load(*a, **k):
        finish(*a, **k)
        if point == "done":
            die()
    journal.begin_load, embedded.Store._bulk_load, journal.finish_load = begin_load, bulk_load, finish_load
    s = Store(store_dir)
    s.load([path], graph=graph or None)
    print("LOADED", flush=True)
""")

NT_LINE = '<http://www.wikidata.org/entity/Q{i}> <http://www.w3.org/2000/01/rdf-schema#label> "item {i}"@en .\n'


def _file(tmp_path: Path, n: int, name: str = "data.nt.gz") -> Path:
    f = tmp_path / name
    with gzip.open(f, "wt", compresslevel=1) as out:
        for i in range(n):
            out.write(NT_LINE.format(i=i))
    return f


def _prepare(store_dir: Path, with_existing_graph: bool) -> None:
    s = Store(store_dir)
    if with_existing_graph:
        f = store_dir.parent / "old.nt"
        f.write_text(NT_LINE.format(i="old"))
        s.load([f], graph="data")
    s.set_state("closureStale", False)  # as after `kgcult closure`
    s.close()


def _child(store_dir: Path, f: Path, point: str, graph: str = "data") -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", CHILD, str(store_dir), str(f), graph, point],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _check_consistent(store_dir: Path, n_file: int, old: int) -> str:
    """Open (repairs), then check the invariant; return what happened: rolled back / kept."""
    s = Store(store_dir)
    try:
        target = vocab.GRAPH + "data"
        size = s.triple_count(target) if target in s.graph_counts() else 0
        records = [r for r in s.provenance() if r.get("targetGraph") == target and r["kind"] == "load"]
        assert not any(r.get("status") == "in-progress" for r in s.provenance())
        assert s.closure_stale or size == old  # never "fresh" after data changed
        if size == old:  # nothing landed (or rolled back): no record of the killed load
            assert len(records) == (1 if old else 0)
            return "rolled back"
        assert size == old + n_file  # bulk loads commit whole
        assert s.closure_stale
        new = [r for r in records if r.get("tripleCount") == str(n_file)]
        assert len(new) == 1, records
        return new[0].get("status", "complete")
    finally:
        s.close()


@pytest.mark.parametrize("point", ["begin", "commit", "done"])
@pytest.mark.parametrize("existing", [False, True])
def test_kill_at_each_point_is_repaired_on_open(tmp_path, point, existing):
    store_dir = tmp_path / "s"
    _prepare(store_dir, existing)
    f = _file(tmp_path, 5_000)
    proc = _child(store_dir, f, point)
    proc.wait(timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()
    outcome = _check_consistent(store_dir, 5_000, 1 if existing else 0)
    if point == "done":
        assert outcome == "complete"
    elif point == "begin":
        assert outcome == "rolled back"
    else:  # commit: into an empty graph the load is rolled back; else kept, marked interrupted
        assert outcome == ("interrupted" if existing else "rolled back")
    # a second open finds nothing more to repair, and the store takes loads again
    s = Store(store_dir)
    assert journal.repair(s.ox) == []
    [r] = s.load([f], graph="again")
    assert r.triples == 5_000
    s.close()


@pytest.mark.slow
@pytest.mark.parametrize("existing", [False, True])
def test_kill_at_random_moments_of_the_bulk_load(tmp_path, existing):
    rng = random.Random(12)
    f = _file(tmp_path, 300_000)
    for attempt in range(4):
        store_dir = tmp_path / f"s{attempt}"
        _prepare(store_dir, existing)
        proc = _child(store_dir, f, "none")
        assert proc.stdout.readline().strip() == "BEGIN"
        try:
            proc.wait(timeout=rng.uniform(0.05, 2.5))
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        _check_consistent(store_dir, 300_000, 1 if existing else 0)
        for p in tmp_path.iterdir():
            assert p.name.startswith(("s", "data", "old")), p  # no scratch copies
