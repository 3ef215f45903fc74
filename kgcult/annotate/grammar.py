"""What a language writes onto a name (``ontology/annotate-grammar.json``): proclitics and
articles before it, particles, case endings and the ezafe after it, designators beside it,
whether its inflection stays inside a span (stemmed lookup), and whether its script is
written without spaces. Data, read once; no language is special-cased in code."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from kgcult import resources
from kgcult.annotate.text import fold, unspaced
from kgcult.link import affixes, normalize
from kgcult.link.cognates import GRAMMAR_FILE, cognate_key, cognate_languages

__all__ = ["GRAMMAR_FILE", "Grammar", "cognate_key", "cognate_languages", "digest", "grammar", "languages", "topic_spec",
           "topics"]


@dataclass(frozen=True)
class Grammar:
    """One language's attached grammar (folded like the names: :func:`kgcult.annotate.text.fold`)."""
    lang: str
    prefixes: tuple[str, ...] = ()      # outside the span, longest first
    article: tuple[str, ...] = ()       # inside the span, dropped for the lookup
    suffixes: tuple[str, ...] = ()      # outside the span, longest first
    suffix_after: tuple = ()  # (suffix, the letters a name must end with to take it), folded: link-affixes.json's
    before: frozenset = field(default_factory=frozenset)  # designators before a name
    after: frozenset = field(default_factory=frozenset)   # designators after a name
    inside: frozenset = field(default_factory=frozenset)  # designators that are part of a name (เกาะ)
    naming: frozenset = field(default_factory=frozenset)  # designators always beside a name (استان)
    stem: bool = False
    unspaced: bool = False
    kin: tuple[str, ...] = ()   # languages whose names count as the text's own
    across: tuple[str, ...] = ()  # the linker's cross-script matches taken for unmatched words
    across_known: tuple[str, ...] = ()  # those taken for a known word of the language too
    across_everyday: tuple[str, ...] = ()  # and for an everyday word (wordfreq Zipf >= 4.5)
    across_local: tuple[str, ...] = ()  # taken for an unknown word naming a place of the text's countries
    across_known_local: tuple[str, ...] = ()  # and for a known word
    across_everyday_local: tuple[str, ...] = ()  # and for an everyday word
    segmenter: str | None = None  # word segmenter of an unspaced script (text.segment)
    title_names: bool = False     # runs of capitalized words are names (text.title_runs)
    bounded: bool | str = False   # names inside a run start and end at the segmenter's boundaries
                                  # ("head": end at one; begin at one, or inside a word whose end is theirs)
    known_zipf: float = 3.0       # a word this frequent is known: never tried across scripts
    namesake: tuple[str, ...] = ()  # designators that make a region's name its city's
    endings: tuple[str, ...] = ()  # nominal endings an inflected name may take (stem languages)
    number: tuple = ()  # (singular ending, plural ending) of the language's nouns
    nouns_capitalized: bool = False  # every noun is written with a capital (German)
    stem_endings: tuple = ()  # (folded ending, as the stemmer reads it), longest first
    min_kana: int = 0  # hiragana-only words shorter than this never go across scripts
    join_pieces: int = 1  # adjacent words of the segmenter joined when guessing across scripts
    join_foreign: int = 0  # ... up to this many when they hold letters its word list lacks
    attributive: tuple[str, ...] = ()  # nouns a name written right after qualifies (อาหารไทย)
    cognate: bool = False  # the language's one-word names and words meet by cognate keys
    case_endings: tuple = ()  # (ending of a word, ending of its name), longest first
    fleeting: tuple[str, ...] = ()  # vowels a name loses before its last consonant in its case forms
    compound_suffixes: tuple[str, ...] = ()  # possessive suffixes of a compound's head (çorbası)
    trailing_marks: frozenset = field(default_factory=frozenset)  # vowel marks after a name: grammar
    designator_kinds: tuple = ()  # (folded designator, "region" or "settlement"), longest first
    loan_plurals: tuple[str, ...] = ()  # plural endings a borrowed name takes (tacos: taco), longest first
    conjunctions: frozenset = field(default_factory=frozenset)  # join two names as two things (y, and): no compound filler
    katakana_loans: bool = False  # an everyday word in katakana is a loanword: tried as a known one
    home: frozenset = field(default_factory=frozenset)  # QIDs of the countries that speak the language
    quantifiers: frozenset = field(default_factory=frozenset)  # words a counter noun follows (여러 가지)
    adjective_endings: tuple[str, ...] = ()  # endings of adjectives and participles after a noun (salato)
    adjective_endings_before: tuple[str, ...] = ()  # ... and before one (варёный рис)
    dictionary: str | None = None  # a general dictionary's word list (pythainlp's corpus file)
    predicate_endings: tuple[str, ...] = ()  # endings that make a known noun a verb (방문 + 한), longest first
    quotes: tuple[tuple[str, str], ...] = ()  # quotation marks a head noun's given name stands in («», „“)

    def cognate_key(self, word: str) -> str | None:
        """The cognate key of a folded word of this language (:func:`cognate_key`)."""
        return cognate_key(word, self.lang) if self.cognate else None

    def designator(self, text: str, start: int, end: int, bare: bool = False) -> str | None:
        """The designator standing beside the name at ``text[start:end]``, folded, or None:
        the word before it (in an unspaced script, what the text before ends with:
        จังหวัดเลย), or the word after it; either also with one or two of the language's
        suffixes on (استان‌های گیلان, Denizli iline), unless ``bare``."""
        ws = fold(text[max(0, start - 32):start]).split(" ")
        before = ws[-1]
        if len(ws) > 1 and not bare and self.suffixed(before):  # a suffix after a joiner (استان‌های: هاي)
            before = ws[-2] + before
        after = fold((text[end:end + 24].split() or [""])[0])  # the next word (or what is written on)
        if before in self.before:
            return before
        for d in self.before:
            if (unspaced(d) and before.endswith(d)) or (
                    not bare and before.startswith(d) and self.suffixed(before[len(d):])):
                return d
        if after in self.after:
            return after
        for d in self.after:
            if not bare and after.startswith(d) and self.suffixed(after[len(d):]):
                return d
        return None

    def suffixed(self, rest: str) -> bool:
        """Whether ``rest`` (folded) is one of the language's suffixes, or two of them."""
        return rest in self._suffix_runs

    @cached_property
    def _suffix_runs(self) -> frozenset:
        return frozenset(self.suffixes) | frozenset(a + b for a in self.suffixes for b in self.suffixes)

    def takes(self, suffix: str, name: str) -> bool:
        """Whether a name ending as ``name`` does (folded) takes ``suffix`` as attached
        grammar (:func:`kgcult.link.affixes.takes`)."""
        return affixes.takes(self.suffix_after, suffix, name)

    @property
    def max_suffix(self) -> int:
        return max((len(s) for s in self.suffixes), default=0)


def _longest_first(xs) -> tuple[str, ...]:
    return tuple(sorted(set(xs), key=lambda s: (-len(s), s)))


@lru_cache(maxsize=1)
def _table() -> dict:
    with open(resources.ontology(GRAMMAR_FILE), encoding="utf-8") as f:
        return json.load(f)["languages"]


@lru_cache(maxsize=64)
def grammar(lang: str) -> Grammar:
    """The grammar of ``lang`` (its base language's; none known: an empty one)."""
    base = normalize.base_lang(lang)
    d = _table().get(base, {})
    des = d.get("designators", {})
    return Grammar(
        lang=base,
        prefixes=_longest_first(fold(p) for p in d.get("prefixes", ())),
        article=_longest_first(fold(p) for p in d.get("article", ())),
        suffixes=_longest_first(fold(p) for p in d.get("suffixes", ()) if fold(p)),
        # the linker's data (ontology/link-affixes.json): one list of them for both
        suffix_after=tuple(sorted((fold(k), fold(v)) for k, v in affixes.grammar(base).suffix_after)),
        before=frozenset(fold(w) for w in des.get("before", ())),
        after=frozenset(fold(w) for w in des.get("after", ())),
        inside=frozenset(fold(w) for w in des.get("inside", ())),
        naming=frozenset(fold(w) for w in des.get("naming", ())),
        stem=bool(d.get("stem")),
        unspaced=bool(d.get("unspaced")),
        kin=tuple(d.get("kin", ())),
        across=tuple(d.get("across", ())),
        across_known=tuple(d.get("across_known", ())),
        across_everyday=tuple(d.get("across_everyday", ())),
        across_local=tuple(d.get("across_local", ())),
        across_known_local=tuple(d.get("across_known_local", ())),
        across_everyday_local=tuple(d.get("across_everyday_local", ())),
        segmenter=d.get("segmenter"),
        title_names=bool(d.get("title_names")),
        bounded="head" if d.get("bounded") == "head" else bool(d.get("bounded")),
        known_zipf=float(d.get("known_zipf", 3.0)),
        namesake=tuple(d.get("namesake_designators", ())),
        join_pieces=int(d.get("join_pieces", 1)),
        join_foreign=int(d.get("join_foreign", 0)),
        min_kana=int(d.get("min_kana", 0)),
        nouns_capitalized=bool(d.get("nouns_capitalized")),
        endings=tuple(d.get("noun_endings", ())),
        number=tuple((fold(a), fold(b)) if a else ("", fold(b)) for a, b in d.get("number", ())),
        stem_endings=tuple(sorted(((a, b) for a, b in d.get("stem_endings", ())), key=lambda x: (-len(x[0]), x))),
        attributive=_longest_first(d.get("attributive_heads", ())),
        cognate=base in cognate_languages(),
        case_endings=tuple(sorted(((fold(a), fold(b)) for a, b in d.get("case_endings", ())),
                                  key=lambda x: (-len(x[0]), x))),
        fleeting=tuple(fold(v) for v in d.get("fleeting_vowels", ())),
        loan_plurals=_longest_first(fold(p) for p in d.get("loan_plurals", ())),
        katakana_loans=bool(d.get("katakana_loans")),
        home=frozenset(d.get("home_countries", ())),
        quantifiers=frozenset(fold(w) for w in d.get("quantifiers", ())),
        adjective_endings=tuple(fold(e) for e in d.get("adjective_endings", ())),
        adjective_endings_before=tuple(fold(e) for e in d.get("adjective_endings_before", ())),
        dictionary=d.get("dictionary"),
        predicate_endings=_longest_first(fold(e) for e in d.get("predicate_endings", ())),
        quotes=tuple((q[0], q[1]) for q in d.get("quoted_names", ()) if len(q) == 2),
        compound_suffixes=_longest_first(fold(p) for p in d.get("compound_suffixes", ())),
        conjunctions=frozenset(fold(w) for w in d.get("conjunctions", ())),
        trailing_marks=frozenset(d.get("trailing_marks", ())),
        designator_kinds=tuple(sorted(((fold(w), k) for k, ws in d.get("designator_kinds", {}).items() for w in ws),
                                      key=lambda x: (-len(x[0]), x))),
    )


def languages() -> list[str]:
    """The languages the grammar file describes."""
    return sorted(_table())


def topics() -> list[str]:
    """The topics the grammar file describes (generic words, classes)."""
    with open(resources.ontology(GRAMMAR_FILE), encoding="utf-8") as f:
        return sorted(json.load(f).get("topics", {}))


@lru_cache(maxsize=32)
def _topic_spec(topic: str) -> str:
    with open(resources.ontology(GRAMMAR_FILE), encoding="utf-8") as f:
        return json.dumps(json.load(f).get("topics", {}).get(topic, {}))


def topic_spec(topic: str) -> dict:
    """What the grammar file says of ``topic`` (generic words, whether classes make spans,
    inner namesakes)."""
    return json.loads(_topic_spec(topic))


@lru_cache(maxsize=1)
def digest() -> str:
    """A short hash of the grammar file (the dictionaries built with it are named by it)."""
    return hashlib.sha256(resources.ontology(GRAMMAR_FILE).read_bytes()).hexdigest()[:12]
