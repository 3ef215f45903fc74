"""The notebook API (kgcult.open -> KG): one open store per directory in a process, clear
errors on a closed KG, typed SPARQL values, explicit bindings, pandas and Hugging Face
bridges, and the commands that were CLI-only (mirror, ingest, verify)."""
from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest

import kgcult
from kgcult import resources
from kgcult.errors import KgcultError
from kgcult.sparql.values import IRI, LangString

from tests.conftest import run_cli


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    path = tmp_path_factory.mktemp("nb") / "store"
    with kgcult.open(path) as kg:
        kg.import_snapshot(resources.seed())
    return path


def test_a_second_open_of_one_store_shares_it_and_closes_with_the_last(seeded):
    first = kgcult.open(seeded)
    second = kgcult.open(seeded)  # RocksDB: a second open of the directory would fail to lock
    assert second.store is first.store
    first.close()
    assert second.sparql("ASK { wd:Q17 ?p ?o }") is True
    second.close()
    with pytest.raises(KgcultError, match="closed"):
        second.sparql("ASK { ?s ?p ?o }")
    with pytest.raises(KgcultError, match="closed"):
        first.stats()
    first.close()  # harmless
    with kgcult.open(seeded) as again:  # the directory was released: a fresh open works
        assert again.sparql("ASK { wd:Q17 ?p ?o }") is True
    assert again.closed


def test_read_only_then_writable_open_says_what_to_do(seeded):
    with kgcult.open(seeded, read_only=True):
        with pytest.raises(KgcultError, match="read-only in this process"):
            kgcult.open(seeded)


def test_sparql_values_are_typed(seeded):
    with kgcult.open(seeded, read_only=True) as kg:
        rows = kg.sparql(
            'SELECT ?x ?l ?n ?d ?f ?b ?day ?when ?s ?none WHERE { '
            '  ?x rdfs:label ?l FILTER(?x = wd:Q17 && LANG(?l) = "ja") '
            '  BIND(42 AS ?n) BIND(1.5 AS ?d) BIND("2.5e0"^^xsd:double AS ?f) BIND(true AS ?b) '
            '  BIND("1868-10-23"^^xsd:date AS ?day) BIND("2024-05-01T10:00:00Z"^^xsd:dateTime AS ?when) '
            '  BIND("plain" AS ?s) OPTIONAL { ?x wdt:P999999 ?none } }')
    (row,) = rows
    assert rows.variables == ["x", "l", "n", "d", "f", "b", "day", "when", "s", "none"]
    assert isinstance(row["x"], IRI) and row["x"] == "http://www.wikidata.org/entity/Q17" and row["x"].qid == "Q17"
    assert isinstance(row["l"], LangString) and row["l"] == "日本" and row["l"].lang == "ja"
    assert row["n"] == 42 and type(row["n"]) is int
    assert row["d"] == Decimal("1.5") and row["f"] == 2.5 and row["b"] is True
    assert row["day"] == dt.date(1868, 10, 23)
    assert row["when"] == dt.datetime(2024, 5, 1, 10, tzinfo=dt.timezone.utc)
    assert row["s"] == "plain" and type(row["s"]) is str
    assert "none" not in row  # unbound stays out of the dict


def test_to_pandas_has_one_column_per_variable(seeded):
    pytest.importorskip("pandas")
    with kgcult.open(seeded, read_only=True) as kg:
        df = kg.sparql('SELECT ?l ?missing WHERE { wd:Q17 rdfs:label ?l FILTER(LANG(?l) IN ("en", "ja")) '
                       'OPTIONAL { wd:Q17 wdt:P999999 ?missing } } ORDER BY ?l').to_pandas()
    assert list(df.columns) == ["l", "missing"]
    assert list(df["l"]) == ["Japan", "日本"] and df["missing"].isna().all()


def test_bindings_are_explicit_and_unknown_keywords_are_refused(seeded):
    with kgcult.open(seeded, read_only=True) as kg:
        got = kg.sparql('SELECT ?l WHERE { ?x rdfs:label ?l FILTER(LANG(?l) = "en") }',
                        bindings={"x": kgcult.wd("Q46383")})
        assert got == [{"l": "sushi"}]
        with pytest.raises(TypeError):
            kg.sparql("SELECT * WHERE { ?s ?p ?o } LIMIT 1", format="csv")


def test_build_to_hf_and_the_dataset_card_load_with_datasets(seeded, tmp_path):
    datasets = pytest.importorskip("datasets")
    with kgcult.open(seeded) as kg:
        fm = kg.build("fmlama", languages=["en"], countries=["Q17"])
        dd = fm.to_hf()
        assert dd["default"].num_rows == len(fm.rows) == 11
        assert sorted(dd["default"]["sub_label"]) == sorted(r["sub_label"] for r in fm.rows)
        df = fm.to_pandas()
        assert len(df) == 11 and "sub_label" in df.columns
    r = run_cli(["build", "fmlama", "--param", "languages=en", "--param", "countries=Q17",
                 "--format", "hf", "--out", str(tmp_path)], store_path=seeded)
    assert r.exit_code == 0, r.output
    out = tmp_path / "fmlama"
    card = (out / "README.md").read_text(encoding="utf-8")
    manifest = json.loads((out / "MANIFEST.json").read_text(encoding="utf-8"))
    assert manifest["snapshot_content_sha256"] in card and "license: cc0-1.0" in card
    # the card's configs: default = the main output (own cache: another card may share the name)
    loaded = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "hf-cache"))
    assert loaded["train"].num_rows == 11
    assert sorted(loaded["train"]["sub_label"]) == sorted(dd["default"]["sub_label"])


def test_verify_ingest_on_kg(seeded, tmp_path):
    with kgcult.open(tmp_path / "s") as kg:
        manifest = kg.verify_snapshot(resources.seed())
        assert manifest["content_sha256"]
        dump = tmp_path / "dump.nt"
        dump.write_text("<http://www.wikidata.org/entity/Q17> <http://www.wikidata.org/prop/direct/P31> "
                        "<http://www.wikidata.org/entity/Q6256> .\n"
                        '<http://www.wikidata.org/entity/Q17> <http://www.w3.org/2000/01/rdf-schema#label> '
                        '"Japan"@en .\n', encoding="utf-8")
        reports = kg.ingest(dump, ["countries"], jobs=1)
        assert [r.name for r in reports] == ["countries"]
        assert kg.sparql("ASK { wd:Q17 wdt:P31 wd:Q6256 }") is True
        with pytest.raises(KgcultError, match="config"):
            kg.mirror(["countries"], config=object(), endpoint="http://127.0.0.1:9/x")
