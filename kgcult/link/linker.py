"""The linker: candidate stages in order, typing by topic, deterministic ranking, and the
per-mention output record (MakiEval §3.3 on the local graph)."""
from __future__ import annotations

import copy
import os
from typing import Iterable, Iterator

import numpy as np

from kgcult.errors import KgcultError
from kgcult.link.stages import lexical as C
from kgcult.link import disambiguate, memo, normalize, pipeline, rank
from kgcult.link.stages import embedding as embed
from kgcult.link.stages import morphology_pools as morph_store
from kgcult.link.stages import morphology
from kgcult.link import ties
from kgcult.link.index.reader import (LabelIndex, index_dir, index_dir_of, label_chain, load_or_build, open_unopened,
                                      topics_hash)
from kgcult.link.semantic.stage import SemanticStage
from kgcult.store import open_store

MAX_CANDIDATES = 10
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
# mentions whose lexical stages run while the semantic stage encodes the previous ones
# (semantic/stage.py); the last chunk is encoded with the search
AHEAD_CHUNK = 256


class Linker:
    """Links mentions to QIDs of one store. Build with ``Linker.open(store)``.

    ``stages`` (default: ``pipeline.default_stages``: every stage but ``embedding``,
    which ``embeddings=True`` adds) run in pipeline order; the thresholds are the
    calibrated cut-offs of the tokens, semantic and embedding stages (docs/link.md)."""

    def __init__(self, index: LabelIndex, *, store=None, location=None, model: str | None = None,
                 embeddings: bool = False, stages: Iterable[str] | None = None,
                 embed_min: float = EMBED_MIN, embed_margin: float = EMBED_MARGIN,
                 tokens_min: float = TOKENS_MIN, tokens_margin: float = TOKENS_MARGIN,
                 semantic_min: float = SEMANTIC_MIN, semantic_margin: float = SEMANTIC_MARGIN,
                 semantic_agree_min: float = SEMANTIC_AGREE_MIN):
        """``store``: the open store of ``index``; or ``location``, the directory of an
        embedded store that is opened (read-only) only if :attr:`store` is asked for."""
        self.ix = index
        self._store = store
        self._location = location
        # where the on-disk caches of the loose stages live (beside the label index)
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
        self._morph = memo.Pools.cached_in(self.cache_dir)  # (kind, topic, lang) -> morphology.KeyPool
        self._facts = disambiguate.GraphFacts(index)
        self._lexical = C.LexicalStages(index)
        self._semantic = SemanticStage(index, self.cache_dir, self._lexical)
        self._name_parts = memo.Pools(memo.POOLS)  # (topic, lang) -> the part's (eid, lang, name) rows
        self._emb_parts = memo.Pools.cached_in(self.cache_dir)  # (topic, lang) -> (rows, name vectors) of the embedding stage
        self._emb = memo.Pools.cached_in(self.cache_dir)        # (topic, mention lang) -> embed.EmbeddingPool over its parts
        self._encoder = None
        self._topic_bits = {t.name: 1 << i for i, t in enumerate(index.topics)}
        self._qnum = index.qnums  # QID numbers by eid (the index holds item ids only)
        self._keys = memo.Memo(memo.MENTIONS)       # (mention, lang) -> normalized keys (mentions repeat a lot)
        self._ent_cache = memo.Memo(memo.ENTITIES)  # (eid, lang, topic) -> the entity's output fields
        self._cand_cache = memo.Memo(memo.ENTITIES)  # candidate output dicts (copied into each result)
        self._vec_cache = memo.Memo(memo.VECTORS)   # mention -> embedding

    @classmethod
    def open(cls, store, model: str | None = None, embeddings: bool = False, *,
             stages: Iterable[str] | None = None, rebuild: bool = False, **thresholds) -> "Linker":
        """A linker on ``store`` (an open store, or a location: a path is opened
        read-only), with the store's persisted label index, built first if missing or
        stale. ``thresholds``: embed_min, embed_margin, tokens_min, tokens_margin,
        semantic_min, semantic_margin, semantic_agree_min."""
        if isinstance(store, (str, os.PathLike)):
            lk = None if rebuild else cls.open_unopened(store, model=model, embeddings=embeddings,
                                                        stages=stages, **thresholds)
            if lk is not None:
                return lk
            store = open_store(store, read_only=True)
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
        """The store linked against (opened read-only on first use when the linker was
        opened from its location without it)."""
        if self._store is None and self._location is not None:
            self._store = open_store(self._location, read_only=True)
        return self._store

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

    def link_many(self, rows: Iterable[dict], batch: int = 512) -> Iterator[dict]:
        """Link many mentions (dicts with mention, lang, topic, country, id); yields one
        result per row in input order. Embedding lookups are batched."""
        buf: list = []
        for row in rows:
            buf.append(row)
            if len(buf) >= batch:
                yield from self._link_batch(buf)
                buf = []
        if buf:
            yield from self._link_batch(buf)

    # -- internals -------------------------------------------------------------------

    def _link_batch(self, rows: list[dict]) -> list[dict]:
        semantic_on = "semantic" in self.stages
        states: list[dict] = []
        for c0 in range(0, len(rows), AHEAD_CHUNK):  # the semantic stage encodes ahead
            chunk = [self._first_stages(r) for r in rows[c0:c0 + AHEAD_CHUNK]]
            states += chunk
            if semantic_on and c0 + AHEAD_CHUNK < len(rows):
                self._semantic.encode_ahead(chunk)
        if semantic_on:
            self._semantic.run([s for s in states if s["pending_semantic"]],
                               min_score=self.semantic_min, margin=self.semantic_margin,
                               agree_min=self.semantic_agree_min)
        if "embedding" in self.stages:
            todo = [s for s in states if s["pending_embedding"] and not self._settled(s)]
            if todo:
                self._embedding_stage(todo)
        out = [self._finish(s) for s in states]
        # coherence: ties in a group are settled again against the group's resolved entities
        groups: dict = {}
        for s, r in zip(states, out):
            g = s["group"]
            if g is not None and r["status"] == "resolved":
                groups.setdefault(g, []).append(self.ix.eid_of[r["qid"]])
        if groups:
            for i, (s, r) in enumerate(zip(states, out)):
                if r["status"] == "ambiguous" and groups.get(s["group"]):
                    out[i] = self._finish(s, context=groups[s["group"]])
        return out

    def _settled(self, st: dict) -> bool:
        """Whether an earlier stage found a candidate valid for the mention's topic."""
        if not st["cands"]:
            return False
        if not st["topic"]:
            return True
        bit = self._topic_bits[st["topic"]]
        tb, typed = self.ix.topic_bits, self._facts.inverse_typed
        return any(tb[e] & bit or typed(e, st["topic"]) for e in st["cands"])

    def _check(self, row: dict):
        mention = row.get("mention")
        if not isinstance(mention, str):
            raise KgcultError(f"mention must be a string, got {type(mention).__name__}")
        lang = row.get("lang") or "en"
        if not isinstance(lang, str):
            raise KgcultError(f"lang must be a string, got {type(lang).__name__}")
        topic = row.get("topic") or None
        if topic is not None and topic not in self._topic_bits:
            raise KgcultError(f"unknown topic {topic!r}: one of {', '.join(sorted(self._topic_bits))}")
        return mention, lang.strip().lower(), topic

    def _first_stages(self, row: dict) -> dict:
        mention, lang, topic = self._check(row)
        m = mention.strip()
        ix = self.ix
        bit = self._topic_bits[topic] if topic else 0
        bits = ix.topic_bits
        cands: dict = {}  # eid -> (stage, alias, lang_used, sub, detail)
        group = row.get("group", row.get("source_id"))
        if group is not None and not isinstance(group, (str, int)):
            raise KgcultError(f"group must be a string or an integer, got {type(group).__name__}")
        st = {"row": row, "mention": mention, "lang": lang, "topic": topic, "cands": cands,
              "pending_embedding": False, "pending_semantic": False, "key": None,
              "group": group}
        if not m:
            return st
        keys = None
        done = False
        for stage in self.stages:
            if stage == "semantic" or stage == "embedding":  # batched, after this loop
                st["pending_semantic"] = stage == "semantic" and not _names_something(cands)
                st["pending_embedding"] = "embedding" in self.stages
                break
            if stage == "exact":
                d = ix.exact.get(lang)
                v = d.get(m) if d is not None else None
                if v is not None and v.__class__ is int:  # the common case: one entity
                    found = {v >> 1: (v & 1, lang, None)}
                else:
                    found = C.exact(ix, m, lang)
                    for lg in label_chain(lang)[1:]:  # base language, variants, mul
                        if found:
                            break
                        found = C.exact(ix, m, lg)
            else:
                if keys is None:
                    kk = (m, lang)
                    keys = self._keys.get(kk)
                    if keys is None:
                        keys = self._keys.put(kk, normalize.keys(m, lang))
                    st["key"] = keys[1]
                if stage == "normalized":
                    d = ix.norm.get(lang)
                    v = d.get(keys[2]) if d is not None else None
                    if v is None:
                        found = {}
                    elif v.__class__ is int:
                        found = {v >> 1: (v & 1, lang, None)}
                    else:
                        found = C.normalized(ix, m, lang, keys)
                elif stage == "english":
                    found = C.english(ix, m, lang)
                elif stage == "any":
                    found = C.any_language(ix, m, lang, keys)
                elif stage == "stem" or stage == "compound":
                    found = self._morph_stage(stage, m, lang, topic)
                elif stage == "fuzzy":
                    found = self._lexical.fuzzy(keys[1], lang, topic)
                elif stage == "anyfuzzy":
                    found = self._lexical.any_fuzzy(keys[1], lang, topic)
                elif _names_something(cands):  # the mention is another entity's name
                    found = {}
                else:
                    found = self._lexical.tokens(m, lang, topic, self.tokens_min, self.tokens_margin)
            if found:
                scored = stage in _SCORED
                for eid, (alias, lg, detail) in found.items():
                    if eid not in cands:
                        cands[eid] = (stage, alias, lg, detail if scored else 0, None)
                if not topic:
                    break
                for e in found:  # a dish's P527 ingredient is valid too (disambiguate.py)
                    if bits[e] & bit or self._facts.inverse_typed(e, topic):
                        done = True
                        break
                if done:
                    break
        return st

    def _names(self, topic: str | None, langs) -> list:
        """(eid, lang, name) of the topic's entities (None: of any topic) in ``langs``;
        one cached list per (topic, language), read from the index's pools."""
        out = []
        for lg in sorted(set(langs)):
            k = (topic, lg)
            out.extend(self._name_parts.get_or_open(k, lambda: self.ix.part_names(topic, lg)))
        return out

    def _embedding_pool(self, topic: str, lang: str):
        """faiss pool over the names, in the mention's language and in English, of the
        topic's entities; the vectors of each (topic, language) part are cached on disk
        beside the label index."""
        return self._emb.get_or_open((topic, lang), lambda: embed.EmbeddingPool(
            [self._emb_parts.get_or_open((topic, lg), lambda: self._embedding_part(topic, lg))
             for lg in sorted({lang, normalize.base_lang(lang), "en"})]))

    def _embedding_part(self, topic: str, lg: str) -> tuple:
        rows = self._names(topic, {lg})
        cache = None
        if self.cache_dir is not None:
            cache = self.cache_dir / (
                f"emb-{self.ix.content_hash[:16]}-{topics_hash(self.ix.topics)}-"
                f"{self._encoder.id}-{topic}-{lg}.npy")
        return rows, embed.embed_rows(self._encoder, rows, cache)

    def _embedding_stage(self, states: list[dict]) -> None:
        groups: dict = {}
        for s in states:
            if s["topic"] is None:  # without a topic the embedding stage has no guard rail
                continue
            groups.setdefault((s["topic"], s["lang"]), []).append(s)
        if not groups:
            return
        if self._encoder is None:
            self._encoder = embed.Encoder(self.model)
        texts = sorted({s["mention"].strip() for g in groups.values() for s in g})
        vec = embed.memo_vectors(self._vec_cache, texts, self._encoder.encode)  # one batched call
        for key in sorted(groups):
            group = groups[key]
            pool = self._embedding_pool(*key)
            qtexts = sorted({s["mention"].strip() for s in group})
            hits = dict(zip(qtexts, pool.search(np.stack([vec[t] for t in qtexts]), k=10)))
            for s in group:
                h = hits[s["mention"].strip()]
                if not h:
                    continue
                best, eid, lg, _name = h[0]
                other = next((x[0] for x in h if x[1] != eid), 0.0)
                if best >= self.embed_min and best - other >= self.embed_margin:
                    if eid not in s["cands"]:
                        s["cands"][eid] = ("embedding", 0, lg, -round(best, 6), None)

    def _morph_stage(self, kind: str, mention: str, lang: str, topic: str | None) -> dict:
        """Names with the mention's stem key (``stem``) or compound key (``compound``, only
        for the compounding languages) among the topic's names in the mention's language,
        then in English."""
        if topic is None:
            return {}
        base = normalize.base_lang(lang)
        if kind == "compound" and base not in morphology.COMPOUNDING:
            return {}
        for lg in dict.fromkeys((base, "en")):
            if kind == "compound" and lg not in morphology.COMPOUNDING:
                continue
            if not morphology.stems_in(lg):
                continue
            key = (kind, topic, lg)
            pool = self._morph.get_or_open(key, lambda: self._morph_pool(kind, topic, lg))
            hits = pool.search(mention)
            if hits:
                return {eid: (0, nlg, None) for eid, (nlg, _name) in hits.items()}
        return {}

    def _morph_pool(self, kind: str, topic: str, lg: str) -> morphology.KeyPool:
        """The stem/compound pool of the topic's names in ``lg``, read from beside the
        label index when saved there, else built and saved."""
        cache = None
        if self.cache_dir is not None:
            cache = self.cache_dir / (
                f"morph-{self.ix.content_hash[:16]}-{topics_hash(self.ix.topics)}-{kind}-{topic}-{lg}"
                f"-k{morphology.KEY_VERSION}.sqlite")
            pool = morph_store.open_pool(cache, lg) if cache.exists() else None
            if pool is not None:
                return pool
        pool = morphology.KeyPool(self._names(topic, {lg}), lg, compound=kind == "compound")
        if cache is not None:  # searched on disk from now on (stages/morphology_pools.py)
            return morph_store.save(pool, cache) or pool
        return pool

    def _finish(self, st: dict, context: list[int] | None = None) -> dict:
        ix = self.ix
        row, lang, topic = st["row"], st["lang"], st["topic"]
        bit = self._topic_bits[topic] if topic else 0
        ranked = []
        tb = ix.topic_bits
        qn = self._qnum
        srank = rank.STAGE_RANK
        for eid, (stage, alias, lg, sub, _d) in st["cands"].items():
            valid = ((tb[eid] & bit) != 0 or self._facts.inverse_typed(eid, topic)) if topic else True
            ranked.append(((0 if valid else 1, srank[stage], sub, alias, qn[eid]),
                           eid, stage, alias, lg, sub, valid))
        ranked.sort()
        decided = None
        if len(ranked) > 1 and ranked[1][0][:3] == ranked[0][0][:3] and ranked[0][6]:
            # a tie on the match itself: the closer name, the graph, label (ties.py)
            n = 1
            while n < len(ranked) and ranked[n][0][:3] == ranked[0][0][:3]:
                n += 1
            keep, decided = ties.settle_tie(
                self._facts, [(r[1], r[2], r[3], r[4]) for r in ranked[:n]], st["mention"],
                topic=topic, country=row.get("country"), context=context or [])
            order = {e: i for i, e in enumerate(keep)}
            ranked[:n] = sorted(ranked[:n], key=lambda r: (r[1] not in order, order.get(r[1], 0), r[0]))
            tied_qids = [ix.qids[e] for e in keep] if len(keep) > 1 else None
        else:
            tied_qids = None
        out = {"id": row["id"]} if "id" in row else {}
        out["mention"] = st["mention"]
        out["lang"] = lang
        out["topic"] = topic
        if len(row) > 3 or row.get("country") is not None:
            if row.get("country") is not None:
                out["prompt_country"] = row["country"]
            for k, v in row.items():  # pass through what the caller attached (type, model, ...)
                if k not in out and k not in _INPUT_FIELDS and v is not None:
                    out[k] = v
        cc = self._cand_cache
        cand_out = []
        for key, eid, stage, alias, lg, sub, valid in ranked[:MAX_CANDIDATES]:
            ck = (eid, lang, stage, alias, lg, sub, valid)
            c = cc.get(ck)
            if c is None:
                c = cc.put(ck, {
                    "qid": ix.qids[eid],
                    "label": ix.label(eid, lang) or ix.label(eid, "en") or ix.label(eid, lg),
                    "match": rank.match_name(stage, alias), "lang": lg, "valid": valid,
                    "sitelinks": ix.sitelinks[eid], "score": rank.score(stage, alias, sub),
                })
            cand_out.append(c.copy())
        top = ranked[0] if ranked else None
        if top is None or not top[6]:
            out.update(_UNRESOLVED)
            out["candidates"] = cand_out
            out["evidence"] = []
            out["country"] = []
            return out
        tkey, eid, stage, alias, lg, sub, valid = top
        ek = (eid, lang, topic)
        ent = self._ent_cache.get(ek)
        if ent is None:
            gran, gscore = self._facts.granularity(eid, topic)
            ent = self._ent_cache.put(ek, {
                "qid": ix.qids[eid], "label": ix.label(eid, lang), "label_en": ix.label(eid, "en"),
                "evidence": self._facts.evidence(eid, topic) if topic else [],
                "granularity": gran, "granularity_score": gscore,
                "country": self._facts.shown_countries(eid), "description": ix.description(eid, lang),
            })
        tied = tied_qids
        status = "ambiguous" if tied else "resolved"
        out["qid"] = ent["qid"]
        out["label"] = ent["label"]
        out["label_en"] = ent["label_en"]
        out["match"] = rank.match_name(stage, alias)
        out["lang_used"] = lg
        out["status"] = status
        out["candidates"] = cand_out
        out["evidence"] = [list(x) for x in ent["evidence"]]
        out["granularity"] = ent["granularity"]
        out["granularity_score"] = ent["granularity_score"]
        out["country"] = list(ent["country"])
        out["description"] = ent["description"]
        if decided:
            out["decided_by"] = decided
        if tied:
            out["tied"] = tied
        return out


_SCORED = frozenset({"fuzzy", "anyfuzzy", "tokens"})
_INPUT_FIELDS = frozenset({"mention", "lang", "topic", "country"})
def _names_something(cands: dict) -> bool:
    """Whether the mention is, verbatim or normalized, a name in its own language of an
    entity (one not valid for the topic, or the stages would have stopped): then the loose
    stages (tokens, semantic) do not guess a neighbour, the mention names something else."""
    return any(c[0] in ("exact", "normalized") for c in cands.values())


_UNRESOLVED = {"qid": None, "label": None, "label_en": None, "match": None, "lang_used": None,
               "status": "unresolved", "candidates": None, "evidence": None, "granularity": None,
               "granularity_score": None, "country": None, "description": None}
