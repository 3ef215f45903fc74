"""The streamed content hash (issue 15 item 3) equals the first landing's algorithm (every
graph's N-Quads lines sorted in memory and hashed), with the external sort's merge path
exercised by a tiny run size."""
from __future__ import annotations

import hashlib

import pytest

from kgcult import resources
from kgcult.store import Store, snapshot

from tests.conftest import FIXTURES


def in_memory_hash(store: Store) -> str:
    """The algorithm the streamed hash replaces, kept here as the reference."""
    hashes = {}
    for iri in store.data_graphs():
        lines = sorted(f"{q} .\n".encode("utf-8") for q in store.quads(iri))
        hashes[iri] = hashlib.sha256(b"".join(lines)).hexdigest()
    return snapshot.content_hash(hashes)


@pytest.mark.parametrize("run_bytes", [64 << 20, 2000])
def test_seed_hash_equals_in_memory_algorithm_and_manifest(tmp_path, monkeypatch, run_bytes):
    monkeypatch.setattr(snapshot, "RUN_BYTES", run_bytes)
    s = Store(tmp_path / "s")
    manifest = snapshot.import_(s, resources.seed())
    s.remove_state("contentSha256")
    streamed = snapshot.store_content_hash(s)
    assert streamed == in_memory_hash(s) == manifest["content_sha256"]
    s.close()


def test_export_with_spilled_runs_is_byte_identical(tmp_path, monkeypatch):
    s = Store(tmp_path / "s")
    s.load([FIXTURES / "foundation" / "mini.ttl"])
    a = snapshot.export(s, tmp_path / "a")
    monkeypatch.setattr(snapshot, "RUN_BYTES", 500)
    b = snapshot.export(s, tmp_path / "b")
    assert a == b
    for g in a["graphs"]:
        assert (tmp_path / "a" / g["file"]).read_bytes() == (tmp_path / "b" / g["file"]).read_bytes()
    s.close()


@pytest.mark.slow
def test_standin_hash_equals_in_memory_algorithm(tmp_path, monkeypatch, standin_path):
    monkeypatch.setattr(snapshot, "RUN_BYTES", 16 << 20)  # several runs merged
    s = Store(tmp_path / "s")
    s.load([standin_path])
    assert snapshot.store_content_hash(s) == in_memory_hash(s)
    s.close()
