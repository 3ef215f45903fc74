"""A dump that is not whole is refused before anything is written (issue 30, item 3): a JSON
dump cut at an entity-line boundary (no closing ']'), an empty dump, a dump of only '['."""
from __future__ import annotations

import bz2
import gzip
import json

import pytest

from kgcult import vocab
from kgcult.store import Store

from tests.conftest import run_cli
from tests.test_ingest import item


def _entity_lines() -> list[str]:
    japan = item("Q17", [("P31", "Q6256", "normal")], labels={"en": "Japan"})
    france = item("Q142", [("P31", "Q6256", "normal")], labels={"en": "France"})
    return [json.dumps(japan), json.dumps(france)]


@pytest.mark.parametrize("name,text,says", [
    ("cut.json", "[\n{0},\n{1},\n", "does not end with its closing ']'"),
    ("cut.json.gz", "[\n{0},\n{1},\n", "does not end with its closing ']'"),
    ("empty.json", "", "no entities in the dump"),
    ("bracket.json", "[\n", "no entities in the dump"),
    ("noopen.json", "{0},\n{1}\n]\n", "starts with a '[' line"),
], ids=["cut", "cut-gz", "empty", "bracket", "no-open"])
def test_an_incomplete_json_dump_is_refused_and_nothing_is_written(tmp_path, name, text, says):
    a, b = _entity_lines()
    body = text.format(a, b).encode()
    path = tmp_path / name
    path.write_bytes(gzip.compress(body) if name.endswith(".gz") else body)
    store = tmp_path / "s"
    r = run_cli(["ingest", str(path), "countries", "--jobs", "1"], store)
    assert r.exit_code == 1 and says in r.stderr, r.output
    s = Store(store)
    assert s.triple_count(vocab.graph_iri("countries")) == 0
    s.close()
    whole = tmp_path / "whole.json"
    whole.write_text(f"[\n{a},\n{b}\n]\n", encoding="utf-8")
    r = run_cli(["ingest", str(whole), "countries", "--jobs", "1"], store)  # not "already in the store"
    assert r.exit_code == 0, r.output
    assert "countries\tingested" in r.stdout


@pytest.mark.parametrize("name", [pytest.param("cut.json.bz2", marks=pytest.mark.slow), "bad-line.json"])
def test_a_dump_broken_mid_stream_is_one_line_and_nothing_is_written(tmp_path, name):
    """A .json.bz2 cut mid-stream (55 lines of traceback) or a JSON line broken in the
    middle of a dump: the reader's block generator still held a view of the block ring when
    the error passed, so unmapping the ring raised BufferError over the error."""
    a, b = _entity_lines()
    lines = [a.replace("Q17", f"Q{i}") for i in range(20_000)] + [b]
    if name == "bad-line.json":
        lines[10_000] = lines[10_000][:40]
    body = ("[\n" + ",\n".join(lines) + "\n]\n").encode()
    path = tmp_path / name
    path.write_bytes(bz2.compress(body)[:-len(bz2.compress(body)) // 2] if name.endswith(".bz2") else body)
    store = tmp_path / "s"
    for jobs in ("1", "2"):
        r = run_cli(["ingest", str(path), "countries", "--jobs", jobs], store)
        assert r.exit_code == 1, r.output
        assert r.stderr.strip().splitlines()[-1].startswith(f"error: {path}"), r.stderr
        assert "Traceback" not in r.output
    s = Store(store)
    assert s.triple_count(vocab.graph_iri("countries")) == 0
    s.close()
