"""The annotator's word lists of a language, from wordfreq (Thai: the Thai National Corpus
counts pythainlp ships), kept beside the link index:

* its everyday words (Zipf :data:`EVERYDAY_ZIPF` or more: the commonness guard; never
  matched by their stem alone) and its known words (:data:`KNOWN_ZIPF`: never tried
  across scripts), a memory-mapped trie each (:func:`lang_words`), read only for the
  languages met;
* a segmenter's word list with each word's cost (:func:`lexicon`, Zipf
  :data:`LEXICON_ZIPF` or more: maximal matching for Chinese and Japanese), a
  memory-mapped trie.
"""
from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path

from kgcult import extras
from kgcult.annotate import grammar as gram
from kgcult.annotate import saved
from kgcult.annotate.text import fold
from kgcult.files import atomic_write, installed_version
from kgcult.link import normalize, scripts
from kgcult.link.thai import corpus as thai_corpus
from kgcult.link.wordcut import in_table

EVERYDAY_ZIPF = 4.5
KNOWN_ZIPF = 3.0
LEXICON_ZIPF = 1.5
FEATURE_WORDS = "kgcult annotate's word lists (the commonness guard)"

_DIRECTORY: list[str] = []  # the index directories opened, the last one's the lexicons'


def use_directory(directory: str) -> None:
    """Keep the segmenters' lexicons beside the index in ``directory`` (the last opened)."""
    if directory not in _DIRECTORY:
        _DIRECTORY.append(directory)


def _words_of(lang: str) -> tuple[frozenset, frozenset, frozenset]:
    """(everyday words, known words, dictionary words) of ``lang``, folded: wordfreq's
    (Thai: the Thai National Corpus counts pythainlp ships); known words only for the
    languages that go across; the dictionary's headwords where the grammar file names one
    (``dictionary``: Thai, the Royal Institute's, as pythainlp ships it)."""
    empty: frozenset = frozenset()
    across = bool(gram.grammar(lang).across)
    dictionary = _dictionary(lang)
    if not extras.available("wordfreq"):
        return empty, empty, dictionary
    wordfreq = extras.require("wordfreq", "annotate", FEATURE_WORDS)
    try:
        freqs = wordfreq.get_frequency_dict(lang, wordlist="best")
    except (LookupError, ValueError):
        return empty, (_thai_known() if lang == "th" and across else empty), dictionary
    high = 10 ** (EVERYDAY_ZIPF - 9)
    every = frozenset(fold(w) for w, v in freqs.items() if v >= high)
    low = 10 ** (gram.grammar(lang).known_zipf - 9)
    known = frozenset(fold(w) for w, v in freqs.items() if v >= low) if across else empty
    return every, known, dictionary


def _dictionary(lang: str) -> frozenset:
    """The folded headwords of the general dictionary the grammar file names for ``lang``
    (``dictionary``: a word list of pythainlp's corpus), or none."""
    name = gram.grammar(lang).dictionary
    if not name:
        return frozenset()
    return frozenset(fold(w) for w in thai_corpus(name))


class Lexicon:
    """A segmenter's word list (word -> cost): a memory-mapped trie of the words and their
    costs in an array by the trie's key ids (``<name>.words.marisa``, ``<name>.costs``),
    or, without the files, a dict in memory. Maximal matching asks, at each letter of a run,
    for the words the run continues with (:meth:`starting`: one walk of the trie, where a
    dict took a look-up per length); a Chinese or Japanese text meets a few hundred of the
    list's first letters, whose words a fresh process used to read and merge (0.09 s for
    the dev texts)."""

    def __init__(self, words: dict[str, int] | None = None, trie=None, costs=None):
        self.words: dict[str, int] = words if words is not None else {}
        self._trie = trie
        self._costs = costs

    @classmethod
    def mmap(cls, p: Path) -> "Lexicon":
        """The lexicon saved at ``p`` (:meth:`write`); OSError or ValueError when its files
        are missing or do not agree."""
        trie = saved.tries().Trie()
        try:
            trie.mmap(str(saved.trie_path(p, "words")))
        except RuntimeError as e:  # marisa's error for a damaged file
            raise ValueError(str(e)) from None
        with open(p, "rb") as f:
            data = f.read()
        costs = memoryview(data).cast("H")
        if len(costs) != len(trie):
            raise ValueError(f"{p}: {len(costs)} costs for {len(trie)} words")
        return cls(trie=trie, costs=costs)

    def __contains__(self, word) -> bool:
        return word in self._trie if self._trie is not None else word in self.words

    def get(self, word, default=None):
        if self._trie is None:
            return self.words.get(word, default)
        i = self._trie.key_id(word) if word in self._trie else None
        return default if i is None else self._costs[i]

    def starting(self, run: str, i: int, longest: int):
        """(end, cost) of each word of the list that ``run`` continues with at ``i``, of
        at most ``longest`` letters, shortest first."""
        if self._trie is None:
            yield from in_table(self.words)(run, i, longest)
            return
        costs = self._costs
        for word, wid in self._trie.iter_prefixes_with_ids(run[i:i + longest]):
            yield i + len(word), costs[wid]

    @staticmethod
    def write(p: Path, words: dict[str, int]) -> None:
        """Save ``words`` at ``p`` (the costs, by key id) and its trie beside it."""
        trie = saved.tries().Trie(words)
        costs = array("H", [0]) * len(trie)
        for w, c in words.items():
            costs[trie.key_id(w)] = min(c, 0xFFFF)
        atomic_write(saved.trie_path(p, "words"), trie.tobytes())
        atomic_write(p, costs.tobytes())


def lexicon(lang: str) -> Lexicon:
    """wordfreq's words of ``lang`` at Zipf :data:`LEXICON_ZIPF` or more (a segmenter's
    word list), each with its cost (hundredths of (9 - Zipf): a rarer word costs more),
    kept beside the last index opened (``annotate-lexicon-<lang>-...costs`` and its
    ``.words.marisa`` trie)."""
    return _kept(("lexicon", lang), f"annotate-lexicon-{lang}", gram.digest, lambda: _lexicon(lang))


def lexicon_zipf(word: str, lang: str) -> float | None:
    """The Zipf frequency :func:`lexicon` gives ``word`` (its cost read back), or None for
    a word the list lacks."""
    cost = lexicon(lang).get(word)
    return None if cost is None else 9 - cost / 100


def thai_words() -> Lexicon:
    """pythainlp's Thai word list (``words_th.txt``), each word costing 1, kept as
    :func:`lexicon` keeps a list (``annotate-thaiwords-<pythainlp release>-...costs``):
    reading the file made a fresh process's Thai texts wait 15-20 ms for its 62,000 words."""
    return _kept(("thai",), "annotate-thaiwords", lambda: installed_version("pythainlp") or "none",
                 lambda: dict.fromkeys(sorted(thai_corpus("words_th.txt")), 1))


def _kept(key: tuple, prefix: str, version: Callable[[], str], words_of) -> Lexicon:
    """The word list ``key`` of this process: mapped from its files beside the last index
    opened (``<prefix>-<version()>-v<VERSION>.costs``), else ``words_of()`` in memory, saved
    there for the next process. ``version`` is asked only when the list is not yet in this
    process (pythainlp's release is read from its folder: 1 ms a call, on every segmented run)."""
    got = _WORDS.get(key)
    if got is not None:
        return got
    p = Path(_DIRECTORY[-1]) / f"{prefix}-{version()}-v{saved.VERSION}.costs" if _DIRECTORY else None
    if p is not None and p.is_file():
        try:
            got = Lexicon.mmap(p)
        except (OSError, ValueError):
            got = None
    if got is None:
        words = words_of()
        got = Lexicon(words)
        if p is not None:
            saved.write(p, prefix, lambda: Lexicon.write(p, words))
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
    """:func:`_words_of` of ``lang`` (its base language), from its tries in ``directory``
    (``annotate-words-<lang>-<grammar hash>-v<VERSION>.everyday.marisa``, ``.known.marisa``
    and ``.dictionary.marisa``, memory-mapped: a text asks for a few hundred of their words), else
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


WORD_LISTS = ("everyday", "known", "dictionary")  # a language's word lists, a trie each


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
