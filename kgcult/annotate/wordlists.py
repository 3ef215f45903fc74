"""The annotator's word lists of a language, from wordfreq (Thai: the Thai National Corpus
counts pythainlp ships), kept beside the link index:

* its everyday words (Zipf :data:`EVERYDAY_ZIPF` or more: the commonness guard; never
  matched by their stem alone) and its known words (:data:`KNOWN_ZIPF`: never tried
  across scripts), a memory-mapped trie each (:func:`lang_words`), read only for the
  languages met;
* a segmenter's word list with each word's cost (:func:`lexicon`, Zipf
  :data:`LEXICON_ZIPF` or more: maximal matching for Chinese and Japanese), read by first
  letter.
"""
from __future__ import annotations

import marshal
import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from kgcult import extras
from kgcult.annotate import grammar as gram
from kgcult.annotate import saved
from kgcult.annotate.text import fold
from kgcult.files import atomic_sqlite, atomic_write
from kgcult.link import normalize, scripts

EVERYDAY_ZIPF = 4.5
KNOWN_ZIPF = 3.0
LEXICON_ZIPF = 1.5
FEATURE_WORDS = "kgcult annotate's word lists (the commonness guard)"

_DIRECTORY: list[str] = []  # the index directories opened, the last one's the lexicons'


def use_directory(directory: str) -> None:
    """Keep the segmenters' lexicons beside the index in ``directory`` (the last opened)."""
    if directory not in _DIRECTORY:
        _DIRECTORY.append(directory)


def _words_of(lang: str) -> tuple[frozenset, frozenset]:
    """(everyday words, known words) of ``lang``, folded: wordfreq's (Thai: the Thai National
    Corpus counts pythainlp ships); known words only for the languages that go across."""
    empty: frozenset = frozenset()
    across = bool(gram.grammar(lang).across)
    if not extras.available("wordfreq"):
        return empty, empty
    wordfreq = extras.require("wordfreq", "annotate", FEATURE_WORDS)
    try:
        freqs = wordfreq.get_frequency_dict(lang, wordlist="best")
    except (LookupError, ValueError):
        return empty, (_thai_known() if lang == "th" and across else empty)
    high = 10 ** (EVERYDAY_ZIPF - 9)
    every = frozenset(fold(w) for w, v in freqs.items() if v >= high)
    low = 10 ** (gram.grammar(lang).known_zipf - 9)
    known = frozenset(fold(w) for w, v in freqs.items() if v >= low) if across else empty
    return every, known


class Lexicon:
    """A segmenter's word list (word -> cost), read from its SQLite file by first letter (a
    marshalled dict of the words beginning with each): a run of text is cut by the words
    that begin with its letters, and a Chinese or Japanese text meets a few hundred of the
    list's 5,000-8,000 first letters (reading the whole list took 0.04-0.07 s of a fresh
    process). Without a file, the whole list in memory."""

    def __init__(self, words: dict[str, int] | None = None, path: Path | None = None):
        self.words: dict[str, int] = words if words is not None else {}
        self._path = path
        self._con: sqlite3.Connection | None = None
        self._firsts: set[str] = set()  # the letters whose words ``words`` holds

    def covering(self, run: str) -> dict[str, int]:
        """The words (-> cost) that begin with a letter of ``run`` (and maybe others): a
        look-up of any piece of ``run`` answers as the whole list would."""
        if self._path is None:
            return self.words
        new = set(run) - self._firsts
        if new:
            if self._con is None:
                self._con = saved.read_only(self._path)
            letters = sorted(new)
            for i in range(0, len(letters), LEXICON_BATCH):
                part = letters[i:i + LEXICON_BATCH]
                for (data,) in self._con.execute(
                        f"SELECT words FROM letters WHERE first IN ({','.join('?' * len(part))})", part):
                    self.words.update(marshal.loads(data))
            self._firsts |= new
        return self.words

    @staticmethod
    def write(path: Path, words: dict[str, int]) -> None:
        by_first: dict[str, dict[str, int]] = {}
        for w, c in words.items():
            if w:
                by_first.setdefault(w[0], {})[w] = c
        with atomic_sqlite(path) as con:
            con.execute("CREATE TABLE letters(first TEXT PRIMARY KEY, words BLOB) WITHOUT ROWID")
            con.execute("BEGIN")
            con.executemany("INSERT INTO letters VALUES (?, ?)", ((f, marshal.dumps(d)) for f, d in by_first.items()))
            con.execute("COMMIT")

    @staticmethod
    def readable(path: Path) -> bool:
        try:
            con = saved.read_only(path)
            try:
                con.execute("SELECT first, words FROM letters LIMIT 1").fetchall()
            finally:
                con.close()
            return True
        except (sqlite3.Error, OSError, ValueError):
            return False


LEXICON_BATCH = 500  # first letters per query (SQLite's bound parameters)


def lexicon(lang: str) -> Lexicon:
    """wordfreq's words of ``lang`` at Zipf :data:`LEXICON_ZIPF` or more (a segmenter's
    word list), each with its cost (hundredths of (9 - Zipf): a rarer word costs more),
    kept beside the last index opened (``annotate-lexicon-<lang>-...sqlite``)."""
    key = ("lexicon", lang)
    got = _WORDS.get(key)
    if got is not None:
        return got
    p = (Path(_DIRECTORY[-1]) / f"annotate-lexicon-{lang}-{gram.digest()}-v{saved.VERSION}.sqlite"
         if _DIRECTORY else None)
    if p is not None and p.is_file() and Lexicon.readable(p):
        got = Lexicon(path=p)
    else:
        words = _lexicon(lang)
        got = Lexicon(words)
        if p is not None:
            saved.write(p, f"annotate-lexicon-{lang}", lambda: Lexicon.write(p, words), (OSError, sqlite3.Error))
    _WORDS[key] = got
    return got


def _lexicon(lang: str) -> dict:
    if not extras.available("wordfreq"):
        return {}
    wordfreq = extras.require("wordfreq", "annotate", FEATURE_WORDS)
    try:
        freqs = wordfreq.get_frequency_dict(lang, wordlist="best")
    except (LookupError, ValueError):
        return {}
    floor = 10 ** (LEXICON_ZIPF - 9)
    words = {w: round(-100 * math.log10(v)) for w, v in sorted(freqs.items()) if v >= floor}
    # a word written in kana alone is a word in the other kana too (トンカツ, とんかつ):
    # Japanese writes many in either, the list has the spelling it met more often
    for w, c in list(words.items()):
        if _all_kana(w):
            other = scripts.kana_folded(w)
            if other and other not in words:
                words[other] = c + KANA_COST
    return dict(sorted(words.items()))


KANA_COST = 50  # half a Zipf point: the list's own spelling of a word before the other kana's


def _all_kana(w: str) -> bool:
    return all("\u3041" <= c <= "\u3096" or "\u30a1" <= c <= "\u30fc" for c in w)


_WORDS: dict = {}


def lang_words(directory: str, lang: str) -> tuple:
    """:func:`_words_of` of ``lang`` (its base language), from its two tries in
    ``directory`` (``annotate-words-<lang>-<grammar hash>-v<VERSION>.everyday.marisa`` and
    ``.known.marisa``, memory-mapped: a text asks for a few hundred of their words), else
    computed and saved there. Each answers ``word in it``."""
    lang = normalize.base_lang(lang)
    key = (directory, lang)
    got = _WORDS.get(key)
    if got is not None:
        return got
    p = Path(directory) / f"annotate-words-{lang}-{gram.digest()}-v{saved.VERSION}.marisa" if directory else None
    if p is not None:
        try:
            got = tuple(Words.mmap(saved.trie_path(p, part)) for part in WORD_LISTS)
        except (OSError, RuntimeError):
            got = None
    if got is None:
        got = _words_of(lang)
        if p is not None:
            saved.write(p, f"annotate-words-{lang}", lambda: _write_words(p, got))
    _WORDS[key] = got
    return got


WORD_LISTS = ("everyday", "known")  # a language's two word lists, a trie each


def _write_words(p: Path, lists) -> None:
    tries = saved.tries()
    for part, words in zip(WORD_LISTS, lists):
        atomic_write(saved.trie_path(p, part), tries.Trie(words).tobytes())


class Words:
    """A word list read from its memory-mapped trie: ``word in words``, ``len``, truth."""

    __slots__ = ("_trie",)

    def __init__(self, trie):
        self._trie = trie

    @classmethod
    def mmap(cls, path: Path) -> "Words":
        trie = saved.tries().Trie()
        trie.mmap(str(path))
        return cls(trie)

    def __contains__(self, word) -> bool:
        return word in self._trie

    def __len__(self) -> int:
        return len(self._trie)

    def __bool__(self) -> bool:
        return len(self._trie) > 0

    def __iter__(self) -> Iterator[str]:
        return iter(self._trie.keys())


# wordfreq has no Thai list: the Thai National Corpus counts pythainlp ships (about 11 M
# words), a word seen this often is a known word (about 90 per million)
TNC_KNOWN = 1000


def _thai_known() -> frozenset:
    if not extras.available("pythainlp"):
        return frozenset()
    tnc = extras.require("pythainlp.corpus.tnc", "annotate", FEATURE_WORDS)
    return frozenset(w for w, n in tnc.word_freqs() if n >= TNC_KNOWN)
