"""Ranking without randomness.

Order: topic-valid before invalid; then the stage, in pipeline order (exact label <
exact alias < normalized < English fallback < any language < stem < compound < fuzzy <
any-language fuzzy < tokens < semantic < embedding); within a stage fewer edits before
more (fuzzy), a higher score before a lower one (tokens, semantic, embedding). Candidates
equal on all of that are a tie; among tied hits of the normalized, English and
any-language stages (``Stage.closeness``) the one whose name is closer to the mention wins (the same up to case
before the same up to diacritics before the same only after plural folding:
``closeness``); the rest is settled by the graph (``disambiguate.py``: specificity,
country, coherence, popularity, granularity), then an rdfs:label before a skos:altLabel,
then the smaller QID number (:func:`ranked` builds the keys; a stage's rank is its place in
``pipeline.REGISTRY``, its display score its own ``Stage.score``). A tie nothing settles
is ``status: ambiguous``.
"""
from __future__ import annotations

from operator import attrgetter
from typing import Callable

from kgcult.link import normalize
from kgcult.link.state import Ranked, State

_KEY = attrgetter("key")


def ranked(s: State, valid: Callable[[int], bool], qnums) -> list[Ranked]:
    """The mention's candidates in ranking order: key (0 if valid else 1, stage rank, sub,
    alias, QID number); ``valid(eid)`` says whether an entity is valid for the topic."""
    out = []
    for eid, c in s.cands.items():
        v = valid(eid)
        out.append(Ranked((0 if v else 1, c.stage.rank, c.sub, c.alias, qnums[eid]), eid, c, v))
    out.sort(key=_KEY)  # the keys differ in their QID numbers
    return out


def tied_at_top(ranked: list[Ranked]) -> int:
    """How many candidates tie with a valid first one on the match itself (valid, stage,
    sub); 0 when it has no tie."""
    if len(ranked) < 2 or not ranked[0].valid or ranked[1].key[:3] != ranked[0].key[:3]:
        return 0
    top = ranked[0].key[:3]
    n = 2
    while n < len(ranked) and ranked[n].key[:3] == top:
        n += 1
    return n


def closeness(names, mention: str, lang: str) -> int:
    """How close the nearest of ``names`` (an entity's names in ``lang``) is to the
    mention: 0 the same string, 1 the same up to case and spacing (``normalize.basic``),
    2 up to diacritics too, 3 only after plural folding (or not at all)."""
    b, f, _ = normalize.keys(mention, lang)
    best = 3
    for name in names:
        if name == mention:
            return 0
        nb = normalize.basic(name)
        best = min(best, 1 if nb == b else 2 if normalize.strip_diacritics(nb) == f else 3)
    return best

