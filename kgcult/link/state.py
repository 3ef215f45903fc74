"""The linker's typed state: a mention on its way through the stages (:class:`State`), the
candidates the stages found for it (:class:`Candidate`) and the candidates in ranking order
(:class:`Ranked`). The input row itself, checked, is a :class:`kgcult.link.mention_rows.Mention`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgcult.link.mention_rows import Mention


@dataclass(slots=True)
class Candidate:
    """A stage's hit for a mention. ``stage``: the stage object that found it (its name,
    rank, display score); ``alias``: 0 for an rdfs:label, 1 for a skos:altLabel; ``lang``:
    the language of the name that matched; ``sub``: the order within the stage (edits for
    fuzzy, minus the score for tokens, semantic, embedding; 0 for the others)."""
    stage: Any
    alias: int
    lang: str
    sub: float = 0


@dataclass(slots=True)
class State:
    """One mention while it is linked: the checked input and what the stages found
    (``cands``: entity id -> its first candidate, in the order found)."""
    row: dict
    mention: str          # as given
    text: str             # stripped: what the stages match
    lang: str
    topic: str | None
    group: str | int | None
    cands: dict[int, Candidate] = field(default_factory=dict)
    keys: tuple | None = None  # normalize.keys(text, lang), once a stage asked for them
    checked: int = 0           # how many of ``cands`` are known not to be valid for the topic

    @classmethod
    def of(cls, m: Mention) -> "State":
        return cls(m.row, m.mention, m.mention.strip(), m.lang, m.topic, m.group)

    def add(self, eid: int, stage, alias: int, lang: str, sub: float = 0) -> None:
        """A hit of ``stage``; an entity an earlier stage found keeps that stage's candidate."""
        if eid not in self.cands:
            self.cands[eid] = Candidate(stage, alias, lang, sub)

    def add_found(self, found: dict, stage) -> None:
        """The hits ``{eid: (alias, lang, detail)}`` of a stage function; ``detail`` is the
        order within the stage for a ``scored`` stage, else ignored."""
        cands = self.cands
        scored = stage.scored
        for eid, (alias, lg, detail) in found.items():
            if eid not in cands:
                cands[eid] = Candidate(stage, alias, lg, detail if scored else 0)

    def names_something(self) -> bool:
        """Whether the mention is, verbatim or normalized, a name in its own language of an
        entity (one not valid for the topic, or the stages would have stopped): then the loose
        stages (tokens, semantic) do not guess a neighbour, the mention names something else."""
        return any(c.stage.own_name for c in self.cands.values())


@dataclass(slots=True)
class Ranked:
    """A candidate in ranking order (``kgcult.link.rank``): ``key`` is (0 if valid else 1,
    stage rank, sub, alias, QID number)."""
    key: tuple
    eid: int
    cand: Candidate
    valid: bool
