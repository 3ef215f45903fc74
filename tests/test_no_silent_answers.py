"""A researcher's first hour (issue 41): a misspelt graph or a language the store has no
labels in is refused, never answered with 0 rows or English unasked; `link -i` checks its
input before building anything; long steps (the content hash, the link index's steps, the
end of `closure`) log progress lines off a terminal."""
from __future__ import annotations

import json

import pytest

from kgcult import log as kglog
from kgcult import resources
from kgcult.link.index.reader import index_dir_of
from kgcult.store import Store, snapshot

from tests.conftest import run_cli


@pytest.fixture(scope="module")
def seed_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("silent") / "store"
    r = run_cli(["snapshot", "import", str(resources.seed())], path)
    assert r.exit_code == 0, r.output
    return path


def test_a_misspelt_graph_is_an_error_listing_the_graphs(seed_store):
    r = run_cli(["sparql", "--graph", "countreis", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"], seed_store)
    assert r.exit_code == 1
    assert "no graph https://w3id.org/kgcult/graph/countreis" in r.stderr
    assert "did you mean countries?" in r.stderr and "its graphs: " in r.stderr
    assert "Traceback" not in r.output
    ok = run_cli(["sparql", "--graph", "countries", "--format", "csv",
                  "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"], seed_store)
    assert ok.exit_code == 0, ok.output
    assert int(ok.stdout.splitlines()[1]) > 0


def test_show_refuses_a_language_the_store_has_no_labels_in(seed_store):
    r = run_cli(["show", "Q17", "--lang", "xx"], seed_store)
    assert r.exit_code == 1 and "--lang xx: no label of the store is in 'xx'" in r.stderr
    assert "the store's label languages include" in r.stderr and "en" in r.stderr
    r = run_cli(["show", "Q17", "--lang", "zh-tw"], seed_store)  # answered through its fallback chain
    assert r.exit_code == 0, r.output
    r = run_cli(["taxonomy", "keywords", "food", "--country", "Q17", "--lang", "xx"], seed_store)
    assert r.exit_code == 1 and "--lang xx: no label of the store is in 'xx'" in r.stderr


def test_link_refuses_an_unknown_lang_and_warns_about_a_row_language(seed_store, tmp_path):
    r = run_cli(["link", "sushi", "--lang", "xx", "--topic", "food", "--stages", "exact"], seed_store)
    assert r.exit_code == 1 and "--lang xx: no label of the store is in 'xx'" in r.stderr
    rows = tmp_path / "m.jsonl"
    rows.write_text(json.dumps({"mention": "sushi", "lang": "xx", "topic": "food"}) + "\n"
                    + json.dumps({"mention": "sushi", "lang": "en", "topic": "food"}) + "\n")
    r = run_cli(["link", "-i", str(rows), "--stages", "exact,english"], seed_store)
    assert r.exit_code == 0, r.output
    assert r.stderr.count("no label of the store is in 'xx'") == 1
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert out[0]["lang"] == "xx" and out[0]["lang_used"] == "en" and out[0]["qid"] == "Q46383"


def test_link_input_is_checked_before_anything_is_built(tmp_path):
    store = tmp_path / "store"
    assert run_cli(["snapshot", "import", str(resources.seed())], store).exit_code == 0
    r = run_cli(["link", "-i", str(tmp_path / "missing.jsonl")], store)
    assert r.exit_code == 1 and "missing.jsonl: no such file" in r.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"mention": "sushi"}\n{"mention": 3}\n')
    r = run_cli(["link", "-i", str(bad)], store)
    assert r.exit_code == 1 and f"{bad}:2:" in r.stderr
    r = run_cli(["link", "-i", str(bad.with_name("ok.jsonl")), "-o", str(tmp_path / "no" / "out.jsonl")], store)
    assert r.exit_code == 1
    good = tmp_path / "good.jsonl"
    good.write_text('{"mention": "sushi"}\n')
    r = run_cli(["link", "-i", str(good), "-o", str(tmp_path / "no" / "out.jsonl")], store)
    assert r.exit_code == 1 and "no such directory" in r.stderr
    assert not index_dir_of(store).exists()  # nothing was built for any of them


class _Recorder:
    """kgcult.log.progress's bar, recording what it is told (LogProgress then logs it every
    10 s off a terminal: tests/test_cli_usability.py)."""

    def __init__(self, log, **kw):
        self.log, self.desc, self.n = log, kw.get("desc"), 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.log.append((self.desc, "closed", self.n))

    def update(self, n=1):
        self.n += n

    def set_postfix_str(self, s="", refresh=True):
        self.log.append((self.desc, s, self.n))


def test_the_content_hash_the_link_index_and_closure_report_progress(tmp_path, monkeypatch):
    seen: list = []
    monkeypatch.setattr(kglog, "progress", lambda iterable=None, **kw: _Recorder(seen, **kw))
    store = tmp_path / "store"
    assert run_cli(["snapshot", "import", str(resources.seed())], store).exit_code == 0
    s = Store(str(store), read_only=True)
    try:
        snapshot.store_content_hash(s)
    finally:
        s.close()
    hashed = [x for x in seen if x[0] == "content hash"]
    assert hashed[0][1].startswith("graph 1 of ") and hashed[-1][1] == "closed" and hashed[-1][2] > 1000, hashed
    r = run_cli(["closure"], store)
    assert r.exit_code == 0, r.output
    closure = [x[1] for x in seen if x[0] == "closure"]
    assert closure[0].startswith("writing ") and "compacting the store" in closure, closure
    r = run_cli(["link", "index", "--rebuild"], store)
    assert r.exit_code == 0, r.output
    steps = [x[1] for x in seen if x[0] == "link index"]
    assert steps[:2] == ["names", "sitelinks"] and "topics" in steps and steps[-1] == "closed", steps
    pools = [x[1] for x in seen if x[0] == "link index: fuzzy and token pools"]  # built after the index
    assert "en" in pools and "deletion variants" in pools and pools[-2:] == ["sorting", "closed"], pools
