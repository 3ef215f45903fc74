"""Words of the scripts written without spaces: maximal matching over a word list (Thai:
pythainlp's; Chinese: wordfreq's, kept beside the index by ``wordlists.lexicon``)."""
from __future__ import annotations

from kgcult import extras
from kgcult.annotate.wordlists import lexicon, thai_words
from kgcult.link import thai
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
    if segmenter not in ("thai", "lexicon"):
        return True
    return word in _word_list(segmenter, lang)


def _word_list(segmenter: str, lang: str):
    """The segmenter's word list: pythainlp's Thai words, or wordfreq's words of ``lang``."""
    return thai_words() if segmenter == "thai" else lexicon(lang)


_SEGMENTED: dict = {}
MAX_WORD = 24  # the longest word of the list looked for, in letters (the list's longest: a 0.1 s scan)


def _thai(run: str, segmenter: str, lang: str) -> list[tuple[int, int]]:
    if segmenter == "thai":
        extras.require_present("pythainlp", "annotate", FEATURE_SEGMENT)
    lex = _word_list(segmenter, lang)
    if segmenter == "thai":  # each word costs 1: the fewest words
        cuts = max_match(run, lex, MAX_WORD)
    else:  # a unigram model
        cuts = max_match(run, lex, MAX_WORD, uncovered=UNCOVERED, shortest=1)
    out: list[tuple[int, int]] = []
    for a, b in cuts:  # letters no word covers, one word per stretch
        if out and b - a == 1 and run[a:b] not in lex and out[-1][1] == a and _loose(run, out[-1], lex):
            out[-1] = (out[-1][0], b)
        elif out and segmenter == "thai" and out[-1][1] == a and thai.inside_cluster(run, a):
            out[-1] = (out[-1][0], b)  # no cut inside a letter cluster
        else:
            out.append((a, b))
    return out


def _loose(run: str, prev: tuple[int, int], words_) -> bool:
    return run[prev[0]:prev[1]] not in words_


UNCOVERED = 2000  # the cost of a letter no word covers (a word of Zipf -11)

