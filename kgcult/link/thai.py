"""Thai names romanized as RTGS spells them, for the cross-script keys of
``kgcult/link/scripts.py``.

pythainlp's RTGS rules (``transliterate.royin._romanize``) are run syllable by syllable
(maximal matching over pythainlp's syllable list: the rules misread a whole word,
``เชียงใหม่`` came out ``chianghaim``), each syllable first respelled where the rules
read it otherwise than RTGS: a silent ห, a letter under the thanthakhat, a ร after a
closed syllable's final, a vowel written before a cluster, ศร. Beside the written key:

* :func:`linking_variants`: a Pali or Sanskrit compound with an inner final read again
  (``ราชบุรี`` ratburi, Ratchaburi);
* :func:`foreign_key`: the name read as Thai writes a foreign one (``มาร์มารา`` marmara).

Nothing here imports pythainlp's package (its ``__init__`` loads tokenizers, soundex and
more: 0.15-0.3 s): the rules' module and the word lists are read from their files.
"""
from __future__ import annotations

import itertools
import marshal
import re
import sys
import unicodedata
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path

from kgcult.files import atomic_write, package_cache
from kgcult.link.wordcut import max_match

_ROYIN_IMPORT = "from pythainlp import thai_consonants, word_tokenize"
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_AA = "\u0e32"  # า: a consonant with it says the consonant's sound at a syllable's head


@lru_cache(maxsize=None)
def rules():
    """(pythainlp's RTGS rules for one syllable, its syllable list, the longest syllable),
    or None without pythainlp; the rules answer from the saved readings of the syllable
    list (:func:`prepare`) when there are some, and run only for a syllable not read there."""
    raw = _rules()
    if raw is None:
        return None
    romanize, sylls, longest = raw
    table = _read_syllables()
    if table:
        def romanize(s: str, _read=table.get, _rules=romanize) -> str:
            r = _read(s)
            return _rules(s) if r is None else r
    return lru_cache(maxsize=16384)(romanize), sylls, longest  # a syllable's rules run once (about 50 regexes)


@lru_cache(maxsize=None)
def _rules():
    """(pythainlp's RTGS rules, its syllable list, the longest syllable), or None. The rules
    need one string constant of the package: unless pythainlp is imported already, their
    module is run from its file with that constant (read from the package's ``__init__``,
    the part before its first import) in place of its package import; a release whose
    files differ is imported as usual."""
    try:
        if "pythainlp" in sys.modules:
            raise LookupError
        spec = find_spec("pythainlp")
        if spec is None or not spec.submodule_search_locations:
            raise LookupError
        base = Path(list(spec.submodule_search_locations)[0])
        head = (base / "__init__.py").read_text(encoding="utf-8").split("\nfrom pythainlp", 1)[0]
        consts: dict = {}
        exec(compile(head, str(base / "__init__.py"), "exec"), consts)  # string constants
        path = base / "transliterate" / "royin.py"
        src = path.read_text(encoding="utf-8")
        if src.count(_ROYIN_IMPORT) != 1 or not isinstance(consts.get("thai_consonants"), str):
            raise LookupError
        ns: dict = {"__name__": "kgcult_royin", "thai_consonants": consts["thai_consonants"],
                    "word_tokenize": None}
        exec(compile(src.replace(_ROYIN_IMPORT, ""), str(path), "exec"), ns)
        romanize = ns["_romanize"]
    except (LookupError, OSError, SyntaxError, KeyError):
        try:
            from pythainlp.transliterate.royin import _romanize as romanize
        except ImportError:  # pragma: no cover - pythainlp missing
            return None
    sylls = syllables()
    longest = min(12, max(map(len, sylls), default=1))
    return romanize, sylls, longest


SYLLABLES_FORMAT = 1


def syllables_path() -> Path | None:
    """Where the RTGS rules' readings of pythainlp's syllables are kept (``$KGCULT_CACHE``,
    default ``~/.cache/kgcult``, ``models/pythainlp-<version>-rtgs-syllables-v<format>.marshal``);
    None without pythainlp."""
    return package_cache("pythainlp", f"pythainlp-{{version}}-rtgs-syllables-v{SYLLABLES_FORMAT}.marshal")


def prepare() -> Path | None:
    """Save (atomically, when missing) what the RTGS rules read for every syllable of
    pythainlp's list as :func:`parts` hands them over (respelled, a cluster's parts, each
    consonant's onset), and for each Thai letter alone: a fresh process then looks a
    syllable up instead of running its ~50 regular expressions (25% of the CPU of the dev
    half's Thai texts; the 10,000 syllables take 0.8 s once). Its path, or None."""
    path = syllables_path()
    raw = _rules()
    if path is None or raw is None or path.exists():
        return path
    romanize, sylls, _longest = raw
    table: dict[str, str] = {}

    def read(s: str) -> str:
        r = table.get(s)
        if r is None:
            r = table[s] = romanize(s)
        return r

    letters = [chr(c) for c in range(0x0E01, 0x0E5C)]
    for syl in sorted(sylls) + letters:
        _clustered(read, _ho_nam(_respelled(syl)))
    for c in letters:
        _onset(read, c)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, marshal.dumps(table))
    except OSError:
        return None
    return path


def _read_syllables() -> dict | None:
    """The saved readings (:func:`prepare`), or None when there are none (or the file is
    not a table of them: the rules then run for every syllable)."""
    path = syllables_path()
    if path is None or not path.exists():
        return None
    try:
        table = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(table, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                              for k, v in itertools.islice(table.items(), 64)):
        return None
    return table


def romanize_word(w: str) -> str:
    """One Thai word by syllables (:func:`parts`); pythainlp must be installed."""
    return "".join(r for _syl, r in parts(w))


@lru_cache(maxsize=16384)
def parts(w: str, foreign: bool = False) -> tuple[tuple[str, str], ...]:
    """A Thai word's syllables (maximal matching over pythainlp's syllable list), each as
    the rules read it (respelled) and its romanization; ``foreign``: as a name from another
    language is written in Thai (:func:`foreign_key`)."""
    romanize, sylls, longest = rules()
    w = w.replace(_THANTHAKHAT, "") if foreign else _KARAN.sub("", w)
    if not sylls:
        return ((w, romanize(_ho_nam(w))),)
    out = []
    for a, b in max_match(w, sylls, longest):
        syl = _ho_nam(_respelled(w[a:b]))
        r = _clustered(romanize, syl)
        if foreign and len(syl) > 1 and syl[-1] in _FOREIGN_FINALS and r.endswith("n"):
            r = r[:-1] + _FOREIGN_FINALS[syl[-1]]
        out.append((syl, r))
    return tuple(out)


def _key(ps) -> str:
    return _NON_ALNUM.sub("", "".join(r for _s, r in ps).lower())


def _one_word(text: str) -> str | None:
    """``text`` in NFC when it is one word with Thai letters and the rules are installed."""
    if len(text.split()) != 1 or not any("\u0e00" <= c <= "\u0e7f" for c in text) or rules() is None:
        return None
    return unicodedata.normalize("NFC", text.strip())


_THANTHAKHAT = "\u0e4c"
_MARKS = frozenset(chr(c) for c in (0x0E31, *range(0x0E34, 0x0E3B), *range(0x0E47, 0x0E4F)))
_LEADING = frozenset("\u0e40\u0e41\u0e42\u0e43\u0e44")  # เ แ โ ใ ไ, written before their consonant


def inside_cluster(run: str, i: int) -> bool:
    """Whether a cut before ``run[i]`` falls inside a Thai letter cluster, as a word list's
    maximal matching may cut a foreign name the list lacks (มาร|์|แซ|ย์, Marseille): before a
    vowel or tone mark written over or under a letter, after a vowel written before its
    consonant (โ|พร), or before a consonant silenced by the thanthakhat, which belongs to
    the syllable before (แซ|ย์)."""
    return (run[i] in _MARKS or run[i - 1] in _LEADING
            or (run[i + 1:i + 2] == _THANTHAKHAT and "\u0e01" <= run[i] <= "\u0e2e"))
_FOREIGN_FINALS = {"\u0e25": "l", "\u0e23": "r"}  # ล ร ending a syllable: n in Thai words


def foreign_key(text: str) -> str | None:
    """The compact key of a one-word Thai name read as Thai writes a name from another
    language: the letters under the thanthakhat said (silent in Thai, they spell the
    source's letters: อาร์คันซอ arkhanso, Arkansas; ลีดส์ Leeds), and ล ร ending a
    syllable as l and r, not the n of Thai words (อัลบาเซเต albasete, Albacete); None when
    it is the written key, or for another name."""
    t = _one_word(text)
    if t is None:
        return None
    key = _key(parts(t, foreign=True))
    return key if key and key != _key(parts(t)) else None


# Thai letters by the sound they write a foreign name's consonant with (by_ear.ear_key's
# classes: C the sound of ch and j); ย ว อ ห ฮ and the vowels are no consonant there
_EAR = {c: v for cs, v in (("กขฃคฅฆ", "k"), ("ง", "n"), ("จฉชฌ", "C"), ("ซศษส", "s"), ("ฎฏดตฐฑฒถทธ", "t"),
                           ("ณน", "n"), ("บปผพภ", "p"), ("ฝฟ", "f"), ("ม", "m"), ("รฤ", "r"), ("ลฬ", "l"))
        for c in cs}
_YO_YING = "\u0e0d"  # ญ: the n of a foreign name's gn at a syllable's end (เบรอตาญ), else a y


def ear_key(text: str) -> str | None:
    """The consonant sounds of a one-word Thai name as Thai spells a foreign name by ear,
    the letters under the thanthakhat said (เสียมเรียบ smrp: Siem Reap; โพรวองซ์ prns:
    Provence; เบรอตาญ prtn: Bretagne), in the classes of ``by_ear.ear_key``; None for
    another name."""
    t = _one_word(text)
    if t is None:
        return None
    out = []
    for i, c in enumerate(t):
        if c == _YO_YING:
            if i + 1 == len(t) or t[i + 1] in _CONSONANTS:
                out.append("n")
            continue
        out.append(_EAR.get(c, ""))
    return re.sub(r"([a-zC])\1+", r"\1", "".join(out))


MAX_LINKING = 3  # inner syllables of a Thai word that may each be read again (2^3 spellings)
# the final letters a Pali or Sanskrit compound reads again as the next syllable's head
# (stops, ย, ฬ); a sonorant final (ง น ม ร ว) is not (นคร|ราช: nakhon ratcha)
_RELINKED = set("กขคฆจฉชซฌฎฏฐฑฒณดตถทธบปผพฟภศษสยฬ")


def linking_variants(text: str) -> list[str]:
    """The compact keys of a one-word Thai name with the final consonant of some inner
    syllables read again, with an a, as the head of a syllable of its own: Pali and
    Sanskrit compounds are so spoken and RTGS spells them so (ราช|บุรี ratburi, Ratchaburi;
    พัท|ลุง Phatthalung; ชัย|ภูมิ Chaiyaphum); without the written key, fewest re-read
    first; ``[]`` for another name, or one with more than :data:`MAX_LINKING` such finals."""
    t = _one_word(text)
    return list(_linking(t)) if t is not None else []


@lru_cache(maxsize=4096)
def _linking(t: str) -> tuple[str, ...]:
    romanize = rules()[0]
    ps = parts(t)
    inner = [i for i, (syl, r) in enumerate(ps[:-1]) if _relinks(syl, r)]
    if not inner or len(inner) > MAX_LINKING:
        return ()
    out = []
    for n in range(1, len(inner) + 1):
        for chosen in itertools.combinations(inner, n):
            key = "".join(r + (_onset(romanize, syl[-1]) + "a" if i in chosen else "") for i, (syl, r) in enumerate(ps))
            out.append(_NON_ALNUM.sub("", key.lower()))
    return tuple(dict.fromkeys(out))


def _relinks(syl: str, r: str) -> bool:
    """Whether an inner syllable's final (read ``r``) may be read again as the next
    syllable's head (:data:`_RELINKED`; a ย also after a vowel)."""
    return syl[-1:] in _RELINKED and (r[-1:] not in "aeiou" or syl[-1] == "\u0e22") and len(syl) > 1


# readings the spelling hides, each tried as an alternative for one syllable (spoken_variants)
# (สร ซร; not ทร, an s in Thai words but a tr in borrowed ones: ทริป trip, not Cyprus)
_HEAD_SILENT_RO = re.compile("^([\u0e40-\u0e44]?)[\u0e2a\u0e0b]\u0e23(?=[\u0e30-\u0e39\u0e40-\u0e44\u0e48-\u0e4b]|$)")
# the first letters of the clusters (ร ล ว after them: no a between); ทร too (s, or tr in a loan)
_TRUE_CLUSTER_FIRST = set("\u0e01\u0e02\u0e04\u0e14\u0e15\u0e17\u0e1a\u0e1b\u0e1c\u0e1e\u0e1f")  # ก ข ค ด ต ท บ ป ผ พ ฟ
_CONSONANTS = set(chr(c) for c in range(0x0E01, 0x0E2F))
MAX_SPOKEN = 16  # spellings tried per name


def spoken_variants(text: str) -> list[str]:
    """The compact keys of a one-word Thai name with readings its spelling hides, as RTGS
    spells the spoken name: at a syllable's head, สร ซร as an s (สระแก้ว sa kaeo), two
    consonants that are no cluster with an a between them (นราธิวาส narathiwat, สระบุรี
    saraburi; a stop so written after an open syllable closes it too: อยุ|ธยา
    ayutthaya), an อ before a consonant at a syllable's head as an a (อยุธยา), a last short i
    silent (ชัยภูมิ chaiyaphum); each also with the inner finals of
    :func:`linking_variants` read again. Without the written key and the linking variants,
    fewest changes first, at most :data:`MAX_SPOKEN`; ``[]`` for another name."""
    t = _one_word(text)
    if t is None:
        return []
    romanize = rules()[0]
    ps = parts(t)
    alts: list[list[str]] = []
    for i, (syl, r) in enumerate(ps):
        opts = [r]
        m = _HEAD_SILENT_RO.match(syl)
        if m:
            opts.append(_clustered(romanize, m.group(1) + "\u0e0b" + syl[m.end():]))
        core = syl.lstrip("\u0e40\u0e41\u0e42\u0e43\u0e44")
        if (len(core) > 2 and core[0] in _CONSONANTS and core[1] in _CONSONANTS and core[0] != "\u0e2d"
                and core[0] not in _TRUE_CLUSTER_FIRST and syl == core):
            opts.append(_onset(romanize, core[0]) + "a" + romanize(core[1:]))
            # after an open syllable a stop so written closes it too (อยุ|ธยา a-yut-tha-ya)
            coda = romanize("\u0e2d\u0e31" + core[0])[1:]
            if i and coda in ("k", "t", "p") and ps[i - 1][1][-1:] in "aeiou":
                opts.append(coda + opts[-1])
        # (อ, then a consonant with a vowel of its own: อยุ; not อง, ong, the อ a vowel there)
        if len(syl) > 2 and syl[0] == "\u0e2d" and syl[1] in _CONSONANTS and syl[2] not in _CONSONANTS:
            opts.append("a" + romanize(syl[1:]))
        if i == len(ps) - 1 and len(syl) > 2 and syl[-1] == "\u0e34" and syl[-2] in _CONSONANTS:
            opts.append(romanize(syl[:-1]))
        # an inner final read again, with an a, as the next syllable's head (linking_variants)
        if i < len(ps) - 1 and _relinks(syl, r):
            opts += [o + _onset(romanize, syl[-1]) + "a" for o in list(opts)]
        alts.append(list(dict.fromkeys(o for o in opts if o)))
    written = {_key(ps)} | set(_linking(t))
    combos = sorted(itertools.product(*[range(len(a)) for a in alts]), key=lambda c: (sum(1 for x in c if x), c))
    out: list[str] = []
    for c in combos:
        key = _NON_ALNUM.sub("", "".join(alts[i][x] for i, x in enumerate(c)).lower())
        if key and key not in written and key not in out:
            out.append(key)
            if len(out) >= MAX_SPOKEN:
                break
    return out


def _onset(romanize, letter: str) -> str:
    """A consonant's sound at the head of a syllable (พา pha: ph)."""
    return romanize(letter + _AA)[:-1]


# a letter (with its vowel) under the thanthakhat is silent (การันต์: โพรวองซ์ phrowong),
# and so is a ร ending a cluster under it (จันทร์ chan, สุราษฎร์ surat; not a syllable's
# first letter after its leading vowel: แฟร์รารา, Ferrara, keeps its ฟ); the RTGS rules
# drop them from a whole word, but a syllable list cuts ซ์ off alone, so they go before
# the word is cut
_KARAN = re.compile("(?<![\u0e40-\u0e44])[\u0e01-\u0e2c\u0e2e]\u0e23\u0e4c|[\u0e01-\u0e2e][\u0e30-\u0e39]?\u0e4c")
# a ห written before a sonorant (ง ญ น ม ย ร ล ว) at the head of a syllable only
# gives the syllable its tone (ห นำ: ใหม่ mai, หลวง luang); another ห that starts a
# syllable is an h (หาด hat), which the RTGS rules leave out when more letters follow
_HO_NAM = re.compile("^([เแโใไ]?)ห(?=[งญนมยรลว])")
_HO_HEAD = re.compile("^([เแโใไ]?)ห")
# a ร after the final consonant of a syllable with a written vowel is silent (เพชร phet,
# จิตร chit, สมุทร samut); with no vowel written it is the final n (นคร nakhon)
_FINAL_RO = re.compile("^((?:[\u0e40-\u0e44][\u0e01-\u0e2e]+|[\u0e01-\u0e2e]+[\u0e31\u0e34-\u0e3a\u0e47-\u0e4b]+)"
                       "[\u0e01-\u0e2e])\u0e23$")
# at the head of a syllable ศร is an s (ศรีสะเกษ si sa ket, as RTGS spells Thai names;
# "Sri" is the English spelling of names from India). (ทร is an s in Thai words, ทราย
# sai, but a tr in borrowed ones, ทริป trip: it is left to the rules.)
_HEAD_S = re.compile("^([\u0e40-\u0e44]?)\u0e28\u0e23(?=[\u0e30-\u0e39\u0e40-\u0e44])")
# a vowel written before a cluster (เพลง phleng, โปร pro, แพร่ phrae): the rules read
# its second letter as the final; the syllable is read without it, which is put back
# after the first letter's sound (with no vowel after the cluster: เปรู is pe-ru)
_LEAD_CLUSTER = re.compile("^([\u0e40-\u0e44])([\u0e01\u0e02\u0e04\u0e14\u0e15\u0e1a\u0e1b\u0e1c\u0e1e\u0e1f])"
                           "([\u0e23\u0e25\u0e27])([\u0e48-\u0e4b]?[\u0e01-\u0e2e]?)$")
_CLUSTER_SOUND = {"\u0e23": "r", "\u0e25": "l", "\u0e27": "w"}


def _respelled(syllable: str) -> str:
    """A Thai syllable with the letters RTGS reads otherwise than pythainlp's rules
    respelled (:data:`_FINAL_RO`, :data:`_HEAD_S`)."""
    return _HEAD_S.sub("\\1\u0e2a", _FINAL_RO.sub(r"\1", syllable))


def _clustered(romanize, syllable: str) -> str:
    m = _LEAD_CLUSTER.match(syllable)
    if m is None:
        return romanize(syllable)
    lead, first, second, rest = m.groups()
    onset = _onset(romanize, first)
    out = romanize(lead + first + rest)
    if not onset or not out.startswith(onset):
        return romanize(syllable)
    return onset + _CLUSTER_SOUND[second] + out[len(onset):]


def _ho_nam(syllable: str) -> str:
    out = _HO_NAM.sub(r"\1", syllable)
    return _HO_HEAD.sub("\\1\u0e2e", out) if out == syllable else out


def syllables() -> frozenset:
    """pythainlp's Thai syllables (KUCut's list)."""
    return corpus("syllables_th.txt")


@lru_cache(maxsize=None)
def corpus(filename: str) -> frozenset:
    """The lines of one of pythainlp's word lists (``words_th.txt``, ``syllables_th.txt``,
    ``stopwords_th.txt``), as its ``get_corpus`` reads them, but from the file, without
    importing the package; empty without pythainlp or the file."""
    spec = find_spec("pythainlp")
    if spec is None or not spec.submodule_search_locations:
        return frozenset()
    path = Path(list(spec.submodule_search_locations)[0]) / "corpus" / filename
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except OSError:
        return frozenset()
    return frozenset(filter(None, lines))
