"""Snapshots that lie (issue 12 items 1, 12, 14): a file whose hashes match but that does
not parse, manifests pointing outside the snapshot, quads in the wrong graph, malformed
manifests, and an import killed with SIGKILL. In every case: one-line error, exit 1, and
the store exactly as it was."""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kgcult import vocab
from kgcult.store import Store, snapshot
from kgcult.store.snapshot import SnapshotError

from tests.conftest import FIXTURES, run_cli

MINI = FIXTURES / "foundation" / "mini.ttl"
ROOT = Path(__file__).resolve().parent.parent


def everything(store_dir: Path) -> list[str]:
    s = Store(store_dir)
    try:
        return sorted(str(q) for q in s.ox)
    finally:
        s.close()


@pytest.fixture
def snap(tmp_path) -> Path:
    """A snapshot of two graphs (mini, copy), and a store that already holds both."""
    s = Store(tmp_path / "src")
    s.load([MINI])
    s.load([MINI], graph="copy")
    snapshot.export(s, tmp_path / "snap")
    s.close()
    run_cli(["snapshot", "import", str(tmp_path / "snap")], tmp_path / "store")
    return tmp_path / "snap"


def rewrite_graph(snap: Path, index: int, edit) -> None:
    """Rewrite graph file ``index`` with ``edit(lines) -> lines`` and recompute its hashes
    (and the manifest's content hash), as an attacker or a buggy tool would."""
    m = json.loads((snap / "MANIFEST.json").read_text())
    g = m["graphs"][index]
    path = snap / g["file"]
    lines = gzip.decompress(path.read_bytes()).decode().splitlines(keepends=True)
    raw = "".join(edit(lines)).encode()
    path.write_bytes(gzip.compress(raw))
    g["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    g["content_sha256"] = hashlib.sha256(raw).hexdigest()
    g["triples"] = raw.count(b"\n")
    m["triples"] = sum(x["triples"] for x in m["graphs"] if not x["metadata"])
    m["content_sha256"] = snapshot.content_hash(
        {x["iri"]: x["content_sha256"] for x in m["graphs"] if not x["metadata"]})
    (snap / "MANIFEST.json").write_text(json.dumps(m))


def data_index(snap: Path, name: str) -> int:
    m = json.loads((snap / "MANIFEST.json").read_text())
    return next(i for i, g in enumerate(m["graphs"]) if g["iri"] == vocab.GRAPH + name)


def assert_refused(tmp_path, snap, *message, replace=True):
    before = everything(tmp_path / "store")
    args = ["snapshot", "import", str(snap)] + (["--replace"] if replace else [])
    res = run_cli(args, tmp_path / "store")
    assert res.exit_code == 1, res.stderr
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), res.stderr
    for m in message:
        assert m in err[0], err[0]
    assert everything(tmp_path / "store") == before
    assert run_cli(["snapshot", "verify", str(snap)], tmp_path / "store").exit_code == 1


def test_replace_with_one_malformed_line_and_matching_hashes(tmp_path, snap):
    """Item 1: parse everything before touching the store; the swap is all or nothing."""
    i = data_index(snap, "mini")
    rewrite_graph(snap, i, lambda lines: lines[:3] + ["<http://broken> <p> .\n"] + lines[3:])
    # the malformed graph comes after another graph in the manifest order, too
    assert_refused(tmp_path, snap, "graphs/", ":4")


def test_quad_for_another_graph_refused(tmp_path, snap):
    i = data_index(snap, "copy")
    other = f"<{vocab.GRAPH}mini>"
    rewrite_graph(snap, i, lambda lines: lines + [f"<http://x/s> <http://x/p> <http://x/o> {other} .\n"])
    assert_refused(tmp_path, snap, "lists this file for")


def test_data_file_cannot_write_the_metadata_graph(tmp_path, snap):
    i = data_index(snap, "copy")
    meta = f"<{vocab.META_GRAPH}>"
    rewrite_graph(snap, i, lambda lines: [f"<{vocab.KGC}store> <{vocab.KGC}closureStale> \"false\" {meta} .\n"]
                  + lines)
    assert_refused(tmp_path, snap, "lists this file for")


def test_metadata_graph_holds_only_kgcult_records(tmp_path, snap):
    i = next(i for i, g in enumerate(json.loads((snap / "MANIFEST.json").read_text())["graphs"]) if g["metadata"])
    meta = f"<{vocab.META_GRAPH}>"
    rewrite_graph(snap, i, lambda lines: lines + [f"<http://evil/x> <http://evil/p> \"1\" {meta} .\n"])
    assert_refused(tmp_path, snap, "metadata graph may hold only")


@pytest.mark.parametrize("target", ["../outside.nq.gz", "/etc/passwd", "link.nq.gz", "graphs/../../x.nq.gz",
                                    "graphs"])
def test_manifest_files_only_plain_files_inside(tmp_path, snap, target):
    m = json.loads((snap / "MANIFEST.json").read_text())
    g = m["graphs"][data_index(snap, "copy")]
    src = snap / g["file"]
    (tmp_path / "outside.nq.gz").write_bytes(src.read_bytes())
    (tmp_path / "x.nq.gz").write_bytes(src.read_bytes())
    os.symlink(src, snap / "link.nq.gz")
    g["file"] = target
    (snap / "MANIFEST.json").write_text(json.dumps(m))
    assert_refused(tmp_path, snap, "graphs[")


def test_symlinked_directory_refused(tmp_path, snap):
    os.rename(snap / "graphs", tmp_path / "real-graphs")
    os.symlink(tmp_path / "real-graphs", snap / "graphs")
    assert_refused(tmp_path, snap, "symbolic link")


@pytest.mark.parametrize("edit, message", [
    (lambda m: [m], "top level must be a JSON object"),
    (lambda m: {**m, "graphs": {"a": 1}}, "graphs must be a list"),
    (lambda m: {**m, "graphs": [{**m["graphs"][0], "file": None}]}, "graphs[0].file must be a string, not null"),
    (lambda m: {**m, "graphs": [{**m["graphs"][0], "triples": str(m["graphs"][0]["triples"])}]},
     "graphs[0].triples must be an integer, not a string"),
    (lambda m: {**m, "graphs": [{**m["graphs"][0], "iri": "not an iri"}]}, "graphs[0].iri"),
    (lambda m: {**m, "graphs": [{**m["graphs"][0], "iri": vocab.META_GRAPH}]}, "metadata"),
    (lambda m: {**m, "graphs": [{**m["graphs"][0], "iri": vocab.CLOSURE_GRAPH + "typedAs"}]}, "reserved"),
    (lambda m: {**m, "graphs": ["x"]}, "graphs[0] must be an object"),
])
def test_malformed_manifests_give_one_line_errors(tmp_path, snap, edit, message):
    m = json.loads((snap / "MANIFEST.json").read_text())
    (snap / "MANIFEST.json").write_text(json.dumps(edit(m)))
    assert_refused(tmp_path, snap, "MANIFEST.json", message)


def test_replace_swaps_every_graph(tmp_path, snap):
    """The good path of --replace: the imported content replaces what was there."""
    s = Store(tmp_path / "store")
    s.ox.remove_graph(snapshot.NamedNode(vocab.GRAPH + "copy"))
    s.load([MINI], graph="copy")
    extra = tmp_path / "extra.nt"
    extra.write_text("<http://x/s> <http://x/p> <http://x/o> .\n")
    s.load([extra], graph="mini")
    s.close()
    res = run_cli(["snapshot", "import", "--replace", str(snap)], tmp_path / "store")
    assert res.exit_code == 0, res.stderr
    s = Store(tmp_path / "store")
    assert s.triple_count(vocab.GRAPH + "mini") == s.triple_count(vocab.GRAPH + "copy")
    assert not any(g.startswith(vocab.STAGING_GRAPH) for g in s.graph_counts())
    assert s.closure_stale
    s.close()


CHILD = textwrap.dedent("""
    import os, signal, sys
    from kgcult.store import Store, snapshot
    store_dir, snap, point = sys.argv[1:4]
    die = lambda: os.kill(os.getpid(), signal.SIGKILL)
    if point == "staging":  # die before the commit, while the second file is loaded
        real_load = snapshot.bulk_load
        calls = []
        def bulk_load(*args):
            calls.append(1)
            if len(calls) == 2:
                die()
            return real_load(*args)
        snapshot.bulk_load = bulk_load
    else:  # die in the commit: the first target replaced, its staging graph not yet dropped
        from kgcult.store import setgraph
        real = setgraph.replace_graph
        def replace_graph(db, graph, source):
            real(db, graph, source)
            die()
        setgraph.replace_graph = replace_graph
    s = Store(store_dir)
    snapshot.import_(s, snap, replace=True)
""")


@pytest.mark.parametrize("point", [pytest.param("staging", marks=pytest.mark.slow), "swap"])  # one quick
def test_import_killed_is_all_or_nothing(tmp_path, snap, point):
    s = Store(tmp_path / "store")
    extra = tmp_path / "extra.nt"
    extra.write_text("<http://x/s> <http://x/p> <http://x/o> .\n")
    s.load([extra], graph="mini")
    s.close()
    before = everything(tmp_path / "store")
    proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "store"), str(snap), point],
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    s = Store(tmp_path / "store")  # repairs
    try:
        assert not any(g.startswith(vocab.STAGING_GRAPH) for g in s.graph_counts())
        if point == "staging":  # before the swap was committed: nothing changed
            assert sorted(str(q) for q in s.ox) == before
        else:  # the swap was committed: it is finished
            assert s.triple_count(vocab.GRAPH + "mini") == s.triple_count(vocab.GRAPH + "copy")
            assert "<http://x/s>" not in " ".join(str(q) for q in s.quads(vocab.GRAPH + "mini"))
            assert s.closure_stale
            assert any(r["kind"] == "snapshot-import" for r in s.provenance())
            assert not any(r.get("status") for r in s.provenance())
    finally:
        s.close()


# -- issue 30: a snapshot is data, never instructions ------------------------------------------

def test_a_forged_load_in_progress_record_cannot_delete_a_graph(tmp_path, snap):
    """The snapshot's metadata graph claims an unfinished load into the store's graph
    'victim'; importing it must not make the next writable open roll that graph back."""
    victim = vocab.GRAPH + "victim"
    s = Store(tmp_path / "store")
    s.load([MINI], graph="victim")
    held = s.triple_count(victim)
    s.close()
    meta = next(i for i, g in enumerate(json.loads((snap / "MANIFEST.json").read_text())["graphs"])
                if g["metadata"])
    act = f"<{vocab.GRAPH}meta/activity/forged0000000000>"
    k = vocab.KGC
    forged = [f"{act} <{vocab.RDF}type> <{k}Load> <{vocab.META_GRAPH}> .\n",
              f'{act} <{k}status> "in-progress" <{vocab.META_GRAPH}> .\n',
              f"{act} <{k}targetGraph> <{victim}> <{vocab.META_GRAPH}> .\n",
              f'{act} <{k}targetWasEmpty> "true"^^<{vocab.XSD}boolean> <{vocab.META_GRAPH}> .\n',
              f'{act} <{k}triplesBefore> "0"^^<{vocab.XSD}integer> <{vocab.META_GRAPH}> .\n',
              f'{act} <{k}source> "forged" <{vocab.META_GRAPH}> .\n']
    rewrite_graph(snap, meta, lambda lines: sorted(lines + forged))
    res = run_cli(["snapshot", "import", str(snap), "--replace"], tmp_path / "store")
    assert res.exit_code == 0, res.output
    s = Store(tmp_path / "store")  # the writable open that used to "roll back" the victim
    try:
        assert s.triple_count(victim) == held
        rec = [q for q in s.ox.quads_for_pattern(None, vocab.kgc("source"), None, None)
               if q.object.value == "forged"]
        assert rec, "the provenance itself is kept"
        assert not list(s.ox.quads_for_pattern(rec[0].subject, vocab.kgc("status"), None, None))
    finally:
        s.close()


def test_export_never_writes_or_deletes_through_a_symlinked_graphs_directory(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.nq.gz").write_bytes(b"not yours")
    out = tmp_path / "out"
    s = Store(tmp_path / "s")
    s.load([MINI])
    snapshot.export(s, out)  # a snapshot directory ...
    for f in (out / "graphs").iterdir():
        f.unlink()
    (out / "graphs").rmdir()
    (out / "graphs").symlink_to(elsewhere)  # ... whose graphs/ now points elsewhere
    with pytest.raises(SnapshotError, match="symbolic link"):
        snapshot.export(s, out)
    s.close()
    assert [p.name for p in elsewhere.iterdir()] == ["precious.nq.gz"]


def test_graph_file_names_are_distinct_for_distinct_graphs(tmp_path):
    s = Store(tmp_path / "s")
    s.load([MINI], graph="日本語")
    s.load([MINI], graph="中文")
    s.load([MINI], graph="a_b")
    s.load([MINI], graph="a%20b")
    m = snapshot.export(s, tmp_path / "snap")
    s.close()
    files = [g["file"] for g in m["graphs"]]
    assert len(files) == len(set(files)) == 5  # four data graphs + metadata
    assert "graphs/a_b.nq.gz" in files  # a name that needs no escaping keeps its plain file name
    t = Store(tmp_path / "t")
    snapshot.import_(t, tmp_path / "snap")
    assert {g for g in t.data_graphs()} == {vocab.graph_iri(n) for n in ("日本語", "中文", "a_b", "a%20b")}
    t.close()


def test_a_manifest_without_triples_is_refused_before_any_write(tmp_path, snap):
    m = json.loads((snap / "MANIFEST.json").read_text())
    del m["triples"]
    (snap / "MANIFEST.json").write_text(json.dumps(m))
    assert_refused(tmp_path, snap, "lacks field 'triples'")
    m["triples"] = 1
    (snap / "MANIFEST.json").write_text(json.dumps(m))
    assert_refused(tmp_path, snap, "triples is 1, but its data graphs list")
