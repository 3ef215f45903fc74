"""`kgcult sparql` output formats and errors; `show`; `stats`; value binding."""
from __future__ import annotations

import csv
import io
import json

import pytest

from kgcult.errors import KgcultError
from kgcult.sparql.query_text import bind_values

from tests.conftest import FIXTURES, run_cli

MINI = FIXTURES / "foundation" / "mini.ttl"


@pytest.fixture
def spath(tmp_path):
    s = tmp_path / "s"
    assert run_cli(["load", str(MINI)], s).exit_code == 0
    assert run_cli(["closure"], s).exit_code == 0
    return s


Q = 'SELECT ?x ?l WHERE { ?x kgc:typedAs wd:Q746549 ; rdfs:label ?l } ORDER BY ?x ?l'


def test_select_json_is_w3c_results(spath):
    res = run_cli(["sparql", Q, "--format", "json"], spath)
    doc = json.loads(res.stdout)
    assert doc["head"]["vars"] == ["x", "l"]
    b = doc["results"]["bindings"]
    assert {"type": "uri", "value": "http://www.wikidata.org/entity/Q9000030"} in [r["x"] for r in b]
    assert {"type": "literal", "value": "борщ", "xml:lang": "ru"} in [r["l"] for r in b]


def test_select_table_csv_tsv_jsonl(spath):
    table = run_cli(["sparql", Q], spath).stdout
    assert "wd:Q9000030" in table and "борщ@ru" in table and "(3 rows)" in table
    rows = list(csv.reader(io.StringIO(run_cli(["sparql", Q, "--format", "csv"], spath).stdout)))
    assert rows[0] == ["x", "l"] and len(rows) == 4
    tsv = run_cli(["sparql", Q, "--format", "tsv"], spath).stdout.splitlines()
    assert tsv[0] == "?x\t?l" and '"борщ"@ru' in "\n".join(tsv)
    lines = [json.loads(l) for l in run_cli(["sparql", Q, "--format", "jsonl"], spath).stdout.splitlines()]
    assert {"x": "http://www.wikidata.org/entity/Q9000030", "l": "borscht"} in lines


def test_ask_construct_and_graph_restriction(spath):
    assert run_cli(["sparql", "ASK { wd:Q9000030 kgc:typedAs wd:Q2095 }"], spath).stdout.strip() == "true"
    doc = json.loads(run_cli(["sparql", "ASK { wd:Q1 ?p ?o }", "--format", "json"], spath).stdout)
    assert doc == {"head": {}, "boolean": False}
    nt = run_cli(["sparql", "CONSTRUCT { ?x ?p ?o } WHERE { ?x ?p ?o FILTER(?x = wd:Q212) }"], spath).stdout
    assert '<http://www.wikidata.org/entity/Q212> <http://www.w3.org/2000/01/rdf-schema#label> "Ukraine"@en .' in nt
    only = run_cli(["sparql", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "--graph", "mini", "--format", "jsonl"], spath)
    union = run_cli(["sparql", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "--format", "jsonl"], spath)
    assert json.loads(only.stdout)["n"] < json.loads(union.stdout)["n"]


def test_query_from_file_and_stdin(spath, tmp_path):
    f = tmp_path / "q.rq"
    f.write_text("SELECT ?l WHERE { wd:Q212 rdfs:label ?l FILTER(LANG(?l) = 'ru') }")
    assert "Украина" in run_cli(["sparql", "-f", str(f)], spath).stdout
    assert "Украина" in run_cli(["sparql", "-f", "-"], spath, input=f.read_text()).stdout


def test_syntax_error_line_and_column(spath):
    res = run_cli(["sparql", "SELECT ?x\nWHERE { ?x ?p }"], spath)
    assert res.exit_code == 1
    assert "line 2, column" in res.stderr
    res = run_cli(["sparql"], spath)
    assert res.exit_code == 1 and "no query" in res.stderr


@pytest.mark.parametrize("evil", ['x" } ; DROP ALL ; #', "a\\\"b\nc }", "SELECT * WHERE { ?s ?p ?o }"])
def test_bound_values_cannot_change_the_query(store, evil):
    store.load([MINI])
    rows = store.select("SELECT ?x WHERE { ?x rdfs:label ?l }", bindings={"l": evil})
    assert rows == []
    q = bind_values("SELECT ?x WHERE { ?x rdfs:label ?l }", {"l": evil})
    assert q.count("VALUES") == 1
    assert len(store.ox) > 0


def test_bind_values_finds_where_group():
    q = bind_values("# a { comment\nPREFIX ex: <http://e/>\nCONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }", {"s": "x"})
    assert q.index("VALUES") > q.index("WHERE")
    q = bind_values('SELECT (CONCAT("{", ?l) AS ?z) { ?x rdfs:label ?l }', {"x": "y"})
    assert q.index("VALUES") > q.index("?z)")
    with pytest.raises(KgcultError):
        bind_values("SELECT ?x WHERE { ?x ?p ?o }", {"bad name": "x"})


def test_show_card(spath):
    res = run_cli(["show", "Q9000030", "--lang", "ru"], spath)
    assert res.exit_code == 0, res.stderr
    out = res.stdout
    assert out.startswith("Q9000030  борщ")
    assert "P495 (country of origin): Q212 Украина" in out
    assert "typedAs:" in out and "Q746549 dish" in out
    card = json.loads(run_cli(["show", "Q9000030", "--format", "json"], spath).stdout)
    assert card["labels"] == {"en": "borscht", "ru": "борщ"}
    assert card["aliases"] == {"en": ["borshch"]}
    assert [a["qid"] for a in card["ancestors"]["typedAs"]] == ["Q2095", "Q41415", "Q746549"]
    assert run_cli(["show", "Q1"], spath).exit_code == 1
    bad = run_cli(["show", "Q1}"], spath)
    assert bad.exit_code == 1 and "not a Wikidata id" in bad.stderr


def test_stats(spath):
    s = json.loads(run_cli(["stats", "--format", "json"], spath).stdout)
    assert s["entities_per_root"]["Q746549 dish"] == 2  # soup (subclass) and the soup dish
    assert s["entities_per_root"]["Q6256 country"] == 1
    assert s["labels_per_language"]["en"] >= 15 and s["labels_per_language"]["ru"] == 2
    assert s["graphs"]["https://w3id.org/kgcult/graph/mini"] == s["triples"]
    # the closure's size per spec, counted by its derived property (no closure graph holds it)
    assert s["closure"]["closure-located"] == 3 and s["closure"]["closure-partof"] == 3
    assert s["closure"]["closure-subclass"] > 9  # pairs and the 3 cycle marks
    assert not any("/closure/" in g for g in s["graphs"])
    text = run_cli(["stats"], spath).stdout
    assert "entities per root class" in text and "closure triples per spec" in text


def test_every_command_has_help():
    from kgcult.cli.main import main

    def walk(cmd, path):
        res = run_cli(path + ["--help"])
        assert res.exit_code == 0 and "Usage:" in res.stdout, path
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, path + [name])

    walk(main, [])


@pytest.mark.parametrize("data,needle", [
    (b"\x7fELF\x02\x01\x01\x00\x00\x00", "a binary file, not text (NUL byte at offset 7)"),
    (b'SELECT ?x WHERE {\n ?x ?p "caf\xe9" }', ":2: not UTF-8 text (byte 0xe9"),
])
def test_query_file_that_is_not_text_is_a_clear_error(spath, tmp_path, data, needle):
    (tmp_path / "q.rq").write_bytes(data)
    r = run_cli(["sparql", "-f", str(tmp_path / "q.rq")], spath)
    assert r.exit_code == 1 and needle in r.stderr and "Traceback" not in r.stderr


def test_query_file_with_bom_runs(spath, tmp_path):
    (tmp_path / "q.rq").write_bytes(b"\xef\xbb\xbfASK { ?s ?p ?o }")
    r = run_cli(["sparql", "-f", str(tmp_path / "q.rq"), "--format", "json"], spath)
    assert r.exit_code == 0 and json.loads(r.stdout)["boolean"] is True
