"""The linker's semantic stage over a batch of mentions (the encoder and the search are in
``semantic.py``, the lexical checks of its hits in ``semantic/checks.py``).

Each mention waiting for the stage is matched against the names of its topic in its
language and in English: its USE vector is searched in one pass over each (topic,
language) part's name vectors, the best hit is kept when it clears the calibrated
cut-offs, and the decision is memoized per (topic, language, mention).

Encoding runs ahead, beside the lexical stages: ``Linker._link_batch`` hands each chunk
of mentions to :meth:`Semantic.ahead` as soon as its lexical stages are done,
and a worker thread encodes them while the main thread runs the next chunk's lexical
stages (the encoder's matrix products release the GIL, so a second core does them). The
search waits for those vectors and makes one pass over the parts for the whole batch.
The chunks are fixed by the input's order, so a run is reproducible; the encoder's
matrix products make a vector depend in its last bits (about 1e-7) on the texts encoded
beside it, as any batching does, which moves a decision only for a cosine that close to a
cut-off.
"""
from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from kgcult import lazy
from kgcult import log as kglog
from kgcult.link import memo, normalize
from kgcult.link.stages import embedding
from kgcult.link.semantic import search as semantic
from kgcult.link.semantic import bound as semantic_bound
from kgcult.link.semantic import checks as semantic_checks
from kgcult.link.stages.base import Stage
from kgcult.link.state import State

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy.module("numpy")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


log = logging.getLogger(__name__)

FIRST_USE_NOTE = 2_000  # names of a part encoded on first use from which a line says so


class Semantic(Stage):
    """The stage for one linker: the encoder (loaded on first use), the parts' pools, the
    mention vectors and the decisions made. A mention that names something else (a name
    stage found it: ``State.names_something``) or has no topic does not reach it; ``sub``
    is minus the cosine."""
    name = "semantic"
    needs = (semantic.MODULE,)
    feature = semantic.FEATURE
    whole_batch = True
    scored = True
    # every (topic, language) part of the 1x stand-in is 258k names: 135 s of encoding on a
    # quiet 2-core machine, 500 s on a busy one, where a mention reaches two parts (its
    # language's and English's of its topic); issue 41
    lazy_cache = ("its name vectors are encoded per (topic, language) when a mention first "
                  "reaches that part, with a progress line")

    def __init__(self, ctx, rank: int):
        super().__init__(ctx, rank)
        self.ix = ctx.ix
        self.cache_dir = ctx.cache_dir  # where the name vectors are cached (None: not cached)
        self.lexical = ctx.lexical  # stages.lexical.LexicalStages: the cross-check's word owners
        self._pools = memo.Pools.cached_in(self.cache_dir)  # (topic, lang) -> semantic.SemanticPool
        self._encoder: semantic.UseEncoder | None = None
        self._encoder_lock = threading.Lock()
        self._vecs = memo.Memo(memo.VECTORS)     # mention text -> unit vector
        self._done = memo.Memo(memo.MENTIONS)    # (topic, lang, mention text) -> hit (eid, lang, cosine) or None
        self._ahead: list[tuple[list[str], Future]] = []  # texts being encoded by the worker
        self._queued: set = set()
        self._worker: ThreadPoolExecutor | None = None

    def score(self, alias, sub):
        return round(0.6 * max(0.0, -sub), 4)

    # -- encoding ------------------------------------------------------------------

    def encoder(self) -> semantic.UseEncoder:
        with self._encoder_lock:
            if self._encoder is None:
                self._encoder = semantic.UseEncoder()
            return self._encoder

    def start(self, chunk: list[State]) -> None:
        """Load the encoder in the worker thread while the main thread runs the first
        chunk's lexical stages, when a mention of it has a topic (else it may never be
        needed); no-op on a single core or once loaded."""
        if self._encoder is not None or not any(s.topic is not None for s in chunk):
            return
        worker = self._worker_thread()
        if worker is None:
            return
        semantic.prepare()  # the imports and any cache writing here, not in the worker
        worker.submit(self.encoder)

    def ahead(self, chunk: list[State]) -> None:
        """Start encoding, in the worker thread, the texts of those of ``chunk`` that the
        stage will search (no-op on a single core)."""
        worker = self._worker_thread()
        if worker is None:
            return
        new = sorted({t for t in self._waiting_texts(chunk)
                      if t not in self._vecs and t not in self._queued})
        if not new:
            return
        self._queued.update(new)
        if self._encoder is None:  # the imports and any cache writing here, not in the worker
            semantic.prepare()
        self._ahead.append((new, worker.submit(lambda: self.encoder().encode(new))))

    def _worker_thread(self) -> ThreadPoolExecutor | None:
        """The worker thread (started on first use), or None on a single core."""
        if self._worker is None and _cores() >= 2:
            self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgcult-semantic")
        return self._worker

    def _waiting_texts(self, chunk: list[State]):
        for s in chunk:
            if s.topic is not None and not s.names_something():
                if (s.topic, s.lang, s.text) not in self._done:
                    yield s.text

    def _vectors(self, texts: list[str]) -> dict:
        """The unit vectors of ``texts``: those encoded ahead, the others encoded now."""
        ready: dict = {}
        try:
            for done_texts, fut in self._ahead:  # an encoder error is raised here
                ready.update(zip(done_texts, fut.result()))
        finally:
            self._ahead.clear()
            self._queued.clear()
        return embedding.memo_vectors(self._vecs, texts, lambda new: self.encoder().encode(new), ready)

    # -- search and decision -------------------------------------------------------

    def part(self, topic: str, lg: str) -> semantic.SemanticPool:
        """The topic's names in one language with their vectors, cached on disk beside the
        label index (keyed by index hash, topics hash, model, topic, language)."""
        return self._pools.get_or_open((topic, lg), lambda: self._open_part(topic, lg))

    def _open_part(self, topic: str, lg: str) -> semantic.SemanticPool:
        return semantic.SemanticPool([self._part_files(topic, lg)])

    def _cache(self, topic: str, lg: str):
        if self.cache_dir is None:
            return None
        return self.cache_dir / (f"sem-{self.ix.content_hash[:16]}-{self.ix.topics_key}-"
                                 f"{semantic.MODEL_ID}-{topic}-{lg}.npy")

    def _part_files(self, topic: str, lg: str) -> tuple:
        """(rows, name vectors, reduced vectors) of a part, read from its cache files or
        encoded and written there."""
        rows = self.ix.part_rows(topic, lg)  # lazy: only the hits' rows are read
        enc = self.encoder()
        cache = self._cache(topic, lg)
        if cache is not None and not cache.exists() and len(rows) >= FIRST_USE_NOTE:
            # built on first use (Stage.lazy_cache): said, and a line every 10 s meanwhile
            log.info("semantic: encoding the %s names of %s/%s (once; `kgcult link index --all-caches` "
                     "encodes every part ahead)", f"{len(rows):,}", topic, lg)
            with kglog.progress(total=len(rows), unit=" names", desc=f"semantic: {topic}/{lg}") as bar:
                vecs = semantic.name_vectors(enc, rows, cache)
                bar.update(len(rows))
        else:
            vecs = semantic.name_vectors(enc, rows, cache)
        # the axes' eigendecomposition on THREADS BLAS threads: on a busy machine a thread
        # per core made it ten times slower
        with semantic.blas_threads(semantic.THREADS):
            return rows, vecs, semantic_bound.reduced(vecs, len(rows), cache)

    # -- the caches (``kgcult link index``) -------------------------------------------

    def caches(self) -> list:
        """Every (topic, language) part a mention may reach: its name vectors and their
        reduced form."""
        if self.cache_dir is None:
            return []
        return [((t.name, lg), n) for t in self.ix.topics for lg, n in self.ix.parts(t.name) if n]

    def prepare(self) -> None:
        """The model's converted copy (``use_model.py``, its tokenizer buckets) written and
        the encoder loaded."""
        semantic.prepare()
        self.encoder()

    def build_cache(self, key) -> bool:
        cache = self._cache(*key)
        had = cache is not None and all(p.exists() for p in (cache, *semantic_bound.paths(cache)))
        self._part_files(*key)  # checked against the part's size; rebuilt when it differs
        return not had

    def _search(self, parts: dict, vec: dict, floor: float) -> dict:
        """Per (topic, language) part, the 10 best hits at or above ``floor`` of each of its
        mention texts (sorted).
        With a second core the worker thread and this one take the parts from one queue,
        the largest first (the products release the GIL): a part's cost is not its size
        alone (the names its bound cannot rule out are read in full), so a split fixed in
        advance left one thread idle for a third of the search. The hits' rows are read
        here."""
        pools = {key: self.part(*key) for key in sorted(parts)}
        queries = {key: np.stack([vec[t] for t in sorted(parts[key])]) for key in pools}
        queue = iter(sorted(pools, key=lambda k: (-sum(len(r) for r, _ in pools[k].parts) * len(queries[k]), k)))
        lock = threading.Lock()

        def drain() -> dict:
            done: dict = {}
            while True:
                with lock:
                    key = next(queue, None)
                if key is None:
                    return done
                done[key] = pools[key].top(queries[key], 10, floor)

        worker = self._worker_thread() if len(pools) > 1 else None
        fut = worker.submit(drain) if worker is not None else None
        tops: dict = {}
        try:
            tops.update(drain())
        finally:
            if fut is not None:
                tops.update(fut.result())
        return {key: pools[key].rows_of(tops[key]) for key in sorted(tops)}

    def run(self, batch: list[State]) -> None:
        """Decide the mentions of ``batch`` that the stage searches: each decided mention
        gains its hit as a ``semantic`` candidate."""
        ctx = self.ctx
        min_score, margin, agree_min = ctx.semantic_min, ctx.semantic_margin, ctx.semantic_agree_min
        done = self._done
        todo = []
        for s in batch:
            if s.topic is None or s.names_something():  # no topic, no guard rail
                continue
            k = (s.topic, s.lang, s.text)
            if k in done:
                self._add(s, done[k])
            else:
                todo.append(s)
        if not todo:
            self._vectors([])  # collect what was encoded ahead
            return
        vec = self._vectors(sorted({s.text for s in todo}))
        parts: dict = {}  # (topic, part language) -> mention texts
        for s in todo:
            for lg in search_langs(s.lang):
                parts.setdefault((s.topic, lg), set()).add(s.text)
        hits: dict = {}  # (topic, text, part language) -> hits
        # hits below the floor decide nothing: a best hit below min_score or agree_min is
        # not taken, and one at or above min_score is min_score - floor >= margin ahead of
        # any hit below the floor
        floor = min(agree_min, min_score - max(margin, 0.0))
        for key, found in self._search(parts, vec, floor).items():
            for t, h in zip(sorted(parts[key]), found):
                hits[(key[0], t, key[1])] = h
        for s in todo:
            t = s.text
            merged = sorted((h for lg in search_langs(s.lang) for h in hits[(s.topic, t, lg)]),
                            key=lambda h: (-h[0], h[2], h[3], h[1]))
            merged = semantic_checks.number_filtered(t, merged)  # E451i is not E451ii
            hit = semantic.decide(merged, min_score, margin)
            if hit is None and merged and merged[0][0] >= agree_min:
                # the cross-check: the nearest name's entity alone owns the mention's rarest word
                if self.lexical.owns_rarest_word(t, s.lang, s.topic, merged[0][1]):
                    hit = (merged[0][1], merged[0][2], merged[0][0])
            if (hit is not None and semantic_checks.spelling_only(s.lang, merged[0][2])
                    and not semantic_checks.anchored(t, merged[0][3])):
                hit = None  # a spelling neighbour in a language the encoder does not know
            if hit is not None and semantic_checks.names_a_part(t, merged[0][3]):
                hit = None  # 味噌汁 holds 味噌: miso soup, not miso
            if (hit is not None and merged[0][2] != "en"
                    and not semantic_checks.same_word(t, merged[0][3], s.lang)):
                hit = None  # ceviz is no form of Kereviz (a name of the mention's language)
            done.put((s.topic, s.lang, t), hit)
            self._add(s, hit)

    def _add(self, s: State, hit) -> None:
        if hit is not None:
            eid, lg, cos = hit
            s.add(eid, self, 0, lg, -round(cos, 6))


def search_langs(lang: str) -> list[str]:
    """The name languages a mention in ``lang`` is matched against: its own and English
    (in a language the encoder was not trained on, a hit among its own names must be
    anchored by spelling: ``semantic_checks``)."""
    return sorted({lang, normalize.base_lang(lang), "en"})
