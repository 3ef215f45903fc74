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


def max_word_len(vocab) -> int:
    """The length of the longest word of ``vocab`` (its ``maxlen`` when it keeps one)."""
    n = getattr(vocab, "maxlen", None)
    return n if n is not None else max(map(len, vocab), default=0)


def split_word(word: str, vocab, maxlen: int | None = None) -> list[str]:
    """``word`` as two or more known words (longest head first, then the rest split
    alike), else ``[word]`` (a known word is split too, so both sides split alike). Parts
    of MIN_PART characters or more; a linking element may sit between them.

    ``maxlen``: the longest word of ``vocab`` (:func:`max_word_len` when not given). The
    search is the recursive one it always was (the same answer), run on an explicit stack
    with each prefix's answer remembered: a part is a word of ``vocab``, so only the last
    ``maxlen`` positions can start one, and the work and memory grow linearly with the
    word (a 220,000-letter ``Apfelkuchen...`` ran out of recursion depth)."""
    n = len(word)
    if n < 2 * MIN_PART:
        return [word]
    if maxlen is None:
        maxlen = max_word_len(vocab)
    found: dict[int, tuple | None] = {}  # prefix length -> (head's end, tail's start, head known) or None

    def search(end: int):
        """The split of ``word[:end]``: yields the prefix lengths whose split it needs."""
        if end < 2 * MIN_PART:
            return None
        for i in range(end - MIN_PART, max(MIN_PART, end - maxlen) - 1, -1):  # the head is the last part
            if word[i:end] not in vocab:
                continue
            for link in LINKERS:
                m = i - len(link)
                if link and word[m:i] != link:
                    continue
                if m < MIN_PART:
                    continue
                if m <= maxlen and word[:m] in vocab:
                    return (m, i, True)
                if (yield m) is not None:
                    return (m, i, False)
        return None

    stack = [(n, search(n))]
    sent = None
    while stack:
        end, gen = stack[-1]
        try:
            need = gen.send(sent)
        except StopIteration as stop:
            found[end] = sent = stop.value
            stack.pop()
            continue
        if need in found:
            sent = found[need]
        else:
            stack.append((need, search(need)))
            sent = None
    if found[n] is None:
        return [word]
    parts, end = [], n
    while True:
        step = found[end]
        assert step is not None  # a split of word[:end] led here, so word[:m] has one
        m, i, known = step
        parts.append(word[i:end])
        if known:
            parts.append(word[:m])
            return parts[::-1]
        end = m


def compound_key(text: str, lang: str, vocab, maxlen: int | None = None) -> str:
    if maxlen is None:
        maxlen = max_word_len(vocab)
    parts = [p for w in words(text) for p in split_word(w, vocab, maxlen)]
    return " ".join(sorted(p for p in stems(parts, lang) if p))


class KeyPool:
    """key -> {eid: (lang, name)} over (eid, lang, name) rows of one language
    (``morph_store.save`` writes one to disk, ``morph_store.open_pool`` searches it there)."""

    def __init__(self, rows, lang: str, compound: bool = False):
        self.lang = lang
        self.vocab = frozenset(w for _e, _l, name in rows for w in words(name)
                               if len(w) >= MIN_PART) if compound else frozenset()
        self.maxlen = max_word_len(self.vocab)
        self.keys: dict[str, dict] = {}
        for eid, lg, name in rows:
            k = self.key(name)
            if k:
                d = self.keys.setdefault(k, {})
                if eid not in d or (lg, name) < d[eid]:
                    d[eid] = (lg, name)

    def key(self, text: str) -> str:
        if self.vocab:
            return compound_key(text, self.lang, self.vocab, self.maxlen)
        return stem_key(text, self.lang)

    def search(self, text: str) -> dict:
        """{eid: (lang, name)} of the names whose key is the text's key."""
        return self.keys.get(self.key(text), {})
