"""Romanization keys: a name written in any script as lower-case ASCII, so that a mention
in Thai, Devanagari, Arabic or Persian script, kana, kanji or Hangul can be compared with
the names the graph holds in another script (``stages/xscript.py``).

:func:`romanize` is deterministic (a function of the text and its language) and built on
maintained packages, each imported on the first text that needs it:

* Thai: pythainlp's RTGS rules (``royin``, no download), syllable by syllable, each
  syllable respelled first where the rules misread RTGS (``kgcult/link/thai.py``; its
  dictionary word segmenter, a 2 s load, is not needed for a name);
* Devanagari and the other Brahmic scripts: anyascii's letter values plus the inherent
  vowel of each consonant, but for a word's last one, as Hindi, Marathi and Nepali
  pronounce it (``राजस्थान`` -> ``rajasthan``);
* Japanese with kanji: pykakasi (Hepburn); long vowels folded (``toukyou`` -> ``tokyo``);
  its kanji dictionary is read from a converted copy (:func:`convert_kanwa`, written by
  ``kgcult link index`` or the first use), one first kanji at a time, the longest word
  first as pykakasi reads it, the kana then by anyascii (Hepburn);
* Hangul: korean-romanizer (Revised Romanization);
* everything else (kana alone, Chinese as pinyin, Arabic and Persian script, Cyrillic,
  Greek, Hebrew, Latin with diacritics, ...): anyascii.

:func:`skeleton` is the key's consonants: Arabic and Persian script write long vowels
only, so a name is compared by its consonants there (``تهران`` ``thrn`` ~ ``Tehran``).
"""
from __future__ import annotations

import json
import pickle
import re
import sqlite3
import unicodedata
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path
from typing import Callable

import opencc

from kgcult import resources
from kgcult.files import atomic_sqlite, package_cache, read_only_sqlite
from kgcult.link import thai

# the scripts with their own romanizer, by the first word of a letter's Unicode name
_BRAHMIC = frozenset({"DEVANAGARI", "BENGALI", "GURMUKHI", "GUJARATI", "ORIYA", "TAMIL", "TELUGU",
                      "KANNADA", "MALAYALAM"})
ABJAD = frozenset({"ARABIC", "HEBREW", "SYRIAC"})
# alphabets whose letters map one to one onto Latin ones: a romanized name is as exact as
# the name itself, so a spelling neighbour is the same-script fuzzy stages' business
ALPHABETS = frozenset({"LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "GEORGIAN"})
# scripts that write every vowel (the alphabets, and Ethiopic's syllables): a name in one,
# romanized, is the sound a name written in an abjad spells with its consonants (Arabic
# طماطم, Amharic ቲማቲም timatim; Arabic لازانيا, Russian лазанья)
VOWELLED = ALPHABETS | {"ETHIOPIC"}
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_JA_LONG = re.compile(r"ou|oo|uu|aa|ee")  # long vowels English drops (Tokyo); ii it keeps (Niigata)
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
    """Thai by syllables (:func:`kgcult.link.thai.romanize_word`); anyascii without pythainlp."""
    if thai.rules() is None:  # pragma: no cover - pythainlp missing
        return _anyascii()
    return lambda s: " ".join(thai.romanize_word(w) for w in s.split())


# consonants an English spelling writes otherwise than anyascii's letter values (Indic
# transliteration's c, ch, s): as place names are spelled in English (Chandigarh, Kashmir)
_BRAHMIC_ENGLISH = {"CA": "ch", "CHA": "chh", "SHA": "sh", "SSA": "sh", "VOCALIC R": "ri"}
# a consonant with a nukta: the flaps (ड़ r, ढ़ rh: छत्तीसगढ़ Chhattisgarh) and the sounds of
# Persian and English loans (क़ q, ख़ kh, ग़ g, ज़ z, फ़ f); also the precomposed letters
_NUKTA = {"DDA": "r", "DDHA": "rh", "KA": "q", "KHA": "kh", "GA": "g", "JA": "z", "PHA": "f"}
_NUKTA_LETTERS = {"DDDHA": "r", "RHA": "rh", "QA": "q", "KHHA": "kh", "GHHA": "g", "ZA": "z", "FA": "f"}


def _brahmic_units(word: str) -> list[tuple[str, bool]]:
    """A Brahmic word (an abugida) letter by letter with anyascii's values (some
    consonants as English spells them: :data:`_BRAHMIC_ENGLISH`), each piece with whether an
    inherent ``a`` follows it: a consonant carries one unless a vowel sign or a virama follows
    it or it ends the word (Hindi, Marathi and Nepali do not pronounce it there); anusvara
    and candrabindu as ``n``."""
    anyascii = _anyascii()
    out: list[tuple[str, bool]] = []
    for i, ch in enumerate(word):
        name = unicodedata.name(ch, "")
        if name.endswith(("SIGN ANUSVARA", "SIGN CANDRABINDU")):
            out.append(("n", False))
            continue
        letter = name.split(" LETTER ", 1)[1] if " LETTER " in name else ""
        r = (_NUKTA_LETTERS.get(letter) or _BRAHMIC_ENGLISH.get(letter or name.split(" SIGN ", 1)[-1])
             or anyascii(ch).lower())
        if not letter or any(v in r for v in "aeiou"):
            out.append((r, False))  # not a consonant letter
            continue
        j = i + 1
        while j < len(word) and unicodedata.name(word[j], "").endswith("SIGN NUKTA"):
            r = _NUKTA.get(letter, r)
            j += 1
        nxt = unicodedata.name(word[j], "") if j < len(word) else "VIRAMA"
        out.append((r, "VOWEL SIGN" not in nxt and not nxt.endswith("VIRAMA")))
    return out


def _brahmic(run: str) -> str:
    """A Brahmic script word by word (:func:`_brahmic_units`), every inherent vowel written."""
    return " ".join("".join(r + ("a" if a else "") for r, a in _brahmic_units(w)) for w in run.split())


MAX_SYNCOPE = 4  # inherent vowels of a word that may each be silent (2^4 spellings)


def syncope_variants(text: str) -> list[str]:
    """The compact keys of a name written in a Brahmic script with each inherent vowel
    between a vowel and a consonant followed by its own vowel left out or not (Hindi
    drops it there: आगरा agra, कानपुर kanpur, but गुजरात gujarat as often), the written one
    first; ``[]`` for a name in another script or with no such vowel."""
    if not scripts_in(text) & _BRAHMIC or len(text.split()) != 1:
        return []
    units = _brahmic_units(unicodedata.normalize("NFC", text))
    # a medial inherent vowel: a vowel before its consonant, a vowelled consonant after it
    def vowel(k: int, end: int) -> bool:  # unit k begins (end 0) or ends (end -1) with a vowel
        return 0 <= k < len(units) and bool(units[k][0]) and units[k][0][end] in "aeiou"
    optional = [i for i, (r, a) in enumerate(units)
                if a and i > 0 and i + 1 < len(units) and (units[i - 1][1] or vowel(i - 1, -1))
                and bool(units[i + 1][0]) and not vowel(i + 1, -1)
                and (units[i + 1][1] or vowel(i + 2, 0))]
    if not optional or len(optional) > MAX_SYNCOPE:
        return []
    out = []
    for mask in range(1 << len(optional)):
        drop = {optional[b] for b in range(len(optional)) if mask >> b & 1}
        out.append("".join(r + ("a" if a and i not in drop else "") for i, (r, a) in enumerate(units)))
    return [_NON_ALNUM.sub("", k) for k in dict.fromkeys(out)]


def final_vowel_variant(text: str) -> str | None:
    """The compact key of a name in a Brahmic script with the inherent vowel of a word's
    last consonant said, where Hindi leaves it silent and the English spelling of a
    Sanskrit name keeps it: after a cluster in any word (आंध्र प्रदेश andhr pradesh,
    Andhra Pradesh; महाराष्ट्र, Maharashtra), and after a bare consonant ending a one-word
    name (केरल keral, Kerala); None when there is none. (A name from English keeps its
    silent vowel in the written key: न्यूयॉर्क, New York.)"""
    words = text.split()
    if not scripts_in(text) & _BRAHMIC or not words:
        return None
    keys, changed = [], False
    for w in words:
        w = unicodedata.normalize("NFC", w)
        units = _brahmic_units(w)
        key = "".join(r + ("a" if a else "") for r, a in units)
        last = unicodedata.name(w[-1], "")
        cluster = len(w) > 1 and unicodedata.name(w[-2], "").endswith("VIRAMA")
        if units and " LETTER " in last and not units[-1][1] and not any(v in units[-1][0] for v in "aeiou") \
                and (cluster or len(words) == 1):
            key, changed = key + "a", True
        keys.append(key)
    return _NON_ALNUM.sub("", "".join(keys)) if changed else None


def long_vowel_variant(text: str) -> str | None:
    """The compact key of a name in a Brahmic script with its long ī and ū written ee and
    oo, as the English spellings of Indian words write them (खीर khir, kheer; पनीर paneer;
    पूरी poori; आलू aloo), but a word's last ī as i (पूरी poori, not pooree; दही dahi);
    None when nothing changed. Every inherent vowel as the written key has it."""
    if not scripts_in(text) & _BRAHMIC:
        return None
    keys, changed = [], False
    for w in text.split():
        w = unicodedata.normalize("NFC", w)
        for i, ((r, a), ch) in enumerate(zip(_brahmic_units(w), w)):
            name = unicodedata.name(ch, "")
            if name.endswith(" UU") or (name.endswith(" II") and i + 1 < len(w)):
                r, changed = ("ee" if name.endswith(" II") else "oo"), True
            keys.append(r + ("a" if a else ""))
    return _NON_ALNUM.sub("", "".join(keys)) if changed else None


KANWA_FORMAT = 3
MAX_KANWA_WORD = 8  # the longest word written back as Japanese (_Kanwa.japanese), in characters
KANWA_CACHE_KIB = 2048  # page cache of the converted dictionary (SQLite's default)


def kanwa_path() -> Path | None:
    """Where the converted copy of pykakasi's kanji dictionary lives (``$KGCULT_CACHE``,
    default ``~/.cache/kgcult``, ``models/pykakasi-<version>-kanwa-v<format>.sqlite``); None
    without pykakasi."""
    return package_cache("pykakasi", f"pykakasi-{{version}}-kanwa-v{KANWA_FORMAT}.sqlite")


def convert_kanwa() -> Path | None:
    """Write the converted copy of pykakasi's kanji dictionary (atomically) when missing:
    per word, its first kanji, the word and its reading (the first one that needs no
    okurigana context), in the dictionary's order; its path, or None when it cannot be
    written (or pykakasi is not installed)."""
    path = kanwa_path()
    if path is None or path.exists():
        return path
    from pykakasi.properties import Configurations
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        dictpath = Configurations.dictpath(Configurations.jisyo_kanwa)  # type: ignore[call-arg, arg-type]
        with open(dictpath, "rb") as f:
            table = pickle.load(f)  # pykakasi's own file, as pykakasi reads it
        rows = []
        for first in sorted(table):
            for seq, (word, readings) in enumerate(table[first].items()):
                yomi = next((y for y, con in readings if con is None), readings[0][0] if readings else "")
                rows.append((first, seq, word, yomi))
        # the words as simplified Chinese writes them (han_fold), each with itself: a name
        # in Chinese characters is written back as Japanese writes it (written_as)
        folded: dict[str, str] = {}
        back = _shinjitai_back()
        for _first, _seq, word, _yomi in rows:
            folded.setdefault(han_fold(word.translate(back)), word)
        with atomic_sqlite(path) as con:
            con.execute("BEGIN")
            con.execute("CREATE TABLE kanwa(first INTEGER, seq INTEGER, word TEXT, yomi TEXT, "
                        "PRIMARY KEY (first, seq)) WITHOUT ROWID")
            con.executemany("INSERT INTO kanwa VALUES (?, ?, ?, ?)", rows)
            con.execute("CREATE TABLE folded(first INTEGER, word TEXT, japanese TEXT, "
                        "PRIMARY KEY (first, word)) WITHOUT ROWID")
            con.executemany("INSERT INTO folded VALUES (?, ?, ?)",
                            ((ord(f[0]), f, w) for f, w in folded.items() if f))
            con.execute("COMMIT")
    except (OSError, sqlite3.Error):
        return None
    return path


def _shinjitai_back() -> dict[int, str]:
    """The Japanese forms OpenCC's ``t2jp`` writes that its ``jp2t`` does not read back
    (戸 for 戶, 姫 for 姬), each as the traditional character: a str.translate table."""
    t2jp = opencc.OpenCC("t2jp")
    back: dict[int, str] = {}
    for c in map(chr, range(0x4E00, 0xA000)):
        j = t2jp.convert(c)
        if len(j) == 1 and j != c and han_fold(j) == j:
            back.setdefault(ord(j), c)
    return back


def prepare() -> None:
    """What a first Japanese or Thai name needs, made ready: the converted kanji
    dictionary, the RTGS rules' readings of the Thai syllables."""
    convert_kanwa()
    thai.prepare()


class _Kanwa:
    """Kanji read as pykakasi reads them (the longest word of its dictionary the text
    starts with, its first reading), from the converted copy, one first kanji at a time:
    pykakasi itself unpickles its 10 MB dictionary (0.5-2 s) and imports asyncio through
    its ``deprecated`` dependency (0.1 s) in every process that reads one Japanese name."""

    def __init__(self, path: Path):
        self.con = read_only_sqlite(path, KANWA_CACHE_KIB)
        self.words: dict = {}

    def _words(self, text: str) -> list:
        """(word, reading) of the words ``text`` starts with, in the dictionary's order."""
        v = self.words.get(text)
        if v is None:
            v = self.words[text] = self.con.execute(
                "SELECT word, yomi FROM kanwa WHERE first = ? AND substr(?, 1, length(word)) = word "
                "ORDER BY seq", (ord(text[0]), text)).fetchall()
        return v

    def japanese(self, text: str) -> str:
        """``text`` in Chinese characters written as Japanese writes it: at each character,
        the longest word of the dictionary that, folded to simplified Chinese, the folded
        text starts with, as the dictionary writes it (冲绳 沖縄, 拉面 拉麺, 镰仓 鎌倉); a
        character no word begins, as it is. Same length when every word keeps its own."""
        t = han_fold(text)
        out, i = [], 0
        while i < len(t):
            for n in range(min(len(t) - i, MAX_KANWA_WORD), 0, -1):  # by the key: a look-up each
                hit = self.con.execute("SELECT japanese FROM folded WHERE first = ? AND word = ?",
                                       (ord(t[i]), t[i:i + n])).fetchone()
                if hit:
                    out.append(hit[0])
                    i += n
                    break
            else:
                out.append(text[i])
                i += 1
        return "".join(out)

    def __call__(self, text: str) -> str:
        out, i = [], 0
        while i < len(text):
            ch = text[i]
            if script_of(ch) != "CJK":
                out.append(ch)
                i += 1
                continue
            best, yomi = 0, ""
            for word, y in self._words(text[i:]):
                if len(word) > best:
                    best, yomi = len(word), y
            if best:
                out.append(" " + yomi + " ")
                i += best
            else:  # a kanji the dictionary does not hold
                out.append(" " + _anyascii()(ch) + " ")
                i += 1
        return _kana("".join(out))


@lru_cache(maxsize=None)
def _kakasi() -> Callable[[str], str]:
    path = convert_kanwa()
    return _Kanwa(path) if path is not None else _anyascii()


@lru_cache(maxsize=None)
def _hepburn() -> dict:
    """pykakasi's Hepburn table of hiragana (``きょ`` -> ``kyo``, ``っぱ`` -> ``ppa``), read
    from its data file without importing the package (235 entries); empty without it."""
    spec = find_spec("pykakasi")
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / "hepburnhira3.db"
    try:
        with open(path, "rb") as f:
            table = pickle.load(f)  # pykakasi's own file, as pykakasi reads it
    except (OSError, pickle.UnpicklingError, EOFError):
        return {}
    return table if isinstance(table, dict) else {}


def _kana(text: str) -> str:
    """Kana in Hepburn (katakana read as hiragana; the longest entry of pykakasi's table
    first), the rest by anyascii."""
    table = _hepburn()
    longest = max(map(len, table), default=1)
    text = "".join(chr(ord(c) - _HIRA_KATA) if "\u30a1" <= c <= "\u30f6" else c for c in text)
    out, i = [], 0
    while i < len(text):
        for n in range(min(longest, len(text) - i), 0, -1):
            r = table.get(text[i:i + n])
            if r is not None:
                out.append(r)
                i += n
                break
        else:
            out.append(_anyascii()(text[i]) if text[i] != "ー" else "")
            i += 1
    return "".join(out)


# Revised Romanization's liquidization, which korean_romanizer leaves out: ㄴ next to ㄹ
# is said, and spelled, l (전라 Jeolla, 신라 Silla, 한라산 Hallasan, 설날 seollal)
_LIQUID = re.compile("nr|ln")


@lru_cache(maxsize=None)
def _hangul() -> Callable[[str], str]:
    try:
        from korean_romanizer.romanizer import Romanizer
    except ImportError:  # pragma: no cover
        return _anyascii()
    return lambda s: _LIQUID.sub("ll", Romanizer(s).romanize())


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
        return _brahmic
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
            elif kana:  # kana alone
                r = _ascii_words(_kana(run))
            else:  # Chinese characters (as pinyin)
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


# the vowels a long vowel letter of an abjad (romanized) is heard as: an alef a or e, a
# waw o or u (or v, w), a ya i or e (or y, j)
_WRITTEN_VOWEL = {"a": "[ae]+", "w": "[ouwf]+", "y": "[iyej]+"}


@lru_cache(maxsize=4096)
def abjad_matcher(key: str, heard: bool = False):
    """Whether a Latin name's key can be the name ``key`` (a romanized abjad spelling)
    writes: its consonants in order (folded as :func:`skeleton` folds them), any vowels
    between them, and a vowel where the spelling writes one (``w``, ``y``, an alef); a final ``h`` may be a vowel (Persian ``ه``).
    ``heard``: the name is romanized from a script that writes its vowels (``VOWELLED``):
    a vowel the abjad writes is one it is heard as (an alef a or e; Georgian მიქლიო,
    miklio, is no مقلية, whose ya and final ta marbuta are i and a)."""
    pat = ["^", _VOWEL_RUN]
    k = compact(key).translate(str.maketrans("ckqpv", "kkkbf"))
    for i, ch in enumerate(k):
        if heard and ch in _WRITTEN_VOWEL:
            pat.append(_WRITTEN_VOWEL[ch])
        elif ch in "wy":
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


def vowelled(text: str) -> bool:
    """Whether ``text`` has letters and every one is of a script that writes its vowels
    (:data:`VOWELLED`)."""
    found = scripts_in(text)
    return bool(found) and found <= VOWELLED


def alphabetic(text: str) -> bool:
    """Whether every letter of ``text`` is of an alphabet that maps one to one onto Latin
    (:data:`ALPHABETS`)."""
    return scripts_in(text) <= ALPHABETS


_HIRA_KATA = 0x60  # katakana code point minus its hiragana's (U+3041-3096 / U+30A1-30F6)


def kana_folded(text: str) -> str | None:
    """``text`` with hiragana written as katakana (or, when it has none, katakana as
    hiragana): Japanese writes a word in either (``ねぎ`` / ``ネギ``); None when it has no kana."""
    if any("\u3041" <= c <= "\u3096" for c in text):
        return "".join(chr(ord(c) + _HIRA_KATA) if "\u3041" <= c <= "\u3096" else c for c in text)
    if any("\u30a1" <= c <= "\u30f6" for c in text):
        return "".join(chr(ord(c) - _HIRA_KATA) if "\u30a1" <= c <= "\u30f6" else c for c in text)
    return None


class _Han:
    """Japanese shinjitai and traditional Chinese characters folded to simplified Chinese
    (OpenCC ``jp2t`` then ``t2s``), so that 東京, 广岛 and 廣島 meet; only when the
    conversion keeps the length (offsets stay those of the text)."""

    def __init__(self):
        self._conv = None

    def __call__(self, s: str) -> str:
        if not any("\u3400" <= c <= "\u9fff" or "\uf900" <= c <= "\ufaff" for c in s):
            return s
        if self._conv is None:
            self._conv = (opencc.OpenCC("jp2t"), opencc.OpenCC("t2s"))
        jp2t, t2s = self._conv
        out = t2s.convert(jp2t.convert(s))
        return out if len(out) == len(s) else s


han_fold = _Han()


def han_only(text: str) -> bool:
    """Whether every letter of ``text`` is a Chinese character (Han, kanji, hanja), and it
    has one."""
    sc = scripts_in(text)
    return sc == {"CJK"}


@lru_cache(maxsize=1)
def _han_readings() -> dict[str, str]:
    return dict(json.loads(resources.ontology("han-readings.json").read_text(encoding="utf-8"))["readings"])


def han_reading(country: str | None) -> str | None:
    """The language that reads the names of ``country`` (a QID) written in Chinese
    characters (``ontology/han-readings.json``: Japan ``ja``, China ``zh``), or None."""
    return _han_readings().get(country) if country else None


def written_as(text: str, lang: str) -> str:
    """``text`` in Chinese characters written as ``lang`` writes them: as Japanese, word by
    word as pykakasi's dictionary writes the words (``_Kanwa.japanese``: 广岛 -> 広島; OpenCC's
    phrase-level ``s2t`` took a fresh process 40-90 ms to load), or as simplified Chinese
    (:data:`han_fold`)."""
    if lang == "ja":
        reader = _kakasi()
        if isinstance(reader, _Kanwa):
            return reader.japanese(text)
    return han_fold(text)
