"""Romanization keys (kgcult/link/scripts.py): a name in each script reaches the Latin
spelling of the same name; the keys are deterministic."""
from __future__ import annotations

import pytest

from kgcult.link import scripts

pytest.importorskip("anyascii")
pytest.importorskip("pythainlp")
pytest.importorskip("indic_transliteration")
pytest.importorskip("pykakasi")
pytest.importorskip("korean_romanizer")


@pytest.mark.parametrize("text,lang,key", [
    ("ภูเก็ต", "th", "phuket"),                 # Thai: RTGS rules
    ("ลำปาง", "th", "lampang"),
    ("राजस्थान", "hi", "rajasthan"),           # Devanagari: the last inherent vowel dropped
    ("गोवा", "hi", "gova"),
    ("東京", "ja", "tokyo"),                      # kanji read as Japanese, long vowels once
    ("ラーメン", "ja", "ramen"),                  # kana
    ("わかめ", "ja", "wakame"),
    ("粽子", "zh", "zongzi"),                     # Chinese as pinyin
    ("비빔밥", "ko", "bibimbap"),                 # Hangul: Revised Romanization
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


def test_keys_are_plain_ascii_words_and_deterministic():
    for text, lang in [("เชียงใหม่", "th"), ("お好み焼き", "ja"), ("E 331i", "en"), ("!!", "en")]:
        k = scripts.romanize(text, lang)
        assert k == scripts.romanize.__wrapped__(text, lang)
        assert k.isascii() and k == " ".join(k.split()) and k == k.lower()
    assert scripts.romanize("!!", "en") == ""
    assert scripts.compact("ko samui") == "kosamui"
    assert scripts.is_latin("Ko Samui") and not scripts.is_latin("เกาะสมุย")
