"""What a new user trips over: typos, a mistyped --store, names instead of ids, CJK tables,
files written unasked, writing into a store that a server reads."""
from __future__ import annotations

import io
import logging
import os

import pytest

from kgcult import resources
from kgcult.sparql.results import _table, display_width
from kgcult.store import Store, sidefiles

from tests.conftest import running_server, run_cli
from tests.test_link import FIX


@pytest.fixture(scope="module")
def seed_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("usability") / "store"
    r = run_cli(["snapshot", "import", str(resources.seed())], path)
    assert r.exit_code == 0, r.output
    return path


def test_a_mistyped_command_gets_a_suggestion():
    r = run_cli(["biuld"])
    assert r.exit_code == 2 and "Did you mean 'build'?" in r.output


def test_closure_on_a_missing_store_is_an_error_and_creates_nothing(tmp_path):
    r = run_cli(["closure"], tmp_path / "typo")
    assert r.exit_code == 1 and "no store at" in r.stderr
    assert not (tmp_path / "typo").exists()


def test_show_by_name_by_url_and_a_property(seed_store):
    r = run_cli(["show", "sushi"], seed_store)
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("Q46383  sushi") and "sushi: Q46383" in r.stderr
    r = run_cli(["show", "寿司", "--lang", "ja"], seed_store)
    assert r.exit_code == 0 and r.stdout.startswith("Q46383  寿司")
    r = run_cli(["show", "http://www.wikidata.org/entity/Q17"], seed_store)
    assert r.exit_code == 0 and r.stdout.startswith("Q17  Japan")
    r = run_cli(["show", "P495"], seed_store)
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("P495  country of origin") and "statements in the store: " in r.stdout
    n = int(r.stdout.split("statements in the store: ")[1].split()[0])
    assert n > 0 and "-> Q17 Japan" in r.stdout
    r = run_cli(["show", "no such dish anywhere"], seed_store)
    assert r.exit_code == 1 and "no entity has this label" in r.stderr


def test_show_lists_the_entities_a_name_is_ambiguous_between(tmp_path):
    ttl = tmp_path / "two.ttl"
    ttl.write_text('@prefix wd: <http://www.wikidata.org/entity/> .\n'
                   '@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n'
                   '@prefix schema: <http://schema.org/> .\n'
                   'wd:Q1 rdfs:label "mercury"@en ; schema:description "planet"@en .\n'
                   'wd:Q2 rdfs:label "mercury"@en ; schema:description "element"@en .\n', encoding="utf-8")
    assert run_cli(["load", str(ttl)], tmp_path / "s").exit_code == 0
    r = run_cli(["show", "Mercury"], tmp_path / "s")  # matched lower-cased too
    assert r.exit_code == 1
    assert "names 2 entities: Q1 mercury (planet); Q2 mercury (element)" in r.stderr


def test_the_text_table_lines_up_wide_characters():
    out = io.StringIO()
    _table(["x", "label"], [["wd:Q17", "日本"], ["wd:Q884", "대한민국"], ["wd:Q142", "France"]], out)
    lines = out.getvalue().splitlines()
    bars = {display_width(line.split("|")[0]) for line in lines[:1] + lines[2:5]}
    assert bars == {8}, lines  # every column separator at the same terminal column
    assert display_width("대한민국") == 8 and display_width("é") == 1


def test_link_eval_writes_no_errors_file_unasked(tmp_path, monkeypatch):
    store = tmp_path / "link-store"
    assert run_cli(["load", str(FIX / "graph.ttl")], store).exit_code == 0
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"mention": "lemon", "lang": "en", "topic": "food", "gold_qid": "Q1"}\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    r = run_cli(["link", "eval", str(gold), "--no-makieval", "--no-stage-gain"], store)
    assert r.exit_code == 0, r.output
    assert not (tmp_path / "link-errors.jsonl").exists() and "--errors FILE" in r.stderr


def test_a_writer_is_told_that_a_server_reads_the_store(seed_store, caplog):
    with running_server(seed_store):
        assert [r["pid"] for r in sidefiles.live_readers(str(seed_store))] == []  # this process's own marker
        marker = next((seed_store.parent / "store.readers").glob("*.json"))
        other = marker.with_name("1.json")  # pid 1 is alive: stands for another process
        other.write_text(marker.read_text().replace(str(os.getpid()), "1"), encoding="utf-8")
        try:
            with caplog.at_level(logging.WARNING, logger="kgcult"):
                Store(seed_store).close()  # opened for writing, nothing written: nothing to tell
                assert not any("will not see" in m for m in caplog.messages)
                s = Store(seed_store)
                with s.writing("update", "a test write"):  # a write: the writer, and only a writer, is told
                    pass
                s.close()
        finally:
            other.unlink()
    assert any("kgcult serve at http://127.0.0.1:" in m and "will not see" in m for m in caplog.messages)
    assert not (seed_store.parent / "store.readers").exists()  # the server removed its marker


def test_long_work_off_a_terminal_logs_progress_lines(monkeypatch, caplog):
    import time as _time
    from kgcult import log as kglog
    monkeypatch.setattr(kglog, "LOG_EVERY", 0.05)
    with caplog.at_level(logging.INFO, logger="kgcult"):
        with kglog.progress(total=200, unit="B", unit_scale=True, desc="load", file=io.StringIO()) as bar:
            assert isinstance(bar, kglog.LogProgress)
            bar.update(200)  # everything read at once, as a bulk load reads its input ...
            _time.sleep(0.3)  # ... then works on with nothing to count
    lines = [m for m in caplog.messages if m.startswith("load:")]
    assert any("100% (200 B of 200 B), all read, still working" in m for m in lines), lines
    assert lines[-1].startswith("load: done after")
