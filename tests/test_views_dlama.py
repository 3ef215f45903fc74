"""The dlama view's DLAMA-v1 rules on a hand-written graph (tests/fixtures/views/dlama-v1.ttl):
its predicates and their filters, the v1 pairs, article-based ranking, the sovereign-state
filter and the P19/P20 territory augmentation, each as DLAMA's code does it."""
from __future__ import annotations

from pathlib import Path

import pytest

from kgcult import views
from kgcult.errors import KgcultError
from kgcult.views.registry import get_view

FIX = Path(__file__).resolve().parent / "fixtures" / "views" / "dlama-v1.ttl"
V1 = ["P17", "P19", "P20", "P27", "P30", "P36", "P37", "P47", "P103", "P106", "P136", "P190",
      "P264", "P364", "P449", "P495", "P530", "P1303", "P1376", "P1412"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from kgcult.store import Store

    s = Store(tmp_path_factory.mktemp("dlama") / "store")
    s.load([FIX], graph="fixture")
    yield s
    s.close()


def build(store, **params):
    r = views.build(store, "dlama", params, snapshot_hash="-")
    rows = {(x["pair"], x["predicate"], x["culture"], x["sub_uri"]): x for x in r.outputs["dlama.jsonl"]}
    return r, rows


def test_the_twenty_v1_predicates_are_configured_as_data():
    v = get_view("dlama")
    groups = views.dlama.predicate_groups(v.config)
    assert sorted(p for p, g in groups.items() if g == "v1") == sorted(V1)
    assert groups["P407"] == "dlama-code"                      # in DLAMA's code, not in v1's tables
    assert {p for p, g in groups.items() if g == "kgcult"} == {"P131", "P527", "P2012"}
    pairs = v.config["pairs"]
    assert pairs["arab-west"] == {"cultures": ["arab", "west"], "languages": ["en", "ar"]}
    assert pairs["asia-west"]["languages"] == ["en", "ko"]
    assert pairs["south-america-west"]["languages"] == ["en", "es"]


def test_pairs_are_built_separately_with_their_own_languages_and_candidates(store):
    r, rows = build(store, predicates="P30")
    assert {k[0] for k in rows} == {"arab-west", "asia-west", "south-america-west"} - {"south-america-west"}
    cands = {(c["pair"], c["predicate"]): c for c in r.outputs["candidates.jsonl"]}
    # Each pair's candidate set holds only its two cultures' objects: no Asia in arab-west.
    assert cands[("arab-west", "P30")]["obj_uri"] == ["Q15", "Q46", "Q49"]
    assert cands[("asia-west", "P30")]["obj_uri"] == ["Q46", "Q48", "Q49"]
    assert set(cands[("arab-west", "P30")]["obj_label"]) == {"en", "ar"}
    assert set(cands[("asia-west", "P30")]["obj_label"]) == {"en", "ko"}
    assert rows[("asia-west", "P30", "asia", "Q17")]["sub_label"] == {"en": "Japan", "ko": "일본"}
    assert "asia-west/dlama/ko/P30_general_ASIA.jsonl" in r.outputs
    # Custom cultures keep working, as one set named 'custom'.
    _, custom = build(store, predicates="P30", cultures="arab,asia", languages="en")
    assert {k[:3] for k in custom} == {("custom", "P30", "arab"), ("custom", "P30", "asia")}


def test_sovereign_state_filter_on_country_subjects_and_p1376_objects(store):
    _, rows = build(store, predicates="P30,P36,P1376", pairs="arab-west")
    west30 = {k[3] for k in rows if k[1] == "P30" and k[2] == "west"}
    assert west30 == {"Q30", "Q142", "Q145"}                 # the Netherlands is not a sovereign state
    assert ("arab-west", "P36", "west", "Q55") not in rows
    # Cairo is the capital of Egypt and of a historical country: only Egypt stays.
    assert rows[("arab-west", "P1376", "arab", "Q85")]["obj_uri"] == ["Q79"]


def test_person_predicates_by_citizenship_and_step3_filters(store):
    _, rows = build(store, pairs="arab-west", predicates="P27,P106,P1303", require_article="false")
    # P27 objects are sovereign, non-historical countries.
    assert rows[("arab-west", "P27", "arab", "Q9700001")]["obj_uri"] == ["Q79"]
    # P106 subjects are the culture's citizens.
    assert {k[3] for k in rows if k[1] == "P106" and k[2] == "arab"} == {"Q9700001", "Q9700002"}
    assert {k[3] for k in rows if k[1] == "P106" and k[2] == "west"} == {"Q9700003"}
    # P1303: the instrument "voice" is removed.
    assert rows[("arab-west", "P1303", "arab", "Q9700001")]["obj_uri"] == ["Q9700030"]


def test_birth_place_cities_and_territory_augmentation(store):
    _, rows = build(store, pairs="arab-west", predicates="P19,P17", require_article="false")
    # Omar: born in Memphis (ancient city: selects him, then dropped by step 3) and a city
    # that is a sovereign state (not a step-1 city, kept by step 3).
    assert rows[("arab-west", "P19", "arab", "Q9700002")]["raw_obj_uri"] == ["Q9700020"]
    # Amira: Giza and every P131 ancestor, the country Egypt included (DLAMA keeps it).
    assert rows[("arab-west", "P19", "arab", "Q9700001")]["obj_uri"] == ["Q79", "Q9700010"]
    # Jean: selected through Springfield (P17 USA); Scotland (a country within the UK) does
    # not select, but step 3 keeps it; the county and the USA are Springfield's ancestors.
    jean = rows[("arab-west", "P19", "west", "Q9700003")]
    assert jean["raw_obj_uri"] == ["Q22", "Q9700012"]
    assert jean["obj_uri"] == ["Q22", "Q30", "Q9700012", "Q9700013"]
    assert jean["country"] == ["Q30"]
    # Only P19/P20 are augmented with territories: P17 of Springfield stays as it is.
    assert rows[("arab-west", "P17", "west", "Q9700012")]["obj_uri"] == ["Q30"]
    # P20: Edinburgh lies in Scotland, which is no culture country one hop up: nobody selected.
    _, p20 = build(store, pairs="arab-west", predicates="P20", require_article="false")
    assert p20 == {}


def test_sister_cities_big_city_selection_and_all_objects(store):
    _, rows = build(store, pairs="arab-west", predicates="P190", require_article="false")
    assert {k[3] for k in rows} == {"Q85"}                   # Giza is not a big city
    assert rows[("arab-west", "P190", "arab", "Q85")]["obj_uri"] == ["Q90", "Q9700021"]


def test_subjects_need_an_article_on_their_countrys_wikipedias(store):
    _, rows = build(store, pairs="arab-west,asia-west", predicates="P27")
    # Omar's only article is on ja.wikipedia (not an Arab site): dropped; Hana's (ja) counts for Japan.
    assert {k[3] for k in rows if k[2] == "arab"} == {"Q9700001"}
    assert ("asia-west", "P27", "asia", "Q9700004") in rows
    _, all_rows = build(store, pairs="arab-west", predicates="P27", require_article="false")
    assert {k[3] for k in all_rows if k[2] == "arab"} == {"Q9700001", "Q9700002"}
    # Without page lengths: ranked by sitelinks (Omar 90 before Amira 10).
    ranked = sorted((x["rank"], k[3]) for k, x in all_rows.items() if k[2] == "arab")
    assert [s for _, s in ranked] == ["Q9700002", "Q9700001"]


def test_page_lengths_rank_before_sitelinks(tmp_path):
    from kgcult.store import Store

    extra = tmp_path / "lengths.ttl"
    extra.write_text(
        "@prefix kgc: <https://w3id.org/kgcult/ns#> .\n"
        "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
        "@prefix schema: <http://schema.org/> .\n"
        "@prefix wd: <http://www.wikidata.org/entity/> .\n"
        '<https://ar.wikipedia.org/wiki/Amira> kgc:pageLength "9000"^^xsd:integer .\n'
        '<https://fr.wikipedia.org/wiki/Omar> schema:about wd:Q9700002 ; schema:isPartOf <https://fr.wikipedia.org/> ;'
        ' kgc:pageLength "100"^^xsd:integer .\n', encoding="utf-8")
    s = Store(tmp_path / "s")
    s.load([FIX, extra], graph="fixture")
    _, rows = build(s, pairs="arab-west", predicates="P27")
    arab = sorted((x["rank"], k[3], x["size"]) for k, x in rows.items() if k[2] == "arab")
    assert arab == [(1, "Q9700001", 9000), (2, "Q9700002", 100)]
    s.close()


def test_entropy_is_per_pair_and_over_qids(store):
    r, _ = build(store, predicates="P30", pairs="arab-west")
    ent = {(e["pair"], e["culture"]): e for e in r.outputs["entropy.jsonl"]}
    # West: USA -> North America, France and the UK -> Europe: picks Q46, Q49, Q46.
    w = ent[("arab-west", "west")]
    assert (w["triples"], w["most_common"], w["group"]) == (3, "Q46", "v1")
    assert abs(w["entropy"] - 0.918296) < 1e-6


def test_unknown_pair_culture_and_predicate(store):
    with pytest.raises(KgcultError, match="unknown culture 'mars'"):
        views.build(store, "dlama", {"cultures": "mars"})
    with pytest.raises(KgcultError, match=r"dlama.json:\d+: view dlama: predicate 'P999'"):
        views.build(store, "dlama", {"predicates": "P999"})
    with pytest.raises(KgcultError, match="pairs"):
        views.build(store, "dlama", {"pairs": "arab-asia"})


def test_require_article_auto_follows_what_the_store_holds(tmp_path):
    """auto (the default) requires an article only where the store holds articles at all:
    the fixture has some (so auto = true); the same graph without any schema:about triple
    (as a mirror or the seed gives) falls back to keeping every subject (auto = false)."""
    from kgcult.store import Store

    with Store(tmp_path / "with") as s:
        s.load([FIX], graph="fixture")
        _, auto = build(s, pairs="arab-west", predicates="P27")
        _, true = build(s, pairs="arab-west", predicates="P27", require_article="true")
        assert set(auto) == set(true)
    with Store(tmp_path / "without") as s:
        s.load([FIX], graph="fixture")
        # from the graph and from the default graph (the set queries read)
        s.ox.update("DELETE WHERE { GRAPH ?g { ?a <http://schema.org/about> ?s } } ;"
                    "DELETE WHERE { ?a <http://schema.org/about> ?s }")
        _, auto = build(s, pairs="arab-west", predicates="P27")
        _, false = build(s, pairs="arab-west", predicates="P27", require_article="false")
        _, true = build(s, pairs="arab-west", predicates="P27", require_article="true")
        assert set(auto) == set(false) and auto and not true


def test_require_article_rejects_other_values(store):
    with pytest.raises(views.ViewError, match="require_article: 'maybe' is not one of auto, true, false"):
        build(store, pairs="arab-west", predicates="P27", require_article="maybe")
