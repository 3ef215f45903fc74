"""kgcult ingest: Wikidata JSON and truthy N-Triples dumps give the same graphs as mirror."""
from __future__ import annotations

import bz2
import gzip
import json
from pathlib import Path

import pytest

from kgcult.acquire.dump import ingest as ing
from kgcult.acquire.dump import truthy
from kgcult.acquire.endpoint import mirror as m
from kgcult import vocab
from kgcult.store import Store

from tests.conftest import SHARED, run_cli
from tests.test_mirror import data_quads, fast_config, graph_triples

SAMPLE = SHARED / "reference" / "opentapioca" / "sample_wikidata_items.json.bz2"
WD, WDT = vocab.WD, vocab.WDT


def item(qid, claims=(), labels=None, aliases=None, descriptions=None, sitelinks=0):
    """A JSON-dump entity. claims: (pid, value, rank) with value a QID, or a (type, value) pair."""
    by_prop: dict = {}
    for pid, value, rank in claims:
        if value is None:
            snak = {"snaktype": "somevalue", "property": pid, "datatype": "wikibase-item"}
        elif isinstance(value, str):
            snak = {"snaktype": "value", "property": pid, "datatype": "wikibase-item",
                    "datavalue": {"type": "wikibase-entityid",
                                  "value": {"entity-type": "item", "numeric-id": int(value[1:]), "id": value}}}
        else:
            dtype, dv, datatype = value
            snak = {"snaktype": "value", "property": pid, "datatype": datatype,
                    "datavalue": {"type": dtype, "value": dv}}
        by_prop.setdefault(pid, []).append({"mainsnak": snak, "type": "statement", "rank": rank,
                                            "id": f"{qid}$x{len(by_prop)}"})
    return {
        "type": "item", "id": qid,
        "labels": {k: {"language": k, "value": v} for k, v in (labels or {}).items()},
        "aliases": {k: [{"language": k, "value": x} for x in v] for k, v in (aliases or {}).items()},
        "descriptions": {k: {"language": k, "value": v} for k, v in (descriptions or {}).items()},
        "claims": by_prop,
        "sitelinks": {f"wiki{i}": {"site": f"wiki{i}", "title": qid} for i in range(sitelinks)},
    }


N = "normal"
ENTITIES = [
    item("Q2095", [("P279", "Q1", N)], {"en": "food", "ja": "食べ物", "nl": "voedsel"}),
    item("Q746549", [("P279", "Q2095", N)], {"en": "dish"}, descriptions={"en": "food prepared for eating"}),
    item("Q25403900", [("P279", "Q2095", N)], {"en": "food ingredient"}),
    item("Q1778821", [], {"en": "cuisine"}),
    item("Q6256", [], {"en": "country"}),
    item("Q10", [("P279", "Q746549", N)], {"en": "soup"}),
    item("Q100", [("P31", "Q746549", N), ("P495", "Q142", "preferred"), ("P495", "Q38", N),
                  ("P495", "Q17", "deprecated"), ("P527", "Q200", N), ("P527", None, N),
                  ("P18", ("string", "Bouillabaisse 01.jpg", "commonsMedia"), N)],
         {"en": "bouillabaisse", "fr": "bouillabaisse", "zh": "马赛鱼汤"},
         aliases={"en": ['fish "stew"\nof Marseille', "bouillabaisse soup"]},
         descriptions={"en": "Provençal fish stew", "de": "Fischsuppe"}, sitelinks=3),
    item("Q101", [("P31", "Q10", N), ("P2012", "Q300", N)], {"en": "miso soup", "ja": "味噌汁"}, sitelinks=1),
    item("Q200", [("P31", "Q25403900", N)], {"en": "fish", "ar": "سمك"}),
    item("Q300", [("P31", "Q1778821", N), ("P17", "Q17", N)], {"en": "Japanese cuisine"}),
    item("Q142", [("P31", "Q6256", N), ("P30", "Q46", N), ("P36", "Q90", N),
                  ("P1082", ("quantity", {"amount": "+68000000", "unit": "1"}, "quantity"), N),
                  ("P571", ("time", {"time": "+0843-00-00T00:00:00Z", "precision": 9}, "time"), N),
                  ("P625", ("globecoordinate", {"latitude": 47.0, "longitude": 2.0,
                                                "globe": "http://www.wikidata.org/entity/Q2"}, "globe-coordinate"), N),
                  ("P1448", ("monolingualtext", {"text": "République française", "language": "fr"}, "monolingualtext"), N)],
         {"en": "France", "fr": "France", "he": "צרפת"}, sitelinks=5),
    item("Q17", [("P31", "Q6256", N), ("P36", "Q1490", N)], {"en": "Japan", "ja": "日本"}),
    item("Q38", [("P31", "Q6256", N)], {"en": "Italy"}),
    item("Q90", [("P31", "Q515", N), ("P131", "Q400", N), ("P17", "Q142", N)], {"en": "Paris"}),
    item("Q400", [("P131", "Q142", N)], {"en": "Île-de-France"}),
    item("Q1490", [("P131", "Q17", N)], {"en": "Tokyo", "ja": "東京"}),
    item("Q46", [], {"en": "Europe"}),
    item("Q900", [("P31", "Q5", N), ("P27", "Q142", N)], {"en": "someone"}),
]


def write_dump(path: Path, entities=ENTITIES) -> Path:
    text = "[\n" + ",\n".join(json.dumps(e, ensure_ascii=False) for e in entities) + "\n]\n"
    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(path.suffix, open)
    with opener(path, "wt", encoding="utf-8") as f:
        f.write(text)
    return path


def test_json_nt_and_endpoint_give_the_same_store(tmp_path, oxigraph_server):
    dump = write_dump(tmp_path / "dump.json.gz")
    nt = tmp_path / "dump.nt"
    ing.json_to_ntriples(str(dump), str(nt))
    srv = oxigraph_server([nt])
    with Store(tmp_path / "mirrored") as a:
        m.mirror(a, config=fast_config(srv.url))
        mirrored = data_quads(a)
        graphs = [g for g in a.graph_counts() if g != vocab.META_GRAPH]
    with Store(tmp_path / "json") as b:
        ing.ingest(b, str(dump))
        from_json = data_quads(b)
    with Store(tmp_path / "nt") as c:
        ing.ingest(c, str(nt))
        from_nt = data_quads(c)
    assert mirrored == from_json == from_nt
    assert len(graphs) == 9  # every subgraph but dlama-works and dlama-objects (no works here)


def test_json_truthy_semantics_and_values(tmp_path):
    dump = write_dump(tmp_path / "dump.json.bz2")
    r = run_cli(["ingest", str(dump), "--no-progress"], tmp_path / "store")
    assert r.exit_code == 0, r.output
    with Store(tmp_path / "store") as st:
        dishes = graph_triples(st, "dishes")
        # best rank: the preferred P495 only; deprecated never; somevalue as WDQS's skolem IRI
        assert f"<{WD}Q100> <{WDT}P495> <{WD}Q142>" in dishes
        assert not any(f"<{WD}Q100> <{WDT}P495> <{WD}Q38>" == t or "Q17>" in t for t in dishes)
        p527 = sorted(t for t in dishes if t.startswith(f"<{WD}Q100> <{WDT}P527>"))
        unknown = next(s for s in ENTITIES[6]["claims"]["P527"] if s["mainsnak"]["snaktype"] == "somevalue")
        assert p527 == sorted([f"<{WD}Q100> <{WDT}P527> <{WD}Q200>",
                               f"<{WD}Q100> <{WDT}P527> {truthy.somevalue_iri(unknown['id'], 'P527')}"])
        assert "/.well-known/genid/" in p527[0] + p527[1]
        labels = graph_triples(st, "labels")
        assert f'<{WD}Q100> <{vocab.SKOS}altLabel> "fish \\"stew\\"\\nof Marseille"@en' in labels
        assert f'<{WD}Q100> <{vocab.WIKIBASE}sitelinks> "3"^^<{vocab.XSD}integer>' in labels
        assert not any('"@nl' in t for t in labels)
        assert f'<{WD}Q90> <{vocab.RDFS}label> "Paris"@en' in labels  # a capital, via territories
        terr = graph_triples(st, "territories")
        assert f"<{WD}Q400> <{WDT}P131> <{WD}Q142>" in terr
        rec = [p for p in st.provenance() if p.get("kind") == "ingest"]
        assert len(rec) == 11 and all(p["source"] == str(dump.resolve()) for p in rec)  # one per subgraph spec
        assert st.closure_stale


def test_value_types_as_wdqs_writes_them():
    e = ENTITIES[10]
    got = {str(p): str(o) for p, o in ing.truthy_claims(e, None) if p in ("P1082", "P571", "P625", "P1448")}
    assert got["P1082"] == f'"68000000"^^<{vocab.XSD}decimal>'
    assert got["P571"] == f'"0843-01-01T00:00:00Z"^^<{vocab.XSD}dateTime>'
    # WDQS writes the JSON's 47.0 as PHP does: "47" (Wikibase's RDF), not "47.0"
    assert got["P625"] == '"Point(2 47)"^^<http://www.opengis.net/ont/geosparql#wktLiteral>'
    assert got["P1448"] == '"République française"@fr'
    img = dict(ing.truthy_claims(ENTITIES[6], {"P18"}))["P18"]
    # as WDQS writes it (wikidata-query-rdf's Q42-munged.ttl: "Douglas%20Adams%20signature.svg")
    assert img.value == "http://commons.wikimedia.org/wiki/Special:FilePath/Bouillabaisse%2001.jpg"


def test_select_and_languages(tmp_path):
    dump = write_dump(tmp_path / "d.json")
    r = run_cli(["ingest", str(dump), "countries", "labels", "--lang", "ja,he", "--no-progress"], tmp_path / "s")
    assert r.exit_code == 0, r.output
    with Store(tmp_path / "s") as st:
        assert graph_triples(st, "countries") and not graph_triples(st, "dishes")
        langs = {t.rsplit("@", 1)[-1] for t in graph_triples(st, "labels") if '"@' in t}
        assert langs == {"ja", "he"}
    r = run_cli(["ingest", str(dump), "countries", "--no-progress"], tmp_path / "s")
    assert r.exit_code == 0 and "countries\tskipped" in r.stdout


def test_malformed_dump_fails_with_line_and_writes_nothing(tmp_path):
    dump = tmp_path / "bad.json"
    lines = ["[", json.dumps(ENTITIES[0]) + ",", '{"type": "item", "id": "Q5", "labels": ', "]"]
    dump.write_text("\n".join(lines) + "\n")
    r = run_cli(["ingest", str(dump), "--no-progress"], tmp_path / "s")
    assert r.exit_code == 1 and "bad.json:3:" in r.stderr
    with Store(tmp_path / "s") as st:
        assert not st.data_graphs()
    nt = tmp_path / "bad.nt"
    nt.write_text(f"<{WD}Q1> <{WDT}P31> <{WD}Q6256> .\nthis is not ntriples\n")
    r = run_cli(["ingest", str(nt), "--no-progress"], tmp_path / "s")
    assert r.exit_code == 1 and "bad.nt:2:" in r.stderr
    r = run_cli(["ingest", str(tmp_path / "x.csv"), "--no-progress"], tmp_path / "s")
    assert r.exit_code == 1 and "no such file" in r.stderr


def _sample():
    if not SAMPLE.exists():
        pytest.skip(f"{SAMPLE} not found: ../shared is not beside this checkout")
    return SAMPLE


@pytest.mark.slow
def test_opentapioca_sample_ingest(tmp_path):
    r = run_cli(["ingest", str(_sample()), "countries", "labels", "--no-progress"], tmp_path / "s")
    assert r.exit_code == 0, r.output
    with Store(tmp_path / "s") as st:
        assert f"<{WD}Q31> <{WDT}P31> <{WD}Q3624078>" in graph_triples(st, "countries")
        assert f'<{WD}Q31> <{vocab.RDFS}label> "Belgique"@fr' in graph_triples(st, "labels")


@pytest.mark.slow
def test_opentapioca_sample_matches_endpoint_mirror(tmp_path, oxigraph_server):
    nt = tmp_path / "sample.nt"
    n = ing.json_to_ntriples(str(_sample()), str(nt))
    assert n > 10000
    with Store(tmp_path / "json") as b:
        reps = {r.name: r for r in ing.ingest(b, str(SAMPLE))}
        from_json = data_quads(b)
        countries = graph_triples(b, "countries")
        labels = graph_triples(b, "labels")
    assert f"<{WD}Q31> <{WDT}P31> <{WD}Q3624078>" in countries  # Belgium, a sovereign state
    assert f'<{WD}Q31> <{vocab.RDFS}label> "Belgium"@en' in labels
    assert reps["countries"].triples > 100 and reps["labels"].triples > 500
    srv = oxigraph_server([nt])
    with Store(tmp_path / "mirrored") as a:
        m.mirror(a, config=fast_config(srv.url, batch_size=50, page_size=100, class_batch_size=20))
        assert data_quads(a) == from_json
