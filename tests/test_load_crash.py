"""A load killed with SIGKILL or interrupted with Ctrl-C (issue 12 item 3, issues 30 and 31):
one command is all or nothing across its files. The next writable open rolls an unfinished
command back (the store exactly as before it: graphs, the default graph, the metadata and
its state) or, once committed, forward; readers see its graphs as partial until then.

The child process is a real `kgcult` load (the library, or the CLI); it is killed with a
real SIGKILL, or sent a real SIGINT, by itself at a precise point, or by this test at a
random moment of the bulk load."""
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
from kgcult.store import Store, recovery, setgraph

ROOT = Path(__file__).resolve().parent.parent
GRAPH = vocab.GRAPH + "data"

# The child: load FILES (comma-separated) into STORE (graph GRAPH), SIGKILL itself at POINT:
#   begin    - right after the command's journal entry, before any file
#   between  - after the first file was loaded (both passes), before the second
#   second   - during the second file: after its first bulk load, before the next
#   commit   - right after the commit transaction, before staging graphs are copied in
#   done     - right after the load returned
#   none     - print BEGIN after the journal entry and wait for the parent's kill
#   sigint   - send itself SIGINT once LINES lines were fed to the store after the checks
#              (the CLI runs)
CHILD = textwrap.dedent("""
    import os, signal, sys
    from kgcult.store import Store, loading, recovery
    store_dir, files, graph, point = sys.argv[1:5]
    lines = int(sys.argv[5]) if len(sys.argv) > 5 else 0

    def die():
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    begin, load_file, bulk, forward = (recovery.begin, loading._load_file, loading._bulk_load,
                                       recovery.roll_forward)
    calls = {"file": 0, "bulk": 0}
    def begin_(*a, **k):
        cmd = begin(*a, **k)
        calls["began"] = True
        if point == "begin":
            die()
        print("BEGIN", flush=True)
        return cmd
    def load_file_(*a, **k):
        calls["file"] += 1
        if point == "between" and calls["file"] == 2:
            die()
        return load_file(*a, **k)
    def bulk_(*a, **k):
        bulk(*a, **k)
        if point == "second" and calls["file"] == 2:
            die()
    def forward_(*a, **k):
        if point == "commit":
            die()
        forward(*a, **k)
    recovery.begin, loading._load_file, loading._bulk_load, recovery.roll_forward = (
        begin_, load_file_, bulk_, forward_)
    if point == "sigint":
        tally_counter = loading._Tally.counter
        def counter(self, plan):
            count = tally_counter(self, plan)
            def counting(n, raw):
                count(n, raw)
                if calls.get("began") and self.fed >= lines and not getattr(self, "sent", False):
                    self.sent = True
                    os.kill(os.getpid(), signal.SIGINT)
            return counting
        loading._Tally.counter = counter
        from kgcult.cli.main import main
        main(["--store", store_dir, "load", *files.split(","), "--graph", graph])
    s = Store(store_dir)
    s.load(files.split(","), graph=graph or None)
    if point == "done":
        die()
    print("LOADED", flush=True)
""")

NT_LINE = '<http://www.wikidata.org/entity/Q{i}> <http://www.w3.org/2000/01/rdf-schema#label> "item {i}"@en .\n'


def _file(tmp_path: Path, n: int, name: str = "data.nt.gz", start: int = 0) -> Path:
    f = tmp_path / name
    with gzip.open(f, "wt", compresslevel=1) as out:
        for i in range(start, start + n):
            out.write(NT_LINE.format(i=i))
    return f


def _prepare(store_dir: Path, with_existing_graph: bool) -> None:
    s = Store(store_dir)
    other = store_dir.parent / "other.nt"
    other.write_text(NT_LINE.format(i=0) + NT_LINE.format(i="other"))  # Q0 also in the files
    s.load([other], graph="other")
    if with_existing_graph:
        f = store_dir.parent / "old.nt"
        f.write_text(NT_LINE.format(i="old") + NT_LINE.format(i=1))
        s.load([f], graph="data")
    s.set_state("closureStale", False)  # as after `kgcult closure`
    s.set_state("contentSha256", "0" * 64)  # a cached content hash
    s.close()


def _content(store_dir: Path) -> list[str]:
    """Every quad of the store, metadata and default graph included."""
    s = Store(store_dir, read_only=True)
    try:
        return sorted(str(q) for q in s.ox)
    finally:
        s.close()


def _child(store_dir: Path, files: list[Path], point: str, graph: str = "data", lines: int = 0) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", CHILD, str(store_dir), ",".join(map(str, files)), graph, point,
                             str(lines)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            # as a terminal's Ctrl-C meets it: a test run started in the background by a
                            # non-interactive shell (`make test &`, a CI runner) has SIGINT ignored,
                            # and a child inherits that (Python then installs no KeyboardInterrupt)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _default_is_the_set(s: Store) -> None:
    default = {str(q.triple) for q in s.ox.quads_for_pattern(None, None, None, setgraph.DEFAULT)}
    named = {str(q.triple) for g in s.graph_counts() if setgraph.visible(g)
             for q in s.ox.quads_for_pattern(None, None, None, vocab_node(g))}
    assert default == named


def vocab_node(g: str):
    from pyoxigraph import NamedNode
    return NamedNode(g)


# every kill point quick once (into a new store or an existing one, alternately); the other
# half of the grid in the slow suite
_QUICK_KILLS = {("begin", True), ("between", False), ("second", True), ("commit", False), ("done", True)}


@pytest.mark.parametrize("point, existing", [
    (p, e) if (p, e) in _QUICK_KILLS else pytest.param(p, e, marks=pytest.mark.slow)
    for e in (False, True) for p in ("begin", "between", "second", "commit", "done")],
    ids=lambda v: str(v))
def test_a_command_killed_anywhere_is_all_or_nothing(tmp_path, point, existing):
    store_dir = tmp_path / "s"
    _prepare(store_dir, existing)
    before = _content(store_dir)
    files = [_file(tmp_path, 3_000, "a.nt.gz"), _file(tmp_path, 3_000, "b.nt.gz", start=3_000)]
    if point == "commit" and not existing:  # nothing staged: the commit is one transaction
        point = "done"
    proc = _child(store_dir, files, point)
    proc.wait(timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()
    s = Store(store_dir)  # repairs
    try:
        assert not list(store_dir.glob("bulk-*.sst"))
        assert recovery.read(store_dir) == [] and not recovery.path_of(store_dir).exists()
        _default_is_the_set(s)
        if point in ("begin", "between", "second"):
            s.close()
            assert _content(store_dir) == before  # exactly as before the command
            return
        # committed: every triple of both files, one record per file, the closure stale
        assert s.triple_count(GRAPH) == 6_000 + (1 if existing else 0)  # Q1 was there
        records = [r for r in s.provenance() if r.get("targetGraph") == GRAPH and r["kind"] == "load"]
        counts = sorted(int(r["tripleCount"]) for r in records)
        assert counts == ([2, 2_999, 3_000] if existing else [3_000, 3_000])
        assert not any(r.get("status") for r in records)
        assert s.closure_stale and s.get_state("contentSha256") is None
        assert s.partial_graphs() == []
    finally:
        if hasattr(s, "_ox"):
            s.close()
    # a second open finds nothing more to repair, and the store takes loads again
    with Store(store_dir) as s:
        assert recovery.recover(s) == []
        [r] = s.load([files[0]], graph="again")
        assert r.triples == 3_000


def test_a_failure_in_the_second_file_leaves_nothing_of_the_first(tmp_path, monkeypatch):
    """A bad triple in the second file (refused before anything is written) and a failure
    while writing it (here a read error: the disk-full path) both leave the store exactly
    as it was, bulk files included."""
    from kgcult.store import loading

    store_dir = tmp_path / "s"
    _prepare(store_dir, True)
    before = _content(store_dir)
    a = _file(tmp_path, 2_000, "a.nt.gz")
    bad = tmp_path / "bad.nt"
    bad.write_text(NT_LINE.format(i=5) + "garbage\n")
    s = Store(store_dir)
    with pytest.raises(Exception, match="bad.nt:2"):
        s.load([a, bad], graph="data")
    with pytest.raises(Exception, match="bad.nt:2"):
        s.load([a, bad], graph="fresh")
    real, calls = loading._load_file, []

    def failing(store, plan, tally):
        calls.append(plan.path)
        if len(calls) == 2:
            (Path(store.location) / "bulk-000001.sst").write_bytes(b"x" * 100)  # as a failed load leaves
            raise OSError(28, "No space left on device")
        return real(store, plan, tally)

    monkeypatch.setattr(loading, "_load_file", failing)
    b = _file(tmp_path, 2_000, "b.nt.gz", start=2_000)
    for graph in ("data", "fresh"):
        calls.clear()
        with pytest.raises(OSError):
            s.load([a, b], graph=graph)
        assert not list(store_dir.glob("bulk-*.sst"))
    s.close()
    assert _content(store_dir) == before


@pytest.mark.slow
@pytest.mark.parametrize("existing", [False, True])
def test_kill_at_random_moments_of_a_two_file_load(tmp_path, existing):
    rng = random.Random(12)
    files = [_file(tmp_path, 150_000, "a.nt.gz"), _file(tmp_path, 150_000, "b.nt.gz", start=150_000)]
    for attempt in range(4):
        store_dir = tmp_path / f"s{attempt}"
        _prepare(store_dir, existing)
        before = _content(store_dir)
        proc = _child(store_dir, files, "none")
        assert proc.stdout.readline().strip() == "BEGIN"
        try:
            proc.wait(timeout=rng.uniform(0.05, 4.0))
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        with Store(store_dir) as s:
            assert not list(store_dir.glob("bulk-*.sst"))
            _default_is_the_set(s)
            loaded = GRAPH in s.graph_counts() and s.triple_count(GRAPH) >= 300_000
        if not loaded:
            assert _content(store_dir) == before
        for p in tmp_path.iterdir():
            assert p.name.startswith(("s", "a.nt", "b.nt", "old", "other")), p  # no scratch copies


@pytest.mark.slow
def test_ctrl_c_says_what_it_rolls_back_and_the_next_open_does(tmp_path):
    """Ctrl-C (a real SIGINT) in the middle of a big load: exit 130 with one line saying the
    load is rolled back at the next writable open; readers meanwhile see the graph as
    partial; the next writable open brings the store back to what it was."""
    store_dir = tmp_path / "s"
    _prepare(store_dir, False)
    before = _content(store_dir)
    files = [_file(tmp_path, 60_000, "a.nt.gz"), _file(tmp_path, 200_000, "b.nt.gz", start=60_000)]
    proc = _child(store_dir, files, "sigint", lines=2 * 60_000 + 100_000)  # in b's first pass
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    [line] = [x for x in err.splitlines() if x.startswith("interrupted:")]
    assert "a.nt.gz, " in line and "b.nt.gz" in line and "rolled back at the next writable open" in line
    assert "Traceback" not in err
    with Store(store_dir, read_only=True) as reader:
        assert GRAPH in reader.partial_graphs()
    stats = subprocess.run([sys.executable, "-m", "kgcult", "--store", str(store_dir), "stats"],
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert f"note: {GRAPH} is partial" in stats.stdout + stats.stderr
    query = subprocess.run([sys.executable, "-m", "kgcult", "--store", str(store_dir), "sparql", "ASK { ?s ?p ?o }"],
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert f"partial graph(s) {GRAPH}" in query.stderr
    Store(store_dir).close()  # the next writable open rolls it back
    assert _content(store_dir) == before
    assert not list(store_dir.glob("bulk-*.sst"))


def test_ctrl_c_early_in_a_small_load_rolls_back_at_once(tmp_path):
    store_dir = tmp_path / "s"
    _prepare(store_dir, True)
    before = _content(store_dir)
    files = [_file(tmp_path, 3_000, "a.nt.gz"), _file(tmp_path, 3_000, "b.nt.gz", start=3_000)]
    proc = _child(store_dir, files, "sigint", lines=1)  # in a's load
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "was rolled back; the store is as it was before" in err
    assert _content(store_dir) == before  # no repair needed: read-only open sees it as before


# -- ingest: one journal entry for every subgraph (issue 40: "a killed ingest is left half-done")

INGEST_CHILD = textwrap.dedent("""
    import os, signal, sys
    from kgcult.acquire.dump import ingest as ing
    from kgcult.store import Store, recovery, setgraph
    store_dir, dump, point = sys.argv[1:4]

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    commit, replace = recovery.commit, setgraph.replace_graph
    calls = []
    def commit_(*a, **k):
        if point == "written":
            die()
        return commit(*a, **k)
    def replace_(*a, **k):
        replace(*a, **k)
        calls.append(1)
        if point == "swapping" and len(calls) == 2:
            die()
    recovery.commit, setgraph.replace_graph = commit_, replace_
    ing.ingest(Store(store_dir), dump, refresh=True, jobs=1)
""")


@pytest.mark.parametrize("point", ["written", "swapping"])
def test_a_killed_ingest_is_rolled_back_or_finished(tmp_path, point):
    """An ingest refreshing every subgraph, killed once its data is written (before the
    commit) or halfway through swapping the new graphs in: the next writable open leaves the
    store as before the ingest, or as a whole ingest leaves it; never old and new side by
    side, never a staging graph left."""
    from tests.test_ingest import ENTITIES, item, write_dump
    from tests.test_mirror import data_quads

    old = write_dump(tmp_path / "old.json")
    new_entities = [e for e in ENTITIES if e["id"] != "Q38"] + [item("Q39", [("P31", "Q6256", "normal")],
                                                                     {"en": "Switzerland"})]
    new = write_dump(tmp_path / "new.json", new_entities)
    from kgcult.acquire.dump import ingest as ing
    with Store(tmp_path / "s") as s:
        ing.ingest(s, str(old), jobs=1)
    with Store(tmp_path / "whole") as s:  # what a whole refresh gives
        ing.ingest(s, str(old), jobs=1)
        ing.ingest(s, str(new), refresh=True, jobs=1)
        after = data_quads(s)
    before = _content(tmp_path / "s")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", INGEST_CHILD, str(tmp_path / "s"), str(new), point],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    with Store(tmp_path / "s", read_only=True) as r:  # readers are told, meanwhile
        assert r.partial_graphs()
    with Store(tmp_path / "s") as s:  # recovers
        assert not [g for g in s.graph_counts() if g.startswith(vocab.STAGING_GRAPH)]
        assert s.partial_graphs() == []
        _default_is_the_set(s)
        got = data_quads(s)
    if point == "written":
        assert _content(tmp_path / "s") == before
    else:
        assert got == after
