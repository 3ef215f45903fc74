"""`kgcult annotate` on a hand-written graph (tests/fixtures/annotate/graph.ttl): spans per
script, attached grammar outside the span, the longest name, every occurrence, context,
bad rows, determinism."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from kgcult.errors import KgcultError

pytest.importorskip("marisa_trie")
pytest.importorskip("snowballstemmer")

FIX = Path(__file__).parent / "fixtures" / "annotate"


def run_cli(args, store_path, input=None):  # noqa: A002 - CliRunner.invoke's name
    from click.testing import CliRunner

    from kgcult.cli.main import main

    return CliRunner().invoke(main, ["--store", str(store_path)] + list(args), input=input,
                              catch_exceptions=False)


@pytest.fixture(scope="module")
def astore(tmp_path_factory):
    from kgcult.store import Store, hierarchy

    path = tmp_path_factory.mktemp("annotate") / "store"
    s = Store(path)
    s.load([FIX / "graph.ttl"], graph="annotatefixture")
    hierarchy.build(s)
    s.close()
    return path


@pytest.fixture(scope="module")
def ann(astore):
    from kgcult.annotate import Annotator

    return Annotator.open(astore)


def spans(ann, text, lang, topic="food", country=None):
    out = ann.annotate(text, lang=lang, topic=topic, country=country)
    for s in out:
        assert text[s["start"]:s["end"]] == s["text"]
    return [(s["text"], s["qid"]) for s in out]


def test_longest_name_and_every_occurrence(ann):
    got = spans(ann, "Miso soup, then pad thai with shrimp and more soup.", "en")
    assert got == [("Miso soup", "Q91001"), ("pad thai", "Q91010"), ("shrimp", "Q91011"), ("soup", "Q91003")]


def test_head_and_foreign_qualifier_one_span_in_english_order(ann):
    """A span and the word after it, read as English orders them (qualifier first), name
    a dish: one span (arroz jollof: jollof rice); a qualifier that makes no name leaves the
    head alone (arroz blanco); a language that writes the qualifier first is not read so."""
    assert spans(ann, "Cenamos arroz jollof y arroz blanco.", "es") == [("arroz jollof", "Q91118"),
                                                                      ("arroz", "Q91004")]
    assert spans(ann, "На ужин рис басмати.", "ru") == [("рис басмати", "Q91119")]
    assert spans(ann, "jollof rice and rice", "en") == [("jollof rice", "Q91118"), ("rice", "Q91004")]
    # a food named after a linking word: its English names give the qualifier's
    assert spans(ann, "Pasta con salsa de tomate.", "es") == [("salsa de tomate", "Q91122")]
    assert spans(ann, "Salsa y tomate.", "es") == [("Salsa", "Q91121"), ("tomate", "Q91120")]
    # a head that is no food by itself (pollo, the animal) before its qualifier
    assert spans(ann, "Hoy pollo a la mantequilla.", "es") == [("pollo a la mantequilla", "Q91125")]
    assert spans(ann, "Hoy pollo y mantequilla.", "es") == [("mantequilla", "Q91124")]
    # a compound written qualifier first without a space, with no Japanese label: the
    # segmenter's word goes to the linker, whose reorder stage reads 豆|乳
    assert spans(ann, "朝は豆乳を飲みました。", "ja") == [("豆乳", "Q91128")]


def test_japanese_and_chinese_names_inside_runs(ann):
    assert spans(ann, "朝は味噌汁とご飯、夜は餃子です。", "ja") == [
        ("味噌汁", "Q91001"), ("ご飯", "Q91004"), ("餃子", "Q91013")]
    assert spans(ann, "晚饭吃饺子和米饭。", "zh") == [("饺子", "Q91013"), ("米饭", "Q91004")]
    # generic words (city, country) are no spans
    assert spans(ann, "日本の都市、東京と京都。", "ja", topic="place") == [
        ("日本", "Q91017"), ("東京", "Q91020"), ("京都", "Q91021")]


def test_arabic_proclitics_outside_article_inside(ann):
    got = spans(ann, "والكسكس مع زيت الزيتون وبالأرز", "ar")
    assert got == [("الكسكس", "Q91006"), ("زيت الزيتون", "Q91005"), ("الأرز", "Q91004")]


def test_turkish_suffixes_and_designators(ann):
    got = spans(ann, "Japonya'ya gidince İstanbul'dan Tokyo'ya, sonra Antalya ili.", "tr", topic="place")
    assert got == [("Japonya", "Q91017"), ("İstanbul", "Q91022"), ("Tokyo", "Q91020"), ("Antalya", "Q91026")]
    assert spans(ann, "Sıcak çorbayla başlar.", "tr") == [("çorba", "Q91003")]


def test_korean_particles(ann):
    assert spans(ann, "서울에서 도쿄로 갑니다.", "ko", topic="place") == [("서울", "Q91025"), ("도쿄", "Q91020")]
    assert spans(ann, "미소국과 밥을 먹어요.", "ko") == [("미소국", "Q91001"), ("밥", "Q91004")]


def test_inflected_forms_spanned_whole(ann):
    assert spans(ann, "Ужин с пельменями и хлебом.", "ru") == [("пельменями", "Q91008"), ("хлебом", "Q91012")]
    assert spans(ann, "Un plat d'aubergines et de l'hummus.", "fr") == [("aubergines", "Q91007"), ("hummus", "Q91009")]


def test_persian_hindi_thai_places(ann):
    assert spans(ann, "سفر به استان فارس و کیوتوی زیبا", "fa", topic="place") == [("فارس", "Q91023"), ("کیوتو", "Q91021")]
    assert spans(ann, "जापान में टोक्यो सबसे बड़ा शहर है।", "hi", topic="place") == [("जापान", "Q91017"), ("टोक्यो", "Q91020")]
    assert spans(ann, "เที่ยวจังหวัดเลยและโตเกียว", "th", topic="place") == [("เลย", "Q91024"), ("โตเกียว", "Q91020")]


def test_commonness_guard_and_generic_words(ann):
    pytest.importorskip("wordfreq")
    # "pain" is French bread, but an everyday English word; "meal" is no span
    assert spans(ann, "No pain at this meal, only bread.", "en") == [("bread", "Q91012")]


def test_invented_title_names_stay_unlinked(ann):
    """A model's invented dish named in capitals: no part of it is linked, the whole run is
    one span with no entity (GOLD.md's null span); a whole name in capitals still is linked;
    a run whose words name no food (a festival, a place) is no span at all."""
    assert spans(ann, "Try the Seoul Sunset Rice Rolls with rice.", "en") == [
        ("Seoul Sunset Rice Rolls", None), ("rice", "Q91004")]
    assert spans(ann, "Prueba los Cuernos de Arroz Real y arroz.", "es") == [
        ("Cuernos de Arroz Real", None), ("arroz", "Q91004")]
    out = ann.annotate("Prueba los Cuernos de Arroz Real.", lang="es", topic="food")
    assert out[0]["match"] == "title-run" and out[0]["label"] is None and out[0]["evidence"] == []
    assert spans(ann, "Then Pad Thai with shrimp.", "en") == [("Pad Thai", "Q91010"), ("shrimp", "Q91011")]
    assert spans(ann, "At Chinese New Year Eve Dinner we share shrimp.", "en") == [("shrimp", "Q91011")]
    # a conjunction ends a run: two names, each on its own (two capitalized words are no
    # run: Rice is rice there); Turkish ve, and
    assert spans(ann, "Try Seoul Sunset and Rice Rolls.", "en") == [("Rice", "Q91004")]
    assert spans(ann, "Yazın Antalya ve İstanbul çok güzel.", "tr", topic="place") == [
        ("Antalya", "Q91026"), ("İstanbul", "Q91022")]
    # a sentence's first word, no everyday word, begins the run it is followed by; an
    # everyday one (The) does not
    assert spans(ann, "Done. Seoul Sunset Rice Rolls are new.", "en") == [("Seoul Sunset Rice Rolls", None)]
    assert spans(ann, "Done. The Sunset Rice Rolls are new.", "en") == [("Sunset Rice Rolls", None)]
    # only in a topic that says so (invented_names): no place is made up in capitals
    assert spans(ann, "Try the Seoul Sunset Rice Rolls.", "en", topic="place") == []


def test_joined_pieces_never_begin_or_end_with_a_grammatical_word(ann):
    """Chinese pieces joined across scripts keep a one-character everyday word (和 and,
    有 have) out: 和红烧肉 is 和 and 红烧肉, hongshao rou, not a name a syllable longer."""
    pytest.importorskip("wordfreq")
    # in a text about China a romanized key a few letters off names a dish of China
    # (across_local): 和红烧肉, hehongshaorou, would be it too
    assert spans(ann, "晚饭有鱼和红烧肉。", "zh", country="Q91143") == [("红烧肉", "Q91142")]


def test_everyday_word_met_as_a_plural_qualifies_the_name_beside_it(ann):
    """green is an everyday word that names greens only as its other number: right before
    another name it qualifies that name (a green soup) and is no span; alone it is one."""
    pytest.importorskip("wordfreq")
    assert spans(ann, "A green soup, and some green.", "en") == [("soup", "Q91003"), ("green", "Q91145")]


def test_thai_designator_outside_the_span_of_joined_pieces(ann):
    """อำเภอ (district) folds to another spelling (อำ: ํา); still a designator, it is no
    piece of a name joined across scripts (อำเภอปาย, amphoe pai, would meet Amphoe Pai):
    the span is the name, ปาย (GOLD.md: จังหวัดเลย -> เลย)."""
    pytest.importorskip("pythainlp")
    assert spans(ann, "เราไปเที่ยวอำเภอปายกัน", "th", topic="place", country="Q91032") == [("ปาย", "Q91146")]


def test_three_consonants_across_scripts_name_a_place_of_the_texts_countries(ann):
    """ساپورو (Sapporo) has three consonants, sbr: among every place of the world it meets
    Siberia by chance. Such a spelling names a place only of the text's countries (or a
    country, or what has no country: a food)."""
    text = "در زمستان شهر ساپورو زیباست"
    assert spans(ann, text, "fa", topic="place", country="Q91017") == []
    assert spans(ann, text, "fa", topic="place", country="Q91034") == [("ساپورو", "Q91147")]


def test_particle_off_a_name_matched_a_few_letters_off(ann):
    """홋카이도의 (Hokkaido + the genitive 의) meets Hokkaido a few letters off, in a text
    about Japan; 홋카이도, a word Korean knows, takes no such match on its own: the span
    leaves the particle out all the same (GOLD.md: particles outside)."""
    pytest.importorskip("wordfreq")
    assert spans(ann, "겨울에는 홋카이도의 눈이 좋습니다.", "ko", topic="place", country="Q91017") == [
        ("홋카이도", "Q91144")]


def test_short_name_only_from_the_texts_language_or_english(ann):
    """A one-word name of four letters or fewer is taken from the text's language, its kin
    or English only: German Dim (of Dim Sum) is no Croatian dim (smoke), but Pho is the
    English pho; in a Croatian text, its own name is taken."""
    assert spans(ann, "Zum Dim Sum gibt es Pho.", "de") == [("Pho", "Q91076")]
    assert spans(ann, "Dim, dim.", "hr") == [("Dim", "Q91075"), ("dim", "Q91075")]


def test_city_named_as_its_prefecture(ann):
    """奈良 is the prefecture's label and the city's name without 市: the city is meant."""
    assert spans(ann, "奈良へ行きます。", "ja", topic="place") == [("奈良", "Q91061")]


def test_context_chooses_the_entity(ann):
    assert spans(ann, "Springfield", "en", topic="place", country="Q91033") == [("Springfield", "Q91040")]
    assert spans(ann, "Springfield", "en", topic="place", country="Q91034") == [("Springfield", "Q91041")]


def test_span_record_fields(ann):
    (s,) = ann.annotate("miso soup", lang="en", topic="food")
    assert (s["start"], s["end"], s["qid"], s["label"]) == (0, 9, "Q91001", "miso soup")
    assert s["match"] == "exact-label" and s["granularity"] and s["evidence"]


def test_bad_rows_raise(ann):
    with pytest.raises(KgcultError, match="unknown topic"):
        ann.annotate("x", lang="en", topic="nope")
    with pytest.raises(KgcultError, match="unknown language"):
        ann.annotate("x", lang="xx-nowhere", topic="food")
    with pytest.raises(KgcultError, match="lone surrogate"):
        ann.annotate("soup \ud800", lang="en", topic="food")
    with pytest.raises(KgcultError, match="missing field 'text'"):
        list(ann.annotate_many([{"id": 1, "lang": "en", "topic": "food"}]))


ROWS = [
    {"id": "a", "text": "Miso soup and rice.", "lang": "en", "topic": "food"},
    {"id": "b", "text": "朝は味噌汁とご飯。", "lang": "ja", "topic": "food"},
    {"id": "c", "text": "Japonya'ya ve Tokyo'ya.", "lang": "tr", "topic": "place", "country": "Q91017"},
    {"id": "d", "text": "والكسكس مع زيت الزيتون", "lang": "ar", "topic": "food"},
]


def test_cli_rows_deterministic(astore, tmp_path):
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS), encoding="utf-8")
    outs = []
    for n in range(2):
        out = tmp_path / f"out{n}.jsonl"
        r = run_cli(["annotate", "-i", str(inp), "-o", str(out)], astore)
        assert r.exit_code == 0, r.output
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    got = [json.loads(x) for x in outs[0].decode().splitlines()]
    assert [g["id"] for g in got] == ["a", "b", "c", "d"]
    assert [(s["text"], s["qid"]) for s in got[2]["spans"]] == [("Japonya", "Q91017"), ("Tokyo", "Q91020")]
    # input order does not change a row's spans
    rows = ROWS[:]
    random.Random(7).shuffle(rows)
    inp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "shuffled.jsonl"
    assert run_cli(["annotate", "-i", str(inp), "-o", str(out)], astore).exit_code == 0
    shuffled = {json.loads(x)["id"]: x for x in out.read_text(encoding="utf-8").splitlines()}
    assert all(shuffled[json.loads(x)["id"]] == x for x in outs[0].decode().splitlines())


def test_cli_bad_input_names_file_and_line(astore, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"id": 1, "text": "soup", "lang": "en", "topic": "food"}\n'
                    b'\xff\xfe not utf-8\n'
                    b'{"id": 3, "text": "\\ud800 soup", "lang": "en", "topic": "food"}\n'
                    b'{"id": 4, "text": "soup", "lang": "en"}\n'
                    b'{"id": 5, "text": "soup", "lang": "zz", "topic": "food"}\n'
                    b'{"id": 6, "text": "soup", "lang": "en", "topic": "weather"}\n'
                    b'{"id": 7, "text": "' + b"soup " * 5000 + b'", "lang": "en", "topic": "food"}\n'
                    b'{"id": 8, "text": "rice", "lang": "en", "topic": "food"}\n')
    out = tmp_path / "out.jsonl"
    r = run_cli(["annotate", "-i", str(bad), "-o", str(out)], astore)
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert f"{bad}:2: not UTF-8" in r.output and not out.exists()
    r = run_cli(["annotate", "-i", str(bad), "-o", str(out), "--on-error", "skip"], astore)
    assert r.exit_code == 0, r.output
    for line, what in ((2, "not UTF-8"), (3, "text holds a lone surrogate"), (4, "missing field 'topic'"),
                       (5, "unknown language"), (6, "unknown topic"), (7, "text of 25,000 characters")):
        assert f"{bad}:{line}: {what}" in r.output
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == [1, 8]


def test_cli_makieval_metrics_from_raw_answers(astore, tmp_path):
    """answers -> spans -> MakiEval's four metrics, with no LLM."""
    inp = tmp_path / "answers.jsonl"
    rows = [{"id": "en-1", "text": "Miso soup, rice and gyoza.", "lang": "en", "topic": "food", "country": "Q91017",
             "model": "m"},
            {"id": "ja-1", "text": "味噌汁とご飯。", "lang": "ja", "topic": "food", "country": "Q91017", "model": "m"}]
    inp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out, mdir = tmp_path / "spans.jsonl", tmp_path / "metrics"
    r = run_cli(["annotate", "-i", str(inp), "-o", str(out), "--metrics", str(mdir)], astore)
    assert r.exit_code == 0, r.output
    res = json.loads((mdir / "metrics.json").read_text())
    assert {d["lang"]: d["diversity"] for d in res["diversity"]} == {"en": 3, "ja": 2}
    (cons,) = res["consensus"]
    assert (cons["lang_a"], cons["lang_b"], cons["jaccard"]) == ("en", "ja", round(2 / 3, 4))
    spec = {s["lang"]: s["specificity"] for s in res["specificity"]}
    assert spec == {"en": round(1 / 3, 4), "ja": 0.5}  # miso soup is from Japan (P495)


def test_cross_script_guesses(ann):
    """The words no name matched, as the linker's cross-script stages get them: as written,
    without the language's attached grammar, two adjacent words first."""
    from kgcult.annotate import across
    from kgcult.annotate.grammar import grammar

    names = ann.names("place")
    g = [[x.mention for x in grp] for grp in across.guesses("방콕에서 출발", grammar("ko"), names, [])]
    assert g[0][:2] == ["방콕에서", "방콕"]  # 출발 (departure) is a known word: never guessed
    g = across.guesses("وبالبروسكيتا", grammar("ar"), names, [])
    assert "البروسكيتا" in [x.mention for x in g[0]]
    # a word written onto a quotation's end is its grammar ('박물관'이라, "as the museum"),
    # one after a quotation's start may be a name
    g = [x.mention for grp in across.guesses("'방콕'이라 '방콕'", grammar("ko"), names, []) for x in grp]
    assert "이라" not in g and g.count("방콕") == 2
    # a word taken by a span is not guessed; katakana and Han words inside a run are
    text = "東京からホーチミンへ"
    g = across.guesses(text, grammar("ja"), names, [(0, 2)])
    assert [[text[x.start:x.end] for x in grp] for grp in g] == [["ホーチミン"]]


def test_known_word_across_by_its_own_language_name(ann):
    """A word the language knows (ไทย) is still tried across, by the strict matches only (the
    language's own name with a designator: ประเทศไทย); written onto a noun it qualifies
    (อาหารไทย, Thai food) it is an adjective and no span."""
    text = "ภาคใต้ของไทยมีทะเลสวย และอาหารไทยอร่อย"
    assert spans(ann, text, "th", topic="place", country="Q91032") == [("ไทย", "Q91032")]


def test_everyday_loanword_in_katakana_goes_across_as_a_known_word(ann):
    """ラーメン is an everyday Japanese word (Zipf 4.7), which goes across scripts only by
    the strict matches; written in katakana it is a loanword, a name from another
    language: tried as a known word, it reaches ramen by its romanized key."""
    pytest.importorskip("wordfreq")
    from kgcult.annotate import across
    from kgcult.annotate.grammar import grammar

    text = "夕食にラーメンを食べた"
    g = [x for grp in across.guesses(text, grammar("ja"), ann.names("food"), []) for x in grp]
    assert [x.known for x in g if x.mention == "ラーメン"] == [1]
    assert spans(ann, text, "ja", country="Q91017") == [("ラーメン", "Q91148")]


def test_short_hiragana_word_is_its_katakana_name_unless_grammar(ann):
    """A two-kana word in hiragana names what its katakana name names (ねぎ, ネギ), by
    that name only; one as common as grammar (ます, Zipf 6.7, the polite ending) is no
    name, though マス (trout) is one."""
    pytest.importorskip("wordfreq")
    assert spans(ann, "ねぎを入れます", "ja") == [("ねぎ", "Q91150")]


def test_counter_noun_after_a_quantifier_is_no_name(ann):
    """Korean 가지 is the eggplant, and the counter noun "kind": after a quantifier of the
    language (여러 가지, several kinds) it is the counter, no span."""
    text = "여러 가지 반찬과 가지 볶음"
    assert spans(ann, text, "ko") == [("가지", "Q91152")]
    assert ann.annotate(text, lang="ko", topic="food")[0]["start"] == 10  # the second


def test_german_compound_written_as_one_word_goes_to_the_linker(ann):
    """A German word no name matched goes to the linker's compound and reordered stages
    (``across`` in the grammar file): Misosuppe is the name Miso-Suppe written as one word,
    Pitabrot is pita (a name in English) and Brot (bread) in English order."""
    text = "Dazu gibt es Misosuppe und warmes Pitabrot."
    got = [(s["text"], s["qid"], s["match"]) for s in ann.annotate(text, lang="de", topic="food")]
    assert got == [("Misosuppe", "Q91001", "compound"), ("Pitabrot", "Q91155", "reordered")]


def test_participle_after_a_span_qualifies_it(ann):
    """Spanish writes a qualifier after its noun: in "cordero asado" (roast lamb) asado ends
    as a participle does (``adjective_endings``) and qualifies cordero; alone, or after a
    conjunction, it is the dish."""
    got = spans(ann, "Cenamos cordero asado y luego asado con pan.", "es")
    assert got == [("cordero", "Q91156"), ("asado", "Q91157")]
    # Russian writes it before (adjective_endings_before): варёный (boiled) рис, not варенье
    pytest.importorskip("snowballstemmer")
    assert spans(ann, "варёный рис и варенье", "ru") == [("рис", "Q91004"), ("варенье", "Q91158")]


def test_known_words_across_keep_to_the_texts_countries():
    from kgcult.annotate.annotator import _coherent

    assert _coherent({"country": ["Q17"]}, {"Q17", "Q884"})
    assert not _coherent({"country": ["Q16"]}, {"Q17"})   # a region of the same name elsewhere
    assert _coherent({"country": []}, {"Q17"})            # a food has no country


def test_thai_pieces_joined_across_scripts(ann):
    """A foreign name the Thai word list lacks comes cut into the words it contains: the
    guesses join up to three adjacent ones, longest first."""
    from kgcult.annotate import across
    from kgcult.annotate.grammar import grammar

    names = ann.names("place")
    text = "ไปปูซานเพื่อเดิน"
    groups = across.guesses(text, grammar("th"), names, [])
    assert any("ปูซาน" in [x.mention for x in grp] for grp in groups)


def test_russian_case_endings_with_a_folded_short_i():
    """The fold takes the breve off й: the stemmer reads the ending as written (говядинои
    -> говядиной), so the instrumental case meets the name."""
    from kgcult.annotate.names import stem_key

    assert stem_key(("говядинои",), "ru") == stem_key(("говядина",), "ru")
    assert stem_key(("колбасои",), "ru") == stem_key(("колбаса",), "ru")


def test_lower_case_word_names_a_common_noun_with_a_capitalized_label(ann):
    """A label with a capital (a Turkish label of a food) does not make the food a proper
    name when other languages write it in lower case."""
    from kgcult.annotate.names import capitalized

    assert not any(capitalized(c) for c in ann.names("food").exact["suppe"])  # German capitals say nothing
    assert all(capitalized(c) for c in ann.names("place").exact["kyoto"])      # a proper name everywhere


def test_capitalized_word_inside_a_sentence_is_a_proper_name(ann):
    """A frequent word may still be a city's name: capitalized inside a sentence, in a
    language that capitalizes proper names only, naming what every language capitalizes."""
    from kgcult.annotate.finder import Found

    codes = ann.names("place").exact["kyoto"]
    tr = ann.finder("place", "tr")
    text = "Sonra Kyoto'ya gittik. Kyoto güzel, kyoto da."
    at = [i for i in range(len(text)) if text.lower().startswith("kyoto", i)]
    f = [Found(i, i + 5, codes, "exact", "kyoto", 1) for i in at]
    assert [tr._proper(text, x) for x in f] == [True, False, False]  # inside; a sentence's first word; lower case
    assert not ann.finder("place", "de")._proper(text, f[0])          # German capitalizes every noun


def test_japanese_words_across_scripts_by_the_segmenter(ann):
    """Japanese runs are cut into words (maximal matching over wordfreq's list): hiragana words
    of the language's length go across scripts, particles and endings do not."""
    from kgcult.annotate import across
    from kgcult.annotate.grammar import grammar

    text = "丸いたこ焼きを食べます"
    g = across.guesses(text, grammar("ja"), ann.names("food"), [])
    got = [text[x.start:x.end] for grp in g for x in grp]
    assert "たこ焼き" in got and "ます" not in got


def test_everyday_word_in_a_kin_languages_names_only_is_weak():
    """An everyday Hindi word that only a Marathi label carries is taken only where the
    text is about the entity's country (the span is marked weak)."""
    from kgcult.annotate.finder import Finder, Found
    from kgcult.annotate.grammar import grammar
    from kgcult.annotate.names import Names, code

    w = "यात्रा"
    names = Names(topic="place", langs=["hi", "mr"], exact={w: (code(7, 1, 0, 0),), "x": (code(8, 0, 0, 0),)},
                  common={"hi": frozenset({w})})
    fd = Finder(names, grammar("hi"), "hi")
    got = fd.kept(w, Found(0, len(w), names.exact[w], "exact", w, 1))
    assert got is not None and got.weak
    names.exact[w] = (code(7, 0, 0, 0),)   # a Hindi label of its own: not weak
    assert not fd.kept(w, Found(0, len(w), names.exact[w], "exact", w, 1)).weak


def test_place_named_by_a_common_word_needs_the_texts_country(ann):
    """The place topic marks a one-word name that is an everyday word of the language as
    weak (grammar file: topics.place.coherent_common)."""
    from kgcult.annotate.finder import Found

    fd = ann.finder("place", "ja")
    assert fd.coherent_common and not ann.finder("food", "ja").coherent_common
    names = fd.names
    key = next(k for k in sorted(names.common.get("ja", ())) if k in names.unspaced)
    got = fd.kept(key, Found(0, len(key), names.unspaced[key], "exact", key, 1))
    assert got is None or got.weak


def test_namesake_city_located_nowhere_counts_as_inside():
    from types import SimpleNamespace

    from kgcult.annotate.annotator import _inside

    ix = SimpleNamespace(edges={"Qcity": [("P31", "Q515")], "Qtown": [("P131", "Qother")],
                                "Qin": [("P131", "Qpref")]})
    assert _inside(ix, "Qin", "Qpref") and _inside(ix, "Qcity", "Qpref")
    assert not _inside(ix, "Qtown", "Qpref") and not _inside(ix, "Qpref", "Qpref")


def test_generic_words_with_their_plurals(ann):
    assert spans(ann, "Our dinners end with soup.", "en") == [("soup", "Q91003")]


def test_nominal_endings_keep_verbs_off_names():
    """With the language's noun endings, a name's word is inflected only by them."""
    from kgcult.annotate.finder import _inflection_of

    it = ("", "a", "e", "i", "o", "he", "hi", "s")
    assert _inflection_of("birre", "birra", frozenset(), it) and _inflection_of("quesadillas", "quesadilla", frozenset(), it)
    assert not _inflection_of("mangiano", "mango", frozenset(), it)
    assert not _inflection_of("salato", "sale", frozenset(), it)
    assert _inflection_of("mangiano", "mango", frozenset())  # without endings: the looser rule
    from kgcult.annotate.grammar import grammar

    es, fr = grammar("es").endings, grammar("fr").endings
    assert _inflection_of("nueces", "nuez", frozenset(), es) and _inflection_of("tomates", "tomate", frozenset(), es)
    assert not _inflection_of("rellenas", "relleno", frozenset(), es)  # an adjective's feminine plural
    assert _inflection_of("oignons", "oignon", frozenset(), fr)
    assert not _inflection_of("fetes", "feta", frozenset(), fr)  # fêtes, holidays, are no feta
    # an everyday word: only as the other number of one noun
    num = grammar("it").number
    assert _inflection_of("birra", "birre", frozenset({"birra"}), it, num)
    assert not _inflection_of("porta", "porto", frozenset({"porta"}), it, num)
    assert not _inflection_of("birra", "birre", frozenset({"birra"}), it)


def test_everyday_word_meets_a_plural_label_of_its_noun(ann):
    """tea is the other number of the label Mint teas; Wein, another language's label,
    is looked for first among the forms of German's own names (the alias Weine)."""
    pytest.importorskip("wordfreq")
    assert spans(ann, "A sweet mint tea.", "en") == [("mint tea", "Q91097")]
    assert spans(ann, "Dazu ein Wein.", "de") == [("Wein", "Q91099")]


def test_word_without_its_suffix_keeps_its_own_tier(ann):
    """A known word with a particle on (남부의, of the south) is tried without it as the
    known word it is: the stricter kinds of match only."""
    pytest.importorskip("wordfreq")
    from kgcult.annotate import across
    from kgcult.annotate.grammar import grammar

    g = across.guesses("남부의 바다", grammar("ko"), ann.names("place"), [])
    tiers = {x.mention: x.known for grp in g for x in grp}
    assert tiers["남부"] >= 1


def test_proclitic_before_the_article_stays_outside():
    """و + ال begins a word only as a proclitic before the article: the span leaves و out
    (GOLD.md: و[الكسكس]), whatever the shorter form names by itself."""
    from kgcult.annotate.across import Guess
    from kgcult.annotate.annotator import _proclitic_article
    from kgcult.annotate.grammar import grammar

    text = "زيت الزيتون والكمون"
    whole = Guess(12, 19, "والكمون")
    assert _proclitic_article(text, whole, Guess(13, 19, "الكمون"), grammar("ar"))
    assert not _proclitic_article(text, whole, Guess(14, 19, "لكمون"), grammar("ar"))
    assert not _proclitic_article(text, whole, Guess(13, 19, "الكمون"), grammar("ru"))



def test_japanese_segmented_by_word_frequency_and_bounded(ann):
    """Japanese and Chinese runs are cut into the cheapest sequence of wordfreq's words (a
    unigram model: 日本|に, not 日|本に); a Japanese name starts and ends at those words:
    奈良 in 奈良公園 (a park: no span) is a piece of a word."""
    pytest.importorskip("wordfreq")
    from kgcult.annotate.segment import segment

    run = "日本に行った"
    assert [run[a:b] for a, b in segment(run, "lexicon", "ja")][:2] == ["日本", "に"]
    assert spans(ann, "奈良公園を歩いた。", "ja", topic="place") == []
    assert spans(ann, "奈良に行った。", "ja", topic="place") == [("奈良", "Q91061")]
    # a word the list has in katakana only is a word in hiragana too (トンカツ, とんかつ)
    run = "揚げたてのとんかつです"
    assert "とんかつ" in [run[a:b] for a, b in segment(run, "lexicon", "ja")]


def test_lexicon_trie_cuts_as_the_whole_list(tmp_path):
    """The segmenter's word list kept beside the index (``wordlists.Lexicon``) is a
    memory-mapped trie with its costs by key id: each word's cost, the words a run continues
    with at each letter, and the cuts of maximal matching are those of the list in memory;
    files that do not agree are refused."""
    import random

    from kgcult.annotate.wordlists import Lexicon
    from kgcult.link.wordcut import max_match

    words = {"日本": 310, "日": 420, "本": 400, "に": 250, "行った": 380, "東京": 330, "行": 500,
             "日本に": 700, "った": 450}
    path = tmp_path / "annotate-lexicon-ja-x-v1.costs"
    Lexicon.write(path, words)
    lex, mem = Lexicon.mmap(path), Lexicon(words)
    assert all(lex.get(w) == c and w in lex for w, c in words.items()) and "京" not in lex
    run = "日本に行った東京"
    for i in range(len(run)):
        assert list(lex.starting(run, i, 4)) == list(mem.starting(run, i, 4)) == [
            (j, words[run[i:j]]) for j in range(i + 1, min(len(run), i + 4) + 1) if run[i:j] in words]
    rng = random.Random(3)
    letters = "日本に行った東京の"
    for _ in range(200):  # the same cuts as the dict, costs and ties alike
        r = "".join(rng.choice(letters) for _ in range(rng.randint(1, 12)))
        assert (max_match(r, lex, 24, uncovered=2000, shortest=1) == max_match(r, mem, 24, uncovered=2000, shortest=1)
                == max_match(r, words, 24, uncovered=2000, shortest=1)), r
    path.write_bytes(path.read_bytes()[:-2])  # one cost short: refused, rebuilt by its caller
    with pytest.raises(ValueError, match="costs for"):
        Lexicon.mmap(path)


def test_thai_word_list_kept_as_a_trie_cuts_as_the_list(ann, monkeypatch):
    """pythainlp's Thai word list, kept beside the index as a trie (each word costing 1),
    cuts a run as maximal matching over the list itself does."""
    pytest.importorskip("pythainlp")
    from kgcult.annotate import wordlists
    from kgcult.link.thai import corpus
    from kgcult.link.wordcut import max_match

    ann.finder("place", "th")  # the index's directory is the lists' place
    wordlists.thai_words()  # built and saved, once
    wordlists._WORDS.pop(("thai",), None)
    lex, words = wordlists.thai_words(), corpus("words_th.txt")
    assert isinstance(lex, wordlists.Lexicon) and lex._trie is not None  # read from its files
    asked = []
    monkeypatch.setattr(wordlists, "installed_version", lambda pkg: asked.append(pkg) or "0")
    assert wordlists.thai_words() is lex and asked == []  # the list in hand: pythainlp's release not read again
    for run in ("เที่ยวจังหวัดเลยและโตเกียว", "อาหารไทยอร่อยมาก", "ไปเชียงใหม่กับกรุงเทพ"):
        assert max_match(run, lex, 24) == max_match(run, words, 24), run


def test_dictionary_file_keeps_each_language_part_apart(tmp_path):
    """A topic's dictionary file keeps each language's stems, forms, common and own words
    marshalled apart (``names.PerLanguage``): read back, a language's part is what was
    saved, and decoded only when asked for. Its exact names and their beginnings are
    tries beside it, memory-mapped when read: the same codes, in the same order."""
    import marshal

    from kgcult.annotate.names import Names

    names = Names(topic="food", langs=["de", "fr"], exact={"kase": (4, 9), "brot": (12,)},
                  heads={"kase", "\x00kas"},
                  stem={"de": {"kas": (4,)}, "fr": {"fromag": (8,)}}, forms={"de": {"kas": ("kase",)}},
                  common={"de": frozenset({"kase"})}, own={"fr": frozenset({2})})
    p = tmp_path / "annotate-food-x-v1.marshal"
    names.save(p)
    assert sorted(f.name for f in tmp_path.iterdir()) == [
        "annotate-food-x-v1.exact.marisa", "annotate-food-x-v1.heads.marisa", "annotate-food-x-v1.marshal",
        "annotate-food-x-v1.unspaced.marisa"]
    back = Names.load(p)
    assert back is not None and dict(back.exact.items()) == names.exact
    assert back.exact.get("kase") == (4, 9) and back.exact.get("kas") is None and "brot" in back.exact
    assert "\x00kas" in back.heads and "kas" not in back.heads
    assert back.stem._parts["fr"] == marshal.dumps({"fromag": (8,)})  # not decoded yet
    assert back.stem.get("de") == {"kas": (4,)} and back.stem["fr"] == {"fromag": (8,)}
    assert back.stem.get("ru") is None and "ru" not in back.stem and sorted(back.stem) == ["de", "fr"]
    assert back.forms["de"] == {"kas": ("kase",)} and back.common.get("de") == frozenset({"kase"})
    assert back.own.get("fr") == frozenset({2}) and back.own.get("de", ()) == ()
    again = tmp_path / "again" / "annotate-food-x-v1.marshal"
    again.parent.mkdir()
    back.save(again)  # saved again as read
    assert Names.load(again).stem["fr"] == {"fromag": (8,)} and Names.load(again).exact.get("kase") == (4, 9)
    (tmp_path / "annotate-food-x-v1.heads.marisa").unlink()
    with pytest.raises(RuntimeError):  # a part missing: load_or_build builds the dictionary again
        Names.load(p)


def test_unspaced_names_found_in_a_run_as_an_automaton_finds_them(tmp_path):
    """The names of unspaced scripts are found in a run by walking their trie from each
    letter: every occurrence, overlapping, by end and then start (the order an Aho-Corasick
    automaton reports them in), from the dictionary as built and as read back."""
    import random

    from kgcult.annotate.names import Names

    unspaced = {"东京": (1,), "京都": (2,), "东": (3,), "京": (4,), "东京都": (5,), "都": (6,), "北海道": (7,)}
    names = Names(topic="place", langs=["zh"], unspaced=unspaced)
    p = tmp_path / "annotate-place-x-v1.marshal"
    names.save(p)
    back = Names.load(p)
    assert back is not None and bool(back.unspaced) and back.unspaced["东京都"] == (5,)
    rng = random.Random(5)
    for _ in range(200):
        run = "".join(rng.choice("东京都北海道的") for _ in range(rng.randint(0, 14)))
        want = sorted(((run[s:e], s, e) for s in range(len(run)) for e in range(s + 1, len(run) + 1)
                       if run[s:e] in unspaced), key=lambda m: (m[2], m[1]))
        assert names.unspaced_in(run) == back.unspaced_in(run) == want, run
        # from a segmenter's word boundaries only: the names that begin at one of them
        starts = {i for i in range(len(run) + 2) if rng.random() < 0.5}
        assert back.unspaced_in(run, starts) == [m for m in want if m[1] in starts], run
    assert Names(topic="food", langs=[]).unspaced_in("东京都") == []  # no names: nothing found


def test_lower_case_word_is_no_place_name(ann):
    """In the place topic (proper names), a word written in lower case in a cased script
    never names what every language capitalizes (Turkish adalar, the islands: Adalar)."""
    assert spans(ann, "Sonra Kyoto'ya gittik.", "tr", topic="place") == [("Kyoto", "Q91021")]
    assert spans(ann, "sonra kyoto gibi bir yer.", "tr", topic="place") == []


def test_thai_name_spelled_by_ear_only_where_the_word_list_lacks_it(ann, astore):
    """A foreign name Thai spells by ear, which the segmenter cuts into letters its list
    lacks (คย็|อง|จู), is the place of the text's country its consonants are heard as
    (the linker's xheard stage); a word of the list heard the same way (พระอาทิตย์, the sun,
    as Parit) is a word, though the linker alone would take it."""
    from kgcult.link import Linker

    text = "พระอาทิตย์ตกที่คย็องจูสวยมาก"
    assert spans(ann, text, "th", topic="place", country="Q884") == [("คย็องจู", "Q91182")]
    assert spans(ann, text, "th", topic="place") == []
    from kgcult.store import Store

    s = Store(astore, read_only=True)
    try:
        r = Linker.open(s, stages=["xscript", "xfuzzy", "xheard"]).link(
            "พระอาทิตย์", lang="th", topic="place", country="Q884")
    finally:
        s.close()
    assert (r["qid"], r["match"]) == ("Q91183", "cross-script-heard"), r
    # a place the graph locates nowhere, within two edits as heard, for letters the list lacks
    assert spans(ann, "ฤดูร้อนที่โพรวองซ์", "th", topic="place", country="Q884") == [("โพรวองซ์", "Q91184")]


def test_thai_pieces_joined_beyond_join_pieces_only_over_letters_the_list_lacks(ann):
    """Thai joins up to join_pieces (3) words of the segmenter when guessing across scripts,
    and up to join_foreign (4) where the pieces hold letters its word list lacks: เบ|รอ|ตา|ญ
    (Bretagne) is guessed whole; four listed words never are."""
    from kgcult.annotate import across
    from kgcult.annotate.grammar import grammar

    g = grammar("th")
    assert (g.join_pieces, g.join_foreign) == (3, 4)
    foreign = "เบรอตาญ"
    listed = "ภูเขาทะเลสาบน้ำตกป่า"  # ภูเขา|ทะเลสาบ|น้ำตก|ป่า: mountains, lake, waterfall, forest

    def guessed(text):
        return {x.mention for grp in across.guesses(text, g, ann.names("place"), []) for x in grp}

    assert foreign in guessed(foreign)
    assert listed not in guessed(listed)


def test_arabic_word_meets_a_name_in_a_script_that_writes_its_vowels(ann):
    """A word Arabic knows (الطماطم) that no Latin name's consonants spell is the entity a
    script writing its vowels names so (Amharic ቲማቲም, the linker's xvowel stage), by four
    consonants; a known word that meets such a name by three (ملعقة, spoon: Russian малка)
    is a word."""
    assert spans(ann, "ملعقة من الطماطم", "ar") == [("الطماطم", "Q91185")]


def test_region_beside_a_namesake_located_nowhere_is_dropped():
    """Candidates of one name: a region with places in it, itself located in a country, and
    a place located nowhere the graph says (the mirror lost its P131): the place is meant."""
    from types import SimpleNamespace

    from kgcult.link.disambiguate import containers

    ix = SimpleNamespace(qids=["Qpref", "Qcity", "Qcountry"], is_class=set(),
                         edges={"Qpref": [("P131", "Qcountry")], "Qcity": [("P31", "Q515")], "Qcountry": []},
                         inbound=lambda pid: {"Qpref": 40, "Qcountry": 47})
    assert containers({0, 1}, ix) == {0}
    assert containers({1, 2}, ix) == set()   # a country is no region of another


def test_cognate_keys_across_spellings():
    """Each language's orthographic correspondences, then the shared classes: one key for
    the same word in several spellings; none for a language without rules."""
    from kgcult.annotate.grammar import cognate_key
    from kgcult.annotate.text import fold

    soup = {cognate_key(fold(w), lg) for w, lg in
            (("Suppe", "de"), ("soupe", "fr"), ("soup", "en"), ("sopa", "es"), ("zuppa", "it"), ("soep", "nl"))}
    assert soup == {"sup"}
    choc = {cognate_key(fold(w), lg) for w, lg in
            (("cioccolato", "it"), ("chocolate", "es"), ("chocolat", "fr"), ("Schokolade", "de"))}
    assert len(choc) == 1
    assert cognate_key("insalata", "it") == cognate_key("ensalada", "es") != cognate_key("salade", "fr")
    assert cognate_key("sup", "tr") is None and cognate_key("ab", "it") is None


def test_cognate_names_an_entity_without_a_label_in_the_texts_language(ann):
    """A word no name matched meets, by its cognate key, one common noun named so in two
    other languages; never a proper name, a name of one language only, an everyday word,
    or (German) a word in lower case."""
    got = spans(ann, "Una tazza di cioccolato, poi zuppa.", "it")
    assert got == [("cioccolato", "Q91070"), ("zuppa", "Q91003")]
    assert [s["match"] for s in ann.annotate("Una zuppa.", lang="it", topic="food")] == ["cognate-label"]
    assert spans(ann, "Dann eine Schokolade.", "de") == [("Schokolade", "Q91070")]
    assert spans(ann, "dann schokolade.", "de") == []
    assert spans(ann, "Poi una zobra e un custardo.", "it") == []
    assert spans(ann, "Un chocolate caliente.", "es") == [("chocolate", "Q91070")]  # its own label: exact


def test_romanization_a_few_letters_off_names_a_place_of_the_texts_country(ann):
    """Thai takes a cross-script match within a few edits (ไซ่ง่อน saingon ~ Saigon) only
    for a place of a country the text is about (``across_local``): among every place of
    the world it is chance. โฮจิมินห์ (hochimin by the rules) needed that too; read as a
    foreign name is written in Thai (its final ห์ said) it is Ho Chi Minh's key, taken in
    any text."""
    pytest.importorskip("pythainlp")
    text = "ไปเที่ยวไซ่ง่อน"
    assert spans(ann, text, "th", topic="place", country="Q91080") == [("ไซ่ง่อน", "Q91117")]
    assert spans(ann, text, "th", topic="place", country="Q91017") == []
    assert spans(ann, text, "th", topic="place") == []
    assert spans(ann, "ไปเที่ยวโฮจิมินห์", "th", topic="place", country="Q91017") == [("โฮจิมินห์", "Q91081")]


def test_local_matches_keep_to_the_texts_countries():
    from kgcult.annotate.annotator import _local

    assert _local({"qid": "Q5", "country": ["Q17"]}, {"Q17"})
    assert _local({"qid": "Q17", "country": []}, {"Q17"})   # the country itself
    assert not _local({"qid": "Q5", "country": []}, {"Q17"})  # no country: not local
    assert not _local({"qid": "Q5", "country": ["Q17"]}, set())


def test_compound_found_by_its_parts_in_another_language(ann):
    """Two names side by side, at most one short word between, whose entities make another
    entity's name in some language (olive oil: olive, oil) name that entity; a comma or a
    longer word between them keeps two spans."""
    got = ann.annotate("Un chorrito de aceite de oliva.", lang="es", topic="food")
    assert [(s["text"], s["qid"], s["match"]) for s in got] == [("aceite de oliva", "Q91005", "compound-label")]
    assert spans(ann, "Pan con aceite, oliva y sal.", "es") == [("aceite", "Q91074"), ("oliva", "Q91073")]
    assert spans(ann, "Aceite para oliva.", "es") == [("Aceite", "Q91074"), ("oliva", "Q91073")]


def test_compound_parts_and_gaps():
    from kgcult.annotate.finder import _filler
    from kgcult.annotate.names import code, compounds

    exact = {"olive oil": (code(5, 0, 0, 0),), "olive": (code(1, 0, 0, 0),), "oil": (code(2, 0, 0, 0),),
             "oil of olives": (code(6, 0, 0, 0),), "hot oil": (code(7, 0, 0, 0),)}
    comp = compounds(exact, frozenset())
    assert comp == {"1 2": (code(5, 0, 0, 0),)}  # "olives" and "hot" name nothing: no compound
    assert _filler(" ") and _filler(" de ") and _filler(" d'") and not _filler(", ") and not _filler(" para ")


def test_known_persian_word_across_scripts_for_a_place_of_the_texts_country(ann):
    """Persian knows هیروشیما as a word (wordfreq): its romanized consonants are taken
    (``across_known_local``) for a place of a country the text is about only."""
    pytest.importorskip("wordfreq")
    text = "سفر به هیروشیما"
    assert spans(ann, text, "fa", topic="place", country="Q91017") == [("هیروشیما", "Q91082")]
    assert spans(ann, text, "fa", topic="place", country="Q91031") == []


def test_russian_case_form_the_stemmer_cuts_from_its_name(ann):
    """Snowball stems баклажан to баклажа and баклажанов to баклажан: the language's case
    endings (``case_endings``) take the word to its name, spanned whole."""
    from kgcult.annotate.names import stem_key

    assert stem_key(["баклажан"], "ru") != stem_key(["баклажанов"], "ru")
    assert spans(ann, "Рагу из баклажанов.", "ru") == [("баклажанов", "Q91007")]
    assert spans(ann, "Рагу из баклажанами.", "ru") == [("баклажанами", "Q91007")]
    assert spans(ann, "Это баклажанище.", "ru") == []  # no case ending: no name
    # a fleeting vowel put back (кабачков: кабачок); a name of three letters after a
    # two-letter base (чаем: чай)
    assert spans(ann, "Рагу из кабачков.", "ru") == [("кабачков", "Q91102")]
    assert spans(ann, "Вечер с чаем.", "ru") == [("чаем", "Q91103")]
    # the last word of a longer name so too
    assert spans(ann, "Кастрюлю том яма с лаймом.", "ru") == [("том яма", "Q91096")]


def test_fuzzy_stage_only_for_mentions_that_may_take_it(ann):
    """A mention is asked of the stages whose kinds of match it may take only: one no fuzzy
    match is taken for goes to a linker without the fuzzy stage."""
    pytest.importorskip("pythainlp")
    from kgcult.annotate import across

    a = across.Across(ann.ix, location=ann.location)
    if "xfuzzy" not in a.stages:
        pytest.skip("the installed linker has no fuzzy cross-script stage")
    m = ["ไซ่ง่อน"]  # saingon, a letter off Saigon
    assert a.resolve(m, "th", "place", "Q91080", [("cross-script",)]) == [None]
    assert a.resolve(m, "th", "place", "Q91080", [("cross-script", "cross-script-fuzzy")])[0]["qid"] == "Q91117"
    assert a.resolve(m, "th", "place", "Q91080")[0]["qid"] == "Q91117"
    assert a.resolve(m, "th", "place", "Q91080", [()]) == [None]  # no kind to take: not asked


def test_fuzzy_cross_script_match_keeps_to_the_mentions_country(ann):
    """Within a few edits a romanization meets some place of the world by chance: a mention
    given with a country takes a fuzzy cross-script match only for a place that is that
    country or lies in it (``kgcult link`` as ``kgcult annotate``); without one, any."""
    pytest.importorskip("pythainlp")
    from kgcult.link import Linker

    lk = Linker.open(ann.location, stages=["exact", "xscript", "xfuzzy"])
    rows = [{"mention": "ไซ่ง่อน", "lang": "th", "topic": "place", "country": c} for c in ("Q91080", "Q91017", None)]
    got = [(r["qid"], r["match"]) for r in lk.link_many([{k: v for k, v in r.items() if v} for r in rows])]
    assert got == [("Q91117", "cross-script-fuzzy"), (None, None), ("Q91117", "cross-script-fuzzy")], got


def test_same_key_before_a_fuzzy_match_of_a_longer_form(astore):
    """Among the forms of a word, one the linker finds by the same romanized key is taken
    before one a few letters off (교토로, Kyoto with a particle, is one edit from Goto)."""
    from kgcult.annotate import Annotator

    def answer(qid, match):
        return {"qid": qid, "label": None, "label_en": qid, "match": match, "evidence": [],
                "granularity": "item", "granularity_score": 1, "country": ["Q91017"]}

    class Fake:
        def resolve(self, mentions, lang, topic, country, fuzzy=None):
            table = {"가나다로": answer("Q91020", "cross-script-fuzzy"), "가나다": answer("Q91021", "cross-script")}
            return [table.get(m) for m in mentions]

    a = Annotator.open(astore)
    a._across = Fake()
    got = a.annotate("가나다로 갔다", lang="ko", topic="place", country="Q91017")
    assert [(s["text"], s["qid"]) for s in got] == [("가나다", "Q91021")]


def test_borrowed_plural_names_what_its_singular_names_in_any_language(ann):
    """A word no name matched that ends in one of the language's ``loan_plurals`` names
    what its singular names in any language (Tacos, tacos: taco), spanned whole; never
    an everyday word of the language, nor a singular under four letters."""
    pytest.importorskip("wordfreq")
    assert spans(ann, "Dazu gibt es Tacos.", "de") == [("Tacos", "Q91090")]
    assert spans(ann, "Unos tacos al pastor.", "it") == [("tacos", "Q91090")]
    assert spans(ann, "Drei Tacosen.", "de") == []  # no plural ending of German's list
    assert spans(ann, "Poi lasagne al forno.", "it") == [("lasagne", "Q91106")]  # Italian's own plural (a/e)
    from kgcult.annotate.grammar import grammar

    assert grammar("tr").loan_plurals == ()  # Turkish suffixes stay outside the span instead


def test_everyday_word_that_many_languages_share_names_their_entity(ann):
    """An everyday word of the text's language met in other languages' names is that word,
    not a name (German Bier, Dutch bier); a word five languages name one entity by
    (pizza) is the same word in the text's language, where the mirror lacks its label."""
    pytest.importorskip("wordfreq")
    assert spans(ann, "Dann eine Pizza.", "de") == [("Pizza", "Q91091")]
    assert spans(ann, "Dann ein Bier.", "de") == []


def test_place_named_as_cldr_names_it_in_the_texts_language(ann):
    """A word no name matched that is CLDR's name of a place in the text's language (the
    linker's ``gazetteer`` stage) is that place, by its English label, whatever the text's
    country; the word inside a longer run of Thai letters is cut out by the segmenter."""
    pytest.importorskip("babel")
    pytest.importorskip("pythainlp")
    assert spans(ann, "เวียดนามเป็นประเทศที่สวยงาม", "th", topic="place") == [("เวียดนาม", "Q91080")]
    assert spans(ann, "हम वियतनाम गए।", "hi", topic="place") == [("वियतनाम", "Q91080")]
    assert [s["match"] for s in ann.annotate("हम वियतनाम गए।", lang="hi", topic="place")] == ["gazetteer"]


def test_designator_written_as_part_of_a_name_stays_in_the_span(ann):
    """Thai เกาะ (island) is part of an island's name (``designators.inside``): the span
    keeps it, though the linker finds the place without it too (Koh Lanta as lanta)."""
    pytest.importorskip("pythainlp")
    assert spans(ann, "ไปเที่ยวเกาะลันตา", "th", topic="place") == [("เกาะลันตา", "Q91093")]


def test_one_character_word_of_the_segmenter_by_its_label(ann):
    """A name of one character is a span where the segmenter cuts it as a word (焼いた|魚),
    by a label in the text's language only: an alias of one character is an abbreviation."""
    pytest.importorskip("wordfreq")
    assert spans(ann, "焼いた魚と黒", "ja") == [("魚", "Q91094")]


def test_one_character_word_beside_another_cut_alone_is_a_piece_of_a_word(ann):
    """A word the segmenter's list lacks is cut letter by letter (鮭|魚|丼, salmon-fish
    bowl): its one-character pieces are no names. Beside a function word cut alone (の),
    or where the list has the neighbour as a longer word, a one-character name stays."""
    pytest.importorskip("wordfreq")
    assert spans(ann, "昨日は鮭魚丼を食べた", "ja") == []
    assert spans(ann, "白身の魚を焼いた", "ja") == [("魚", "Q91094")]


def test_name_ending_an_invented_hyphenated_compound_is_no_span(ann):
    """A name that ends a hyphenated word whose first part names nothing is part of a name
    the writer made up (Mondschein-Tacos): no span; where the first part is a name, or the
    name begins the compound, it is one (Pizza-Tacos; Tacos-Abend)."""
    assert spans(ann, "Dazu gibt es Mondschein-Tacos.", "de") == []
    assert spans(ann, "Dazu gibt es Pizza-Tacos.", "de") == [("Pizza", "Q91091"), ("Tacos", "Q91090")]
    assert spans(ann, "Ein Tacos-Abend.", "de") == [("Tacos", "Q91090")]


def test_turkish_compound_whose_head_takes_a_possessive_is_one_name(ann):
    """A name with a possessive suffix after another word heads a compound (mercimek
    çorbası, lentil soup) that names another dish: neither word alone is a span; the name
    with another suffix, or first in its sentence, still is one."""
    assert spans(ann, "Akşam mercimek çorbası içilir.", "tr") == []
    assert spans(ann, "Sıcak çorbayla başlar.", "tr") == [("çorba", "Q91003")]
    assert spans(ann, "Çorbası sıcaktır.", "tr") == [("Çorba", "Q91003")]


def test_the_prompts_country_among_a_names_entities_is_meant(ann):
    """한국 is a region's label and South Korea's alias: in a text about South Korea (the
    prompt's country) it is South Korea; elsewhere the label decides."""
    assert spans(ann, "한국 여행", "ko", topic="place", country="Q91101") == [("한국", "Q91101")]
    got = ann.annotate("한국 여행", lang="ko", topic="place", country="Q91101")
    assert got[0]["decided_by"][0]["by"] == "prompt_country"
    assert spans(ann, "한국 여행", "ko", topic="place") == [("한국", "Q91100")]


def test_link_index_makes_the_annotators_dictionaries_ready(tmp_path):
    """`kgcult link index` builds the dictionaries of the grammar file's topics beside the
    label index, so that a first `kgcult annotate` only reads them; a second run builds none."""
    from kgcult.store import Store, hierarchy

    path = tmp_path / "store"
    s = Store(path)
    s.load([FIX / "graph.ttl"], graph="annotatefixture")
    hierarchy.build(s)
    s.close()
    r = run_cli(["link", "index"], path)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)["annotate"]
    assert out["built"] == ["food", "place"] and "th" in out["languages"]
    ix_dir = next(tmp_path.glob("store.link-index/labels-*"))
    assert {p.name.split("-")[1] for p in ix_dir.glob("annotate-*.marshal")} >= {"food", "place"}
    again = json.loads(run_cli(["link", "index"], path).stdout)["annotate"]
    assert again["built"] == []


def test_other_versions_dictionaries_kept_but_the_newest_few(tmp_path):
    """Saving a dictionary removes the files of other grammar files or formats beside it
    (a version's marshalled file and its tries together) but the newest
    :data:`~kgcult.annotate.saved.KEEP_OTHERS`: two checkouts sharing a store keep each other's."""
    import os

    from kgcult.annotate import saved

    for i, h in enumerate(["aaa", "bbb", "ccc", "ddd"]):
        for ext in ("marshal", "exact.marisa", "heads.marisa"):
            f = tmp_path / f"annotate-food-{h}-v1.{ext}"
            f.write_bytes(b"x")
            os.utime(f, (1000 + i, 1000 + i))
    (tmp_path / "annotate-words-en-aaa-v1.everyday.marisa").write_bytes(b"x")  # another prefix: kept
    (tmp_path / "annotate-food-eee-v1.marshal").write_bytes(b"new")
    saved.remove_older(tmp_path / "annotate-food-eee-v1.marshal", "annotate-food")
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == [f"annotate-food-{h}-v1.{ext}" for h in ("ccc", "ddd") for ext in
                    ("exact.marisa", "heads.marisa", "marshal")] + [
        "annotate-food-eee-v1.marshal", "annotate-words-en-aaa-v1.everyday.marisa"]


def test_workers_take_whole_languages_the_dearest_first():
    """`-j` gives the workers whole languages (a language with texts of both topics loads
    its word lists and romanizers once), the dearest first, each to the worker free next;
    a language that goes across scripts weighs 8 times its characters: two Japanese texts
    outweigh an English one twice as long."""
    from kgcult.annotate import parallel
    from kgcult.annotate.rows import TextRow

    rows = [TextRow(id=1, text="sushi " * 100, lang="en", topic="food", country=None),
            TextRow(id=2, text="寿司" * 50, lang="ja", topic="food", country=None),
            TextRow(id=3, text="Sushi " * 10, lang="de", topic="food", country=None),
            TextRow(id=4, text="東京" * 50, lang="ja", topic="place", country=None)]
    assert parallel.split(rows) == [[1, 3], [0], [2]]


def test_rows_annotated_by_worker_processes_as_by_one(ann, astore, tmp_path):
    """Rows split by language among forked workers give, in input order, the rows one
    process writes, byte for byte (`kgcult annotate -j`)."""
    from kgcult.annotate import parallel
    from kgcult.annotate.rows import check

    rows = [dict(r, id=f"{r['id']}{i}") for i in range(12) for r in ROWS]
    checked = [check(r, topics=ann.topics, langs=ann.langs) for r in rows]
    parts = parallel.split(checked)
    assert sorted(i for p in parts for i in p) == list(range(len(rows)))
    assert all(len({checked[i].lang for i in p}) == 1 for p in parts)  # a language whole
    one = [res for _row, res in parallel.annotate_rows(ann, checked, 1)]
    two = [res for _row, res in parallel.annotate_rows(ann, checked, 2)]
    assert two == one and [r["id"] for r in two] == [r["id"] for r in rows]
    assert parallel._WORKER == {}  # the workers' annotators lived in the workers
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    outs = []
    for j in ("1", "2", "3"):
        out = tmp_path / f"out{j}.jsonl"
        assert run_cli(["annotate", "-j", j, "-i", str(inp), "-o", str(out)], astore).exit_code == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] == outs[2]


def test_annotator_prepared_in_a_process_beside_the_caller(astore):
    """`link index` prepares the annotator in a forked process while it builds the linker's
    caches; the summary comes back, and a failure there is raised here, not lost."""
    from kgcult.annotate import parallel

    first = parallel.Preparing(astore).result()
    assert first["topics"] == ["food", "place"] and "ja" in first["languages"]
    assert parallel.Preparing(astore).result()["built"] == []  # kept beside the index the first time
    with pytest.raises(RuntimeError, match="preparing the annotator"):
        parallel.Preparing(astore.parent / "no-such-store").result()


def test_pieces_joined_over_a_name_found_inside_by_the_same_key(ann):
    """In Chinese, the segmenter's pieces joined over a name found inside them (麻婆豆腐 over
    豆腐) are tried across scripts: the same romanized key (mapodoufu) makes the longer
    name the span; where none, the inner name stays."""
    pytest.importorskip("wordfreq")
    assert spans(ann, "川菜里的麻婆豆腐很辣。", "zh") == [("麻婆豆腐", "Q91104")]
    assert spans(ann, "我喜欢豆腐。", "zh") == [("豆腐", "Q91105")]


def test_vowel_mark_after_a_name_is_outside_the_span(ann):
    """A Persian ezafe written as a kasra after the name (کیوتوِ) is grammar: outside."""
    got = ann.annotate("سفر به کیوتوِ زیبا", lang="fa", topic="place")
    assert [(s["text"], s["qid"]) for s in got] == [("کیوتو", "Q91021")]
    assert got[0]["end"] - got[0]["start"] == len("کیوتو")


def test_name_one_letter_off_another_languages_name_in_the_same_script(ann):
    """A word one edit from a name in another language of its script (Hindi इंग्लैंड,
    Marathi इंग्लंड: the linker's any-language fuzzy stage, one entity alone that near)
    names that entity; not in a Latin-script text, where a neighbour is another word."""
    got = ann.annotate("हम इंग्लैंड गए।", lang="hi", topic="place")
    assert [(s["text"], s["qid"], s["match"]) for s in got] == [("इंग्लैंड", "Q91107", "any-language-fuzzy")]
    from kgcult.annotate.grammar import grammar

    assert "any-language-fuzzy" not in grammar("es").across


def test_arabic_word_met_by_its_stem_across(ann):
    """An Arabic word no name matched goes to the linker's stem stage too (Snowball's
    Arabic stems: بيضة, an egg, meets the label بيض), its proclitic left outside."""
    pytest.importorskip("snowballstemmer")
    got = ann.annotate("مع الخبز وبيضة مقلية", lang="ar", topic="food")
    assert [(s["text"], s["qid"], s["match"]) for s in got if s["qid"] == "Q91108"] == [("بيضة", "Q91108", "stem")]


def test_designator_beside_a_name_tells_a_province_from_its_city(ann):
    """A region's designator beside a name that a province and its city share means the
    province (Rayong iline, with its case ending; จังหวัดระยอง), a settlement's the city
    (Rayong şehrine; ตัวเมืองระยอง); without one, the city (a region another candidate is
    located in is never chosen by default)."""
    assert spans(ann, "Sonra Rayong iline gidin.", "tr", topic="place") == [("Rayong", "Q91109")]
    assert spans(ann, "Sonra Rayong şehrine gidin.", "tr", topic="place") == [("Rayong", "Q91111")]
    assert spans(ann, "Sonra Rayong'a gidin.", "tr", topic="place") == [("Rayong", "Q91111")]
    pytest.importorskip("pythainlp")
    assert spans(ann, "ไปจังหวัดระยอง", "th", topic="place") == [("ระยอง", "Q91109")]
    assert spans(ann, "ไปตัวเมืองระยอง", "th", topic="place") == [("ระยอง", "Q91111")]


def test_designator_with_the_languages_suffixes_on():
    """A designator counts with one or two of the language's suffixes written on: Persian
    استان‌های (provinces of: the plural and the ezafe) before a name, Turkish ilinde after
    one; a word that only begins like a designator does not."""
    from kgcult.annotate.grammar import grammar
    fa, tr = grammar("fa"), grammar("tr")
    for text, name, g, want in [("استان‌های گیلان", "گیلان", fa, "استان"), ("استان گیلان", "گیلان", fa, "استان"),
                                ("استانبول گیلان", "گیلان", fa, None), ("Antalya ilinde", "Antalya", tr, "ili"),
                                ("Antalya ilaç", "Antalya", tr, None)]:
        s = text.index(name)
        assert g.designator(text, s, s + len(name)) == want, text


def test_everyday_word_beside_a_naming_designator_goes_across_scripts(ann):
    """گلستان (rose garden) is an everyday Persian word: alone it names nothing, but after
    استان (province: ``designators.naming``, a word only names stand beside) it is the
    province's name, found across scripts (Golestan Province); with the plural and the
    ezafe on the designator too (استان‌های)."""
    pytest.importorskip("wordfreq")
    assert spans(ann, "سفر به گلستان", "fa", topic="place", country="Q91031") == []
    assert spans(ann, "سفر به استان گلستان", "fa", topic="place", country="Q91031") == [("گلستان", "Q91114")]
    assert spans(ann, "سفر به استان‌های گلستان", "fa", topic="place", country="Q91031") == [("گلستان", "Q91114")]
    # the designator names the names coordinated with the one beside it (Golestan and Mazandaran)
    assert spans(ann, "سفر به استان‌های گلستان و مازندران", "fa", topic="place", country="Q91031") == [
        ("گلستان", "Q91114"), ("مازندران", "Q91140")]
    assert spans(ann, "سفر به گلستان و مازندران", "fa", topic="place", country="Q91031") == []


def test_persian_ezafe_after_a_vowel_adjective_after_a_consonant(ann):
    """Persian ی after a name is the ezafe only after a vowel (کیوتوی زیبا: Kyoto); after
    a consonant it makes an adjective (تایلندی, ژاپنی: Thai, Japanese), which is no span,
    and the word goes to no cross-script search either (``suffix_after``)."""
    assert spans(ann, "سفر به کیوتوی زیبا", "fa", topic="place") == [("کیوتو", "Q91021")]
    assert spans(ann, "سفر به ژاپن و کلاس آشپزی ژاپنی", "fa", topic="place") == [("ژاپن", "Q91017")]


def test_settlement_designator_beside_a_countrys_label_finds_the_city_across(ann):
    """مراکش is Morocco's Persian label and the name of its city Marrakesh, which has no
    Persian label: after شهر (city) the city is meant, reached across scripts; without the
    designator, or after its plural (شهرهای مراکش, the cities of Morocco), the country."""
    pytest.importorskip("anyascii")
    assert spans(ann, "به شهر مراکش می‌روند", "fa", topic="place") == [("مراکش", "Q91116")]
    assert spans(ann, "به مراکش می‌روند", "fa", topic="place") == [("مراکش", "Q91115")]
    assert spans(ann, "شهرهای مراکش زیبا هستند", "fa", topic="place") == [("مراکش", "Q91115")]


def test_everyday_word_with_a_particle_names_a_place_of_the_texts_countries_only(ann):
    """코스가 is 코스 (course, an everyday word) with a particle: it names the island 코스
    only in a text about the island's country."""
    pytest.importorskip("wordfreq")
    assert spans(ann, "이 코스가 좋습니다", "ko", topic="place", country="Q91017") == []
    assert spans(ann, "이 코스가 좋습니다", "ko", topic="place", country="Q91112") == [("코스", "Q91113")]


def test_everyday_word_names_a_place_of_the_languages_own_country_in_any_text(ann):
    """부산 (Busan) is an everyday Korean word because the city is famous: in a Korean text
    about Japan it is still Busan (``home_countries``), where 코스 (course) stays no Greek
    island; a Korean text about Greece takes both."""
    pytest.importorskip("wordfreq")
    text = "부산에서 배를 타는 코스가 좋습니다"
    assert spans(ann, text, "ko", topic="place", country="Q91017") == [("부산", "Q91149")]
    assert spans(ann, text, "ko", topic="place", country="Q91112") == [("부산", "Q91149"), ("코스", "Q91113")]


def test_annotating_imports_neither_numpy_nor_package_metadata(astore, ann):
    """A fresh ``kgcult annotate`` reads the link index as memoryviews and finds its caches'
    package versions from the ``.dist-info`` folders: numpy (60-80 ms) and
    ``importlib.metadata`` (about 20 ms) are never imported (``kgcult/lazy.py``)."""
    import subprocess
    import sys

    texts = [("Miso soup, then pad thai.", "en", "food"), ("朝は味噌汁とご飯、夜は餃子です。", "ja", "food"),
             ("เที่ยวจังหวัดเลยและโตเกียว", "th", "place")]  # Thai and Japanese go across scripts
    for text, lang, topic in texts:  # the index and the dictionaries built here, once
        assert ann.annotate(text, lang=lang, topic=topic)
    code = (
        "import sys, json\n"
        "from kgcult.annotate import Annotator\n"
        f"a = Annotator.open({str(astore)!r})\n"
        f"out = [a.annotate(t, lang=lg, topic=tp) for t, lg, tp in {texts!r}]\n"
        "print(json.dumps({'spans': [len(o) for o in out],\n"
        "                  'loaded': [m for m in ('numpy', 'importlib.metadata') if m in sys.modules]}))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert all(got["spans"]), got  # it annotated
    assert got["loaded"] == [], got


def test_words_of_the_thai_dictionary_are_no_place_a_few_letters_off(ann):
    """A word of the Royal Institute's dictionary (เมืองหลวง, the capital), alone or joined
    with other words of the language (เมืองหลวงเก่า, the old capital), is read as those
    words: a romanization a few letters off a town of the text's country (Mueang Suang)
    is no match for it, though a name the dictionary lacks still is (ไซ่ง่อน, Saigon)."""
    pytest.importorskip("pythainlp")
    for text in ("ชมซากโบราณสถานของเมืองหลวงเก่า", "ชมเมืองหลวง"):
        assert spans(ann, text, "th", topic="place", country="Q91032") == []
    assert spans(ann, "ไปเที่ยวไซ่ง่อน", "th", topic="place", country="Q91080") == [("ไซ่ง่อน", "Q91117")]


def test_word_of_the_language_is_no_foreign_label_of_its_letters(ann):
    """An Arabic word as written with its article (الزيتون, the olives: a word the language
    knows) that, without it, only another language's label matches (Sindhi زيتون, guava)
    is the word: neither the dictionary's article rule nor the linker's affix stage takes
    that label. A word the language does not know still reaches a foreign label of its
    letters (الكفتو, a Sindhi label)."""
    assert spans(ann, "قدم الجبن والزيتون", "ar") == []
    assert spans(ann, "قدم الزيتون", "ar") == []
    assert spans(ann, "أكلنا الكفتو", "ar") == [("الكفتو", "Q91161")]


def test_affix_answers_by_another_languages_name_are_foreign():
    from kgcult.annotate.annotator import _foreign_affix
    from kgcult.annotate.grammar import grammar

    g = grammar("ar")
    assert _foreign_affix({"match": "affix", "lang_used": "sd"}, g)
    assert not _foreign_affix({"match": "affix", "lang_used": "ar"}, g)
    assert not _foreign_affix({"match": "affix", "lang_used": "arz"}, g)  # kin
    assert not _foreign_affix({"match": "cross-script", "lang_used": "en"}, g)
    assert not _foreign_affix(None, g)


def test_with_between_two_names_makes_two_things(ann):
    """Arabic مع (with) between two names joins two things, as و (and) does: no compound of
    their parts (خبز مع كاري is bread with curry, not curry bread), though the two side by
    side still make one."""
    assert spans(ann, "خبز مع كاري", "ar") == [("خبز", "Q91162"), ("كاري", "Q91163")]
    assert spans(ann, "خبز كاري", "ar") == [("خبز كاري", "Q91164")]


def test_chinese_name_inside_a_word_only_as_its_head_or_a_places_first_part(ann):
    """Chinese puts a word's head last (``bounded: head``): a name may begin inside a word
    of the segmenter only as its end (首都北京, the capital Beijing), and never reaches
    across a word's end (老|街巷, old streets: 老街 is no name there; 牛油果|酱: no 果酱).
    A food that is the first part of a longer word names no food of its own (玉米饼, a
    corn tortilla; 牛油果, avocado); a place does (北京故宫, Beijing's palace: the place
    topic's ``modifiers``)."""
    assert spans(ann, "墨西哥人吃玉米饼", "zh") == []
    assert spans(ann, "早餐有牛油果酱", "zh") == []
    assert spans(ann, "早餐有玉米和果酱", "zh") == [("玉米", "Q91165"), ("果酱", "Q91167")]
    assert spans(ann, "参观北京故宫", "zh", topic="place") == [("北京", "Q91168")]
    assert spans(ann, "从首都北京开始", "zh", topic="place") == [("北京", "Q91168")]
    assert spans(ann, "在老街巷里感受历史", "zh", topic="place", country="Q91143") == []
    assert spans(ann, "北京和老街都很有名", "zh", topic="place", country="Q91143") == [
        ("北京", "Q91168"), ("老街", "Q91169")]


def test_korean_noun_made_a_verb_is_no_name(ann):
    """A known Korean noun with a verb's ending on (방문한, visited: 방문 with 한) is a
    verb, not tried across scripts: its romanization a few letters off a town of the
    text's country (Bang Mun Nak) is no match."""
    from kgcult.annotate.across import _predicate
    from kgcult.annotate.grammar import grammar

    assert spans(ann, "아유타야를 방문한 뒤", "ko", topic="place", country="Q91032") == []
    g = grammar("ko")
    assert _predicate("방문한", g, {"방문"}) and not _predicate("방문한", g, set())
    assert not _predicate("서울하고", g, {"서울"})  # 하고, and: a particle


def test_stem_match_keeps_the_entities_whose_name_the_word_inflects(ann):
    """The stemmer cuts saucisses, saucisse and sauce alike (sauc): a word found by its stem
    names the entity of the name it is a form of (saucisse), not another under the key."""
    assert spans(ann, "Des saucisses et de la sauce.", "fr") == [("saucisses", "Q91172"), ("sauce", "Q91171")]


def test_thai_segmenter_never_cuts_inside_a_letter_cluster():
    """Maximal matching over the word list cut a foreign name it lacks inside its letter
    clusters (มาร|์|แซ|ย์, Marseille): a piece never begins with a vowel or tone mark
    written over or under a letter, nor with a consonant the thanthakhat silences, and
    never ends with a vowel written before its consonant."""
    pytest.importorskip("pythainlp")
    from kgcult.annotate.segment import segment

    marks = {chr(c) for c in (0x0E31, *range(0x0E34, 0x0E3B), *range(0x0E47, 0x0E4F))}
    for run in ("มาร์แซย์", "บอร์โดซ์", "แคว้นโพรวองซ์และนอร์ม็องดี"):
        pieces = [run[a:b] for a, b in segment(run, "thai")]
        assert "".join(pieces) == run
        assert not any(p[0] in marks or p[-1] in "เแโใไ" or p[1:2] == "\u0e4c" for p in pieces), pieces


def test_piece_of_a_longer_unknown_thai_word_is_no_guess(ann):
    """A foreign name the word list lacks comes cut into letters (บ|อร์|โดซ์, Bordeaux):
    a guess that leaves out the cut-off letters beside it (บอร์, bor) is a piece of that
    word, not a short name (Bor); the same letters standing alone are one."""
    pytest.importorskip("pythainlp")
    assert spans(ann, "ไปเที่ยวบอร์โดซ์", "th", topic="place") == []
    assert spans(ann, "ไปเที่ยวบอร์", "th", topic="place") == [("บอร์", "Q91173")]


def test_japanese_name_with_or_without_its_middle_dot(ann):
    """Japanese writes the middle dot between a loanword's words, or leaves it out: a name
    labelled クッキング・オイル is found written クッキングオイル too."""
    assert spans(ann, "クッキングオイルで炒める", "ja") == [("クッキングオイル", "Q91174")]
    assert spans(ann, "クッキング・オイルで炒める", "ja") == [("クッキング・オイル", "Q91174")]


def test_a_names_entity_of_another_country_gives_way_to_one_of_the_prompts(ann):
    """Where a name's entities lie in different countries, those that lie only in other
    countries than the prompt's give way to one that does not, even one named so by an
    alias only (Sinopia: the town of the prompt's Turkey, not Ruritania's; chilli in a text
    about Vietnam's neighbour: the pepper no country claims, not another country's dish)."""
    assert spans(ann, "Sinopia", "tr", topic="place", country="Q91030") == [("Sinopia", "Q91176")]
    assert spans(ann, "Sinopia", "tr", topic="place", country="Q91034") == [("Sinopia", "Q91175")]
    assert spans(ann, "Some chilli.", "en", country="Q91032") == [("chilli", "Q91177")]
    assert spans(ann, "Some chilli.", "en", country="Q91080") == [("chilli", "Q91178")]


def test_korean_compound_noun_with_or_without_its_space(ann):
    """Korean writes a compound noun with or without its spaces: a name labelled 감자 튀김
    is found written 감자튀김 too, its particle outside."""
    assert spans(ann, "감자튀김을 먹었다", "ko") == [("감자튀김", "Q91179")]
    assert spans(ann, "감자 튀김을 먹었다", "ko") == [("감자 튀김", "Q91179")]


def test_head_noun_and_its_quoted_name_are_one_span(ann):
    """Russian gives a head noun its name in quotation marks (``quoted_names``): торт
    «Шварцвальд» is one span, over the marks, of the quoted name's entity; without the
    marks, or with more than a space between, two."""
    got = spans(ann, "На десерт торт «Шварцвальд».", "ru")
    assert got == [("торт «Шварцвальд»", "Q91181")]
    assert spans(ann, "На десерт торт, «Шварцвальд».", "ru") == [("торт", "Q91180"), ("Шварцвальд", "Q91181")]
