"""Romanization keys (kgcult/link/scripts.py): a name in each script reaches the Latin
spelling of the same name; the keys are deterministic."""
from __future__ import annotations

from pathlib import Path

import pytest

from kgcult.link import by_ear, scripts, thai

pytest.importorskip("anyascii")
pytest.importorskip("pythainlp")
pytest.importorskip("pykakasi")
pytest.importorskip("korean_romanizer")


@pytest.mark.parametrize("text,lang,key", [
    ("ภูเก็ต", "th", "phuket"),                 # Thai: RTGS rules
    ("ลำปาง", "th", "lampang"),
    ("เชียงใหม่", "th", "chiangmai"),             # by syllables; ห before a sonorant is silent
    ("หาดใหญ่", "th", "hatyai"),                 # ... another ห at a syllable's head is an h
    ("สงขลา", "th", "songkhla"),
    ("เพชรบุรี", "th", "phetburi"),             # a ร after a closed syllable's final: silent
    ("สมุทรสาคร", "th", "samutsakhon"),
    ("นคร", "th", "nakhon"),                    # ... with no vowel written, the final n
    ("สุราษฎร์ธานี", "th", "suratthani"),         # under the thanthakhat: silent (ฎร์ both)
    ("โพรวองซ์", "th", "phrowong"),              # ... ซ์, though the syllables cut it alone
    ("แพร่", "th", "phrae"),                    # a vowel written before a cluster
    ("เพลง", "th", "phleng"),
    ("เปรู", "th", "peru"),                     # ... a vowel after it: two syllables
    ("ศรีสะเกษ", "th", "sisaket"),               # ศร at a syllable's head is an s (RTGS)
    ("ทริป", "th", "thrip"),                    # ทร is left to the rules (trip, not sip)
    ("राजस्थान", "hi", "rajasthan"),           # Devanagari: the last inherent vowel dropped
    ("गोवा", "hi", "gova"),
    ("चेन्नई", "hi", "chennai"),             # च as English spells it, ch
    ("東京", "ja", "tokyo"),                      # kanji read as Japanese, long vowels once
    ("ラーメン", "ja", "ramen"),                  # kana
    ("わかめ", "ja", "wakame"),
    ("新潟", "ja", "niigata"),                    # ... but ii kept, as English spells it
    ("粽子", "zh", "zongzi"),                     # Chinese as pinyin
    ("비빔밥", "ko", "bibimbap"),                 # Hangul: Revised Romanization
    ("전라남도", "ko", "jeollanamdo"),             # ... ㄴ next to ㄹ is l (liquidization)
    ("한라산", "ko", "hallasan"),
    ("Москва", "ru", "moskva"),
    ("Crème brûlée", "fr", "creme brulee"),
    ("пельмени", "ru", "pelmeni"),
])
def test_romanize_reaches_the_latin_name(text, lang, key):
    assert scripts.romanize(text, lang) == key


def test_abjad_names_meet_by_their_consonants():
    # Arabic and Persian script write long vowels only: the skeletons are compared
    assert scripts.abjad("تهران") and not scripts.abjad("Tehran")
    assert scripts.skeleton(scripts.romanize("تهران", "fa")) == scripts.skeleton("tehran") == "thrn"
    assert scripts.skeleton(scripts.romanize("شیراز", "fa")) == scripts.skeleton("shiraz")
    assert scripts.skeleton("e 331i") == "331"  # digits are kept as written


def test_thai_name_read_as_a_foreign_name():
    """A foreign name written in Thai: the letters under the thanthakhat spell the
    source's (ร์ r, ส์ s) and ล ร ending a syllable are l and r, not Thai's n; None for
    a name the reading does not change."""
    assert scripts.romanize("มาร์มารา", "th") == "mamara"
    assert thai.foreign_key("มาร์มารา") == "marmara"
    assert thai.foreign_key("อัลบาเซเต") == "albasete"
    assert thai.foreign_key("ภูเก็ต") is None and thai.foreign_key("Marmara") is None


def test_thai_compound_with_an_inner_final_read_again():
    """A Pali or Sanskrit compound reads an inner syllable's final stop (or ย) again as
    the head of a syllable with an a, as RTGS spells it; sonorant finals are not read again;
    the fewest re-read first."""
    assert scripts.romanize("ราชบุรี", "th") == "ratburi"
    assert thai.linking_variants("ราชบุรี") == ["ratchaburi"]
    assert thai.linking_variants("พัทลุง") == ["phatthalung"]
    assert thai.linking_variants("นครราชสีมา") == ["nakhonratchasima"]  # not nakhonra...
    assert thai.linking_variants("เชียงใหม่") == [] and thai.linking_variants("Ratchaburi") == []


def test_thai_readings_the_spelling_hides():
    """สร ซร at a syllable's head an s, or an a between two consonants that are no cluster;
    อ before a consonant with its own vowel an a, a stop so written closing the open
    syllable before it; a last short i silent: variants after the written key (never it),
    fewest changes first; ทร is left alone (ทริป is trip, not sip), as is อง (ong)."""
    assert scripts.romanize("สระแก้ว", "th") == "srakaeo"
    assert thai.spoken_variants("สระแก้ว") == ["sakaeo", "sarakaeo"]
    assert "ayutthaya" in thai.spoken_variants("อยุธยา")
    assert thai.spoken_variants("นราธิวาส") == ["narathiwat"]
    assert "chaiyaphum" in thai.spoken_variants("ชัยภูมิ")  # with the linking variant
    assert thai.spoken_variants("ทริป") == [] and thai.spoken_variants("ภูเก็ต") == []
    assert not any(k.startswith("ang") for k in thai.spoken_variants("องครักษ์"))
    assert thai.spoken_variants("Sa Kaeo") == []


def test_last_inherent_vowel_of_a_brahmic_name_said():
    """A Brahmic name ending in a bare consonant, with its inherent vowel said, as English
    spells Sanskrit names (Kerala, Maharashtra); nothing for one ending in a vowel."""
    assert scripts.final_vowel_variant("केरल") == "kerala"
    assert scripts.final_vowel_variant("आगरा") is None and scripts.final_vowel_variant("Kerala") is None
    # after a cluster in any word of a longer name (Andhra Pradesh); the written key keeps
    # it silent, as a name from English has it (न्यूयॉर्क, New York)
    assert scripts.romanize("आंध्र प्रदेश", "hi") == "andhr pradesh"
    assert scripts.final_vowel_variant("आंध्र प्रदेश") == "andhrapradesh"
    assert scripts.final_vowel_variant("महाराष्ट्र") == "maharashtra"
    assert scripts.romanize("न्यूयॉर्क", "hi") == "nyuyork"


def test_brahmic_consonants_with_a_nukta():
    """A nukta makes ड ढ the flaps r rh (छत्तीसगढ़ Chhattisgarh, with its silent vowel
    left out) and क ख ग ज फ the sounds of loans (ज़ z, फ़ f), decomposed or precomposed."""
    assert scripts.romanize("छत्तीसगढ़", "hi") == "chhattisagarh"
    assert "chhattisgarh" in scripts.syncope_variants("छत्तीसगढ़")
    assert scripts.romanize("ज़िला", "hi") == "zila" and scripts.romanize("\u095bिला", "hi") == "zila"
    assert scripts.romanize("सड़क", "hi") == "sarak"


def test_long_vowels_of_a_brahmic_name_as_english_spells_them():
    assert scripts.long_vowel_variant("पनीर") == "paneer"
    assert scripts.long_vowel_variant("आलू") == "aloo"
    assert scripts.long_vowel_variant("पूरी") == "poori"  # a word's last ī stays i
    assert scripts.long_vowel_variant("दही") is None and scripts.long_vowel_variant("ราชบุรี") is None


def test_silent_inherent_vowels_of_a_brahmic_name():
    """Each inherent vowel between a vowel and a consonant with its own vowel may be silent
    (Hindi schwa deletion): the written key first, then each spelling without some of
    them; none inside a cluster (राजस्थान) or at the end of the word."""
    assert scripts.syncope_variants("आगरा") == ["agara", "agra"]
    assert scripts.syncope_variants("गुजरात") == ["gujarat", "gujrat"]
    assert scripts.syncope_variants("अमृतसर") == ["amritasar", "amritsar"]
    assert scripts.syncope_variants("राजस्थान") == []
    assert scripts.syncope_variants("Agra") == [] and scripts.syncope_variants("ภูเก็ต") == []


def test_keys_are_plain_ascii_words_and_deterministic():
    for text, lang in [("เชียงใหม่", "th"), ("お好み焼き", "ja"), ("E 331i", "en"), ("!!", "en")]:
        k = scripts.romanize(text, lang)
        assert k == scripts.romanize.__wrapped__(text, lang)
        assert k.isascii() and k == " ".join(k.split()) and k == k.lower()
    assert scripts.romanize("!!", "en") == ""
    assert scripts.compact("ko samui") == "kosamui"
    assert scripts.is_latin("Ko Samui") and not scripts.is_latin("เกาะสมุย")


# -- the affix and cross-script stages on a hand-written graph ---------------------------

FIX = Path(__file__).parent / "fixtures" / "link"
BEFORE = ["exact", "normalized", "english", "any", "fuzzy", "anyfuzzy", "tokens"]


@pytest.fixture(scope="module")
def linker(tmp_path_factory):
    from kgcult.link import Linker
    from kgcult.store import Store, hierarchy

    s = Store(tmp_path_factory.mktemp("xscript") / "store")
    s.load([FIX / "scripts.ttl"], graph="linkscripts")
    hierarchy.build(s)
    yield Linker.open(s, stages=BEFORE + ["affix", "xscript", "reorder", "xfuzzy"])
    s.close()


@pytest.mark.parametrize("mention,lang,topic,qid,match", [
    ("ภูเก็ต", "th", "place", "Q99201", "cross-script"),
    ("ลำปาง", "th", "place", "Q99202", "cross-script"),          # the city, not "Lampang Province"
    ("तेहरान", "hi", "place", "Q99204", "cross-script"),         # teharan, a silent inherent vowel: tehran
    ("تهران", "fa", "place", "Q99204", "cross-script"),           # by its consonants
    ("राजस्थान", "hi", "place", "Q99205", "cross-script"),
    ("寿司", "ja", "food", "Q99210", "cross-script"),
    ("비빔밥", "ko", "food", "Q99211", "cross-script"),
    ("粽子", "zh", "food", "Q99212", "cross-script"),
    ("пельмени", "ru", "food", "Q99214", "cross-script"),
    ("เชียงใหม่", "th", "place", "Q99208", "cross-script"),   # chiangmai, syllable by syllable
    ("الكمون", "ar", "food", "Q99213", "affix"),                  # the article off
    ("وبالكمون", "ar", "food", "Q99213", "affix"),                # proclitics and article off
    ("서울에서", "ko", "place", "Q99207", "affix"),                # a particle off
    ("京都", "ja", "place", "Q99206", "affix"),                    # a designator added
    ("ねぎ", "ja", "food", "Q99215", "affix"),                     # hiragana as katakana
    ("بمبئی", "fa", "place", "Q99216", "cross-script"),           # as written before بمبئ (Pemba)
    ("колбасой", "ru", "food", "Q99243", "affix"),                # a case ending as its name's (ой -> а)
    ("आगरा", "hi", "place", "Q99244", "cross-script"),            # agara, its inherent vowel silent: agra
    ("चेन्नई", "hi", "place", "Q99245", "cross-script"),
    ("เกาะลันตา", "th", "place", "Q99249", "cross-script"),       # เกาะ off: lanta, as Koh Lanta without Koh
    ("केरल", "hi", "place", "Q99250", "cross-script"),            # keral, its last inherent vowel said: kerala
    ("ราชบุรี", "th", "place", "Q99251", "cross-script"),          # ratburi, its inner final read again: ratchaburi
    ("มาร์มารา", "th", "place", "Q99252", "cross-script"),         # mamara, read as a foreign name: marmara
    ("สระแก้ว", "th", "place", "Q99256", "cross-script"),          # srakaeo, สร read as spoken: sakaeo
    ("อยุธยา", "th", "place", "Q99257", "cross-script"),           # yuthaya, read as spoken: ayutthaya
    ("حمص", "ar", "food", "Q99263", "cross-script"),              # hms: Hummus, as three languages name it, not Hams
    ("сметаной", "ru", "food", "Q99265", "cross-script"),         # its case as its name's: сметана, smetana
    ("खीर", "hi", "food", "Q99270", "cross-script"),               # khir, its long vowel as English spells it: kheer
    ("آگرا", "fa", "place", "Q99244", "cross-script"),            # gr, too few consonants: agra, every vowel written
])
def test_names_across_scripts_and_grammar(linker, mention, lang, topic, qid, match):
    r = linker.link(mention, lang=lang, topic=topic)
    assert (r["qid"], r["match"]) == (qid, match), r
    assert linker.with_stages(BEFORE).link(mention, lang=lang, topic=topic)["qid"] is None


def test_abjad_name_meets_a_name_in_another_script_that_writes_its_vowels(linker):
    """The xvowel stage: a name in Arabic script that no Latin name's consonants spell
    reaches one in a script that writes its vowels (Cyrillic лазанья, lazan'ya: لازانيا),
    with the vowels the abjad writes heard as written (Georgian მიქლიო, miklio, is not
    مقلية: its ya is no o); the pool files those names apart from the Latin ones (``latin``
    0), which xscript and a romanized mention in another script, fuzzy or not, never meet."""
    from kgcult.link.stages.xscript import CrossPool

    vowelled = linker.with_stages(BEFORE + ["affix", "xscript", "xvowel", "reorder", "xfuzzy"])
    r = vowelled.link("اللازانيا", lang="ar", topic="food")
    assert (r["qid"], r["match"]) == ("Q99291", "cross-script-vowelled"), r
    assert linker.link("اللازانيا", lang="ar", topic="food")["qid"] is None  # without xvowel
    assert vowelled.link("مقلية", lang="ar", topic="food")["qid"] is None
    assert vowelled.link("лазанья", lang="ru", topic="food")["match"] != "cross-script-vowelled"
    assert scripts.abjad_matcher("mqlya")("miklio") and not scripts.abjad_matcher("mqlya", heard=True)("miklio")
    assert scripts.abjad_matcher("tmatm", heard=True)("timatim")
    rows = CrossPool.rows([(1, "ru", "лазанья"), (1, "en", "Lazanya"), (2, "ru", "пельмени"), (3, "zh", "粽子")])
    assert [(r[0], r[2], r[4], r[10]) for r in rows] == [("lazanya", 1, 1, 1), ("pelmeni", 2, 1, 0)]


def test_heard_keys_of_a_name_spelled_by_ear():
    """Thai spells a foreign name with its own letters for the sounds it hears: the
    consonants heard (voiced stops as voiceless, ch and j one sound, the letters under the
    thanthakhat said, a final ญ the n of gn) meet the Latin name's; the vowels rank."""
    assert thai.ear_key("เบรอตาญ") == by_ear.ear_key("bretagne") == "prtn"
    assert thai.ear_key("โพรวองซ์") == by_ear.ear_key("provence") == "prns"
    assert thai.ear_key("คย็องจู") == by_ear.ear_key("gyeongju") == "knC"
    assert thai.ear_key("เสียมเรียบ") == by_ear.ear_key("siemreap") == "smrp"
    assert by_ear.heard("provence") == "prowense" and by_ear.heard("gyeongju") == "kyeonCu"
    assert thai.ear_key("Provence") is None


def test_name_spelled_by_ear_in_the_prompt_country(linker):
    """The xheard stage: a Thai name no romanized key reaches, given with a country, is the
    place there (or placed nowhere, within two edits as heard) whose Latin name has the
    consonants it is heard with, nearest by its vowels: โพรวองซ์ is Provence, not France
    (Prancia, as far by its vowels as Provence is near); none without a country, none for
    a country the place is not in."""
    heard = linker.with_stages(BEFORE + ["affix", "xscript", "xfuzzy", "xheard"])
    for mention, qid in (("เบรอตาญ", "Q99294"), ("โพรวองซ์", "Q99295")):
        r = heard.link(mention, lang="th", topic="place", country="Q99293")
        assert (r["qid"], r["match"]) == (qid, "cross-script-heard"), r
        assert linker.link(mention, lang="th", topic="place", country="Q99293")["qid"] is None
        assert heard.link(mention, lang="th", topic="place")["qid"] is None
    assert heard.link("เบรอตาญ", lang="th", topic="place", country="Q99288")["qid"] is None


def test_name_in_characters_reaches_no_entity_named_in_other_characters(linker):
    """杭州 reads koshu in Japanese, as Kōshū-shi does; its own name is 甲州市: a homophone,
    no match. 甲州 is that city's name without its designator; 寿司 reaches sushi, which has
    no name in characters."""
    assert linker.link("杭州", lang="ja", topic="place")["qid"] is None
    assert linker.link("甲州", lang="ja", topic="place")["qid"] == "Q99266"
    assert linker.link("寿司", lang="ja", topic="food")["qid"] == "Q99210"


def test_name_in_characters_read_as_the_prompt_country_reads_it(linker):
    """Chinese 纳豆 (nadou) in a text about Japan is read as Japanese (納豆, natto), and
    Japanese 桂林 (keirin) in one about China as Chinese (guilin); without that country,
    or about another one, the text's own reading, which meets nothing here."""
    r = linker.link("纳豆", lang="zh", topic="food", country="Q17")
    assert (r["qid"], r["match"]) == ("Q99267", "cross-script"), r
    assert linker.link("桂林", lang="ja", topic="place", country="Q148")["qid"] == "Q99268"
    for country in (None, "Q148"):
        assert linker.link("纳豆", lang="zh", topic="food", country=country)["qid"] is None
    assert linker.link("桂林", lang="ja", topic="place", country="Q17")["qid"] is None
    # ramen's Chinese name, 日本拉面 (Japanese ramen), holds 拉面: the same name qualified
    assert linker.link("拉面", lang="zh", topic="food", country="Q17")["qid"] == "Q99269"
    # 北海道 is Chinese for an entity no place here; read in Japanese it is the prefecture
    # (in a text about another country, read in Chinese, beihaidao, it is nothing)
    assert linker.link("北海道", lang="zh", topic="place", country="Q17")["qid"] == "Q99274"
    assert linker.link("北海道", lang="zh", topic="place", country="Q148")["qid"] is None


def test_fuzzy_tie_goes_to_the_name_more_languages_give(linker):
    """เซียนา (siana) is one edit from Siena, the city's name in four languages and the
    province's in one: the city, as the exact stage would rank them; an even tie stays
    unresolved."""
    r = linker.link("เซียนา", lang="th", topic="place")
    assert (r["qid"], r["match"]) == ("Q99271", "cross-script-fuzzy"), r


def test_characters_read_as_korean_by_readings_the_graphs_names_show(linker):
    """Chinese 济州 and Japanese 済州 in a text about Korea, read as Korean: 济 and 州 are
    read as the Hangul names of Korean places written so show them (제, 주), and 제주,
    jeju, is Jeju; in a text about China the same name is Chinese, jizhou."""
    from kgcult.link import sino_korean

    table = sino_korean.table(None, linker.ix)
    assert table["州"] == "주" and table["济"] == "제" and "东" not in table  # 濟東 is one pair only
    for mention, lang in [("济州", "zh"), ("済州", "ja")]:
        r = linker.link(mention, lang=lang, topic="place", country="Q884")
        assert (r["qid"], r["match"]) == ("Q99285", "cross-script"), r
    assert linker.link("济州", lang="zh", topic="place", country="Q148")["qid"] is None


def test_head_and_foreign_qualifier_looked_up_in_english_order(linker):
    """arroz jollof is jollof rice: the head (a name in the mention's language, or a case
    form of one: рисом) and the qualifier as written, in English order; only in the
    languages and topics ``head_first`` lists, and only a name that exists."""
    for mention, lang, qid in [("arroz jollof", "es", "Q99254"), ("рис басмати", "ru", "Q99255"),
                               ("рисом басмати", "ru", "Q99255")]:
        r = linker.link(mention, lang=lang, topic="food")
        assert (r["qid"], r["match"]) == (qid, "reordered"), r
    assert linker.with_stages(BEFORE).link("рис басмати", lang="ru", topic="food")["qid"] is None
    # an adjective of colour the data gives an English word for (qualifier_words): green curry;
    # another adjective names nothing
    r = linker.link("curry verde", lang="es", topic="food")
    assert (r["qid"], r["match"]) == ("Q99287", "reordered"), r
    assert linker.link("curry casero", lang="es", topic="food")["qid"] != "Q99287"
    assert linker.link("arroz verde", lang="es", topic="food")["qid"] is None       # no "verde rice"
    # with the head noun of the head's English name of two words (Common beans: beans)
    r = linker.link("fagioli neri", lang="it", topic="food")
    assert (r["qid"], r["match"]) == ("Q99297", "reordered"), r
    from kgcult.link.stages import reorder
    assert reorder.split("salade d'Olivier", "fr") == ("salade", "Olivier", True)
    assert reorder.split("pollo a la mantequilla", "es") == ("pollo", "mantequilla", True)
    assert reorder.split("arroz", "es") is None and reorder.split("arroz de la casa vieja", "es") is None
    assert linker.link("arroz jollof", lang="es", topic="place")["match"] != "reordered"
    assert linker.link("arroz jollof", lang="de", topic="food")["match"] != "reordered"  # not head-first
    # head-last: a word cut in two, its parts' English names in the order written
    r = linker.link("抹茶アイス", lang="ja", topic="food")
    assert (r["qid"], r["match"]) == ("Q99260", "reordered"), r
    assert linker.link("アイス抹茶", lang="ja", topic="food")["qid"] is None  # no "ice cream matcha"
    r = linker.link("Pitabrot", lang="de", topic="food")
    assert (r["qid"], r["match"]) == ("Q99262", "reordered"), r
    assert linker.link("Brotpita", lang="de", topic="food")["qid"] is None  # no "bread pita"


def test_cross_script_needs_the_topic_and_a_name(linker):
    assert linker.link("ภูเก็ต", lang="th", topic="food")["qid"] is None   # no food of that name
    assert linker.link("ภูเก็ต", lang="th")["qid"] is None                 # no topic: no guess
    assert linker.link("กรุงโซล", lang="th", topic="place")["qid"] is None  # krungson: nothing near


def test_cross_script_pool_kept_beside_the_index(linker, monkeypatch):
    from kgcult.link.stages import xscript
    st = linker.stage("xscript")
    assert st.caches() and all(isinstance(n, int) for _k, n in st.caches())
    for key, _n in st.caches():
        st.build_cache(key)
    assert list(linker.cache_dir.glob(f"xscript-*-place-*-v{xscript.FORMAT}.sqlite"))
    monkeypatch.setattr(xscript.CrossPool, "write", lambda *a: pytest.fail("pool rebuilt"))
    assert st.build_cache("place") is False
    pool = st._open("place")
    assert {r[1] for r in pool.by_key("lampang")} == {linker.ix.eid_of[q] for q in ("Q99202", "Q99203")}


def test_coherence_settles_what_popularity_decided_without_context(linker):
    alone = linker.link("Oyo", lang="en", topic="place")
    assert alone["qid"] == "Q99220"  # the province: a place is located in it
    assert [d["by"] for d in alone["decided_by"]][-1] == "popularity"
    rows = [{"mention": m, "lang": "en", "topic": "place", "group": "t1"} for m in ("Ibadan", "Oyo")]
    out = list(linker.link_many(rows))
    assert out[1]["qid"] == "Q99221"  # a city among cities
    assert "coherence" in [d["by"] for d in out[1]["decided_by"]]


def test_link_eval_reads_texts_with_gold_spans(linker, tmp_path):
    import json

    from kgcult.eval import linking
    gold = tmp_path / "spans.jsonl"
    text = {"id": "t1", "lang": "th", "topic": "place", "country": None, "text": "ภูเก็ต และ ลำปาง",
            "spans": [{"start": 0, "end": 6, "text": "ภูเก็ต", "qid": "Q99201"},
                      {"start": 11, "end": 16, "text": "ลำปาง", "qid": "Q99203", "alt": ["Q99202"]},
                      {"start": 0, "end": 1, "text": "ภู", "qid": None, "why": "invented"}]}
    gold.write_text(json.dumps(text, ensure_ascii=False) + "\n", encoding="utf-8")
    rows = linking.read_gold(gold)
    assert [(r["mention"], r["group"], r["_line"]) for r in rows] == [
        ("ภูเก็ต", "t1", 1), ("ลำปาง", "t1", 1), ("ภู", "t1", 1)]
    rep = linking.evaluate(linker, rows, stage_gain=False, makieval=False)["report"]
    assert (rep["overall"]["tp"], rep["overall"]["fp"], rep["overall"]["positives"]) == (2, 0, 2)  # alt counts
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**text, "spans": [{"text": "x", "qid": "Q1", "alt": "Q2"}]}) + "\n")
    with pytest.raises(Exception, match="bad.jsonl:1: alt must be a list of QIDs"):
        linking.read_gold(bad)


def test_thai_rules_run_from_their_file_as_pythainlp_runs_them():
    import subprocess
    import sys
    words = ["เชียงใหม่", "ภูเก็ต", "ลำปาง", "กรุงเทพฯ", "หนองคาย", "สุโขทัย"]
    code = ("import sys, json\nfrom kgcult.link import scripts, thai\nfrom kgcult.link.wordcut import max_match\n"
            f"w = {words!r}\nmine = [scripts.romanize(x, 'th') for x in w]\n"
            "assert 'pythainlp' not in sys.modules, 'pythainlp imported'\n"
            "from pythainlp.transliterate.royin import _romanize\n"
            "syl = thai.syllables()\n"
            "print(json.dumps([mine, [''.join(_romanize(thai._ho_nam(x[a:b])) for a, b in "
            "max_match(x, syl, 12)) for x in w]]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    import json
    mine, theirs = json.loads(out)
    assert mine == theirs


def test_kanji_read_from_the_converted_dictionary(tmp_path, monkeypatch):
    # pykakasi's dictionary, converted once into $KGCULT_CACHE and read by first kanji
    monkeypatch.setenv("KGCULT_CACHE", str(tmp_path))
    path = scripts.convert_kanwa()
    assert path is not None and path.parent == tmp_path / "models" and path.exists()
    reader = scripts._Kanwa(path)
    got = {w: scripts.compact(scripts._ascii_words(reader(w))) for w in ["東京", "味噌汁", "北海道", "抹茶", "寿司"]}
    assert got == {"東京": "toukyou", "味噌汁": "misoshiru", "北海道": "hokkaidou", "抹茶": "matcha", "寿司": "sushi"}
    # Chinese characters written back as the dictionary writes the words, by their
    # simplified forms (冲 is 沖 in 沖縄; 户, 姬 are 戸, 姫, which OpenCC's jp2t keeps)
    assert [reader.japanese(w) for w in ["冲绳", "拉面", "神户", "姬路", "札幌"]] == ["沖縄", "拉麺", "神戸", "姫路", "札幌"]


def test_thai_syllables_read_from_the_saved_table_as_the_rules_read_them(tmp_path, monkeypatch):
    """The RTGS rules' readings of pythainlp's syllables, saved once into $KGCULT_CACHE, give
    every Thai key the rules give; a table that is no table is not read."""
    pytest.importorskip("pythainlp")
    from kgcult.link import thai

    words = ["เชียงใหม่", "สุราษฎร์ธานี", "โพรวองซ์", "ราชบุรี", "อาร์คันซอ", "เพลง", "หาดใหญ่", "ศรีสะเกษ"]

    def keys() -> list:
        thai.rules.cache_clear()
        thai.parts.cache_clear()
        return [(thai.romanize_word(w), thai.foreign_key(w), thai.linking_variants(w), thai.spoken_variants(w))
                for w in words]

    monkeypatch.setenv("KGCULT_CACHE", str(tmp_path))
    try:
        by_rules = keys()
        path = thai.prepare()
        assert path is not None and path.parent == tmp_path / "models" and path.exists()
        table = thai._read_syllables()
        assert table is not None and len(table) > 9_000
        raw = thai._rules()[0]
        assert all(table[s] == raw(s) for s in sorted(table)[::97])  # the rules' own readings
        assert keys() == by_rules
        assert thai.rules()[0].__wrapped__.__defaults__[0].__self__ == table  # read from the table
        path.write_bytes(b"not a table")
        assert thai._read_syllables() is None and keys() == by_rules
    finally:
        thai.rules.cache_clear()
        thai.parts.cache_clear()


def test_region_name_that_is_its_citys_names_the_city(linker):
    """大阪 is the prefecture's label; the city is 大阪市, located in it: the city is meant."""
    r = linker.link("大阪", lang="ja", topic="place")
    assert r["qid"] == "Q99231"
    assert r["decided_by"][-1] == {"by": "namesake", "name": "大阪市"}
    assert linker.link("大阪", lang="en", topic="place")["qid"] != "Q99231"  # no namesake designator in English


def test_cognate_reaches_the_word_of_a_related_language(linker):
    """Italian zuppa and German Suppe are soup, soupe, sopa, soep (one cognate key; the
    capitalized Soba of the same key is a proper name); not a lower-case German word (no
    noun), nor a word whose key only one other language gives its entity."""
    cog = linker.with_stages(BEFORE + ["cognate"])
    for mention, lang in [("zuppa", "it"), ("Suppe", "de")]:
        r = cog.link(mention, lang=lang, topic="food")
        assert (r["qid"], r["match"]) == ("Q99240", "cognate-label"), r
        assert linker.with_stages(BEFORE).link(mention, lang=lang, topic="food")["qid"] is None
    assert cog.link("suppe", lang="de", topic="food")["qid"] is None
    assert cog.link("marmellata", lang="it", topic="food")["qid"] is None
    assert cog.link("zuppa", lang="it", topic="place")["qid"] is None


def test_designator_off_leaves_two_characters_in_an_unspaced_script():
    """苏州 (Suzhou) less its designator 州 would be 苏, Jiangsu's one-character
    abbreviation: in a script without spaces a name keeps two characters at least."""
    from kgcult.link import affixes
    assert "苏" not in affixes.undesignated("苏州", "zh")
    assert "京都" in affixes.undesignated("京都府", "ja") and "서울" in affixes.undesignated("서울시", "ko")
    assert "Antalya" in affixes.undesignated("Antalya ili", "tr")


def test_case_forms_replace_the_ending_with_the_names():
    from kgcult.link import affixes
    assert "колбаса" in affixes.case_forms("колбасой", "ru")
    assert "баклажан" in affixes.case_forms("баклажанов", "ru")
    # a noun declined as an adjective (мороженое, ice cream): мороженым, мороженого, о мороженом
    for form in ("мороженым", "мороженого", "мороженому", "мороженом"):
        assert "мороженое" in affixes.case_forms(form, "ru"), form
    assert "ром" in affixes.case_forms("ромом", "ru")  # a noun's ending still tried
    assert affixes.case_forms("сом", "ru") == []             # the base keeps three letters
    assert affixes.case_forms("курица тандури", "ru") == []  # one word only
    assert affixes.case_forms("колбасой", "de") == []         # Russian data only


def test_gazetteer_names_places_in_every_language(linker):
    """CLDR's name of a country or a time zone's city in the mention's language reaches the
    place by its English label (Thai เวียดนาม, โซล; Hindi सोल); never by a name that is only
    another entity's alias (Christmas), never outside the place topic's entities."""
    pytest.importorskip("babel")
    from kgcult.link import gazetteer

    assert gazetteer.english_names("th")["เวียดนาม"] == ("Vietnam",)
    gz = linker.with_stages(BEFORE + ["gazetteer"])
    for mention, lang, qid in (("เวียดนาม", "th", "Q99246"), ("โซล", "th", "Q99207"), ("Вьетнам", "ru", "Q99246")):
        r = gz.link(mention, lang=lang, topic="place")
        assert (r["qid"], r["match"]) == (qid, "gazetteer"), r
    assert gz.link("คริสต์มาส", lang="th", topic="place")["qid"] is None
    assert gz.link("เวียดนาม", lang="th", topic="food")["qid"] is None
    assert linker.with_stages(BEFORE).link("เวียดนาม", lang="th", topic="place")["qid"] is None


def test_gazetteer_city_is_the_settlement_not_its_namesake_region(linker):
    """A name CLDR gives a time zone is its exemplar city's: among the entities its English
    name reaches, the settlement (typed with a ``kgc:SettlementClass`` or a subclass: a big
    city is a city), not the province of the same English label, though the graph places
    the province in a country and the city nowhere; a country's name is not so narrowed."""
    pytest.importorskip("babel")
    from kgcult.link import gazetteer

    assert "เวียงจันทน์" in gazetteer.city_names("th") and "เวียงจันทน์" not in gazetteer.territory_names("th")
    assert gazetteer.territory_names("th")["เวียดนาม"] == ("Vietnam",)
    gz = linker.with_stages(BEFORE + ["gazetteer"])
    r = gz.link("เวียงจันทน์", lang="th", topic="place", country="Q99288")
    assert (r["qid"], r["match"]) == ("Q99290", "gazetteer"), r
    assert [c["qid"] for c in r["candidates"]] == ["Q99290"]


def test_gazetteer_tables_kept_on_disk(tmp_path, monkeypatch):
    """A language's table is made from Babel once and read back from $KGCULT_CACHE after."""
    pytest.importorskip("babel")
    from kgcult.link import gazetteer

    monkeypatch.setenv("KGCULT_CACHE", str(tmp_path))
    gazetteer.tables.cache_clear()
    assert gazetteer.prepare(["ko"]) is True
    assert gazetteer.prepare(["ko", "en"]) is False  # kept; English has no table
    path = next(tmp_path.glob("models/cldr-*/ko.marshal"))
    gazetteer.tables.cache_clear()
    assert gazetteer.english_names("ko")["베트남"] == ("Vietnam",)
    assert path.stat().st_size > 0
    gazetteer.tables.cache_clear()
