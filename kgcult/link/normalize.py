"""Normalized label keys: what a mention and a label share once surface noise is removed.

Three levels, each a function of the string (and its language for the last one):

* ``basic``: Unicode NFKC, case folding, Russian/Belarusian ``ё`` -> ``е``, punctuation and
  symbols folded to spaces, whitespace collapsed;
* ``fold``: ``basic`` plus diacritics stripped, only from Latin, Greek and Cyrillic letters
  (a Japanese dakuten or a Devanagari vowel sign changes the word, so they stay), plus
  a few letters that NFD does not decompose (ø, ł, đ, æ, œ, ı);
* ``stem``: ``fold`` plus a simple plural folding per word for languages where trailing
  plural markers are regular enough to be safe (English rules; -s/-x for French, Spanish,
  Portuguese, Catalan). The same function is applied to labels and mentions, so a rule
  that over-strips ("ananas" -> "anana") does so on both sides; Spanish/Portuguese/
  Catalan/French also drop a final -e after a consonant (``panes`` and ``pan`` -> ``pan``),
  Italian drops the final vowel that carries number (``tuorli``/``tuorlo``).
"""
from __future__ import annotations

import unicodedata

_EXTRA = str.maketrans({
    "ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "æ": "ae", "œ": "oe", "ı": "i",
    "ħ": "h", "ŧ": "t", "ŀ": "l", "ß": "ss",
})
STEM_LANGS = frozenset({"en", "fr", "es", "pt", "ca", "it"})
_VOWELS = set("aeiouy")
_KEEP_EN = ("ss", "us", "is", "ous", "ics")


class _PunctTable(dict):
    """str.translate table computed per character on first sight: punctuation, symbols,
    separators and controls -> space; ё -> е."""

    def __missing__(self, ch: int):
        c = chr(ch)
        if c in "ёѐ":
            v = "е"
        elif unicodedata.category(c)[0] in "PSZC":
            v = " "
        else:
            v = c
        self[ch] = v
        return v


class _StripTable(dict):
    """Per character: the letter without its diacritics (Latin, Greek, Cyrillic bases only)."""

    def __missing__(self, ch: int):
        c = chr(ch)
        d = unicodedata.normalize("NFD", c)
        if len(d) > 1 and _strippable(d[0]):
            v = "".join(x for x in d if not unicodedata.combining(x))
        else:
            v = c
        v = v.translate(_EXTRA)
        self[ch] = v
        return v


_PUNCT = _PunctTable()
_STRIP = _StripTable()


def basic(s: str) -> str:
    if not s.isascii():
        s = unicodedata.normalize("NFKC", s)
    return " ".join(s.casefold().translate(_PUNCT).split())


def _strippable(base: str) -> bool:
    o = ord(base)
    return o < 0x0530 or 0x1E00 <= o <= 0x1FFF


def strip_diacritics(s: str) -> str:
    if s.isascii():
        return s
    return s.translate(_STRIP)


def fold(s: str) -> str:
    return strip_diacritics(basic(s))


def _singular_en(w: str) -> str:
    if len(w) < 4 or not w.isalpha() or w.endswith(_KEEP_EN):
        return w
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith(("ches", "shes", "sses", "xes", "zes", "oes")):
        return w[:-2]
    if w.endswith("s"):
        return w[:-1]
    return w


def _singular_romance(w: str) -> str:
    """-s/-x plural, then a final -e after a consonant (es/pt/ca ``panes``/``pan``,
    fr ``légumes``/``légume``): both forms of a word end up at the same key."""
    if len(w) < 4 or not w.isalpha():
        return w
    if w.endswith(("s", "x")) and not w.endswith("ss"):
        w = w[:-1]
    if len(w) >= 4 and w.endswith("e") and w[-2] not in _VOWELS:
        w = w[:-1]
    return w


def _singular_it(w: str) -> str:
    """Italian number is in the final vowel (``tuorlo``/``tuorli``, ``mela``/``mele``)."""
    if len(w) >= 4 and w.isalpha() and w[-1] in "aeio":
        return w[:-1]
    return w


def stem(folded: str, lang: str) -> str:
    """Plural folding of an already folded key (identity for languages without rules)."""
    lang = base_lang(lang)
    if lang not in STEM_LANGS:
        return folded
    f = _singular_en if lang == "en" else _singular_it if lang == "it" else _singular_romance
    return " ".join(f(w) for w in folded.split(" "))


_BASE: dict = {}


def base_lang(lang: str) -> str:
    """``zh-cn`` -> ``zh``; ``pt-br`` -> ``pt``."""
    b = _BASE.get(lang)
    if b is None:
        b = _BASE[lang] = (lang or "").split("-", 1)[0].lower()
    return b


def keys(s: str, lang: str) -> tuple[str, str, str]:
    b = basic(s)
    f = strip_diacritics(b)
    return b, f, stem(f, lang)
