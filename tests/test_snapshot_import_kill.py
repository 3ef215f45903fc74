"""A snapshot import killed with SIGKILL at a controlled point (issue 30): while it bulk-loads
into empty graphs, and in the middle of swapping a replaced graph in. Before any writable
open, a reader (even read-only) is told the graphs are partial; the next writable open rolls
the load back (the store exactly as before) or finishes the swap (the graph exactly the
snapshot's), keeping the default graph the set of the visible graphs."""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kgcult import vocab
from kgcult.store import Store, health, snapshot
from tests.conftest import FIXTURES, run_cli
from tests.test_mirror import default_is_the_set
from tests.test_snapshot_trust import everything, rewrite_graph

MINI = FIXTURES / "foundation" / "mini.ttl"
ROOT = Path(__file__).resolve().parent.parent
GRAPH = vocab.GRAPH + "mini"

CHILD = textwrap.dedent("""
    import os, signal, sys
    from kgcult.store import Store, snapshot
    store_dir, snap, point = sys.argv[1:4]
    die = lambda: os.kill(os.getpid(), signal.SIGKILL)
    if point == "loading":  # die once the first graph is in its named graph, before the rest
        real_load = snapshot.bulk_load
        calls = []
        def bulk_load(*args):
            real_load(*args)
            calls.append(1)
            if len(calls) == 1:
                die()
        snapshot.bulk_load = bulk_load
    else:  # die in the middle of the commit's replace: some of mini's old triples gone, none of the new in
        from kgcult.store import setgraph
        setgraph.BATCH = 2  # small batches, so that a kill lands between two
        real_while = setgraph._while
        def _while(store, ask, op, graph="", what=""):
            if what.startswith("old"):
                for _ in range(2):
                    store.update(op)
                die()
            return real_while(store, ask, op, graph, what)
        setgraph._while = _while
    s = Store(store_dir)
    snapshot.import_(s, snap, replace=point == "swap")
""")


def kill_import(store: Path, snap: Path, point: str) -> None:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(store), str(snap), point],
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def quads(store: Store, graph: str | None = None) -> list[str]:
    src = store.ox if graph is None else store.quads(graph)
    return sorted(str(q) for q in src)


def data(store: Store) -> list[str]:
    """Every quad but the metadata graph's (whose data version a repair renews)."""
    return [q for q in quads(store) if not q.endswith(f"<{vocab.META_GRAPH}>")]


@pytest.fixture
def snap(tmp_path) -> Path:
    """A snapshot of graphs mini and copy (mini.ttl each)."""
    s = Store(tmp_path / "src")
    s.load([MINI])
    s.load([MINI], graph="copy")
    snapshot.export(s, tmp_path / "snap")
    s.close()
    return tmp_path / "snap"


def test_killed_while_loading_is_partial_for_readers_then_rolled_back(tmp_path, snap):
    store = tmp_path / "store"
    other = tmp_path / "other.nt"
    other.write_text("<http://x/s> <http://x/p> <http://x/o> .\n")
    with Store(store) as s:  # a store holding another graph
        s.load([other], graph="other")
        before = data(s)
    kill_import(store, snap, "loading")
    with Store(store, read_only=True) as r:  # no writable open yet: the reader is told
        assert set(r.partial_graphs()) == {GRAPH, vocab.GRAPH + "copy"}
        assert any("partial graph(s)" in n for n in health.notices(r, "SELECT * { ?s ?p ?o }"))
    with Store(store) as s:  # rolled back: exactly as before
        assert data(s) == before
        assert s.partial_graphs() == []
        assert not any("meta/swap/" in q for q in quads(s, vocab.META_GRAPH))
        default_is_the_set(s)


def test_killed_in_the_swap_is_partial_for_readers_then_finished(tmp_path, snap, caplog):
    store = tmp_path / "store"
    old = tmp_path / "old.nt"  # the store's graph mini: other content, so the swap has work
    old.write_text("".join(f"<http://x/s{i}> <http://x/p> <http://x/o{i}> .\n" for i in range(9)))
    with Store(store) as s:
        s.load([old], graph="mini")
        s.load([MINI], graph="other")  # holds what the new mini holds: the set must keep it
    kill_import(store, snap, "swap")
    with Store(store, read_only=True) as r:
        assert GRAPH in r.partial_graphs()
        held = quads(r, GRAPH)
        with Store(tmp_path / "src", read_only=True) as src:
            new = quads(src, GRAPH)
        assert held and held != new and len(held) < 9, \
            "killed midway: part of the old triples are gone, so readers are told it is partial"
    with caplog.at_level(logging.WARNING):
        s = Store(store)  # finishes the swap
    try:
        assert any("finished a snapshot import" in r.getMessage() for r in caplog.records)
        with Store(tmp_path / "src", read_only=True) as src:
            assert quads(s, GRAPH) == quads(src, GRAPH)
            assert quads(s, vocab.GRAPH + "copy") == quads(src, vocab.GRAPH + "copy")
        assert s.partial_graphs() == []
        assert not any(g.startswith(vocab.STAGING_GRAPH) for g in s.graph_counts())
        assert any(r["kind"] == "snapshot-import" for r in s.provenance())
        default_is_the_set(s)
    finally:
        s.close()


def test_a_line_that_fails_to_parse_while_loading_is_rolled_back(tmp_path, snap):
    """The checks before writing read every line's graph but do not parse it: a line that
    names the right graph and does not parse fails the bulk load, which rolls back the
    graphs loaded before it (all or nothing) and puts the store's state back."""
    m = json.loads((snap / "MANIFEST.json").read_text())
    last = max(i for i, g in enumerate(m["graphs"]) if not g["metadata"])
    iri = m["graphs"][last]["iri"]
    rewrite_graph(snap, last, lambda lines: lines + [f"<http://x/broken> <http://x/p> <{iri}> .\n"])
    assert run_cli(["snapshot", "verify", str(snap)], tmp_path / "v").exit_code == 1
    store = tmp_path / "store"
    other = tmp_path / "other.nt"
    other.write_text("<http://x/s> <http://x/p> <http://x/o> .\n")
    with Store(store) as s:
        s.load([other], graph="other")
    before = everything(store)
    res = run_cli(["snapshot", "import", str(snap)], store)
    assert res.exit_code == 1
    errors = [line for line in res.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in res.stderr, res.stderr
    assert f"{m['graphs'][last]['file']}:{m['graphs'][last]['triples'] + 1}:" in errors[0], errors
    assert everything(store) == before
    assert not list(store.glob("bulk-*.sst"))
