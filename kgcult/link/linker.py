"""The linker: the registered stages (``pipeline.py``) run in order over batches of
mentions, each mention's candidates ranked (``rank.py``), a tie settled (``ties.py``) and
the result record built (``record.py``) (MakiEval §3.3 on the local graph)."""
from __future__ import annotations

import copy
import os
from itertools import islice
from pathlib import Path
from typing import Callable, Iterable, Iterator

from kgcult.errors import KgcultError
from kgcult.link import affixes, caches, disambiguate, memo, mention_rows, normalize, pipeline, rank, ties
from kgcult.link.index.reader import LabelIndex, index_dir, index_dir_of, load_or_build, open_unopened
from kgcult.link.mention_rows import Mention
from kgcult.link.record import Records
from kgcult.link.stages.base import Stage
from kgcult.link.stages.lexical import LexicalStages, exact
from kgcult.link.state import State
from kgcult.store import open_store

# Calibrated thresholds for the fallback stages (see docs/link.md): a fuzzy or embedding
# hit links only when it is valid for the topic, and an embedding hit only above
# EMBED_MIN cosine and EMBED_MARGIN ahead of the best hit for a different entity.
EMBED_MIN = 0.90
EMBED_MARGIN = 0.02
TOKENS_MIN = 0.6
TOKENS_MARGIN = 0.1
# The semantic stage (multilingual USE): cosine >= SEMANTIC_MIN and SEMANTIC_MARGIN ahead
# of the best hit for another entity (set from the dev set's score distributions).
SEMANTIC_MIN = 0.77
SEMANTIC_MARGIN = 0.10
# ... or cosine >= SEMANTIC_AGREE_MIN (no margin) when the tokens pool agrees: the nearest
# name's entity is the only one whose names hold the mention's rarest word
SEMANTIC_AGREE_MIN = 0.72
# mentions whose per-chunk stages run while a whole-batch stage (semantic) works on the
# previous ones (semantic/stage.py); the last chunk is encoded with the search
AHEAD_CHUNK = 256


class Linker:
    """Links mentions to QIDs of one store. Build with ``Linker.open(store)``.

    ``stages`` (default: ``pipeline.default_stages``: every stage but ``embedding``,
    which ``embeddings=True`` adds) run in pipeline order; the thresholds are the
    calibrated cut-offs of the tokens, semantic and embedding stages (docs/link.md).
    The linker is the stages' :class:`~kgcult.link.stages.base.Context`."""

    def __init__(self, index: LabelIndex, *, store=None, location=None,
                 opener: Callable[[], object] | None = None, model: str | None = None,
                 embeddings: bool = False, stages: Iterable[str] | None = None,
                 embed_min: float = EMBED_MIN, embed_margin: float = EMBED_MARGIN,
                 tokens_min: float = TOKENS_MIN, tokens_margin: float = TOKENS_MARGIN,
                 semantic_min: float = SEMANTIC_MIN, semantic_margin: float = SEMANTIC_MARGIN,
                 semantic_agree_min: float = SEMANTIC_AGREE_MIN,
                 limits: mention_rows.Limits = mention_rows.LIMITS):
        """``store``: the open store of ``index``; or ``location``, the directory of an
        embedded store that is opened only if :attr:`store` is asked for (by ``opener``,
        else read-only). ``limits``: the length cap on the mentions of dict rows
        (``mention_rows.Limits``)."""
        self.ix = index
        self._store = store
        self._location = location
        self._opener = opener
        # where the on-disk caches of the loose stages live (beside the label index)
        self.cache_dir: Path | None
        if store is not None and getattr(store, "location", None):
            self.cache_dir = index_dir(store)
        else:
            self.cache_dir = index_dir_of(location) if location is not None else None
        self.model = model
        self.stages = pipeline.checked(stages if stages is not None else
                                       pipeline.default_stages(embeddings))
        self.embed_min = embed_min
        self.embed_margin = embed_margin
        self.tokens_min = tokens_min
        self.tokens_margin = tokens_margin
        self.semantic_min = semantic_min
        self.semantic_margin = semantic_margin
        self.semantic_agree_min = semantic_agree_min
        self.limits = limits
        self._facts = disambiguate.GraphFacts(index)
        self.lexical = LexicalStages(index, self.cache_dir)  # the fuzzy and token pools (tokens, semantic)
        self._stage_objects: dict[str, Stage] = {}  # name -> the stage (self.stage)
        self._records = Records(self._facts)
        self._name_parts = memo.Pools(memo.POOLS)  # (topic, lang) -> the part's (eid, lang, name) rows
        self._topic_bits = {t.name: 1 << i for i, t in enumerate(index.topics)}
        self._qnum = index.qnums  # QID numbers by eid (the index holds item ids only)
        self._keys = memo.Memo(memo.MENTIONS)  # (mention, lang) -> normalized keys

    @classmethod
    def open(cls, store, model: str | None = None, embeddings: bool = False, *,
             stages: Iterable[str] | None = None, rebuild: bool = False,
             opener: Callable[[], object] | None = None, **thresholds) -> "Linker":
        """A linker on ``store`` with the store's persisted label index, built first if
        missing or stale. ``store``: an open store, or the location of one; then, when
        the index of the store's current files is known (``index.reader.open_unopened``),
        the store is not opened at all (until :attr:`store` is asked for), else it is
        opened by ``opener`` (default: read-only). ``thresholds``: embed_min,
        embed_margin, tokens_min, tokens_margin, semantic_min, semantic_margin,
        semantic_agree_min, and ``limits`` (as for the constructor)."""
        if isinstance(store, (str, os.PathLike)):
            location = store
            ix = None if rebuild else open_unopened(location)
            if ix is not None:
                return cls(ix, location=location, opener=opener, model=model, embeddings=embeddings,
                           stages=stages, **thresholds)
            store = opener() if opener is not None else open_store(location, read_only=True)
        ix = load_or_build(store, rebuild=rebuild)
        return cls(ix, store=store, model=model, embeddings=embeddings, stages=stages, **thresholds)

    @classmethod
    def open_unopened(cls, location, **kwargs) -> "Linker | None":
        """A linker on the embedded store at ``location`` that does not open the store:
        when the store's files are those a read-only open last saw with a fresh closure, the
        index of that content is opened (:func:`kgcult.link.index.reader.open_unopened`); else
        None. ``kwargs`` as for :meth:`open`."""
        ix = open_unopened(location)
        return None if ix is None else cls(ix, location=location, **kwargs)

    @property
    def store(self):
        """The store linked against (opened on first use when the linker was opened from
        its location without it)."""
        if self._store is None and self._location is not None:
            self._store = self._opener() if self._opener is not None else open_store(self._location, read_only=True)
        return self._store

    def build_caches(self, all_caches: bool = False) -> dict:
        """Every on-disk cache the linker's stages read, made ready beside the label index
        (``kgcult link index``; :mod:`kgcult.link.caches`): a first link then reads them
        instead of building them. ``all_caches``: those of every installed stage, the
        lazy ones (``embedding``) included. Per stage, what was built."""
        return caches.build(self, all_caches=all_caches)

    def with_stages(self, stages: Iterable[str]) -> "Linker":
        """The same linker with other stages, sharing this one's model, pools and caches
        (all of them independent of the stages)."""
        other = copy.copy(self)
        other.stages = pipeline.checked(stages)
        return other

    @property
    def topics(self) -> list[str]:
        """The names of the topics a mention may be linked under."""
        return [t.name for t in self.ix.topics]

    # -- public API ------------------------------------------------------------------

    def link(self, mention: str, lang: str = "en", topic: str | None = None,
             country: str | None = None) -> dict:
        """The result record of one mention (see the module docstring of kgcult.link)."""
        return next(iter(self.link_many([{"mention": mention, "lang": lang, "topic": topic,
                                          "country": country}])))

    def link_many(self, rows: Iterable[dict | Mention], batch: int = 512) -> Iterator[dict]:
        """Link many mentions (dicts with mention, lang, topic, country, id, group, checked
        here by ``mention_rows.check``; or ``Mention`` objects already checked, as
        ``mention_rows.read`` gives them); yields one result per row in input order.
        Mentions are linked ``batch`` at a time (the semantic and embedding stages search
        a batch at once)."""
        buf: list = []
        for row in rows:
            buf.append(row)
            if len(buf) >= batch:
                yield from self._link_batch(buf)
                buf = []
        if buf:
            yield from self._link_batch(buf)

    def stage(self, name: str) -> Stage:
        """The linker's object of the stage ``name`` (made on first use; shared by the
        linkers of :meth:`with_stages`): its pools and caches."""
        st = self._stage_objects.get(name)
        if st is None:
            cls = pipeline.BY_NAME[name]
            st = self._stage_objects[name] = cls(self, pipeline.REGISTRY.index(cls))
        return st

    # -- what the stages read (stages.base.Context) ------------------------------------

    def keys(self, s: State) -> tuple:
        """``normalize.keys`` of the mention, memoized (mentions repeat a lot)."""
        k = s.keys
        if k is None:
            kk = (s.text, s.lang)
            k = self._keys.get(kk)
            if k is None:
                k = self._keys.put(kk, normalize.keys(s.text, s.lang))
            s.keys = k
        return k

    def names(self, topic: str | None, langs) -> list:
        """(eid, lang, name) of the topic's entities (None: of any topic) in ``langs``;
        one cached list per (topic, language), read from the index's pools."""
        out = []
        for lg in sorted(set(langs)):
            k = (topic, lg)
            out.extend(self._name_parts.get_or_open(k, lambda: self.ix.part_names(topic, lg)))
        return out

    # -- a batch -------------------------------------------------------------------

    def _state(self, row) -> State:
        """The state of an input row: a dict is checked here, a ``Mention`` was checked
        when it was read (against the topics, which must be this linker's)."""
        if row.__class__ is not Mention:
            return State.of(mention_rows.check(row, self._topic_bits, self.limits))
        if row.topic is not None and row.topic not in self._topic_bits:
            raise KgcultError(f"unknown topic {row.topic!r}: one of {', '.join(sorted(self._topic_bits))}")
        return State.of(row)

    def _link_batch(self, rows: list) -> list[dict]:
        stages = [self.stage(name) for name in self.stages]
        per_chunk = [st for st in stages if not st.whole_batch]
        whole = [st for st in stages if st.whole_batch]
        states: list[State] = []
        reach: list[State] = []  # the mentions the per-chunk stages left unsettled
        for c0 in range(0, len(rows), AHEAD_CHUNK):  # a whole-batch stage works ahead
            chunk = [self._state(r) for r in rows[c0:c0 + AHEAD_CHUNK]]
            states += chunk
            if c0 == 0:
                for st in whole:
                    st.start(chunk)
            todo = self._run(per_chunk, [s for s in chunk if s.text])
            reach += todo
            if c0 + AHEAD_CHUNK < len(rows):
                for st in whole:
                    st.ahead(todo)
        if whole:
            self._run(whole, reach, always=True)
        out = [self._finish(s) for s in states]
        self._coherence(states, out)
        ran = ",".join(self.stages)  # what linked these rows (a missing extra drops stages)
        for r in out:
            r["stages"] = ran
        return out

    def _run(self, stages: list[Stage], todo: list[State], always: bool = False) -> list[State]:
        """Run ``stages`` in order on the mentions each leaves unsettled; those left.
        ``always``: run a stage even on no mention (the semantic stage then collects what it
        encoded ahead)."""
        for st in stages:
            if not todo and not always:
                break
            st.run(todo)
            todo = [s for s in todo if not self._settled(s)]
        return todo

    def _settled(self, s: State) -> bool:
        """Whether a stage found a candidate valid for the mention's topic (without a
        topic, any candidate). Only the candidates found since the last call are looked
        at: the earlier ones were not valid, or the mention would not be asked about."""
        cands = s.cands
        n = len(cands)
        if n == s.checked:
            return False
        topic = s.topic
        if not topic:
            return True
        bit = self._topic_bits[topic]
        tb, typed = self.ix.topic_bits, self._facts.inverse_typed
        for e in islice(cands, s.checked, None):  # a dish's P527 ingredient is valid too (disambiguate.py)
            if tb[e] & bit or typed(e, topic):
                return True
        s.checked = n
        return False

    def countries(self, eid: int) -> frozenset:
        """The countries an entity is or lies in (a stage's check: ``GraphFacts.countries``)."""
        return self._facts.countries(eid)

    def settlement(self, eid: int) -> bool:
        """Whether an entity is a settlement (a stage's check: ``GraphFacts.settlement``)."""
        return self._facts.settlement(eid)

    def valid(self, topic: str | None):
        """Whether an entity is valid for ``topic`` (a stage's check: :meth:`_valid`)."""
        return self._valid(topic)

    def _valid(self, topic: str | None):
        """Whether an entity is valid for ``topic`` (any entity without a topic)."""
        if not topic:
            return lambda eid: True
        bit = self._topic_bits[topic]
        tb, typed = self.ix.topic_bits, self._facts.inverse_typed
        return lambda eid: (tb[eid] & bit) != 0 or typed(eid, topic)

    def _finish(self, s: State, context: list[int] | None = None) -> dict:
        """The record of a mention the stages are done with: its candidates ranked, a tie
        at the top settled (``context``: the entities resolved in its group)."""
        ranked = rank.ranked(s, self._valid(s.topic), self._qnum)
        decided, tied = ties.settle_top(self._facts, ranked, s, context)
        rec = self._records.record(s, ranked, decided, tied)
        if rec["qid"] is not None and not tied:
            self._namesake(s, rec)
        return rec

    def _namesake(self, s: State, rec: dict) -> None:
        """A region's name that is also its city's names the city: when the entity taken
        has places located in it (P131), the mention with one of its language's namesake
        designators written on (``ontology/link-affixes.json``: ja/zh 市, ko 시) is looked
        up among the names in its language; a place of the topic so named, located in the
        region or nowhere the graph says, is taken instead (京都 -> 京都市)."""
        ends = affixes.grammar(s.lang).namesake
        ix = self.ix
        if not ends or not ix.inbound("P131").get(rec["qid"]):
            return
        valid = self._valid(s.topic)
        for d in ends:
            for eid in sorted(exact(ix, s.text + d, s.lang)):
                q = ix.qids[eid]
                located = [o for pid, o in ix.edges.get(q, ()) if pid == "P131"]
                if q != rec["qid"] and valid(eid) and (rec["qid"] in located or not located):
                    ent = self._records.entity(eid, s.lang, s.topic)
                    rec.update(qid=ent["qid"], label=ent["label"], label_en=ent["label_en"],
                               evidence=[list(x) for x in ent["evidence"]], granularity=ent["granularity"],
                               granularity_score=ent["granularity_score"], country=list(ent["country"]),
                               description=ent["description"])
                    rec["decided_by"] = list(rec.get("decided_by") or ()) + [{"by": "namesake", "name": s.text + d}]
                    return

    def _coherence(self, states: list[State], out: list[dict]) -> None:
        """Ties in a group settled again against the entities resolved for the group's
        other mentions: an ambiguous result, and one that a criterion after coherence
        (popularity, granularity, label) decided, since coherence comes before them and the
        first pass had no context to read. The context is the group's results that were
        not such guesses themselves."""
        def guessed(r: dict) -> bool:  # a tie the first pass settled without context
            return r["status"] == "ambiguous" or any(d["by"] in _AFTER_COHERENCE
                                                     for d in r.get("decided_by") or ())

        groups: dict = {}  # the context: what the match itself (or the graph's first criteria) settled
        for i, (s, r) in enumerate(zip(states, out)):
            if s.group is not None and r["status"] == "resolved" and not guessed(r):
                groups.setdefault(s.group, []).append((i, self.ix.eid_of[r["qid"]]))
        if not groups:
            return
        for i, (s, r) in enumerate(zip(states, out)):
            if s.group is None or not guessed(r):
                continue
            context = [e for j, e in groups.get(s.group, ()) if j != i]
            if context:
                out[i] = self._finish(s, context=context)


# the tie criteria that come after coherence (disambiguate.CRITERIA, then ties.py's label)
_AFTER_COHERENCE = frozenset({"popularity", "granularity", "label"})
