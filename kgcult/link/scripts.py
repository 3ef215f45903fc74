"""Romanization keys: a name written in any script as lower-case ASCII, so that a mention
in Thai, Devanagari, Arabic or Persian script, kana, kanji or Hangul can be compared with
the names the graph holds in another script (``stages/xscript.py``).

:func:`romanize` is deterministic (a function of the text and its language) and built on
maintained packages, each imported on the first text that needs it:

* Thai: pythainlp's RTGS rules (``royin``, no download), applied to the whole run of Thai
  letters (its dictionary word segmenter, a 2 s load, is not needed for a name);
* Devanagari and the other Brahmic scripts: indic-transliteration (IAST, diacritics
  folded), with the inherent vowel of a word's last consonant dropped, as Hindi, Marathi
  and Nepali pronounce it (``राजस्थान`` -> ``rajasthan``);
* Japanese with kanji: pykakasi (Hepburn); long vowels folded (``toukyou`` -> ``tokyo``);
* Hangul: korean-romanizer (Revised Romanization);
* everything else (kana alone, Chinese as pinyin, Arabic and Persian script, Cyrillic,
  Greek, Hebrew, Latin with diacritics, ...): anyascii.

:func:`skeleton` is the key's consonants: Arabic and Persian script write long vowels
only, so a name is compared by its consonants there (``تهران`` ``thrn`` ~ ``Tehran``).
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Callable

# the scripts with their own romanizer, by the first word of a letter's Unicode name
_BRAHMIC = {"DEVANAGARI": "devanagari", "BENGALI": "bengali", "GURMUKHI": "gurmukhi",
            "GUJARATI": "gujarati", "ORIYA": "oriya", "TAMIL": "tamil", "TELUGU": "telugu",
            "KANNADA": "kannada", "MALAYALAM": "malayalam"}
ABJAD = frozenset({"ARABIC", "HEBREW", "SYRIAC"})
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_JA_LONG = re.compile(r"ou|oo|uu|aa|ee|ii")
_APOSTROPHES = str.maketrans("", "", "'’ʼʻ`")
_DOUBLED = re.compile(r"([a-z])\1+")
# vowels (and the half-vowels Arabic script writes as consonants) out; sounds that
# Arabic script writes with one letter folded together (c/k/q, p/b, v/f)
_SKELETON = str.maketrans("ckqpv", "kkkbf", "aeiouyw")


@lru_cache(maxsize=4096)
def script_of(ch: str) -> str:
    """The script of a character: the first word of its Unicode name (``THAI``,
    ``DEVANAGARI``, ``CJK``, ``HIRAGANA``, ``HANGUL``, ``LATIN``, ...); ``""`` for a
    character that is no letter or mark."""
    cat = unicodedata.category(ch)
    if cat[0] not in "LM":
        return ""
    name = unicodedata.name(ch, "")
    if not name:
        return ""
    head = name.split(" ", 1)[0]
    return "CJK" if head in ("CJK", "KANGXI") else head


def scripts_in(text: str) -> set[str]:
    """The scripts of the letters of ``text``."""
    return {s for s in map(script_of, text) if s}


def is_latin(text: str) -> bool:
    """Whether every letter of ``text`` is Latin (a text without letters counts)."""
    return all(s == "LATIN" for s in scripts_in(text))


_CJK = frozenset({"CJK", "HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA"})


def _runs(text: str):
    """(script, run) of ``text`` split where the script changes; spaces, digits and
    punctuation (script ``""``) and marks attach to the run before them; kanji and kana
    are one script, ``CJK`` (a Japanese word mixes them)."""
    cur, start = None, 0
    for i, ch in enumerate(text):
        sc = script_of(ch)
        if not sc or unicodedata.category(ch)[0] == "M":
            continue
        if sc in _CJK:
            sc = "CJK"
        if cur is None:
            cur = sc
        elif sc != cur:
            yield cur, text[start:i]
            cur, start = sc, i
    yield cur or "", text[start:]


# -- the romanizers, each loaded on first use ----------------------------------------

@lru_cache(maxsize=None)
def _anyascii() -> Callable[[str], str]:
    from anyascii import anyascii
    return anyascii


@lru_cache(maxsize=None)
def _thai() -> Callable[[str], str]:
    try:  # the rules alone, per run of Thai letters (no dictionary segmenter to load)
        from pythainlp.transliterate.royin import _romanize
        return lambda s: " ".join(_romanize(w) for w in s.split())
    except ImportError:  # pragma: no cover - a pythainlp without the module
        return _anyascii()


@lru_cache(maxsize=None)
def _brahmic(script: str) -> Callable[[str], str]:
    try:
        from indic_transliteration import sanscript
    except ImportError:  # pragma: no cover
        return _anyascii()
    scheme = getattr(sanscript, script.upper())

    def run(s: str) -> str:
        out = []
        for w in s.split():
            r = sanscript.transliterate(w, scheme, sanscript.IAST).replace("ṃ", "n").replace("ṁ", "n")
            # a word ending in a bare consonant: its inherent vowel is not pronounced
            name = unicodedata.name(w[-1], "").split(" ")
            if name[1:2] == ["LETTER"] and name[-1] not in ("A", "AA") and r.endswith("a"):
                r = r[:-1]
            out.append(r)
        return " ".join(out)
    return run


@lru_cache(maxsize=None)
def _kakasi() -> Callable[[str], str]:
    try:
        import pykakasi
    except ImportError:  # pragma: no cover
        return _anyascii()
    k = pykakasi.kakasi()
    return lambda s: " ".join(t["hepburn"] for t in k.convert(s) if t["hepburn"])


@lru_cache(maxsize=None)
def _hangul() -> Callable[[str], str]:
    try:
        from korean_romanizer.romanizer import Romanizer
    except ImportError:  # pragma: no cover
        return _anyascii()
    return lambda s: Romanizer(s).romanize()


# the letters Arabic script writes a long (or final) a / i with: kept as vowels, where
# anyascii drops the alef
_ALEF = str.maketrans({"ا": "a", "آ": "a", "أ": "a", "إ": "i", "ى": "a", "ة": "a"})


def _arabic(s: str) -> str:
    return _anyascii()(s.translate(_ALEF))


def _romanizer(script: str, lang: str) -> Callable[[str], str]:
    if script == "ARABIC":
        return _arabic
    if script == "THAI":
        return _thai()
    if script in _BRAHMIC:
        return _brahmic(_BRAHMIC[script])
    if script == "HANGUL":
        return _hangul()
    return _anyascii()


def _ascii_words(s: str) -> str:
    s = (_anyascii()(s) if not s.isascii() else s).lower().translate(_APOSTROPHES)
    return " ".join(w for w in _NON_ALNUM.split(s) if w)


@lru_cache(maxsize=65536)
def romanize(text: str, lang: str) -> str:
    """``text`` (written in ``lang``) as lower-case ASCII words separated by one space
    (digits kept, punctuation dropped); ``""`` when nothing is left. Deterministic."""
    base = (lang or "").split("-")[0].lower()
    parts = []
    for script, run in _runs(unicodedata.normalize("NFC", text)):
        if script == "CJK":
            kana = any(script_of(c) != "CJK" for c in run if script_of(c) in _CJK)
            kanji = any(script_of(c) == "CJK" for c in run)
            if kanji and (base == "ja" or kana):  # Japanese: kanji read as Japanese
                r = _ascii_words(_kakasi()(run))
            else:  # kana alone, or Chinese characters (as pinyin)
                r = _ascii_words(_anyascii()(run))
            if base == "ja" or kana:  # long vowels once (toukyou, ramen)
                r = _JA_LONG.sub(lambda m: m.group(0)[0], r)
            parts.append(r)
        elif script in ("LATIN", ""):
            parts.append(_ascii_words(run))
        else:
            parts.append(_ascii_words(_romanizer(script, base)(run)))
    return " ".join(p for p in parts if p)


def compact(key: str) -> str:
    """A romanized key without its spaces (scripts without spaces between words, and
    names written as one word in one language and two in another)."""
    return key.replace(" ", "")


def skeleton(key: str) -> str:
    """The consonants of a romanized key (spaces dropped): vowels, ``y`` and ``w`` out,
    c/q as k, p as b, v as f, doubled letters once (Arabic script writes no short vowel and a long one as a
    consonant letter)."""
    s = compact(key).translate(_SKELETON)
    return _DOUBLED.sub(r"\1", s)


def abjad(text: str) -> bool:
    """Whether ``text`` is written in a script without short vowels (Arabic, Persian,
    Urdu, Hebrew): compared by :func:`skeleton`."""
    return bool(scripts_in(text) & ABJAD)


_VOWEL_RUN = "[aeiouy]*"


@lru_cache(maxsize=4096)
def abjad_matcher(key: str):
    """Whether a Latin name's key can be the name ``key`` (a romanized abjad spelling)
    writes: its consonants in order (folded as :func:`skeleton` folds them), any vowels
    between them, and a vowel where the spelling writes one (``w``, ``y``, an alef); a final ``h`` may be a vowel (Persian ``ه``)."""
    pat = ["^", _VOWEL_RUN]
    k = compact(key).translate(str.maketrans("ckqpv", "kkkbf"))
    for i, ch in enumerate(k):
        if ch in "wy":
            pat.append("[aeiouywf]+")
        elif ch in "aeiou":
            pat.append("[aeiouy]+")
        elif ch == "h" and i == len(k) - 1:
            pat.append("h?")
        else:
            pat.append(re.escape(ch) + "+")
        pat.append(_VOWEL_RUN)
    pat.append("$")
    rx = re.compile("".join(pat))
    fold = str.maketrans("ckqpv", "kkkbf")
    return lambda name_key: rx.match(name_key.translate(fold)) is not None
