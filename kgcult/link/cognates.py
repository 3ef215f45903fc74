"""Cognate keys (``ontology/annotate-grammar.json``'s ``cognates``): the key a one-word name
or word shares with its cognates in related Latin-script languages (Suppe, soupe, sopa,
zuppa: sup). One definition for the annotator (:mod:`kgcult.annotate.grammar`) and the
linker's ``cognate`` stage."""
from __future__ import annotations

import json
import re
from functools import lru_cache

from kgcult import resources

GRAMMAR_FILE = "annotate-grammar.json"


@lru_cache(maxsize=1)
def _cognates() -> tuple[tuple, dict, dict, int]:
    """(shared rules, rules per language, letter classes, shortest key) of the grammar
    file's ``cognates``, the rules compiled."""
    with open(resources.ontology(GRAMMAR_FILE), encoding="utf-8") as f:
        c = json.load(f).get("cognates", {})
    shared = tuple((re.compile(a), b) for a, b in c.get("shared", ()))
    rules = {lg: tuple((re.compile(a), b) for a, b in rs) for lg, rs in c.get("rules", {}).items()}
    return shared, rules, dict(c.get("classes", {})), int(c.get("min_key", 3))


_VOWELS = frozenset("aiu")


def cognate_key(word: str, lang: str) -> str | None:
    """The key a folded one-word name or word of ``lang`` shares with its cognates in the
    other languages of the grammar file's ``cognates`` (Suppe, soupe, sopa, zuppa: sup):
    the language's orthographic correspondences, the shared ones, the letter classes,
    doubled letters as one, a final vowel dropped. None: the language has no rules, the
    word is not written in lower-case ASCII letters alone, or the key is too short."""
    shared, rules, classes, min_key = _cognates()
    own = rules.get(lang)
    if own is None or not word.isascii() or not word.isalpha():
        return None
    w = word
    for rx, to in own + shared:
        w = rx.sub(to, w)
    w = "".join(classes.get(ch, ch) for ch in w)
    w = re.sub(r"(.)\1+", r"\1", w)
    if len(w) > min_key and w[-1] in _VOWELS:
        w = w[:-1]
    return w if len(w) >= min_key else None


def cognate_languages() -> frozenset:
    """The languages whose one-word names go under cognate keys."""
    return frozenset(_cognates()[1])
