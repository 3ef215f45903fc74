"""Attached grammar and designators per language, read from ``ontology/link-affixes.json``
(data, not code): the forms a mention is also looked up as once they are taken off.

* ``prefixes`` (Arabic proclitics و ب ل ف ك): taken off a word that then starts with the
  ``article``, which is then taken off too (``وبالكمون`` -> ``كمون``); the article alone is
  taken off every word (``زيت الزيتون`` -> ``زيت زيتون``);
* ``suffixes`` (particles, case endings, the ezafe, plural endings): taken off the last
  word, longest first, leaving ``min_stem`` letters or more (``서울에서`` -> ``서울``);
  ``suffix_after``: a suffix taken off only after one of the letters given (Persian ی,
  the ezafe after a vowel: ``کیوتوی``; after a consonant an adjective's ending, ``تایلندی``);
  ``apostrophe``: a suffix after an apostrophe goes (``İstanbul'a`` -> ``İstanbul``);
* ``designators``: generic words of a place name, before or after it (a separate word,
  or written onto it in a script without spaces): a mention is also looked up with each
  (``京都`` -> ``京都市``) and without it (``استان فارس`` -> ``فارس``);
* ``case_endings`` (Russian): pairs (a word's case ending, its name's), for the forms a
  one-word mention is looked up as among its own language's names (``сметаной`` ->
  ``сметана``: Snowball cuts the word and the name apart);
* ``latin_designators``: the same words romanized, which the cross-script pool files a
  Latin name without (``Gilan Province`` also as ``gilan``).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache

from kgcult import resources
from kgcult.link import normalize

_APOSTROPHES = "'’ʼ"


@dataclass(frozen=True)
class Grammar:
    prefixes: tuple[str, ...] = ()
    article: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()
    before: tuple[str, ...] = ()  # designators written before a name
    after: tuple[str, ...] = ()   # ... and after it
    apostrophe: bool = False
    namesake: tuple[str, ...] = ()  # designators that make a region's name its city's (京都 -> 京都市)
    case_endings: tuple[tuple[str, str], ...] = ()  # (a word's ending, its name's), longest first
    suffix_after: tuple[tuple[str, str], ...] = ()  # (suffix, the letters a word must end with before it)

    def takes(self, suffix: str, stem: str) -> bool:
        """Whether ``suffix`` is attached grammar after ``stem`` (:func:`takes`)."""
        return takes(self.suffix_after, suffix, stem)


def takes(suffix_after, suffix: str, stem: str) -> bool:
    """Whether ``suffix`` is attached grammar after ``stem``, by a language's
    ``suffix_after`` pairs (suffix, the letters a stem must end with to take it): Persian ی
    is the ezafe after a vowel, کیوتوی; after a consonant it makes an adjective, تایلندی,
    Thai, which is no name."""
    if not suffix_after:
        return True
    letters = dict(suffix_after).get(suffix)
    return letters is None or stem[-1:] in letters


@lru_cache(maxsize=None)
def _data() -> dict:
    return json.loads(resources.ontology("link-affixes.json").read_text(encoding="utf-8"))


def min_stem() -> int:
    return int(_data().get("min_stem", 2))


@lru_cache(maxsize=None)
def latin_designators_digest() -> str:
    """A short hash of :func:`latin_designators` (the cross-script pools are filed by it:
    a Latin name is kept also without them)."""
    return hashlib.sha256(" ".join(sorted(latin_designators())).encode()).hexdigest()[:8]


def head_first(lang: str, topic: str | None) -> bool:
    """Whether ``lang`` (its base language) writes a noun before what qualifies it, in
    names of ``topic`` (``arroz jollof``; ``head_first``, the ``reorder`` stage)."""
    return _compounds_so("head_first", lang, topic)


def head_last(lang: str, topic: str | None) -> bool:
    """Whether ``lang`` (its base language) writes a compound's qualifier right before its
    head, without a space, in names of ``topic`` (``味噌汁``; ``head_last``)."""
    return _compounds_so("head_last", lang, topic)


@lru_cache(maxsize=None)
def _compounds_so(order: str, lang: str, topic: str | None) -> bool:
    d = _data().get(order, {})
    return normalize.base_lang(lang) in d.get("languages", ()) and topic in d.get("topics", ())


@lru_cache(maxsize=None)
def linking_words(lang: str) -> tuple[str, ...]:
    """The words (or elided articles, ``d'``) that may stand between a head noun and what
    qualifies it in ``lang`` (``salsa de tomate``), longest first."""
    words = _data().get("head_first", {}).get("languages", {}).get(normalize.base_lang(lang), ())
    return tuple(sorted(words, key=lambda w: (-len(w), w)))


def qualifier_word(word: str, lang: str) -> str | None:
    """The English word of an adjective of colour or taste that qualifies a head noun after
    it in ``lang`` (``qualifier_words``: Italian neri, black), or None."""
    words = _data().get("qualifier_words", {}).get("languages", {}).get(normalize.base_lang(lang), {})
    return words.get(word.lower())


@lru_cache(maxsize=None)
def latin_designators() -> frozenset[str]:
    return frozenset(_data().get("latin_designators", ()))


@lru_cache(maxsize=None)
def grammar(lang: str) -> Grammar:
    """The attached grammar of ``lang`` (its base language's), empty when none is known."""
    d = _data()["languages"].get(normalize.base_lang(lang))
    if not d:
        return Grammar()
    longest = lambda xs: tuple(sorted(xs, key=lambda x: (-len(x), x)))  # noqa: E731
    return Grammar(prefixes=longest(d.get("prefixes", ())), article=longest(d.get("article", ())),
                   suffixes=longest(d.get("suffixes", ())),
                   before=tuple(d.get("designators", {}).get("before", ())),
                   after=tuple(d.get("designators", {}).get("after", ())),
                   apostrophe=bool(d.get("apostrophe", False)),
                   namesake=tuple(d.get("namesake", ())),
                   case_endings=tuple(sorted(((a, b) for a, b in d.get("case_endings", ())),
                                             key=lambda p: (-len(p[0]), p))),
                   suffix_after=tuple(sorted(d.get("suffix_after", {}).items())))


CASE_BASE = 3  # letters a word keeps before its case ending is replaced


def case_forms(text: str, lang: str) -> list[str]:
    """A one-word mention with its case ending replaced by its name's (Russian сметаной
    -> сметана, баклажанов -> баклажан; ``case_endings``), longest ending first, leaving
    :data:`CASE_BASE` letters or more; for a lookup among its own language's names, and,
    romanized, among the Latin names' keys (the cross-script stage: сметаной, Smetana)."""
    if " " in text:
        return []
    out: list[str] = []
    for end, to in grammar(lang).case_endings:
        base = text[:len(text) - len(end)]
        if text.endswith(end) and len(base) >= CASE_BASE and base + to not in out and base + to != text:
            out.append(base + to)
    return out


def _unspaced(text: str) -> bool:
    return " " not in text


def stripped(text: str, lang: str) -> list[str]:
    """The forms of ``text`` with its attached grammar taken off (most taken off last), not
    ``text`` itself; in a fixed order, without repeats."""
    g = grammar(lang)
    out: list[str] = []
    words = text.split()
    if not words:
        return out
    n = min_stem()
    if g.apostrophe:
        last = words[-1]
        for a in _APOSTROPHES:
            i = last.find(a)
            if i >= n:
                words = words[:-1] + [last[:i]]
                out.append(" ".join(words))
                break
    if g.prefixes or g.article:
        first = words[0]
        for p in g.prefixes:
            rest = first[len(p):]
            if first.startswith(p) and (any(rest.startswith(a) for a in g.article) or
                                        (p.endswith("ل") and rest.startswith("ل"))):
                if not any(rest.startswith(a) for a in g.article):  # لل: ل + ال with its alef dropped
                    rest = g.article[0] + rest[1:] if g.article else rest
                words = [rest] + words[1:]
                out.append(" ".join(words))
                break
        if g.article:
            bare = []
            for w in words:
                for a in g.article:
                    if w.startswith(a) and len(w) - len(a) >= n:
                        w = w[len(a):]
                        break
                bare.append(w)
            out.append(" ".join(bare))
    if g.suffixes:
        last = words[-1]
        for sfx in g.suffixes:
            if last.endswith(sfx) and len(last) - len(sfx) >= n and g.takes(sfx, last[:-len(sfx)]):
                out.append(" ".join(words[:-1] + [last[:-len(sfx)]]))
                break
    return [v for v in dict.fromkeys(out) if v and v != text]


def designator_topics() -> frozenset[str]:
    return frozenset(_data().get("designator_topics", ()))


def undesignated(text: str, lang: str) -> list[str]:
    """``text`` without each designator of ``lang`` it carries (before or after it); in a
    script without spaces, two characters at least are left: one character is an
    abbreviation (苏州, Suzhou, less 州 is 苏, Jiangsu's), not the name."""
    g = grammar(lang)
    out = [text[len(d):].strip() for d in g.before if text.startswith(d) and len(text) > len(d)]
    out += [text[:-len(d)].strip() for d in g.after if text.endswith(d) and len(text) > len(d)]
    shortest = 2 if _unspaced(text) and not normalize.basic(text).isascii() else 1
    return [v for v in dict.fromkeys(out) if v and v != text and len(v) >= shortest]


def designated(text: str, lang: str) -> list[str]:
    """``text`` without a designator of ``lang`` it carries, then with each designator
    added where the language writes it (written onto it in a script without spaces)."""
    g = grammar(lang)
    glue = "" if _unspaced(text) and not normalize.basic(text).isascii() else " "
    out = undesignated(text, lang) + [d + glue + text for d in g.before] + [text + glue + d for d in g.after]
    return [v for v in dict.fromkeys(out) if v and v != text]


def latin_without_designators(key: str) -> str | None:
    """A romanized key without its designator words (``gilan province`` -> ``gilan``), or
    None when it has none (or is nothing else)."""
    ws = key.split()
    keep = [w for w in ws if w not in latin_designators()]
    if len(keep) == len(ws) or not keep:
        return None
    return " ".join(keep)
