"""Morphology stages: Snowball stemming per language (``stem``) and compound splitting for
the compounding languages (``compound``).

Both compare *keys*: the sorted Snowball stems of a text's words (case-folded, then
stemmed, then diacritics stripped), so "Arachidi tostate" and "arachide tostata" meet,
and word order does not matter. The compound key first splits every word of a
compounding language into parts that are themselves words of the pool's names
(``Blaukäse`` -> ``blau käse`` when both are known words; a linking ``s``/``e``/``n``/
``en``/``er`` between them is allowed), so a compound meets its spelled-apart form and
the other way round. The vocabulary is the graph's own names: no word list ships.

A pool holds the names, in one language, of one topic's entities; a key that several
entities share returns them all (ranking and ``disambiguate.py`` settle them). Pools are
saved beside the label index as SQLite files
(``morph-<index hash>-<topics hash>-<kind>-<topic>-<lang>-k<KEY_VERSION>.sqlite``, see
``stages/morphology_pools.py``) and searched there, so a fresh process neither computes every name's
key nor reads the whole pool.
Stemmers come from the PyPI package ``snowballstemmer`` (the ``link`` extra).
"""
from __future__ import annotations

from typing import Container

from kgcult import extras
from kgcult.link import memo, normalize

FEATURE = "the linker's stem and compound stages"
# ISO 639-1 -> Snowball algorithm (those snowballstemmer ships)
SNOWBALL = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech",
    "da": "danish", "nl": "dutch", "en": "english", "eo": "esperanto", "et": "estonian",
    "fi": "finnish", "fr": "french", "de": "german", "el": "greek", "hi": "hindi",
    "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian",
    "lt": "lithuanian", "ne": "nepali", "nb": "norwegian", "nn": "norwegian",
    "no": "norwegian", "fa": "persian", "pl": "polish", "pt": "portuguese",
    "ro": "romanian", "ru": "russian", "sr": "serbian", "st": "sesotho", "es": "spanish",
    "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}
COMPOUNDING = frozenset({"da", "de", "et", "fi", "hu", "is", "nb", "nl", "nn", "no", "sv"})
MIN_PART = 3          # shortest compound part, in characters
LINKERS = ("", "s", "e", "n", "en", "er")
_stemmers: dict = {}


def available() -> bool:
    return extras.available("snowballstemmer")


def stemmer(lang: str):
    """The Snowball stemmer of ``lang`` (its base language), or None."""
    lang = normalize.base_lang(lang)
    if lang not in _stemmers:
        algo = SNOWBALL.get(lang)
        _stemmers[lang] = (extras.require("snowballstemmer", "link", FEATURE).stemmer(algo)
                           if algo else None)
    return _stemmers[lang]


def stems_in(lang: str) -> bool:
    """Whether Snowball has a stemmer for ``lang`` (the stem stage runs only then: without
    one a stem key is the normalized key with the word order dropped)."""
    return normalize.base_lang(lang) in SNOWBALL


def words(text: str) -> list[str]:
    return normalize.basic(text).split()


KEY_VERSION = 2  # of the stem/compound keys: part of the pools' cache file names
_stems = memo.Memo(memo.WORDS)  # (lang, word) -> stem, diacritics stripped (names share most words)


def stems(ws: list[str], lang: str) -> list[str]:
    """The Snowball stems of ``ws`` with diacritics stripped afterwards (memoized); a word
    with a digit is a code and kept whole (``451ii`` is not ``451i``'s plural)."""
    out = []
    for w in ws:
        k = (lang, w)
        v = _stems.get(k)
        if v is None:
            st = stemmer(lang)
            if st is None or any(ch.isdigit() for ch in w):
                v = _stems.put(k, normalize.strip_diacritics(w))
            else:
                v = _stems.put(k, normalize.strip_diacritics(st.stemWord(w)))
        out.append(v)
    return out


def stem_key(text: str, lang: str) -> str:
    """Sorted Snowball stems of the words of ``text`` (diacritics stripped after stemming)."""
    return " ".join(sorted(w for w in stems(words(text), lang) if w))


def split_word(word: str, vocab: Container[str]) -> list[str]:
    """``word`` as two or more known words (longest head first, then recursively the
    rest), else ``[word]`` (a known word is split too, so both sides split alike). Parts of MIN_PART characters or more; a linking element
    may sit between them."""
    if len(word) < 2 * MIN_PART:
        return [word]
    for i in range(len(word) - MIN_PART, MIN_PART - 1, -1):  # the head is the last part
        tail = word[i:]
        if tail not in vocab:
            continue
        left = word[:i]
        for link in LINKERS:
            if link and not left.endswith(link):
                continue
            first = left[:len(left) - len(link)] if link else left
            if len(first) < MIN_PART:
                continue
            if first in vocab:
                return [first, tail]
            parts = split_word(first, vocab)
            if len(parts) > 1:
                return parts + [tail]
    return [word]


def compound_key(text: str, lang: str, vocab: Container[str]) -> str:
    parts = [p for w in words(text) for p in split_word(w, vocab)]
    return " ".join(sorted(p for p in stems(parts, lang) if p))


class KeyPool:
    """key -> {eid: (lang, name)} over (eid, lang, name) rows of one language
    (``morph_store.save`` writes one to disk, ``morph_store.open_pool`` searches it there)."""

    def __init__(self, rows, lang: str, compound: bool = False):
        self.lang = lang
        self.vocab = frozenset(w for _e, _l, name in rows for w in words(name)
                               if len(w) >= MIN_PART) if compound else frozenset()
        self.keys: dict[str, dict] = {}
        for eid, lg, name in rows:
            k = self.key(name)
            if k:
                d = self.keys.setdefault(k, {})
                if eid not in d or (lg, name) < d[eid]:
                    d[eid] = (lg, name)

    def key(self, text: str) -> str:
        if self.vocab:
            return compound_key(text, self.lang, self.vocab)
        return stem_key(text, self.lang)

    def search(self, text: str) -> dict:
        """{eid: (lang, name)} of the names whose key is the text's key."""
        return self.keys.get(self.key(text), {})
