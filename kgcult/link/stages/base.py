"""What a linker stage is: :class:`Stage` (its name, rank, the score it shows, the extra it
needs, ``run(batch)``) and :class:`Context`, what a stage may read of the linker that runs
it. The stages are registered, in pipeline order, in ``kgcult/link/pipeline.py``.

A stage's ``run`` gets the mentions of a batch that no earlier stage settled (found a
candidate valid for the mention's topic; without a topic, any candidate) and adds its hits
to each with :meth:`State.add <kgcult.link.state.State.add>`; the linker then drops the
mentions it settled before the next stage runs.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Protocol

from kgcult import extras
from kgcult.link.index.reader import LabelIndex
from kgcult.link.state import State


class Context(Protocol):
    """What the linker lends its stages (``Linker`` has all of it)."""

    ix: LabelIndex
    cache_dir: Path | None  # where on-disk caches live (beside the label index), or None
    model: str | None       # the embedding stage's model
    lexical: Any            # stages.lexical.LexicalStages: the fuzzy and token pools
    tokens_min: float
    tokens_margin: float
    semantic_min: float
    semantic_margin: float
    semantic_agree_min: float
    embed_min: float
    embed_margin: float

    def keys(self, s: State) -> tuple:
        """``normalize.keys`` of the mention (memoized)."""

    def names(self, topic: str | None, langs) -> list:
        """(eid, lang, name) of the topic's entities in ``langs`` (cached per part)."""

    def valid(self, topic: str | None) -> Any:
        """Whether an entity id is valid for ``topic``: a class through its instances too."""

    def countries(self, eid: int) -> frozenset:
        """The countries (QIDs) an entity is or lies in, as the graph says (P17, P495,
        P131 up to a country; ``disambiguate.GraphFacts.countries``)."""


class Stage:
    """A candidate stage. Subclasses set the class attributes and :meth:`run`.

    * ``name``: as ``--stages`` and ``Linker(stages=...)`` spell it; ``match``: the result's
      ``match`` for its hits (:meth:`match_name`);
    * ``rank``: its position in the pipeline (set from the registry): hits of an earlier
      stage rank first;
    * ``score(alias, sub)``: the ``score`` shown for a hit (ranking does not read it);
    * ``needs``: the optional modules it imports, from the extra ``extra``; without them it
      is left out of the default stages, and asking for it stops with the install hint;
    * ``opt_in``: not a default stage even when installed (``embedding``);
    * ``whole_batch``: runs once over a ``link_many`` batch after the other stages, which
      run on chunks of it; :meth:`ahead` sees each chunk as soon as they are done with it;
    * ``scored``: a stage function's ``detail`` is the order within the stage (``sub``);
    * ``own_name``: a hit means the mention is a name of that entity in its own language;
    * ``closeness``: among its tied hits the closer name wins (``rank.closeness``);
    * ``lazy_cache``: why its on-disk caches are built on first use by design, not by
      ``kgcult link index`` (which says so; ``--all-caches`` builds them anyway);
    * :meth:`caches` / :meth:`build_cache`: the on-disk caches it reads beside the label
      index, and how one is built: ``Linker.build_caches`` (``kgcult link index``) runs
      them for every registered stage, so a first link reads them instead of building.
    """

    name: ClassVar[str]
    match: ClassVar[str] = ""
    base_score: ClassVar[float] = 0.0
    needs: ClassVar[tuple[str, ...]] = ()
    extra: ClassVar[str] = "link"
    feature: ClassVar[str] = ""
    opt_in: ClassVar[bool] = False
    whole_batch: ClassVar[bool] = False
    scored: ClassVar[bool] = False
    own_name: ClassVar[bool] = False
    closeness: ClassVar[bool] = False
    lazy_cache: ClassVar[str] = ""

    def __init__(self, ctx: Context, rank: int):
        self.ctx = ctx
        self.rank = rank

    def __repr__(self) -> str:
        return f"<stage {self.name}>"

    @classmethod
    def available(cls) -> bool:
        """Whether the optional modules it needs are installed."""
        return all(extras.available(m) for m in cls.needs)

    @classmethod
    def require(cls) -> None:
        """Fail now, naming the extra to install, when a module it needs is missing."""
        for m in cls.needs:
            if not extras.available(m):
                extras.require(m, cls.extra, cls.feature or f"the linker's {cls.name} stage")

    def match_name(self, alias: int) -> str:
        return self.match or self.name

    def score(self, alias: int, sub: float) -> float:
        """A display score in [0, 1]: by default ``base_score``, 0.05 less for an alias."""
        return round(self.base_score - 0.05 * alias, 4)

    def run(self, batch: list[State]) -> None:
        raise NotImplementedError

    def caches(self) -> list[tuple[Any, int]]:
        """The caches this stage reads from beside the label index, as (key, weight: the
        names it covers) in the order :meth:`build_cache` builds them; none by default."""
        return []

    def build_cache(self, key) -> bool:
        """Make the cache ``key`` of :meth:`caches` ready on disk (read, not built, when it
        is there already); whether it was built now."""
        return False

    def prepare(self) -> None:
        """What a first :meth:`build_cache` or link needs beyond the index (a model's
        converted copy), made ready; nothing by default."""

    def start(self, chunk: list[State]) -> None:
        """A whole-batch stage: the first chunk of a batch, before any stage runs on it, to
        start loading what :meth:`ahead` will need beside the per-chunk stages; nothing by
        default."""

    def ahead(self, chunk: list[State]) -> None:
        """A whole-batch stage: the mentions of a chunk that will reach it (before
        :meth:`run` gets them all), to start work beside the next chunk's stages."""
