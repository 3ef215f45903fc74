"""Words of the scripts written without spaces: maximal matching over a word list (Thai:
pythainlp's; Chinese: wordfreq's, kept beside the index by ``wordlists.lexicon``)."""
from __future__ import annotations

from kgcult import extras
from kgcult.annotate.wordlists import lexicon, thai_words
from kgcult.link.wordcut import max_match

FEATURE_SEGMENT = "kgcult annotate's word segmentation of Thai"


def segment(run: str, segmenter: str, lang: str = "th") -> list[tuple[int, int]]:
    """The words of an unspaced run as (start, end) offsets. ``lexicon``: maximal matching
    over wordfreq's words of ``lang``; ``thai``: maximal matching over pythainlp's Thai word list (the fewest letters left out of any word, then the fewest
    words; as pythainlp's newmm, without its dictionary trie, which takes seconds to build);
    letters no word covers make one word per stretch."""
    if segmenter not in ("thai", "lexicon"):
        return [(0, len(run))]
    key = (run, segmenter, lang)
    got = _SEGMENTED.get(key)
    if got is None:
        got = _SEGMENTED[key] = _thai(run, segmenter, lang)
        if len(_SEGMENTED) > 256:  # the runs of the last texts (finder and across both ask)
            del _SEGMENTED[next(iter(_SEGMENTED))]
    return got


def listed(word: str, segmenter: str, lang: str = "th") -> bool:
    """Whether ``word`` is a word of the segmenter's list (not letters it cut off a word
    the list lacks)."""
    if segmenter == "thai":
        return word in thai_words()
    if segmenter == "lexicon":
        return word in lexicon(lang)
    return True


_SEGMENTED: dict = {}
MAX_WORD = 24  # the longest word of the list looked for, in letters (the list's longest: a 0.1 s scan)


def _thai(run: str, segmenter: str, lang: str) -> list[tuple[int, int]]:
    if segmenter == "thai":
        extras.require_present("pythainlp", "annotate", FEATURE_SEGMENT)
        lex = thai_words()  # each word costs 1: the fewest words
        cuts = max_match(run, lex, MAX_WORD)
    else:
        lex = lexicon(lang)  # a unigram model
        cuts = max_match(run, lex, MAX_WORD, uncovered=UNCOVERED, shortest=1)
    out: list[tuple[int, int]] = []
    for a, b in cuts:  # letters no word covers, one word per stretch
        if out and b - a == 1 and run[a:b] not in lex and out[-1][1] == a and _loose(run, out[-1], lex):
            out[-1] = (out[-1][0], b)
        elif out and segmenter == "thai" and out[-1][1] == a and _inside_cluster(run, a):
            out[-1] = (out[-1][0], b)  # no cut inside a letter cluster
        else:
            out.append((a, b))
    return out


_THAI_MARKS = frozenset(chr(c) for c in (0x0E31, *range(0x0E34, 0x0E3B), *range(0x0E47, 0x0E4F)))
_THAI_LEADING = frozenset("\u0e40\u0e41\u0e42\u0e43\u0e44")  # เ แ โ ใ ไ, written before their consonant
_THANTHAKHAT = "\u0e4c"


def _inside_cluster(run: str, i: int) -> bool:
    """Whether a cut before ``run[i]`` falls inside a Thai letter cluster, as the word list's
    maximal matching may cut a foreign name it lacks (มาร|์|แซ|ย์, Marseille): before a vowel
    or tone mark written over or under a letter, after a vowel written before its
    consonant (โ|พร), or before a consonant silenced by the thanthakhat, which belongs to
    the syllable before (แซ|ย์)."""
    return (run[i] in _THAI_MARKS or run[i - 1] in _THAI_LEADING
            or (run[i + 1:i + 2] == _THANTHAKHAT and "\u0e01" <= run[i] <= "\u0e2e"))


def _loose(run: str, prev: tuple[int, int], words_) -> bool:
    return run[prev[0]:prev[1]] not in words_


UNCOVERED = 2000  # the cost of a letter no word covers (a word of Zipf -11)

