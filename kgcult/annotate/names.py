"""The annotator's name dictionary: every name (label and alias, every language) of a
topic's entities in the link index, under the keys a text's words are looked up by.

* ``exact``: folded name (:func:`kgcult.annotate.text.fold`) -> codes;
* ``stem[lang]``: the Snowball stems of a name's folded words, for the names in ``lang``
  of the languages whose inflection stays inside a span (``grammar.stem``) -> codes;
* ``heads``: every folded or stemmed word sequence that begins some key (a lookup of a
  longer word sequence stops when its beginning is none);
* ``unspaced``: the names written wholly in a script without spaces (Han folded to
  simplified Chinese: ``scripts.han_fold``), and their codes; found inside runs of that
  script by walking their trie from each letter (:meth:`Names.unspaced_in`);
* ``common[lang]``: the folded one-word names that are everyday words of ``lang``
  (wordfreq's Zipf frequency at least :data:`COMMON_ZIPF`);
* ``cognate``: the cognate key (``grammar.cognate_key``) of every one-word label (aliases
  are too loose: a broth's alias sopa) in a language of the grammar file's ``cognates``
  -> codes; ``own[lang]``: for those
  languages, the eids with a name in ``lang`` (a cognate key names only an entity
  without a name in the text's language);
* ``compound``: the two entities a two-part name is made of, in its own language
  (``olive oil``: olive, oil; short words that name nothing, ``de``, are left out), as
  ``"eid eid"`` (the lower first) -> the codes of the names so made (``compounds``).

A code is ``(((eid << LANG_BITS) | language id) << 1 | capitalized) << 1 | alias``.
* ``forms[lang]``: stem key -> the folded names under it (a stem match is checked
  word by word against them);
* the everyday words of a language (wordfreq's, Zipf :data:`~kgcult.annotate.wordlists.EVERYDAY_ZIPF` or more: never
  matched by their stem alone) and its known words (:data:`~kgcult.annotate.wordlists.KNOWN_ZIPF`), a trie each per
  language beside the index (``wordlists.lang_words``), mapped only for the languages met;
* ``generic``: eids that never make a span (the topic's roots, its generic words,
  and for a topic without classes every class). The dictionary is built
once per index and topic and saved beside the index (``annotate-<topic>-<grammar hash>-v<VERSION>.marshal``, plain
containers: nothing in it runs code when read; the parts of :data:`PER_LANGUAGE` marshalled
apart per language, read for the languages of the texts met), with ``exact``, ``heads``
and ``unspaced`` as marisa-trie tries beside it (:data:`TRIES`), memory-mapped, not
decoded: a fresh process reads the keys its texts look up.
"""
from __future__ import annotations

import logging
import marshal
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgcult import extras, lazy
from kgcult.annotate import grammar as gram
from kgcult.annotate import saved, wordlists
from kgcult.annotate.saved import VERSION
from kgcult.annotate.text import fold
from kgcult.annotate.text import unspaced as unspaced_script
from kgcult.files import atomic_write
from kgcult.link import normalize
from kgcult.link.scripts import han_fold
from kgcult.link.stages import morphology

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy.module("numpy")

log = logging.getLogger(__name__)

LANG_BITS = 10
COMMON_ZIPF = 4.0
MAX_WORDS = 8  # longest name looked up, in words


def code(eid: int, lid: int, cap: int, alias: int) -> int:
    return ((((eid << LANG_BITS) | lid) << 1 | cap) << 1) | alias


def decode(c: int) -> tuple[int, int, int, int]:
    """(eid, language id, capitalized, alias) of a code."""
    return c >> (LANG_BITS + 2), (c >> 2) & ((1 << LANG_BITS) - 1), (c >> 1) & 1, c & 1


def capitalized(c: int) -> bool:
    """Whether the name of a code begins with a capital letter (a proper name in a cased script)."""
    return bool((c >> 1) & 1)


@dataclass
class Names:
    topic: str
    langs: list[str]
    exact: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    stem: Mapping[str, dict[str, tuple[int, ...]]] = field(default_factory=dict)
    heads: set[str] = field(default_factory=set)
    unspaced: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    common: Mapping[str, frozenset] = field(default_factory=dict)
    forms: Mapping[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    directory: str = ""   # where the per-language word lists are kept (not in the file)
    generic: frozenset = field(default_factory=frozenset)
    cognate: dict[str, tuple[int, ...]] = field(default_factory=dict)
    own: Mapping[str, frozenset] = field(default_factory=dict)
    compound: dict[str, tuple[int, ...]] = field(default_factory=dict)
    unspaced_longest: int = 0  # the longest unspaced name, in letters
    _unspaced_trie: Any = None  # the unspaced names' trie, once asked for

    def unspaced_in(self, run: str, starts: Iterable[int] | None = None) -> list[tuple[str, int, int]]:
        """The ``unspaced`` names inside ``run``, overlapping, as (name, start, end) by end,
        then start (as an Aho-Corasick automaton reports them): the names that begin at
        each letter (or at each of ``starts``, a segmenter's word boundaries) are one walk
        of their trie (a fresh process built an automaton over the place topic's 17,800
        names in 0.03 s, in each worker)."""
        trie = self._unspaced_trie
        if trie is None:
            trie = self._unspaced_trie = (self.unspaced.trie if isinstance(self.unspaced, Codes)
                                          else saved.tries().Trie(self.unspaced))
        n = self._longest()
        at = range(len(run)) if starts is None else sorted(i for i in starts if 0 <= i < len(run))
        found = [(name, i, i + len(name)) for i in at for name in trie.prefixes(run[i:i + n])]
        found.sort(key=lambda m: (m[2], m[1]))
        return found

    def _longest(self) -> int:
        """The longest unspaced name (recorded in the saved file; else measured, once)."""
        if not self.unspaced_longest:
            self.unspaced_longest = max(map(len, self.unspaced), default=0)
        return self.unspaced_longest

    def everyday(self, lang: str):
        """The everyday words of ``lang`` (:data:`~kgcult.annotate.wordlists.EVERYDAY_ZIPF`), folded."""
        return wordlists.lang_words(self.directory, lang)[0]

    def known(self, lang: str):
        """The known words of ``lang`` (:data:`~kgcult.annotate.wordlists.KNOWN_ZIPF`), folded; for the languages whose
        unmatched words go across scripts only."""
        return wordlists.lang_words(self.directory, lang)[1]

    def dictionary(self, lang: str):
        """The headwords of the general dictionary of ``lang`` the grammar file names
        (``dictionary``), folded; empty for the other languages."""
        return wordlists.lang_words(self.directory, lang)[2]

    def save(self, p: Path) -> None:
        """Write the dictionary to ``p`` (plain containers, marshalled) and, beside it, its
        ``exact`` and ``heads`` as memory-mapped tries (:data:`TRIES`); the tries first, so
        that a complete ``p`` means a complete dictionary."""
        tries = saved.tries()
        exact, unspaced = (tries.RecordTrie(CODE, ((k, (c,)) for k, codes in part.items() for c in codes))
                           for part in (self.exact, self.unspaced))
        for part, data in (("exact", exact.tobytes()), ("heads", tries.Trie(self.heads).tobytes()),
                           ("unspaced", unspaced.tobytes())):
            atomic_write(saved.trie_path(p, part), data)
        atomic_write(p, marshal.dumps({
            "version": VERSION, "topic": self.topic, "langs": self.langs, "stem": _packed(self.stem),
            "unspaced_longest": self._longest(),
            "common": _packed(self.common), "forms": _packed(self.forms),
            "generic": self.generic, "cognate": self.cognate, "own": _packed(self.own),
            "compound": self.compound}))

    @classmethod
    def load(cls, p: Path) -> "Names | None":
        """The dictionary saved at ``p`` (:meth:`save`), its tries memory-mapped; None when
        a part is missing or of another format."""
        d = marshal.loads(p.read_bytes())
        if not isinstance(d, dict) or d.get("version") != VERSION:
            return None
        d.pop("version")
        for part in PER_LANGUAGE:
            d[part] = PerLanguage(d[part])
        tries = saved.tries()
        exact, heads, unspaced = tries.RecordTrie(CODE), tries.Trie(), tries.RecordTrie(CODE)
        exact.mmap(str(saved.trie_path(p, "exact")))
        heads.mmap(str(saved.trie_path(p, "heads")))
        unspaced.mmap(str(saved.trie_path(p, "unspaced")))
        return cls(exact=Codes(exact), heads=heads, unspaced=Codes(unspaced), **d)


TRIES = ("exact", "heads", "unspaced")  # the parts kept as tries beside the marshalled file
CODE = "<Q"  # a code in the exact and unspaced tries: one unsigned 64-bit record per code of a key


class Codes(Mapping):
    """The ``exact`` part read from its memory-mapped trie: folded name -> its codes, as
    the built dictionary holds them (a sorted tuple). A fresh process maps the file and
    reads the keys its texts look up, instead of decoding every name (0.06 s for the place
    topic, in each worker)."""

    __slots__ = ("_trie",)

    def __init__(self, trie):
        self._trie = trie

    @property
    def trie(self):
        """The memory-mapped trie itself (its ``prefixes``: the keys a string begins with)."""
        return self._trie

    def get(self, key, default=None):
        got = self._trie.get(key)
        return tuple(sorted(c for (c,) in got)) if got else default

    def __getitem__(self, key):
        got = self.get(key)
        if got is None:
            raise KeyError(key)
        return got

    def __contains__(self, key) -> bool:
        return key in self._trie

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys(self._trie.keys()))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __bool__(self) -> bool:
        return len(self._trie) > 0  # without walking the keys, as __len__ does


PER_LANGUAGE = ("stem", "forms", "common", "own")  # the parts read for a text's language only


class PerLanguage(Mapping):
    """language -> its part of the dictionary (:data:`PER_LANGUAGE`), as the file has it:
    each language's part marshalled apart, read when a text in that language first asks
    for it (a process reads the Snowball stems of the languages of its texts only: those
    of the place dictionary took 0.04 s of a fresh process)."""

    def __init__(self, packed: dict[str, bytes]):
        self._parts: dict[str, object] = dict(packed)

    def __getitem__(self, lang: str):
        v = self._parts[lang]
        if isinstance(v, bytes):
            v = self._parts[lang] = marshal.loads(v)
        return v

    def __iter__(self) -> Iterator[str]:
        return iter(self._parts)

    def __len__(self) -> int:
        return len(self._parts)


def _packed(parts: Mapping) -> dict[str, bytes]:
    """Each language's part marshalled apart (what :class:`PerLanguage` reads)."""
    return {lg: marshal.dumps(parts[lg]) for lg in parts}


def stem_key(words: list[str] | tuple[str, ...], lang: str) -> str | None:
    """The stem key of folded words in ``lang`` (None: no stemmer). English folds plurals
    only (``normalize.stem``): its Snowball stems meet verbs and adjectives."""
    if lang in normalize.STEM_LANGS and lang == "en":
        return normalize.stem(" ".join(words), lang)
    st = morphology.stemmer(lang) if morphology.stems_in(lang) else None
    if st is None:
        return None
    ends = gram.grammar(lang).stem_endings
    if ends:
        words = [_unfold_end(w, ends) for w in words]
    return " ".join(st.stemWord(w) for w in words)


def _unfold_end(w: str, ends: tuple) -> str:
    """The word's ending as the stemmer reads it, where the fold took a letter's mark off
    (Russian ``говядинои`` -> ``говядиной``: й folds to и)."""
    for folded, written in ends:
        if w.endswith(folded) and len(w) > len(folded):
            return w[:-len(folded)] + written
    return w


def members(ix, topic: str) -> np.ndarray:
    """Per eid, whether the entity belongs to ``topic``: typed under its roots, or pointed
    at by a member with one of the topic's inverse via properties (a dish's P527
    ingredient), as the linker takes it (``disambiguate.GraphFacts.inverse_typed``)."""
    bit = ix.topic_bit(topic)
    member = (np.asarray(ix.topic_bits.arr) & bit) != 0
    inv = list(ix.topic(topic).via_inverse)
    if inv:
        extra = []
        # the index keeps a claim's inverse on its object: (object, ^P527, subject)
        q = f"SELECT s, o FROM edges WHERE pid IN ({','.join('?' * len(inv))})"
        for s, o in ix.db.execute(q, ["^" + p for p in inv]):
            se = ix.eid_of.get(o)
            if se is not None and member[se]:
                oe = ix.eid_of.get(f"Q{s}")
                if oe is not None:
                    extra.append(oe)
        member = member.copy()
        member[extra] = True
    return member


def build(ix, topic: str) -> Names:
    """The dictionary of ``topic`` over the label index ``ix`` (every language)."""
    member = members(ix, topic)
    langs = list(ix.langs)
    stem_langs = {lg for lg in gram.languages() if gram.grammar(lg).stem and morphology.stems_in(lg)}
    exact: dict[str, set] = {}
    stems: dict[str, dict[str, set]] = {lg: {} for lg in stem_langs}
    forms: dict[str, dict[str, set]] = {lg: {} for lg in stem_langs}
    unspaced: dict[str, set] = {}
    heads: set[str] = set()
    lang_of = {i: lg for i, lg in enumerate(langs)}
    cognate_langs = gram.cognate_languages()
    cognate: dict[str, set] = {}
    own: dict[str, set] = {lg: set() for lg in cognate_langs}
    common_noun = _common_nouns(ix, member, lang_of)
    for eid, lid, text, alias in ix.db.execute("SELECT eid, lang, text, alias FROM names"):
        if not member[eid]:
            continue
        c = code(eid, lid, int(text[:1].isupper() and eid not in common_noun), alias)
        k = fold(text)
        if not k:
            continue
        exact.setdefault(k, set()).add(c)
        if " " in k and _hangul_words(k):
            # Korean writes a compound noun with or without its spaces (감자 튀김, 감자튀김)
            exact.setdefault(k.replace(" ", ""), set()).add(c)
        ws = k.split(" ")
        for n in range(1, min(len(ws), MAX_WORDS)):
            heads.add(" ".join(ws[:n]))
        base = lang_of[lid].split("-", 1)[0]
        if base in cognate_langs:
            own[base].add(int(eid))
            ck = gram.cognate_key(k, base) if len(ws) == 1 and not alias else None
            if ck:
                cognate.setdefault(ck, set()).add(c)
        if base in stem_langs and len(ws) <= MAX_WORDS:
            sk = stem_key(ws, base)
            if sk:
                stems[base].setdefault(sk, set()).add(c)
                forms[base].setdefault(sk, set()).add(k)
                sws = sk.split(" ")
                for n in range(1, len(sws)):
                    heads.add("\x00" + " ".join(sws[:n]))
        raw = text.strip()
        if unspaced_script(raw):
            # Japanese writes the middle dot between a loanword's words, or not: both forms
            # (オリーブ・オイル, オリーブオイル)
            for form in dict.fromkeys((raw, raw.replace("\u30fb", "").replace("\uff65", ""))):
                if form:
                    unspaced.setdefault(han_fold(form), set()).add(c)
    names = Names(topic=topic, langs=langs,
                  exact={k: tuple(sorted(v)) for k, v in exact.items()},
                  stem={lg: {k: tuple(sorted(v)) for k, v in d.items()} for lg, d in stems.items()},
                  heads=heads, unspaced={k: tuple(sorted(v)) for k, v in unspaced.items()},
                  forms={lg: {k: tuple(sorted(v)) for k, v in d.items()} for lg, d in forms.items()})
    names.cognate = {k: tuple(sorted(v)) for k, v in cognate.items()}
    names.own = {lg: frozenset(v) for lg, v in own.items()}
    names.common = _common(names.exact)
    names.compound = compounds(names.exact, names.generic)
    names.generic = frozenset(_generic(ix, topic, member))
    return names


COMPOUND_FILLER = 3  # a word of a compound name this short that names nothing is a function word
COMPOUND_SENSES = 3  # a part's word may name this many entities (potato the plant, the food)


def compounds(exact: Mapping, generic: frozenset) -> dict[str, tuple[int, ...]]:
    """The names of two to four words made of two entities' one-word names in the same
    language (``olive oil``, ``soupe de tomates``): ``"eid eid"`` -> their codes. A word
    is a part when its language's names give it at most :data:`COMPOUND_SENSES` entities
    (not the compound itself, not a generic one: each pair is filed); a short word naming nothing (:data:`COMPOUND_FILLER`) is left out;
    any other word makes the name no compound."""
    out: dict[str, set] = {}
    for key, codes in exact.items():
        ws = key.split(" ")
        if not 2 <= len(ws) <= 4:
            continue
        for c in codes:
            eid, lid = decode(c)[:2]
            parts: list[set] = []
            for w in ws:
                es = {decode(x)[0] for x in exact.get(w, ()) if decode(x)[1] == lid} - {eid} - generic
                if 0 < len(es) <= COMPOUND_SENSES:
                    parts.append(es)
                elif es or len(w) > COMPOUND_FILLER:
                    parts = []
                    break
            if len(parts) == 2:
                for x in sorted(parts[0]):
                    for y in sorted(parts[1]):
                        if x != y:
                            out.setdefault(f"{min(x, y)} {max(x, y)}", set()).add(c)
    return {k: tuple(sorted(v)) for k, v in out.items()}


def _common_nouns(ix, member, lang_of: dict) -> set[int]:
    """The entities some language writes in lower case (a label beginning with a lower-case
    letter, in a language that does not capitalize its nouns as German does): a common
    noun, whatever capital another language's label has (Turkish ``Domates``); the other
    entities are spelled with a capital everywhere (proper names)."""
    capital_nouns = {lg for lg in gram.languages() if gram.grammar(lg).nouns_capitalized}
    capital_nouns |= {k for lg in capital_nouns for k in gram.grammar(lg).kin}
    skip = {i for i, lg in lang_of.items() if lg.split("-", 1)[0] in capital_nouns}
    out: set[int] = set()
    for eid, lid, text in ix.db.execute("SELECT eid, lang, text FROM names"):
        if member[eid] and lid not in skip and text[:1].islower():
            out.add(int(eid))
    return out


def _generic(ix, topic: str, member) -> list[int]:
    """The eids of the topic that never make a span."""
    spec = gram.topic_spec(topic)
    out = {e for e in (ix.eid_of.get(q) for q in ix.topic(topic).roots) if e is not None}
    en = ix.lang_id.get("en")
    # the generic words and their plurals (a label "Meals" is the generic "meal")
    words = {normalize.stem(fold(w), "en") for w in spec.get("generic", ())}
    for e, text in ix.db.execute("SELECT eid, text FROM names WHERE lang = ? AND alias = 0", (en,)):
        if member[e] and normalize.stem(fold(text), "en") in words:
            out.add(int(e))
    if not spec.get("classes", True):
        cls = ix.is_class
        out.update(int(e) for e in np.flatnonzero(member) if int(e) in cls)
    return sorted(out)


def _hangul_words(k: str) -> bool:
    """Whether ``k`` is two to :data:`MAX_WORDS` words written in Hangul syllables alone."""
    ws = k.split(" ")
    return 1 < len(ws) <= MAX_WORDS and all(w and all("\uac00" <= ch <= "\ud7a3" for ch in w) for w in ws)


def _common(exact: Mapping) -> dict[str, frozenset]:
    """Per language of the grammar file, the one-word keys that are everyday words there."""
    if not extras.available("wordfreq"):
        log.info("wordfreq is not installed: no commonness guard")
        return {}
    wordfreq = extras.require("wordfreq", "annotate", wordlists.FEATURE_WORDS)
    one = [k for k in exact if " " not in k]
    out = {}
    for lg in gram.languages():
        try:
            freqs = wordfreq.get_frequency_dict(lg, wordlist="best")
        except (LookupError, ValueError):
            continue
        floor = 10 ** (COMMON_ZIPF - 9)
        words = {fold(w) for w, v in freqs.items() if v >= floor}
        out[lg] = frozenset(k for k in one if k in words)
    return out


def path_of(ix, topic: str) -> Path:
    """Beside the index, named by the topic, the grammar file's content and the format."""
    return Path(ix.directory) / f"annotate-{topic}-{gram.digest()}-v{VERSION}.marshal"


_LOADED: dict = {}


def load_or_build(ix, topic: str) -> Names:
    """The topic's dictionary of ``ix``: from memory, else from its file beside the
    index, else built (and saved there when the directory is writable)."""
    key = (str(ix.directory), topic)
    names = _LOADED.get(key)
    if names is not None:
        return names
    p = path_of(ix, topic)
    try:
        names = Names.load(p)
    except (OSError, ValueError, EOFError, TypeError, RuntimeError):
        names = None
    if names is not None:
        names.directory = str(ix.directory)
    wordlists.use_directory(str(ix.directory))
    if names is None:
        log.info("building the annotator's %s dictionary (once per index)", topic)
        names = build(ix, topic)
        names.directory = str(ix.directory)
        saved.write(p, f"annotate-{topic}", lambda: names.save(p))
    _LOADED[key] = names
    return names
