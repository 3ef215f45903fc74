"""Text as the annotator sees it: words with their code-point offsets, runs of scripts
written without spaces (Han, kana, Thai, ...), and the folded key of a word or a name
(the link index's ``normalize.fold`` plus the letter variants of the Arabic script and the
Devanagari nukta, so a text and a label spelled with either meet)."""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from kgcult.link import normalize

# scripts written without spaces between words: Han, kana, Thai, Lao, Myanmar, Khmer
_UNSPACED_RANGES = ((0x3040, 0x30FF), (0x31F0, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
                    (0xF900, 0xFAFF), (0xFF66, 0xFF9F), (0x20000, 0x3FFFF), (0x0E00, 0x0EFF),
                    (0x1000, 0x109F), (0x1780, 0x17FF), (0x3005, 0x3006))
_KATAKANA = ((0x30A0, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F))
# what may stand between two words of one name: spaces, hyphens, the zero-width non-joiner
JOINERS = frozenset(" \u00a0-\u2010\u2011\u200c\u200d")


def _in(o: int, ranges) -> bool:
    return any(a <= o <= b for a, b in ranges)


class _Classes(dict):
    """str.translate table, per character on first sight: ``u`` a letter of an unspaced
    script, ``w`` another letter, mark or digit, a space otherwise."""

    def __missing__(self, ch: int):
        if _in(ch, _UNSPACED_RANGES):
            v = "u"
        elif unicodedata.category(chr(ch))[0] in "LMN":
            v = "w"
        else:
            v = " "
        self[ch] = v
        return v


_CLASSES = _Classes()
_RUN = re.compile(r"u+|w+")


def unspaced(s: str) -> bool:
    """Whether ``s`` is written wholly in scripts without spaces."""
    return bool(s) and s.translate(_CLASSES) == "u" * len(s)


def katakana(s: str) -> bool:
    return bool(s) and all(_in(ord(c), _KATAKANA) for c in s)


_ARABIC = str.maketrans({
    "أ": "ا", "إ": "ا", "آ": "ا", "ٱ": "ا", "ى": "ي", "ی": "ي", "ۍ": "ي", "ئ": "ي", "ة": "ه",
    "ک": "ك", "ګ": "ك", "ؤ": "و", "ـ": None, "\u0670": None,
    **{chr(c): None for c in range(0x064B, 0x0660)},
    "\u093c": None,  # Devanagari nukta: ज़ and ज meet
})


@dataclass(frozen=True, slots=True)
class Word:
    """A word of the text: ``text[start:end]``; ``unspaced``: a run of a script written
    without spaces (names are searched inside it)."""
    start: int
    end: int
    text: str
    unspaced: bool


def words(text: str) -> list[Word]:
    """The words and unspaced runs of ``text``, in order (code-point offsets)."""
    cls = text.translate(_CLASSES)
    return [Word(m.start(), m.end(), text[m.start():m.end()], cls[m.start()] == "u")
            for m in _RUN.finditer(cls)]


def joined(text: str, a: Word, b: Word) -> bool:
    """Whether only spaces or hyphens stand between words ``a`` and ``b`` (one name may span them)."""
    gap = text[a.end:b.start]
    return 0 < len(gap) <= 2 and all(c in JOINERS for c in gap)


def title_runs(text: str, ws: list[Word] | None = None,
               everyday: Callable[[str], bool] | None = None,
               conjunctions: frozenset = frozenset()) -> list[tuple[int, int]]:
    """Runs of capitalized words that read as one proper name: three or more capitalized
    words, or capitalized words around short lower-case ones (``Cuernos de Miel``), with
    only spaces or hyphens between words; a conjunction of the language (folded) ends a
    run, as it joins two names (``Trabzon ve Rize``, ``Pan de Muerto y Tamales``). A
    sentence's first word (its capital says nothing) is part of the run that follows it
    only when ``everyday(word)`` says it is no everyday word of the language (``Jasmine
    Dragon Pearl Dumplings are``, not ``The Golden Dragon Rolls``); without ``everyday``,
    never."""
    ws = words(text) if ws is None else ws
    out = []
    i = 0
    while i < len(ws):
        if not _cap(ws[i]) or _initial(text, ws[i]):
            i += 1
            continue
        j, caps, links, last = i, 1, 0, i
        k = i + 1
        while k < len(ws) and joined(text, ws[k - 1], ws[k]):
            if _cap(ws[k]):
                caps += 1
                last = k
            elif (len(ws[k].text) <= 3 and ws[k].text.islower() and k + 1 < len(ws) and _cap(ws[k + 1])
                  and fold(ws[k].text) not in conjunctions):
                links += 1
            else:
                break
            k += 1
        j = last
        if caps >= 3 or (caps >= 2 and links):
            first = i
            if (everyday is not None and i > 0 and _cap(ws[i - 1]) and _initial(text, ws[i - 1])
                    and joined(text, ws[i - 1], ws[i]) and not everyday(ws[i - 1].text)):
                first = i - 1
            out.append((ws[first].start, ws[j].end))
        i = j + 1
    return out


def _initial(text: str, w: Word) -> bool:
    """The first word of a sentence (its capital says nothing)."""
    before = text[:w.start].rstrip(" \t\"'«“(")
    return not before or before[-1] in ".!?:;\n。"


def _cap(w: Word) -> bool:
    return not w.unspaced and w.text[:1].isupper() and not w.text.isupper()


_FOLD: dict[str, str] = {}


def fold(s: str) -> str:
    """The key of a word or a name: ``normalize.fold`` (NFKC, case, punctuation, Latin,
    Greek and Cyrillic diacritics), then Arabic-script letter variants and marks folded."""
    k = _FOLD.get(s)
    if k is None:
        k = normalize.fold(s)
        if not k.isascii():
            k = " ".join(k.translate(_ARABIC).split())
        if len(_FOLD) < 200_000:
            _FOLD[s] = k
    return k


