"""Entity linking on a hand-written graph (tests/fixtures/link/graph.ttl)."""
from __future__ import annotations

import gc
import json
import random
import re
from pathlib import Path

import pytest

from kgcult.errors import KgcultError
from kgcult.link import Linker
from kgcult.link import normalize
from kgcult.link.index.reader import index_dir

FIX = Path(__file__).parent / "fixtures" / "link"


def run_cli(args, store_path=None, input=None):  # noqa: A002 - CliRunner.invoke's name
    from click.testing import CliRunner

    from kgcult.cli.main import main

    full = (["--store", str(store_path)] if store_path else []) + list(args)
    return CliRunner().invoke(main, full, input=input, catch_exceptions=False)


def make_store(path):
    from kgcult.store import hierarchy
    from kgcult.store import Store

    s = Store(path)
    s.load([FIX / "graph.ttl"], graph="linkfixture")
    hierarchy.build(s)
    return s


@pytest.fixture(scope="module")
def lstore(tmp_path_factory):
    s = make_store(tmp_path_factory.mktemp("link") / "store")
    yield s
    s.close()


@pytest.fixture(scope="module")
def linker(lstore):
    return Linker.open(lstore)


# -- normalization ---------------------------------------------------------------------

def test_normalize_keys():
    assert normalize.fold("Crème  Brûlée!") == "creme brulee"
    assert normalize.basic("сгущённое") == "сгущенное"
    assert normalize.stem(normalize.fold("Tomatoes"), "en") == "tomato"
    assert normalize.stem(normalize.fold("cherries"), "en") == "cherry"
    assert normalize.stem("couscous", "en") == "couscous"
    assert normalize.stem("mirabelles", "fr") == normalize.stem("mirabelle", "fr")
    assert normalize.stem("panes", "es") == normalize.stem("pan", "es")
    assert normalize.stem("tuorli", "it") == normalize.stem("tuorlo", "it")
    assert normalize.stem("tomatoes", "de") == "tomatoes"  # no rules for German
    # a Japanese voiced mark changes the word: it is not a diacritic to strip
    assert normalize.fold("が") != normalize.fold("か")
    assert normalize.fold("Ｓｕｓｈｉ") == "sushi"  # NFKC


# -- disambiguation ----------------------------------------------------------------------

def test_lemon_fruit_vs_film(linker):
    r = linker.link("lemon", lang="en", topic="food")
    assert r["qid"] == "Q1093742" and r["status"] == "resolved"
    assert r["match"] == "exact-label" and r["lang_used"] == "en"
    assert r["evidence"] == [["Q1093742", "P279", "Q3314483"], ["Q3314483", "P279", "Q25403900"]]
    assert r["description"] == "yellow citrus fruit"
    qids = [c["qid"] for c in r["candidates"]]
    assert "Q90001" in qids  # the film is a candidate, ranked after the fruit
    film = next(c for c in r["candidates"] if c["qid"] == "Q90001")
    assert film["valid"] is False
    # without a topic: sitelinks decide (120 vs 3), not chance
    r2 = linker.link("lemon", lang="en")
    assert r2["qid"] == "Q1093742" and r2["status"] == "resolved"


def test_dish_vs_town(linker):
    food = linker.link("Caerphilly", lang="en", topic="food")
    place = linker.link("Caerphilly", lang="en", topic="place")
    assert food["qid"] == "Q90010" and food["status"] == "resolved"
    assert place["qid"] == "Q90011" and place["status"] == "resolved"
    assert food["country"] == ["Q90020"]
    assert food["granularity"] == "dish" and food["granularity_score"] == 1
    assert place["evidence"] == [["Q90011", "P131", "Q90020"]]


def test_alias_only(linker):
    r = linker.link("mayo", lang="en", topic="food")
    assert r["qid"] == "Q167893" and r["match"] == "exact-alias"
    assert r["label"] == "mayonnaise" and r["label_en"] == "mayonnaise"
    # the town "Mayo" is found case-insensitively but is no food
    r2 = linker.link("Mayo", lang="en", topic="place")
    assert r2["qid"] == "Q90030"


def test_english_fallback(linker):
    r = linker.link("sushi", lang="de", topic="food")
    assert r["qid"] == "Q46383" and r["match"] == "english" and r["lang_used"] == "en"
    assert r["label"] is None and r["label_en"] == "sushi"
    assert r["country"] == ["Q17"]


def test_any_language_and_variants(linker):
    assert linker.link("gazpacho", lang="it", topic="food")["qid"] == "Q90054"
    assert linker.link("gazpacho", lang="it", topic="food")["match"] == "any-language"
    r = linker.link("сгущенное молоко", lang="ru", topic="food")
    assert r["qid"] == "Q90050" and r["match"] == "normalized"
    assert linker.link("creme brulee", lang="fr", topic="food")["qid"] == "Q90051"
    assert linker.link("Tomatoes", lang="en", topic="food")["qid"] == "Q90052"


def test_fuzzy_needs_topic_validity(linker):
    r = linker.link("mayonaise", lang="en", topic="food")
    assert r["qid"] == "Q167893" and r["match"] == "fuzzy"
    # a short string gets no edits (the stem stage, which maps "sushy" to "sushi", is off here)
    plain = linker.with_stages(["exact", "normalized", "english", "any", "fuzzy"])
    assert plain.link("sushy", lang="en", topic="food")["match"] in (None, "fuzzy")
    assert linker.link("Noel Hil", lang="en", topic="food")["qid"] is None


def test_tokens_stage(linker):
    r = linker.link("sweetened condensed milk", lang="en", topic="food")
    assert r["qid"] == "Q90050" and r["match"] == "tokens"
    assert linker.link("sweetened condensed milk", lang="en")["qid"] is None  # no topic: no word overlap
    assert linker.link("Noel Hill Band", lang="en", topic="food")["qid"] is None


def test_must_stay_unresolved(linker):
    r = linker.link("Noel Hill", lang="en", topic="food")
    assert r["qid"] is None and r["status"] == "unresolved"
    assert [c["qid"] for c in r["candidates"]] == ["Q90040"]
    assert linker.link("xyzzy plugh", lang="en", topic="food")["status"] == "unresolved"
    assert linker.link("", lang="en", topic="food")["status"] == "unresolved"


def test_ambiguous_is_reported(linker):
    r = linker.link("twin cake", lang="en", topic="food")
    assert r["status"] == "ambiguous"
    assert r["qid"] == "Q90060"  # the smaller QID, every time
    assert r["tied"] == ["Q90060", "Q90061"]


def test_unknown_topic(linker):
    with pytest.raises(KgcultError, match="unknown topic"):
        linker.link("lemon", topic="foood")


# -- determinism -------------------------------------------------------------------------

MENTIONS = ["lemon", "Lemon", "Caerphilly", "mayo", "sushi", "twin cake", "Noel Hill", "gazpacho",
            "Tomatoes", "mayonaise", "creme brulee", "matcha"]


def test_deterministic_across_runs_and_order(lstore):
    rows = [{"id": i, "mention": m, "lang": lg, "topic": t}
            for i, (m, lg, t) in enumerate((m, lg, t) for m in MENTIONS for lg in ("en", "fr")
                                           for t in ("food", "place", None))]
    a = list(Linker.open(lstore).link_many(rows))
    shuffled = rows[:]
    random.Random(7).shuffle(shuffled)
    b = list(Linker.open(lstore).link_many(shuffled, batch=5))
    assert [r["id"] for r in b] == [r["id"] for r in shuffled]
    by_id = {r["id"]: r for r in b}
    assert json.dumps(a, sort_keys=True) == json.dumps([by_id[r["id"]] for r in a], sort_keys=True)


# -- injection-shaped mentions ------------------------------------------------------------

NASTY = ['"} DROP ALL #', "a\\b", "x\ny", "} UNION { ?s ?p ?o }", "SELECT * WHERE { ?s ?p ?o }",
         "'; DELETE WHERE { ?s ?p ?o } #", "\"\"\"", "<http://evil/>", "\x00", "\u202e"]


def test_injection_shaped_mentions(linker, lstore):
    before = len(lstore.ox)
    for m in NASTY:
        r = linker.link(m, lang="en", topic="food")
        assert r["status"] in ("unresolved", "resolved", "ambiguous")
    # a label that looks like an injection links like any other name
    assert linker.link('pie "} DROP ALL #', lang="en", topic="food")["qid"] == "Q90071"
    assert len(lstore.ox) == before


def test_no_user_text_in_queries():
    """The linker's modules never build a SPARQL string; the index's SQL binds every value
    (its f-strings only insert placeholders and constants)."""
    src = "".join(p.read_text() for p in (Path(__file__).parents[1] / "kgcult" / "link").glob("*.py"))
    for word in ("SELECT ?", "SELECT *", "SELECT DISTINCT ?", "ASK {", ".query(", "WHERE {"):
        assert word not in src, word
    for p in (Path(__file__).parents[1] / "kgcult" / "link").glob("*.py"):
        for m in re.finditer(r'f"[^"]*\{([^}]*)\}', p.read_text()):
            if "SELECT" in m.group(0) or "WHERE" in m.group(0) or "FROM" in m.group(0):
                assert m.group(1) in ("','.join('?' * len(ch))", "ph", "where", "_JOIN", "LANG_BITS"), (p.name, m.group(0))


# -- index persistence --------------------------------------------------------------------

def test_index_persisted_and_invalidated(tmp_path):
    s = make_store(tmp_path / "store")
    try:
        Linker.open(s)
        files = sorted(p.name for p in index_dir(s).glob("labels-*"))
        assert len(files) == 1
        assert Linker.open(s).link("grape", topic="food")["qid"] is None
        extra = tmp_path / "extra.ttl"
        extra.write_text('<http://www.wikidata.org/entity/Q90099> <http://www.w3.org/2000/01/rdf-schema#label> "grape"@en ;'
                         ' <http://www.wikidata.org/prop/direct/P31> <http://www.wikidata.org/entity/Q25403900> .\n')
        s.load([extra], graph="extra")
        r = Linker.open(s).link("grape", topic="food")
        assert r["qid"] == "Q90099"
        files2 = sorted(p.name for p in index_dir(s).glob("labels-*"))
        assert len(files2) == 1 and files2 != files
    finally:
        s.close()


def test_open_by_path_read_only(tmp_path):
    make_store(tmp_path / "store").close()
    lk = Linker.open(str(tmp_path / "store"))
    assert lk.store.read_only
    assert lk.link("paella", lang="es", topic="food")["country"] == ["Q29"]


def test_open_by_path_without_opening_the_store(tmp_path, monkeypatch):
    """A read-only open records the store's file listing with its content hash; the next
    open by path whose store lists the same files finds the index without opening the
    store; a changed store is opened again (and gets its new index)."""
    import kgcult.link.linker as linker_mod
    from kgcult.link.index import reader as lindex

    path = tmp_path / "store"
    make_store(path).close()
    first = Linker.open(path)  # opens the store read-only, records the listing
    want = first.link("paella", lang="es", topic="food")
    first.store.close()
    assert (index_dir(first.store) / lindex.LISTINGS).exists()

    opened = []
    real_open = linker_mod.open_store
    monkeypatch.setattr(linker_mod, "open_store", lambda *a, **k: opened.append(a) or real_open(*a, **k))
    lk = Linker.open(path)
    assert opened == [] and lk.link("paella", lang="es", topic="food") == want
    assert lk.cache_dir == index_dir(first.store)
    assert lk.store.read_only and len(opened) == 1  # opened on first use only
    lk.store.close()

    from kgcult.store import Store

    s = Store(path)
    extra = tmp_path / "extra.ttl"
    extra.write_text('<http://www.wikidata.org/entity/Q90099> <http://www.w3.org/2000/01/rdf-schema#label> "grape"@en ;'
                     ' <http://www.wikidata.org/prop/direct/P31> <http://www.wikidata.org/entity/Q25403900> .\n')
    s.load([extra], graph="extra")
    s.close()
    opened.clear()
    assert Linker.open_unopened(path) is None  # its files changed: not trusted
    with pytest.raises(KgcultError, match="closure is stale"):
        Linker.open(path)  # read-only, and the closure must be rebuilt first
    r = run_cli(["link", "grape", "--topic", "food"], path)  # the CLI rebuilds it
    assert r.exit_code == 0 and json.loads(r.stdout)["qid"] == "Q90099"
    assert Linker.open(path).link("grape", topic="food")["qid"] == "Q90099"
    assert Linker.open_unopened(path).link("grape", topic="food")["qid"] == "Q90099"


# -- CLI --------------------------------------------------------------------------------

@pytest.fixture
def cli_store(tmp_path):
    p = tmp_path / "store"
    make_store(p).close()
    return p


def _quads(path):
    import pyoxigraph as ox

    s = ox.Store.read_only(str(path))
    try:
        return sorted(str(q) for q in s.quads_for_pattern(None, None, None, None))
    finally:
        del s


def test_cli_single_mention(cli_store):
    before = _quads(cli_store)
    r = run_cli(["link", "lemon", "--lang", "en", "--topic", "food"], cli_store)
    assert _quads(cli_store) == before  # linking never writes into the store
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["qid"] == "Q1093742"
    r = run_cli(["link", "--topic", "place", "Caerphilly"], cli_store)
    assert json.loads(r.stdout)["qid"] == "Q90011"
    r = run_cli(["link", "--topic", "food", "--", "index"], cli_store)  # a mention named like a subcommand
    assert json.loads(r.stdout)["mention"] == "index"


def test_cli_stream(cli_store, tmp_path):
    inp = tmp_path / "in.jsonl"
    inp.write_text("\n".join([
        json.dumps({"id": "a", "mention": "lemon", "lang": "en", "topic": "food"}),
        "{not json",
        json.dumps({"id": "b", "mention": "Caerphilly", "topic": "place"}),
        json.dumps({"id": "c", "lang": "es", "topic": "food", "country": "Q29",
                    "entities": {"paella": "dish_name", "tomate": "specific_ingredient"}}),
        json.dumps({"id": "d", "mention": '"} DROP GRAPH <x> #\n', "topic": "food"}),
        json.dumps({"id": "e", "lang": "en", "topic": "food", "sushi": "dish_name"}),
    ]) + "\n")
    out = tmp_path / "out.jsonl"
    r = run_cli(["link", "-i", str(inp), "-o", str(out), "--on-error", "skip"], cli_store)
    assert r.exit_code == 0, r.output
    assert f"{inp}:2: malformed JSON" in r.stderr
    rows = [json.loads(l) for l in out.read_text().splitlines()]
    assert [x["id"] for x in rows] == ["a", "b", "c#0", "c#1", "d", "e#0"]
    assert [x["qid"] for x in rows] == ["Q1093742", "Q90011", "Q90053", "Q90052", None, "Q46383"]
    assert rows[2]["type"] == "dish_name" and rows[2]["prompt_country"] == "Q29"
    thresholds = gc.get_threshold()
    r = run_cli(["link", "-i", str(inp), "-o", str(tmp_path / "o2.jsonl")], cli_store)
    assert r.exit_code == 1 and f"{inp}:2: malformed JSON" in r.stderr
    assert not (tmp_path / "o2.jsonl").exists()
    # the stream's collector settings (cli/link.py: fewer young passes, startup objects
    # frozen) end with it, failed or not: an in-process caller keeps its own
    assert gc.get_threshold() == thresholds and gc.get_freeze_count() == 0


def test_cli_eval_and_index(cli_store, tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text("\n".join(json.dumps(x) for x in [
        {"mention": "lemon", "lang": "en", "topic": "food", "gold_qid": "Q1093742"},
        {"mention": "Tomatoes", "lang": "en", "topic": "food", "gold_qid": "Q90052"},
        {"mention": "Noel Hill", "lang": "en", "topic": "food", "gold_qid": None},
        {"mention": "grape", "lang": "en", "topic": "food", "gold_qid": "Q1"},
    ]) + "\n")
    errs = tmp_path / "errors.jsonl"
    rep = tmp_path / "rep.json"
    r = run_cli(["link", "eval", str(gold), "--errors", str(errs), "--report", str(rep)], cli_store)
    assert r.exit_code == 0, r.output
    o = json.loads(rep.read_text())
    assert o["overall"]["tp"] == 2 and o["overall"]["fp"] == 0 and o["overall"]["positives"] == 3
    assert o["overall"]["precision"] == 1.0 and o["overall"]["recall"] == pytest.approx(0.6667)
    gains = {g["added"]: g["recall_gain"] for g in o["stage_gain"]}
    assert gains["exact"] == pytest.approx(0.3333, abs=1e-3) and gains["normalized"] == pytest.approx(0.3333, abs=1e-3)
    assert [json.loads(l)["mention"] for l in errs.read_text().splitlines()] == ["grape"]
    assert "by lang" in r.stdout or "overall" in r.stdout
    r = run_cli(["link", "index"], cli_store)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["topics"]["food"] >= 10


def test_cli_no_store(tmp_path):
    r = run_cli(["link", "lemon"], tmp_path / "nothing-here")
    assert r.exit_code == 1 and "no store at" in r.stderr
    assert not (tmp_path / "nothing-here").exists()


def test_cli_bad_gold(cli_store, tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"mention": "lemon", "gold_qid": "Q1"}\n{"mention": "x"}\n')
    r = run_cli(["link", "eval", str(gold)], cli_store)
    assert r.exit_code == 1 and f"{gold}:2" in r.stderr
