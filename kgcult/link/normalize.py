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
  that over-strips ("ananas" -> "anana") does so on both sides.
"""
from __future__ import annotations

import re
import unicodedata

_SPACE = re.compile(r"\s+")
_EXTRA = str.maketrans({
    "ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "æ": "ae", "œ": "oe", "ı": "i",
    "ħ": "h", "ŧ": "t", "ŀ": "l", "ß": "ss",
})
STEM_LANGS = frozenset({"en", "fr", "es", "pt", "ca"})
_KEEP_EN = ("ss", "us", "is", "ous", "ics")


def basic(s: str) -> str:
    s = unicodedata.normalize("NFKC", s).casefold().replace("ё", "е").replace("ѐ", "е")
    out = []
    for ch in s:
        cat = unicodedata.category(ch)
        if cat[0] in "PSZC":  # punctuation, symbols, separators, controls -> space
            out.append(" ")
        else:
            out.append(ch)
    return _SPACE.sub(" ", "".join(out)).strip()


def _strippable(base: str) -> bool:
    o = ord(base)
    return o < 0x0530 or 0x1E00 <= o <= 0x1FFF


def strip_diacritics(s: str) -> str:
    out = []
    base = ""
    for ch in unicodedata.normalize("NFD", s):
        if unicodedata.combining(ch):
            if base and _strippable(base):
                continue
        else:
            base = ch
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out)).translate(_EXTRA)


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
    if len(w) < 4 or not w.isalpha():
        return w
    if w.endswith(("s", "x")) and not w.endswith("ss"):
        return w[:-1]
    return w


def stem(folded: str, lang: str) -> str:
    """Plural folding of an already folded key (identity for languages without rules)."""
    lang = base_lang(lang)
    if lang not in STEM_LANGS:
        return folded
    f = _singular_en if lang == "en" else _singular_romance
    return " ".join(f(w) for w in folded.split(" "))


def base_lang(lang: str) -> str:
    """``zh-cn`` -> ``zh``; ``pt-br`` -> ``pt``."""
    return (lang or "").split("-", 1)[0].lower()


def keys(s: str, lang: str) -> tuple[str, str, str]:
    b = basic(s)
    f = strip_diacritics(b)
    return b, f, stem(f, lang)
