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
    s.set_state("contentSha256", None)
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


# -- the hash kept with the store (issue 31, item 1) -----------------------------------------

def _forbid_hashing(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("the store was hashed again")
    monkeypatch.setattr(snapshot, "_hash_sorted", refuse)


def test_a_read_only_build_reuses_the_hash_until_the_data_changes(tmp_path, monkeypatch):
    from kgcult import views
    loc = tmp_path / "s"
    s = Store(loc)
    s.load([FIXTURES / "foundation" / "mini.ttl"])
    s.close()
    ro = Store(loc, read_only=True)
    first = views.snapshot_content_hash(ro)
    ro.close()
    with monkeypatch.context() as m:
        _forbid_hashing(m)
        ro = Store(loc, read_only=True)
        assert views.snapshot_content_hash(ro) == first  # read back, not recomputed
        ro.close()
    s = Store(loc)  # a write: the kept hash no longer applies
    s.load([FIXTURES / "foundation" / "mini.ttl"], graph="second")
    s.close()
    ro = Store(loc, read_only=True)
    again = views.snapshot_content_hash(ro)
    assert again != first and again == in_memory_hash(ro)
    ro.close()


def test_every_write_path_gives_the_data_a_new_version_and_closure_does_not(tmp_path):
    from kgcult.store import hierarchy, sidefiles
    s = Store(tmp_path / "s")
    versions = [sidefiles.data_version(s)]
    s.load([FIXTURES / "foundation" / "mini.ttl"])
    versions.append(sidefiles.data_version(s))
    snapshot.import_(s, resources.seed())
    versions.append(sidefiles.data_version(s))
    with s.writing("update", "a test write"):  # as every write command's journal entry does
        pass
    versions.append(sidefiles.data_version(s))
    assert len(set(versions)) == len(versions)
    h = snapshot.store_content_hash(s)
    hierarchy.build(s)  # derived graphs only: the data and its hash stay
    assert sidefiles.data_version(s) == versions[-1] and snapshot.store_content_hash(s) == h
    s.close()


def test_a_snapshot_hash_is_not_kept_after_a_later_load(tmp_path):
    s = Store(tmp_path / "s")
    snapshot.import_(s, resources.seed())
    assert s.get_state("snapshotContentSha256")
    s.load([FIXTURES / "foundation" / "mini.ttl"], graph="later")
    assert s.get_state("snapshotContentSha256") is None and s.get_state("contentSha256") is None
    s.close()


def test_a_remote_build_never_records_a_stale_hash(tmp_path):
    from kgcult.store import open_store
    from kgcult import views
    from tests.conftest import running_server
    loc = tmp_path / "s"
    s = Store(loc)
    seed = snapshot.import_(s, resources.seed())
    s.load([FIXTURES / "foundation" / "mini.ttl"], graph="later")
    s.close()
    with running_server(loc) as srv:
        remote = open_store("sparql+" + srv.endpoint)
        recorded = views.snapshot_content_hash(remote)
    assert recorded != seed["content_sha256"]
    assert recorded is None  # unknown: the served store never computed its new hash


def test_bad_view_parameters_are_refused_before_building(tmp_path):
    from tests.conftest import run_cli
    loc = tmp_path / "s"
    assert run_cli(["snapshot", "import", str(resources.seed())], loc).exit_code == 0
    out = tmp_path / "out"
    ok = run_cli(["build", "fmlama", "--param", "languages=en", "--out", str(out)], loc)
    assert ok.exit_code == 0, ok.output
    before = (out / "fmlama" / "MANIFEST.json").read_bytes()
    for param, says in [("languages=english", "not a language code"),
                        ("languages=eng", "did you mean en?"),
                        ("countries=Q99999999", "holds nothing about Q99999999"),
                        ("languages=" + ",".join(a + b + c for a in "xyz" for b in "abcdefghijklmnopqrstuvwxyz"
                                                 for c in "abcdefghijklmnopqrstuvwxyz"), "at most 500")]:
        r = run_cli(["build", "fmlama", "--param", param, "--out", str(out)], loc)
        assert r.exit_code == 1 and says in r.stderr, (param, r.output)
    assert (out / "fmlama" / "MANIFEST.json").read_bytes() == before  # the previous build stays
