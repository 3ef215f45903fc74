"""The CultureSynth taxonomy (ontology/taxonomy.ttl) and its keywords from the graph."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pyoxigraph as ox
import pytest

from kgcult.store import hierarchy
from kgcult import resources
from kgcult.synth import taxonomy
from kgcult.errors import KgcultError

from tests.conftest import SHARED, run_cli

FIXTURE = Path(__file__).parent / "fixtures" / "synth" / "mini.ttl"
TTL = resources.ontology("taxonomy.ttl")
SKOS = "http://www.w3.org/2004/02/skos/core#"
CS = taxonomy.SCHEME


@pytest.fixture
def mini(store):
    store.load([FIXTURE])
    hierarchy.ensure_closure(store)
    return store


@pytest.fixture
def mini_path(tmp_path):
    """A closed store holding the fixture (for CLI runs, which open it themselves)."""
    from kgcult.store import Store

    path = tmp_path / "mini"
    with Store(path) as s:
        s.load([FIXTURE])
        hierarchy.ensure_closure(s)
    return path


def _count(g: ox.Store, query: str) -> int:
    return int(next(iter(g.query(query)))["n"].value)


def test_taxonomy_parses_with_12_primary_and_130_secondary_concepts():
    g = ox.Store()
    g.load(path=str(TTL), format=ox.RdfFormat.TURTLE)
    p = f"PREFIX skos: <{SKOS}> "
    assert _count(g, p + "SELECT (COUNT(DISTINCT ?c) AS ?n) WHERE { ?s skos:hasTopConcept ?c }") == 12
    assert _count(g, p + "SELECT (COUNT(DISTINCT ?c) AS ?n) WHERE { ?c a skos:Concept FILTER NOT EXISTS { ?c skos:broader ?b } }") == 12
    assert _count(g, p + "SELECT (COUNT(DISTINCT ?c) AS ?n) WHERE { ?c a skos:Concept ; skos:broader ?b . ?b skos:topConceptOf ?s }") == 130
    assert _count(g, p + "SELECT (COUNT(DISTINCT ?c) AS ?n) WHERE { ?c a skos:Concept }") == 142
    # every concept: one English prefLabel, one notation, in the scheme
    assert _count(g, p + "SELECT (COUNT(*) AS ?n) WHERE { ?c a skos:Concept ; skos:prefLabel ?l FILTER(LANG(?l)='en') }") == 142
    assert _count(g, p + "SELECT (COUNT(DISTINCT ?x) AS ?n) WHERE { ?c a skos:Concept ; skos:notation ?x }") == 142
    # broader/narrower agree
    assert _count(g, p + "SELECT (COUNT(*) AS ?n) WHERE { ?c skos:broader ?b FILTER NOT EXISTS { ?b skos:narrower ?c } }") == 0


def test_taxonomy_round_trips_rdflib_isomorphic(tmp_path):
    rdflib = pytest.importorskip("rdflib")
    from rdflib.compare import isomorphic

    g1 = rdflib.Graph().parse(TTL, format="turtle")
    out = tmp_path / "again.ttl"
    g1.serialize(out, format="turtle")
    g2 = rdflib.Graph().parse(out, format="turtle")
    assert len(g1) == len(g2) > 2000
    assert isomorphic(g1, g2)
    # and through pyoxigraph's serializer (N-Triples, canonical per triple)
    triples = {str(q.triple) for q in ox.parse(path=str(TTL), format=ox.RdfFormat.TURTLE)}
    nt = ox.serialize((q.triple for q in ox.parse(path=str(TTL), format=ox.RdfFormat.TURTLE)),
                      format=ox.RdfFormat.N_TRIPLES)
    again = {str(q.triple) for q in ox.parse(nt, format=ox.RdfFormat.N_TRIPLES)}
    assert again == triples


def test_labels_in_the_culturesynth_languages():
    tax = taxonomy.load()
    for t in tax:
        for lang in ("en",) + taxonomy.CULTURESYNTH_LANGS:
            assert t.labels.get(lang), f"{t.notation} lacks a {lang} label"
    assert tax.resolve("SS.05").labels["ja"] == "食品・飲料・料理"
    assert tax.resolve("RT").labels["ar"] == "الدين وعلم اللاهوت"


def test_english_labels_are_the_papers_table():
    tsv = SHARED / "culturesynth-topics.tsv"
    if not tsv.exists():
        pytest.skip(f"{tsv} not found: ../shared is not beside this checkout")
    rows = list(csv.reader(open(tsv, encoding="utf-8"), delimiter="\t"))[1:]
    tax = taxonomy.load()
    got = [(t.notation.split(".")[0], tax.topics[t.parent].label("en"), t.label("en")) for t in tax.secondaries()]
    assert got == [tuple(r) for r in rows]


def test_anchors_are_wikidata_iris_and_close_matches():
    tax = taxonomy.load()
    anchored = tax.anchored()
    assert len(anchored) >= 20
    for t in anchored:
        anchors = t.anchor_classes + t.anchor_entities
        for a in anchors:
            assert a.startswith("http://www.wikidata.org/entity/Q"), a
        assert set(anchors) <= set(t.close_matches)
    food = tax.resolve("food")
    assert "http://www.wikidata.org/entity/Q746549" in food.anchor_classes
    assert tax.resolve("Japanese").anchor_entities == ["http://www.wikidata.org/entity/Q5287"]
    assert tax.country_properties == ["http://www.wikidata.org/prop/direct/P17",
                                      "http://www.wikidata.org/prop/direct/P495"]


def test_resolve_names():
    tax = taxonomy.load()
    assert tax.resolve("SS.05").notation == "SS.05"
    assert tax.resolve("ss-05").notation == "SS.05"
    assert tax.resolve("Food").notation == "SS.05"
    assert tax.resolve("食品・飲料・料理").notation == "SS.05"
    assert tax.resolve("Economie. Science economique").notation == "SS.10"  # accents ignored
    assert tax.resolve("LAW").primary
    with pytest.raises(KgcultError, match="ambiguous"):
        tax.resolve("English")
    with pytest.raises(KgcultError, match="unknown topic"):
        tax.resolve("no such topic")


def test_tree_text():
    tax = taxonomy.load()
    text = taxonomy.tree(tax)
    lines = text.splitlines()
    assert len(lines) == 142
    assert lines[0] == "SS  Social Sciences"
    assert "  SS.05   Food, Beverage, and Culinary Arts  [Q1778821 Q2095 Q25403900 Q40050 Q746549]" in lines
    ja = taxonomy.tree(tax, "ja", anchored_only=True).splitlines()
    assert ja[0] == "SS  社会科学" and all("[" in l for l in ja if l.startswith("  "))


def test_keywords_food_japan(mini):
    tax = taxonomy.load()
    kws = taxonomy.keywords(mini, tax, "food", "Q17", lang="ja")
    got = {k["qid"]: (k["label"], k["via"]) for k in kws}
    assert got == {
        "Q46383": ("寿司", ["cuisine", "direct"]),       # P495 Japan; P2012 Japanese cuisine (P17 Japan)
        "Q9900004": ("ラーメン", ["direct"]),               # typed through noodle soup P279 dish
        "Q9900010": ("スープカレー", ["located", "place"]),  # origin Hokkaido, located in Japan
        "Q234138": ("日本料理", ["direct"]),               # a cuisine, P17 Japan
    }
    korea = {k["qid"] for k in taxonomy.keywords(mini, tax, "SS.05", "Q884")}
    assert korea == {"Q9900001"}


def test_keywords_through_country_properties(mini):
    tax = taxonomy.load()
    lang = taxonomy.keywords(mini, tax, "LAN", "Q17")
    assert [(k["qid"], k["topics"], k["via"]) for k in lang] == [("Q5287", ["LAN.12", "LAN.16"], ["inverse:P37"])]
    assert [k["qid"] for k in taxonomy.keywords(mini, tax, "currency", "Q38")] == ["Q4916"]
    assert [k["qid"] for k in taxonomy.keywords(mini, tax, "holiday", "Q884")] == ["Q196627"]
    # a specific-language topic only lists its own language
    assert taxonomy.keywords(mini, tax, "Korean", "Q17") == []
    assert [k["qid"] for k in taxonomy.keywords(mini, tax, "Korean", "Q884")] == ["Q9176"]
    # the primary topic is the union of its secondary topics
    ss = {k["qid"] for k in taxonomy.keywords(mini, tax, "SS", "Q17")}
    assert ss == {"Q46383", "Q9900004", "Q9900010", "Q234138", "Q8146", "Q196627"}


def test_keywords_bad_country(mini):
    with pytest.raises(KgcultError, match="--country"):
        taxonomy.keywords(mini, taxonomy.load(), "food", "Japan")


def test_cli_taxonomy(tmp_path):
    r = run_cli(["taxonomy"], tmp_path / "s")
    assert r.exit_code == 0
    assert len(r.output.splitlines()) == 142
    r = run_cli(["taxonomy", "--format", "json", "--anchored", "--lang", "fr"], tmp_path / "s")
    doc = json.loads(r.output)
    assert {d["notation"] for d in doc} == {"SS", "RT", "LAN", "ART", "RSE"}
    ss5 = [c for d in doc for c in d["children"] if c["notation"] == "SS.05"][0]
    assert ss5["label"] == "Alimentation, boissons et arts culinaires"


def test_cli_keywords(mini_path):
    r = run_cli(["taxonomy", "keywords", "food", "--country", "Q17", "--format", "jsonl"], mini_path)
    assert r.exit_code == 0, r.output
    rows = [json.loads(l) for l in r.stdout.splitlines()]
    assert [x["qid"] for x in rows] == ["Q234138", "Q9900004", "Q9900010", "Q46383"]
    r = run_cli(["taxonomy", "keywords", "food", "--country", "Q17", "--lang", "ko"], mini_path)
    assert r.stdout.splitlines()[0] == "Q9900004\t라멘\tSS.05\tdirect"
    r = run_cli(["taxonomy", "keywords", "nonsense", "--country", "Q17"], mini_path)
    assert r.exit_code == 1 and "unknown topic 'nonsense'" in r.stderr


def test_keywords_typing_rule_for_country_property_values(mini):
    tax = taxonomy.load()
    # typed under the anchor entity Christianity (P279): a keyword of RT.07 ...
    assert [(k["qid"], k["anchors"], k["via"]) for k in taxonomy.keywords(mini, tax, "Christianity", "Q41")] == \
        [("Q35032", ["Q5043"], ["inverse:P3075"])]
    # ... and, being typed, not of the class-anchored "Other religions" (religion Q9174)
    assert taxonomy.keywords(mini, tax, "Other religions", "Q41") == []
    assert taxonomy.keywords(mini, tax, "Islam", "Q41") == []
    # an untyped value (languages here have no P31) is kept for a class-anchored topic
    assert [k["qid"] for k in taxonomy.keywords(mini, tax, "Other languages", "Q41")] == []
    assert [k["qid"] for k in taxonomy.keywords(mini, tax, "Other languages", "Q38")] == ["Q652"]
