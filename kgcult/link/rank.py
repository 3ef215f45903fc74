"""Ranking without randomness.

Order: topic-valid before invalid; then the stage, in pipeline order (exact label <
exact alias < normalized < English fallback < any language < stem < compound < fuzzy <
any-language fuzzy < tokens < semantic < embedding); within a stage fewer edits before
more (fuzzy), a higher score before a lower one (tokens, semantic, embedding). Candidates
equal on all of that are a tie; among tied hits of the normalized, English and
any-language stages the one whose name is closer to the mention wins (the same up to case
before the same up to diacritics before the same only after plural folding:
``closeness``); the rest is settled by the graph (``disambiguate.py``: specificity,
country, coherence, popularity, granularity), then an rdfs:label before a skos:altLabel,
then the smaller QID number (``Linker._finish`` builds the keys). A tie nothing settles
is ``status: ambiguous``.
"""
from __future__ import annotations

from kgcult.link import normalize
from kgcult.link.pipeline import STAGES

STAGE_RANK = {s: i for i, s in enumerate(STAGES)}
STAGE_SCORE = {"exact": 1.0, "normalized": 0.9, "english": 0.85, "any": 0.8, "stem": 0.75,
               "compound": 0.72}


def score(stage: str, alias: int, sub: float) -> float:
    """A display score in [0, 1]; ranking orders by the criteria above, not by it."""
    if stage in STAGE_SCORE:
        return round(STAGE_SCORE[stage] - 0.05 * alias, 4)
    if stage == "fuzzy":
        return round(0.7 - 0.1 * sub, 4)
    if stage == "anyfuzzy":
        return round(0.68 - 0.1 * sub, 4)
    if stage == "tokens":
        return round(0.65 * max(0.0, -sub), 4)
    return round(0.6 * max(0.0, -sub), 4)  # semantic, embedding: sub = -cosine


# stages whose hits are names equal to the mention up to a normalization: among tied hits
# the one whose name needed fewer of its steps is the closer match (``closeness``)
CLOSENESS_STAGES = frozenset({"normalized", "english", "any"})


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


def match_name(stage: str, alias: int) -> str:
    if stage == "exact":
        return "exact-alias" if alias else "exact-label"
    return {"any": "any-language", "anyfuzzy": "any-language-fuzzy"}.get(stage, stage)
