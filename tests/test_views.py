"""Views: registry, parameters, manifests, determinism, errors, and the FmLAMA / DLAMA /
spectral / entity-metadata rules on small hand-written graphs (tests/fixtures/views/)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from kgcult import views
from kgcult.errors import KgcultError

from tests.conftest import run_cli

FIX = Path(__file__).resolve().parent / "fixtures" / "views"
WD = "http://www.wikidata.org/entity/"


def read_jsonl(path):
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]


def _loaded(tmp_path_factory, name):
    from kgcult.store import Store

    s = Store(tmp_path_factory.mktemp("views") / "store")
    s.load([FIX / name], graph="fixture")
    return s


@pytest.fixture(scope="module")
def fm_store(tmp_path_factory):
    s = _loaded(tmp_path_factory, "fmlama.ttl")
    yield s
    s.close()


def fm_build(store, tmp_path, **params):
    r = views.build(store, "fmlama", params or None, out=tmp_path / "out")
    return r, read_jsonl(r.path / "fmlama.jsonl")


def by_lang(rows, lang):
    return {r["url"].rsplit("/", 1)[1]: r for r in rows if r["lang"] == lang}


# -- registry and parameters -------------------------------------------------------

def test_registry_lists_the_views():
    names = [v["name"] for v in views.views()]
    for n in ("fmlama", "dlama", "spectral-items", "entity-metadata"):
        assert n in names


def test_cli_views_lists_parameters(tmp_path):
    r = run_cli(["views"], tmp_path / "s")
    assert r.exit_code == 0
    assert "fmlama" in r.output and "--param languages=" in r.output


def test_parse_params_defaults_and_values():
    v = views.get_view("fmlama")
    p = views.parse_params(v, ["languages=en, zh", "countries=Q142,Q17"])
    assert p["languages"] == ["en", "zh"]
    assert p["countries"] == ["Q142", "Q17"]
    assert p["exclude_countries"] == ["Q865"]


@pytest.mark.parametrize("bad, needle", [
    (["languages"], "malformed --param"),
    (["colour=red"], "unknown parameter 'colour'"),
    (["countries=France"], "not a Wikidata item id"),
])
def test_bad_params_name_the_view_and_file(bad, needle):
    v = views.get_view("fmlama")
    with pytest.raises(KgcultError) as e:
        views.parse_params(v, bad)
    msg = str(e.value)
    assert needle in msg and "fmlama" in msg and "fmlama.json" in msg


def test_bad_param_value_names_the_declaration_line():
    v = views.get_view("dlama")
    with pytest.raises(KgcultError) as e:
        views.parse_params(v, ["max_subjects=many"])
    line = v.parameters["max_subjects"].line
    assert f"dlama.json:{line}:" in str(e.value) and line > 1


def test_unknown_view_is_a_clear_error(store, tmp_path):
    with pytest.raises(KgcultError, match="unknown view 'nope'.*nope.json"):
        views.build(store, "nope", None, out=tmp_path)
    r = run_cli(["build", "nope"], tmp_path / "s2")
    assert r.exit_code == 1


def _fixture_store_path(tmp_path, name):
    from kgcult.store import Store

    path = str(tmp_path / "clistore")
    s = Store(path)
    s.load([FIX / name], graph="fixture")
    s.close()
    return path


def test_cli_malformed_param_exits_nonzero(tmp_path):
    path = _fixture_store_path(tmp_path, "fmlama.ttl")
    from click.testing import CliRunner
    from kgcult.cli.main import main

    res = CliRunner().invoke(main, ["--store", path, "build", "fmlama", "--param", "languages"])
    assert res.exit_code == 1
    assert "malformed --param" in res.output and "fmlama" in res.output


def _write_view(d: Path, name: str, query: str, decl_extra: dict | None = None):
    (d / f"{name}.rq").write_text(query, encoding="utf-8")
    decl = {"name": name, "description": "t", "queries": {"main": f"{name}.rq"}, "fields": []}
    decl.update(decl_extra or {})
    (d / f"{name}.json").write_text(json.dumps(decl, indent=2), encoding="utf-8")


def test_query_syntax_error_names_view_file_and_line(store, tmp_path):
    d = tmp_path / "views"
    d.mkdir()
    _write_view(d, "broken", "# a comment\nSELECT ?s WHERE {\n  ?s ?p ?o .\n  ?s nope:x ?o .\n}\n")
    with pytest.raises(KgcultError) as e:
        views.build(store, "broken", None, out=tmp_path / "out", directory=d)
    msg = str(e.value)
    assert "view broken" in msg and "broken.rq:4:" in msg


def test_malformed_declaration_names_file_and_line(tmp_path):
    d = tmp_path / "views"
    d.mkdir()
    (d / "bad.json").write_text('{\n  "name": "bad",\n  "queries": {,}\n}\n', encoding="utf-8")
    with pytest.raises(KgcultError, match=r"bad.json:3: malformed view declaration"):
        views.registry(d)


def test_generic_table_view_groups_lists(fm_store, tmp_path):
    d = tmp_path / "views"
    d.mkdir()
    _write_view(d, "parts", "SELECT ?dish ?part WHERE { ?dish wdt:P527 ?part . ?dish wdt:P495 ?c }",
                {"fields": ["dish", "part"], "parameters": {"c": {"type": "qid", "default": "Q142"}},
                 "config": {"group_by": ["dish"], "lists": ["part"], "qids": True}})
    r = views.build(fm_store, "parts", None, out=tmp_path / "out", directory=d)
    rows = read_jsonl(r.path / "parts.jsonl")
    assert {"dish": "Q9200001", "part": ["Q9300001"]} in rows
    assert all(isinstance(x["part"], list) for x in rows)
    r2 = views.build(fm_store, "parts", {"c": "Q38"}, out=tmp_path / "out", directory=d)
    assert r2.manifest["sha256"] != r.manifest["sha256"]
    assert {x["dish"] for x in read_jsonl(r2.path / "parts.jsonl")} == {"Q9200005"}


# -- manifests and determinism -----------------------------------------------------

def test_rebuild_is_byte_identical_and_manifest_complete(fm_store, tmp_path):
    r1 = views.build(fm_store, "fmlama", None, out=tmp_path / "a", csv_out=True)
    r2 = views.build(fm_store, "fmlama", None, out=tmp_path / "b", csv_out=True)
    files1 = sorted(p.relative_to(r1.path) for p in r1.path.rglob("*") if p.is_file())
    files2 = sorted(p.relative_to(r2.path) for p in r2.path.rglob("*") if p.is_file())
    assert files1 == files2
    for f in files1:
        assert (r1.path / f).read_bytes() == (r2.path / f).read_bytes(), f
    m = json.loads((r1.path / "MANIFEST.json").read_text())
    from kgcult.store.snapshot import store_content_hash
    assert m["snapshot_content_sha256"] == store_content_hash(fm_store)
    assert m["queries"]["origins"]["file"] == "queries/views/fmlama-origins.rq"
    assert len(m["queries"]["origins"]["sha256"]) == 64
    assert m["parameters"]["languages"] == "en,zh,ko,ar,he,ru"
    assert m["kgcult_version"]
    import hashlib
    main = (r1.path / "fmlama.jsonl").read_bytes()
    assert m["sha256"] == hashlib.sha256(main).hexdigest()
    assert m["rows"] == main.count(b"\n")
    for o in m["outputs"]:
        assert hashlib.sha256((r1.path / o["file"]).read_bytes()).hexdigest() == o["sha256"]
    assert (r1.path / "fmlama.csv").read_text().splitlines()[0].startswith("url,origin,origin_name,lang")


def test_rebuild_replaces_the_old_output_whole(fm_store, tmp_path):
    views.build(fm_store, "fmlama", {"languages": "en,zh"}, out=tmp_path)
    assert (tmp_path / "fmlama" / "data_lang" / "zh").is_dir()
    views.build(fm_store, "fmlama", {"languages": "en"}, out=tmp_path)
    assert not (tmp_path / "fmlama" / "data_lang" / "zh").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_refuses_to_overwrite_a_foreign_directory(fm_store, tmp_path):
    (tmp_path / "fmlama").mkdir()
    (tmp_path / "fmlama" / "precious.txt").write_text("x")
    with pytest.raises(KgcultError, match="refusing"):
        views.build(fm_store, "fmlama", None, out=tmp_path)
    assert (tmp_path / "fmlama" / "precious.txt").exists()


def test_cli_build_prints_counts_and_sha(tmp_path):
    path = _fixture_store_path(tmp_path, "fmlama.ttl")
    out = tmp_path / "out"
    r1 = run_cli(["build", "fmlama", "--out", str(out), "--print", "counts.jsonl"], path)
    assert r1.exit_code == 0, r1.output
    first = r1.stdout.splitlines()[0].split("\t")
    assert first[0] == "fmlama" and len(first[2]) == 64
    assert '"origin": "France"' in r1.stdout
    r2 = run_cli(["build", "fmlama", "--out", str(out)], path)
    assert r2.stdout.splitlines()[0].split("\t")[2] == first[2]



def test_language_parameters_never_become_paths(tmp_path):
    path = _fixture_store_path(tmp_path, "fmlama.ttl")
    r = run_cli(["build", "fmlama", "--out", str(tmp_path / "out"), "--param", "languages=en,../../../escaped"], path)
    assert r.exit_code == 1 and "is not a language tag" in r.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "escaped").exists()


def test_build_in_memory_matches_the_written_files(fm_store, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an in-memory build that wrote would write under ./build here
    mem = views.build(fm_store, "fmlama", {"languages": ["en", "zh"], "countries": ["wd:Q142", "Q148"]},
                      csv_out=True)
    assert mem.path is None and list(tmp_path.iterdir()) == []
    assert mem.name == "fmlama" and mem.manifest["parameters"]["countries"] == "Q142,Q148"
    assert mem.rows == mem.outputs["fmlama.jsonl"] and mem.rows
    assert list(mem.rows[0])[:6] == ["url", "origin", "origin_name", "lang", "sub_label", "obj_label"]
    assert {r["origin"] for r in mem.rows} == {"France", "People's Republic of China"}
    assert mem.outputs["counts.jsonl"][0]["country"] in ("Q142", "Q148")
    assert sorted(mem.files) == sorted(o["file"] for o in mem.manifest["outputs"])
    assert "fmlama.csv" in mem.files and "fmlama.csv" not in mem.outputs
    written = views.build(fm_store, "fmlama", "languages=en,zh countries=Q142,Q148".split(), out=tmp_path / "a")
    assert written.path == tmp_path / "a" / "fmlama" and written.manifest == {
        **mem.manifest, "outputs": [o for o in mem.manifest["outputs"] if not o["file"].endswith(".csv")]}
    assert mem.write(tmp_path / "b") == tmp_path / "b" / "fmlama" == mem.path
    for name, data in mem.files.items():
        assert (mem.path / name).read_bytes() == data
        if name in written.files:
            assert (written.path / name).read_bytes() == data
    assert json.loads((mem.path / "MANIFEST.json").read_text()) == mem.manifest
    assert [json.loads(x) for x in mem.files["fmlama.jsonl"].decode().splitlines()] == mem.rows


def test_parameter_types_languages_and_enumerations(store, tmp_path):
    d = tmp_path / "views"
    d.mkdir()
    _write_view(d, "typed", "SELECT ?s WHERE { ?s ?p ?o } LIMIT 1", {"parameters": {
        "langs": {"type": "langs", "default": "en,zh-hans"},
        "lang": {"type": "lang", "default": "en"},
        "kind": {"type": "list", "default": "a", "values": ["a", "b"]},
        "item": {"type": "qid", "default": "Q1"}}})
    v = views.get_view("typed", d)
    p = views.parse_params(v, {"langs": ["ja", "zh-Hans"], "kind": "a,b", "item": "http://www.wikidata.org/entity/Q42"})
    # tags are lower-cased as Oxigraph stores them, so zh-Hans finds the zh-hans labels
    assert p == {"langs": ["ja", "zh-hans"], "lang": "en", "kind": ["a", "b"], "item": "Q42"}
    for bad, needle in [({"langs": "en,en gb"}, "not a language tag"), ({"lang": "en,ja"}, "exactly one language tag"),
                        ({"kind": "c"}, "'c' is not one of a, b"), ({"item": "P31"}, "not a Wikidata item id")]:
        with pytest.raises(KgcultError, match=needle) as e:
            views.parse_params(v, bad)
        assert "typed.json:" in str(e.value)
    assert views.views(d)[0]["parameters"]["kind"]["values"] == ["a", "b"]
    _write_view(d, "typed", "SELECT ?s WHERE { ?s ?p ?o }", {"parameters": {
        "n": {"type": "int", "default": "1", "values": ["1"]}}})
    with pytest.raises(KgcultError, match=r"typed.json:\d+: .*'values' applies to str and list"):
        views.registry(d)


def test_probe_dataset_from_the_view_in_memory(fm_store):
    from kgcult.probe import datasets

    rows = datasets.from_store(fm_store, "fmlama", {"languages": "en"})
    assert rows and rows[0]["_where"] == "view fmlama: fmlama.jsonl:1"
    built = views.build(fm_store, "fmlama", {"languages": "en"}).rows
    assert [{k: v for k, v in r.items() if k != "_where"} for r in rows] == built
    raw, extra = datasets.from_store(fm_store, "fmlama", {"languages": "en"}, extra=("counts.jsonl", "nope.jsonl"))
    assert [dict(r, _where=None) for r in raw] == [dict(r, _where=None) for r in rows]
    assert extra["counts.jsonl"][0]["_where"] == "view fmlama: counts.jsonl:1" and extra["nope.jsonl"] == []


# -- FmLAMA rules ------------------------------------------------------------------

def test_fmlama_rows_and_fields(fm_store, tmp_path):
    _, rows = fm_build(fm_store, tmp_path, languages="en,zh")
    en = by_lang(rows, "en")
    r = en["Q9200001"]
    assert list(r)[:6] == ["url", "origin", "origin_name", "lang", "sub_label", "obj_label"]
    assert r["url"] == WD + "Q9200001" and r["origin"] == "France" and r["origin_name"] == "France"
    assert r["sub_label"] == "bouillabaisse" and r["obj_label"] == ["fish"]
    assert r["description"] == "fish stew from Marseille"
    assert r["materials"] == ["saffron"]
    assert r["image"] == ["http://commons.wikimedia.org/wiki/Special:FilePath/Bouillabaisse.jpg"]
    zh = by_lang(rows, "zh")
    assert zh["Q9200001"]["origin"] == "France" and zh["Q9200001"]["origin_name"] == "法国"
    assert zh["Q9200001"]["obj_label"] == ["鱼"] and "materials" not in zh["Q9200001"]


def test_fmlama_dish_through_hierarchy(fm_store, tmp_path):
    _, rows = fm_build(fm_store, tmp_path, languages="en")
    en = by_lang(rows, "en")
    assert "Q9200002" in en          # stew -> dish
    assert "Q9200003" in en          # P279 dish directly
    assert "Q9200010" not in en      # food, not a dish


def test_fmlama_cuisine_route(fm_store, tmp_path):
    _, rows = fm_build(fm_store, tmp_path, languages="en")
    en = by_lang(rows, "en")
    assert en["Q9200003"]["origin"] == "People's Republic of China"   # P2012 -> cuisine P17
    assert en["Q9200004"]["origin"] == "Italy"                        # P361 -> cuisine P495
    assert en["Q9200007"]["origin"] == "France"                       # own P495 wins
    assert en["Q9200009"]["origin"] == "People's Republic of China"   # Taiwan not an origin


def test_fmlama_multi_origin_exclusion(fm_store, tmp_path):
    _, rows = fm_build(fm_store, tmp_path, languages="en,zh")
    urls = {r["url"].rsplit("/", 1)[1] for r in rows}
    assert "Q9200005" not in urls   # two P495 countries
    assert "Q9200006" not in urls   # cuisines of two countries
    assert "Q9200008" not in urls   # P495 Taiwan (excluded country)
    assert "Q9200013" not in urls   # origin is not a country
    assert "Q9200014" not in urls   # origin country has no English label
    assert "Q9200011" not in urls   # no ingredients
    # each (dish, language) once
    assert len({(r["url"], r["lang"]) for r in rows}) == len(rows)


def test_fmlama_without_taiwan_exclusion(fm_store, tmp_path):
    _, rows = fm_build(fm_store, tmp_path, languages="en", exclude_countries="")
    en = by_lang(rows, "en")
    assert en["Q9200008"]["origin"] == "Taiwan"
    assert "Q9200009" not in en      # now Taiwanese and Chinese: two origins


def test_fmlama_label_language_agreement(fm_store, tmp_path):
    _, rows = fm_build(fm_store, tmp_path, languages="en,zh")
    zh = by_lang(rows, "zh")
    assert "Q9200002" not in zh       # dish has a zh label, its ingredient has none
    assert "Q9200012" not in zh       # Spain has no zh label
    assert zh["Q9200015"]["obj_label"] == ["豆腐"]          # only ingredients labelled in zh
    en = by_lang(rows, "en")
    assert en["Q9200015"]["obj_label"] == ["tofu", "veal"]


def test_fmlama_aligned_subset_counts_and_country_filter(fm_store, tmp_path):
    r, rows = fm_build(fm_store, tmp_path, languages="en,zh")
    d = r.path
    en = read_jsonl(d / "data_lang" / "en" / "en_dishes.jsonl")
    zh = read_jsonl(d / "data_lang" / "zh" / "zh_dishes.jsonl")
    assert {x["lang"] for x in en} == {"en"} and {x["lang"] for x in zh} == {"zh"}
    aligned_en = {x["url"] for x in read_jsonl(d / "data_filter" / "en" / "en_dishes.jsonl")}
    aligned_zh = {x["url"] for x in read_jsonl(d / "data_filter" / "zh" / "zh_dishes.jsonl")}
    assert aligned_en == aligned_zh == {x["url"] for x in en} & {x["url"] for x in zh}
    assert aligned_en == {WD + "Q9200001", WD + "Q9200003", WD + "Q9200015"}
    counts = read_jsonl(d / "data_lang" / "en" / "en_count.jsonl")    # arrays, as FmLAMA released them
    assert counts[0] == ["All", len(en)]
    assert ["France", 3] in counts
    per_country = {c["country"]: c for c in read_jsonl(d / "counts.jsonl")}
    assert per_country["Q142"]["dishes"] == 3 and per_country["Q142"]["aligned_dishes"] == 1
    assert per_country["Q148"]["languages"] == {"en": 3, "zh": 2}
    _, only = fm_build(fm_store, tmp_path / "f", languages="en", countries="Q38")
    assert {x["origin"] for x in only} == {"Italy"}


def test_view_queries_read_the_closure_not_property_paths():
    import re
    path_op = re.compile(r"(\)|wdt:P\d+|kgc:\w+|[a-z]+:[A-Za-z]\w*)\s*[+*]")
    for rq in Path(views.views_dir()).glob("*.rq"):
        body = "\n".join(line.split("#", 1)[0] for line in rq.read_text().splitlines())
        assert not path_op.search(body), rq
    assert "kgc:typedAs" in (Path(views.views_dir()) / "fmlama-origins.rq").read_text()


# -- DLAMA rules -------------------------------------------------------------------

def test_entropy_definition():
    h, most = views.entropy([["Q1"], ["Q2"], ["Q1", "Q3"], ["Q3"]])
    # counts: Q1 2, Q3 2, Q2 1 -> picks Q1, Q2, Q1 (tie Q1/Q3 -> smaller QID), Q3
    assert math.isclose(h, -(0.5 * math.log2(0.5) + 2 * 0.25 * math.log2(0.25)))
    assert most == "Q1"
    assert views.entropy([["Q5"], ["Q5"]])[0] == 0.0


def test_culture_groups_from_the_paper():
    g = views.culture_groups()
    assert len(g["arab"]) == 22 and len(g["asia"]) == 13 and len(g["south-america"]) == 12
    assert len(g["west"]) == 20
    assert "Q865" in g["asia"] and "Q155" in g["south-america"] and "Q219060" in g["arab"]


# -- spectral items and entity metadata -------------------------------------------

SPECTRAL_TTL = """
@prefix wd: <http://www.wikidata.org/entity/> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
wd:Q142 wdt:P31 wd:Q6256 ; rdfs:label "France"@en ; wdt:P38 wd:Q4916 ; wdt:P37 wd:Q150 ; wdt:P832 wd:Q1 .
wd:Q38 wdt:P31 wd:Q6256 ; rdfs:label "Italy"@en ; wdt:P38 wd:Q4916 ; wdt:P37 wd:Q652 .
wd:Q17 wdt:P31 wd:Q6256 ; rdfs:label "Japan"@en ; wdt:P38 wd:Q8146 .
wd:Q4916 rdfs:label "euro"@en . wd:Q8146 rdfs:label "yen"@en .
wd:Q9 wdt:P31 wd:Q746549 ; wdt:P495 wd:Q38 ; rdfs:label "pizza"@en .
wd:Q10 wdt:P279 wd:Q9 ; wdt:P495 wd:Q38 ; rdfs:label "pizza margherita"@en .
wd:Q11 wdt:P31 wd:Q2095 ; wdt:P495 wd:Q17 .
"""


def test_spectral_items_lists_and_matrix(store, tmp_path):
    f = tmp_path / "spectral.ttl"
    f.write_text(SPECTRAL_TTL)
    store.load([f], graph="fixture")
    r = views.build(store, "spectral-items", {"domains": "currency,national-dish"}, out=tmp_path / "out",
                    csv_out=True)
    items = {(x["domain"], x["item"]): x for x in read_jsonl(r.path / "spectral-items.jsonl")}
    assert items[("currency", "Q4916")]["countries"] == ["Q38", "Q142"]
    assert items[("currency", "Q4916")]["label"] == {"en": "euro"}
    assert set(items) == {("currency", "Q4916"), ("currency", "Q8146"),
                          ("national-dish", "Q9"), ("national-dish", "Q10")}
    m = read_jsonl(r.path / "matrix" / "currency.jsonl")
    assert m == [{"country": "Q17", "country_label": "Japan", "Q4916": 0, "Q8146": 1},
                 {"country": "Q38", "country_label": "Italy", "Q4916": 1, "Q8146": 0},
                 {"country": "Q142", "country_label": "France", "Q4916": 1, "Q8146": 0}]
    assert (r.path / "matrix" / "currency.csv").read_text().splitlines()[0] == "country,country_label,Q4916,Q8146"
    with pytest.raises(KgcultError, match="unknown domain 'weather'"):
        views.build(store, "spectral-items", {"domains": "weather"}, out=tmp_path / "out")


def test_entity_metadata_fields(fm_store, tmp_path):
    r = views.build(fm_store, "entity-metadata", {"roots": "Q746549", "languages": "en,zh"}, out=tmp_path)
    rows = {x["qid"]: x for x in read_jsonl(r.path / "entity-metadata.jsonl")}
    d1 = rows["Q9200001"]
    assert list(d1) == ["qid", "labels", "descriptions", "country", "country_source", "topic_roots"]
    assert d1["labels"] == {"en": "bouillabaisse", "zh": "马赛鱼汤"}
    assert d1["descriptions"] == {"en": "fish stew from Marseille"}
    assert d1["country"] == ["Q142"] and d1["country_source"] == "P495"
    assert d1["topic_roots"] == ["Q746549"]
    assert rows["Q9200003"]["country"] == [] and rows["Q9200003"]["country_source"] is None
    assert "Q9200010" not in rows      # food, not under dish
    r2 = views.build(fm_store, "entity-metadata", {"entities": "Q9200005,Q9400001", "languages": "en"},
                     out=tmp_path / "b")
    rows2 = {x["qid"]: x for x in read_jsonl(r2.path / "entity-metadata.jsonl")}
    assert rows2["Q9200005"]["country"] == ["Q38", "Q142"]
    assert rows2["Q9400001"]["country_source"] == "P17" and rows2["Q9400001"]["topic_roots"] == []


def test_fmlama_same_sha_on_a_remote_endpoint(fm_store, tmp_path, oxigraph_server):
    """The views only call store.select: the same build against `oxigraph serve` (holding
    the same data and closure graphs) gives the same output sha256."""
    from kgcult.store import hierarchy
    from kgcult.store import open_store
    import pyoxigraph as ox

    local = views.build(fm_store, "fmlama", None, out=tmp_path / "local")
    hierarchy.ensure_closure(fm_store)
    # the store's default graph (the set of its data and closure graphs' triples) as the
    # server's one default graph, as WDQS serves one graph
    dump = tmp_path / "all.nt"
    fm_store.ox.dump(output=str(dump), format=ox.RdfFormat.N_TRIPLES, from_graph=ox.DefaultGraph())
    server = oxigraph_server([dump])
    remote = open_store("sparql+" + server.url)
    r = views.build(remote, "fmlama", None, out=tmp_path / "remote")
    assert r.manifest["sha256"] == local.manifest["sha256"]
    assert [o["sha256"] for o in r.manifest["outputs"]] == [o["sha256"] for o in local.manifest["outputs"]]


def test_seed_demo_counts_and_identical_rebuild(tmp_path):
    """The documented demo: import the seed snapshot, build fmlama twice, print counts."""
    from kgcult import resources

    seed = resources.seed()
    if not (seed / "MANIFEST.json").is_file():
        pytest.skip("dumps/seed has no snapshot yet")
    store = tmp_path / "seed-store"
    assert run_cli(["snapshot", "import", str(seed)], store).exit_code == 0
    out = tmp_path / "out"
    r1 = run_cli(["build", "fmlama", "--out", str(out), "--print", "counts.jsonl"], store)
    assert r1.exit_code == 0, r1.output
    lines = r1.stdout.splitlines()
    counts = [json.loads(x) for x in lines[1:]]
    assert counts and all(c["rows"] > 0 for c in counts)
    r2 = run_cli(["build", "fmlama", "--out", str(out)], store)
    assert r2.stdout.split("\t")[2] == lines[0].split("\t")[2]


def test_fmlama_rows_carry_origin_qid_and_continents(tmp_path):
    """origin_uri and continent (P30 English labels): the report's Others/continent groupings."""
    from kgcult.store import Store

    extra = tmp_path / "p30.ttl"
    extra.write_text("@prefix wd: <http://www.wikidata.org/entity/> .\n"
                     "@prefix wdt: <http://www.wikidata.org/prop/direct/> .\n"
                     "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
                     'wd:Q142 wdt:P30 wd:Q46 . wd:Q46 rdfs:label "Europe"@en .\n', encoding="utf-8")
    s = Store(tmp_path / "s")
    s.load([FIX / "fmlama.ttl", extra], graph="fixture")
    r = views.build(s, "fmlama", {"languages": "en"}, snapshot_hash="-")
    fr = next(x for x in r.outputs["fmlama.jsonl"] if x["url"].endswith("Q9200001"))
    assert fr["origin_uri"] == "Q142" and fr["continent"] == ["Europe"]
    assert views.get_view("fmlama").config["release_countries"][:2] == ["Q38", "Q30"]
    s.close()
