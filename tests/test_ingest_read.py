"""The one read of a dump: whichever decompressor runs (a parallel tool, rapidgzip,
Python's module), the sha256 comes from the same read, line numbers survive the cut into
blocks and the worker processes, and the store is the same with 1 or 2 workers."""
from __future__ import annotations

import gzip
import json
import shutil

import pytest
import zstandard

from kgcult.acquire.dump import ingest as ing
from kgcult.acquire.dump import reader as dumpio
from kgcult.files import sha256_file
from kgcult.store import Store
from kgcult.store.snapshot import store_content_hash

from tests.conftest import run_cli
from tests.test_ingest import ENTITIES, write_dump


def _ingest_hash(tmp_path, name, dump, **kw):
    with Store(tmp_path / name) as st:
        ing.ingest(st, str(dump), progress=False, **kw)
        shas = {p["sourceSha256"] for p in st.provenance() if p.get("kind") == "ingest"}
        return store_content_hash(st), shas


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".zst", ""])
def test_every_decompressor_gives_the_same_store_and_the_file_sha256(tmp_path, monkeypatch, suffix):
    if suffix == ".zst":
        plain = write_dump(tmp_path / "d.json")
        dump = tmp_path / "d.json.zst"
        dump.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    else:
        dump = write_dump(tmp_path / f"d.json{suffix}")
    want = sha256_file(dump)
    fast, fast_sha = _ingest_hash(tmp_path, "fast", dump, jobs=3)  # pigz for .gz when installed
    assert fast_sha == {want}
    if suffix == ".gz":  # on 2 cores Python's gzip in this process, whatever is installed
        assert dumpio.decompressor(str(dump), 2) == "python-gzip"
        two, two_sha = _ingest_hash(tmp_path, "two", dump, jobs=2)
        assert two_sha == {want} and two == fast
    monkeypatch.setattr(dumpio.shutil, "which", lambda name: None)
    if suffix == ".gz" and dumpio.rapidgzip is not None:  # no pigz: rapidgzip, hashed beside it
        assert dumpio.decompressor(str(dump), 3) == "rapidgzip"
        rapid, rapid_sha = _ingest_hash(tmp_path, "rapid", dump, jobs=3)
        assert rapid_sha == {want} and rapid == fast
    if suffix == ".bz2" and dumpio.indexed_bzip2 is not None:  # no lbzip2: indexed_bzip2, hashed beside it
        assert dumpio.decompressor(str(dump), 3) == "indexed_bzip2"
        ibz, ibz_sha = _ingest_hash(tmp_path, "ibz", dump, jobs=3)
        assert ibz_sha == {want} and ibz == fast
    # no parallel tool, no rapidgzip or indexed_bzip2: Python's own module, one thread, and it says so
    monkeypatch.setattr(dumpio, "rapidgzip", None)
    monkeypatch.setattr(dumpio, "indexed_bzip2", None)
    assert dumpio.decompressor(str(dump)) in ("none", "python-gzip", "python-bz2", "python-zstandard")
    slow, slow_sha = _ingest_hash(tmp_path, "slow", dump, jobs=1)
    assert slow_sha == {want} and slow == fast


def test_the_one_thread_fallback_is_logged(tmp_path, monkeypatch, caplog):
    dump = write_dump(tmp_path / "d.json.bz2")
    monkeypatch.setattr(dumpio.shutil, "which", lambda name: None)
    with caplog.at_level("INFO", logger="kgcult.acquire.dump.reader"), Store(tmp_path / "s") as st:
        ing.ingest(st, str(dump), ["countries"], progress=False, jobs=1)
    assert "decompressing on one thread with Python's module (install lbzip2" in caplog.text


@pytest.mark.skipif(not shutil.which("lbzip2"), reason="lbzip2 not installed")
def test_lbzip2_is_used_when_present(tmp_path, caplog):
    dump = write_dump(tmp_path / "d.json.bz2")
    with caplog.at_level("INFO", logger="kgcult.acquire.dump.reader"), Store(tmp_path / "s") as st:
        ing.ingest(st, str(dump), ["countries"], progress=False, jobs=2)
    assert "decompressing with lbzip2" in caplog.text


def test_line_numbers_across_blocks_and_workers(tmp_path, monkeypatch):
    monkeypatch.setattr(dumpio, "BLOCK", 4096)  # many blocks, several per worker
    lines = ["["] + [json.dumps(e) + "," for e in ENTITIES * 20] + ['{"type": "item", "id": "Q5", "labels": ', "]"]
    bad = tmp_path / "bad.json.gz"
    with gzip.open(bad, "wt") as f:
        f.write("\n".join(lines) + "\n")
    r = run_cli(["ingest", str(bad), "--no-progress", "--jobs", "2"], tmp_path / "s")
    assert r.exit_code == 1 and f"bad.json.gz:{len(lines) - 1}: not a JSON entity line" in r.stderr, r.stderr
    with Store(tmp_path / "s") as st:
        assert not st.data_graphs()
    nt = tmp_path / "bad.nt"
    good = "".join(f"<http://www.wikidata.org/entity/Q{i}> <http://www.wikidata.org/prop/direct/P31> "
                   f"<http://www.wikidata.org/entity/Q6256> .\n" for i in range(3000))
    nt.write_text(good + "this is not ntriples\n")
    r = run_cli(["ingest", str(nt), "--no-progress", "--jobs", "2"], tmp_path / "s")
    assert r.exit_code == 1 and "bad.nt:3001: not an N-Triples line" in r.stderr, r.stderr


def test_one_or_two_workers_and_small_blocks_give_the_same_store(tmp_path, monkeypatch):
    dump = write_dump(tmp_path / "d.json.gz", ENTITIES * 3)
    nt = tmp_path / "d.nt"
    ing.json_to_ntriples(str(dump), str(nt))
    one, _ = _ingest_hash(tmp_path, "one", dump, jobs=1)
    monkeypatch.setattr(dumpio, "BLOCK", 2048)
    two, _ = _ingest_hash(tmp_path, "two", dump, jobs=2)
    from_nt, _ = _ingest_hash(tmp_path, "nt", nt, jobs=2)
    assert one == two == from_nt


@pytest.mark.parametrize("tail", [b"", b"last line without a newline"])
def test_the_block_ring_cuts_whole_lines_and_passes_long_ones_as_bytes(tail):
    import io
    lines = [b"x" * n for n in (10, 3, 200, 0, 7, 64, 65, 1, 130, 5)] * 3
    data = b"\n".join(lines) + b"\n" + tail
    ring = dumpio.BlockRing(3, 64)
    got, seen = [], []
    try:
        for block in ring.blocks(io.BytesIO(data), seen.append):
            if isinstance(block, tuple):  # (offset, length) in a slot
                base, n = block
                assert 0 <= base and base + n <= 3 * 64
                block = ring.mem[base:base + n]
            else:
                assert len(block) > 64  # only a line longer than a slot comes as bytes
            assert block.endswith(b"\n")
            got.append(block)
    finally:
        ring.close()
    assert b"".join(got) == data + (b"\n" if tail else b"") and sum(seen) == len(data)
