"""Snapshots: deterministic export, verified import, tamper detection."""
from __future__ import annotations

import gzip
import json

import pytest
from pyoxigraph import NamedNode

from kgcult import vocab
from kgcult.store import snapshot
from kgcult.store.snapshot import SnapshotError
from kgcult.store import Store

from tests.conftest import FIXTURES, run_cli

MINI = FIXTURES / "foundation" / "mini.ttl"


def data_quads(store):
    # named graphs only: the default graph is the set of their triples (setgraph)
    return sorted(str(q) for q in store.ox if isinstance(q.graph_name, NamedNode)
                  and q.graph_name.value != vocab.META_GRAPH and not vocab.is_derived_graph(q.graph_name.value))


@pytest.fixture
def loaded(store, tmp_path):
    store.load([MINI])
    store.load([MINI], graph="copy")
    return store


def test_export_twice_is_byte_identical(loaded, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    snapshot.export(loaded, a)
    snapshot.export(loaded, b)
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert files_a == files_b and len(files_a) == 4  # manifest + 2 data graphs + meta
    for rel in files_a:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


def test_export_is_sorted_nquads_with_manifest(loaded, tmp_path):
    m = snapshot.export(loaded, tmp_path / "s")
    mini = next(g for g in m["graphs"] if g["iri"] == vocab.GRAPH + "mini")
    lines = gzip.decompress((tmp_path / "s" / mini["file"]).read_bytes()).decode().splitlines()
    assert lines == sorted(lines) and len(lines) == mini["triples"]
    assert all(line.endswith(f"<{vocab.GRAPH}mini> .") for line in lines)
    assert m["triples"] == 2 * mini["triples"]
    assert len(m["content_sha256"]) == 64
    assert [p["kind"] for p in m["provenance"]] == ["load", "load"]


def test_closure_graphs_not_exported_and_content_hash_ignores_metadata(loaded, tmp_path):
    from kgcult.store import hierarchy

    m1 = snapshot.export(loaded, tmp_path / "1")
    hierarchy.build(loaded)
    m2 = snapshot.export(loaded, tmp_path / "2")
    assert not any(vocab.is_derived_graph(g["iri"]) for g in m2["graphs"])
    assert m1["content_sha256"] == m2["content_sha256"]
    assert snapshot.store_content_hash(loaded) == m1["content_sha256"]


def test_roundtrip_gives_back_every_triple(loaded, tmp_path):
    snapshot.export(loaded, tmp_path / "snap")
    other = Store(tmp_path / "other")
    m = snapshot.import_(other, tmp_path / "snap")
    assert data_quads(other) == data_quads(loaded)
    assert other.closure_stale
    kinds = [p["kind"] for p in other.provenance()]
    assert kinds.count("snapshot-import") == 2 and kinds.count("load") == 2
    assert snapshot.store_content_hash(other) == m["content_sha256"]
    other.close()


@pytest.mark.parametrize("damage", ["flip-byte", "truncate", "delete", "manifest-count", "manifest-json"])
def test_damaged_snapshot_refused_and_store_untouched(loaded, tmp_path, damage):
    snap = tmp_path / "snap"
    m = snapshot.export(loaded, snap)
    target = snap / m["graphs"][0]["file"]
    if damage == "flip-byte":
        data = bytearray(target.read_bytes())
        data[len(data) // 2] ^= 0x01
        target.write_bytes(bytes(data))
    elif damage == "truncate":
        target.write_bytes(target.read_bytes()[:-10])
    elif damage == "delete":
        target.unlink()
    elif damage == "manifest-count":
        mm = json.loads((snap / "MANIFEST.json").read_text())
        mm["graphs"][0]["triples"] += 1
        (snap / "MANIFEST.json").write_text(json.dumps(mm))
    else:
        (snap / "MANIFEST.json").write_text('{"format": "kgcult-snapshot/1", ')
    other = Store(tmp_path / "other")
    other.load([MINI], graph="already-here")
    before = sorted(str(q) for q in other.ox)
    with pytest.raises(SnapshotError):
        snapshot.import_(other, snap)
    assert sorted(str(q) for q in other.ox) == before
    other.close()


def test_import_refuses_graph_clash_unless_replace(loaded, tmp_path):
    snapshot.export(loaded, tmp_path / "snap")
    with pytest.raises(SnapshotError, match="--replace"):
        snapshot.import_(loaded, tmp_path / "snap")
    snapshot.import_(loaded, tmp_path / "snap", replace=True)
    assert loaded.triple_count(vocab.GRAPH + "mini") == loaded.triple_count(vocab.GRAPH + "copy")


def test_cli_snapshot_export_import_verify(tmp_path):
    s1 = tmp_path / "s1"
    assert run_cli(["load", str(MINI)], s1).exit_code == 0
    res = run_cli(["snapshot", "export", str(tmp_path / "snap")], s1)
    assert res.exit_code == 0, res.stderr
    digest = res.stdout.strip()
    res = run_cli(["snapshot", "verify", str(tmp_path / "snap")])
    assert res.stdout.startswith(f"ok {digest}")
    res = run_cli(["snapshot", "import", str(tmp_path / "snap")], tmp_path / "s2")
    assert res.exit_code == 0 and res.stdout.strip() == digest
    (tmp_path / "snap" / "MANIFEST.json").write_text("{}")
    res = run_cli(["snapshot", "import", str(tmp_path / "snap")], tmp_path / "s3")
    assert res.exit_code == 1 and "unsupported snapshot format" in res.stderr


def test_staging_and_closure_graphs_are_not_snapshot_content(loaded, tmp_path):
    from pyoxigraph import NamedNode, Quad

    loaded.ox.add(Quad(NamedNode("http://x/s"), NamedNode("http://x/p"), NamedNode("http://x/o"),
                       NamedNode(vocab.STAGING_GRAPH + "dishes")))
    assert vocab.STAGING_GRAPH + "dishes" not in loaded.data_graphs()
    m = snapshot.export(loaded, tmp_path / "s")
    assert {g["iri"] for g in m["graphs"]} == {vocab.GRAPH + "mini", vocab.GRAPH + "copy", vocab.META_GRAPH}
