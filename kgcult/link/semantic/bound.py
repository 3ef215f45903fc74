"""Exact search above a floor, through reduced vectors.

For unit vectors q, x and any matrix P with orthonormal columns, the cosine splits as

    q·x = (Pᵀq)·(Pᵀx) + q_r·x_r  <=  (Pᵀq)·(Pᵀx) + |q_r| |x_r|

where q_r and x_r are what P's span leaves of q and x (the cross terms vanish). Each part's
name vectors are stored a second time as their ``DIM`` coordinates on the part's principal
axes and the length of their remainder, ``[Pᵀx, |x_r|]`` (a quarter of the full vectors'
size), so the bound of a batch of queries against every name is one matrix product of
``[Pᵀq, |q_r|]`` with that matrix. Only the names whose bound reaches the floor are read in
full and their cosines computed in float64 from the two float32 vectors. The hits at or
above the floor are therefore those of the exhaustive search, with the same cosines for
any batch a query comes in, at about a quarter of its products and reads. (On the
stand-in's place names, with the semantic stage's floor of 0.67, 0.08 % of the names have
to be read in full: 43 per query among 55,000.)

The axes are fitted on a sample of the part's vectors (the top ``DIM`` eigenvectors of
their second moments); any orthonormal axes would keep the search exact, good ones only
make the bound tight. The reduced matrix and the axes are cached beside the full vectors
(``<cache>.r128.npy``, ``<cache>.b128.npy``) and written when the full vectors are.
"""
from __future__ import annotations

from typing import TYPE_CHECKING
from pathlib import Path

from kgcult import lazy
from kgcult.files import atomic_open
from kgcult.link.index import layout

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy.module("numpy")

DIM = 128            # reduced coordinates (plus one: the remainder's length)
SAMPLE = 16_384      # vectors the axes are fitted on
SLACK = 1e-3         # bound slack: covers float32 rounding of the bound (about 1e-6)
ROW_BLOCK = 4096     # reduced rows per product
QUERY_BLOCK = 128    # queries per product (with ROW_BLOCK: a 2 MB product)
EXACT_BLOCK = 256    # (query, name) pairs whose cosines are computed together
READ_GAP = 8         # rows apart or closer that read_rows reads in one call (the rows between too)
SPAN_ROWS = 128      # rows one such call covers at most (a 256 KB scratch buffer)


class Reduced:
    """A part's axes (dim x DIM, float32) and reduced vectors ``rows`` (n x DIM+1,
    float32: coordinates, then the remainder's length). Cached axes are read from their
    file at each search rather than held (a process searches dozens of parts; their axes
    would hold 256 KB each): as raw bytes at the data offset found when the part was
    opened, not with ``np.load``, whose header parsing compiles with ``ast`` and two
    threads search at once (CPython 3.11 raises "AST constructor recursion depth
    mismatch" when two threads compile together)."""

    def __init__(self, axes: np.ndarray, rows: np.ndarray):
        self._axes: np.ndarray | tuple[str, dict]
        if isinstance(axes, np.memmap) and axes.filename is not None:  # a cached file: where its data is
            self._axes = (axes.filename, {"dtype": axes.dtype.str, "shape": list(axes.shape),
                                          "offset": axes.offset})
        else:
            self._axes = axes
        self.rows = rows

    @property
    def axes(self) -> np.ndarray:
        if isinstance(self._axes, np.ndarray):
            return self._axes
        fname, spec = self._axes
        return layout.read_raw(Path(fname), spec)

    def bound_queries(self, q: np.ndarray) -> np.ndarray:
        """``[Pᵀq, |q_r|]`` of each query (float32)."""
        q64 = np.asarray(q, dtype=np.float64)
        p64 = self.axes.astype(np.float64)
        coords = q64 @ p64
        rest = np.linalg.norm(q64 - coords @ p64.T, axis=1)
        return np.ascontiguousarray(np.hstack([coords, rest[:, None]]), dtype=np.float32)


def paths(cache: Path) -> tuple[Path, Path]:
    """The (axes, reduced rows) files of a part's vector cache."""
    stem = str(cache)[:-4] if str(cache).endswith(".npy") else str(cache)
    return Path(f"{stem}.b{DIM}.npy"), Path(f"{stem}.r{DIM}.npy")


def reduced(mat: np.ndarray, n: int, cache: Path | None) -> Reduced | None:
    """The reduced form of a part's ``n`` name vectors ``mat``: read from beside ``cache``
    when it is there for as many rows, else computed (and written there). None for vectors
    too short to reduce."""
    if n == 0 or mat.ndim != 2 or mat.shape[1] <= DIM + 1:
        return None
    if cache is not None:
        bpath, rpath = paths(cache)
        try:
            axes, rows = np.load(bpath, mmap_mode="r"), np.load(rpath, mmap_mode="r")
            if (rows.shape == (n, DIM + 1) and axes.shape == (mat.shape[1], DIM)
                    and axes.dtype == np.float32 and not axes.flags.f_contiguous):
                return Reduced(axes, rows)
        except (OSError, ValueError):
            pass
    axes = fit_axes(mat, n)
    if cache is not None:
        try:
            with atomic_open(rpath, "wb") as f:
                np.lib.format.write_array_header_1_0(
                    f, {"descr": "<f4", "fortran_order": False, "shape": (n, DIM + 1)})
                for block in _reduced_blocks(mat, n, axes):
                    f.write(block.tobytes())
            with atomic_open(bpath, "wb") as f:
                np.save(f, axes)
            return Reduced(np.load(bpath, mmap_mode="r"), np.load(rpath, mmap_mode="r"))
        except OSError:  # an unwritable cache: reduced in memory, for this process
            pass
    return Reduced(axes, np.concatenate(list(_reduced_blocks(mat, n, axes))))


def fit_axes(mat: np.ndarray, n: int) -> np.ndarray:
    """The top ``DIM`` eigenvectors of the second-moment matrix of (a spread sample of)
    the vectors, as float32 columns."""
    picks = np.unique(np.linspace(0, n - 1, min(n, SAMPLE)).astype(np.int64))
    sample = read_rows(mat, picks).astype(np.float64)
    dim = sample.shape[1]
    if len(sample) < dim:
        # fewer vectors than dimensions (most parts: a language's few names of a topic):
        # the same top eigenvectors from the thin SVD of the sample, O(len² dim) instead of
        # the O(dim³) eigendecomposition; fewer than DIM of them are completed by any
        # orthonormal columns (the remainders are then zero: the bound is the cosine)
        _u, _s, vt = np.linalg.svd(sample, full_matrices=False)  # descending
        axes = vt[:DIM].T
        if axes.shape[1] < DIM:
            axes = np.hstack([axes, np.eye(dim)[:, :DIM]])
    else:
        _w, v = np.linalg.eigh(sample.T @ sample)  # ascending
        axes = v[:, ::-1][:, :DIM]
    q, _r = np.linalg.qr(axes)  # orthonormal to float64 precision
    return np.ascontiguousarray(q[:, :DIM], dtype=np.float32)


def _reduced_blocks(mat: np.ndarray, n: int, axes: np.ndarray):
    """The rows ``[Pᵀx, |x_r|]`` of the first ``n`` vectors, block by block (float32)."""
    p64 = axes.astype(np.float64)
    for _r0, block in read_blocks(mat, n, ROW_BLOCK):
        x = block.astype(np.float64)
        coords = x @ p64
        rest = np.linalg.norm(x - coords @ p64.T, axis=1)
        yield np.hstack([coords, rest[:, None]]).astype(np.float32)


def search(q: np.ndarray, mat: np.ndarray, red: Reduced, n: int, k: int,
           floor: float) -> list[list[tuple[float, int]]]:
    """Per query, its ``k`` best (cosine, row) among the part's rows with a cosine at or
    above ``floor``, best first (ties by row)."""
    q = np.asarray(q, dtype=np.float32)
    qb = red.bound_queries(q)
    cut = np.float32(floor - SLACK)
    qs, rs = [], []
    for r0, block in read_blocks(red.rows, n, ROW_BLOCK):
        for b0 in range(0, len(qb), QUERY_BLOCK):
            bound = qb[b0:b0 + QUERY_BLOCK] @ block.T
            cols = np.flatnonzero(bound.max(axis=0) >= cut)  # the few names any query may reach
            qi, ci = np.nonzero(bound[:, cols] >= cut)
            qs.append(qi + b0)
            rs.append(cols[ci] + r0)
    out: list[list] = [[] for _ in range(len(q))]
    if not qs or not sum(len(a) for a in qs):
        return out
    qi, ri = np.concatenate(qs), np.concatenate(rs)
    order = np.lexsort((qi, ri))  # by row: each row is read once
    qi, ri = qi[order], ri[order]
    cos = np.empty(len(qi), dtype=np.float64)
    for c0 in range(0, len(qi), EXACT_BLOCK):
        cq, cr = qi[c0:c0 + EXACT_BLOCK], ri[c0:c0 + EXACT_BLOCK]
        rows, inv = np.unique(cr, return_inverse=True)
        full = read_rows(mat, rows)
        cos[c0:c0 + len(cq)] = np.einsum("ij,ij->i", q[cq], full[inv], dtype=np.float64)
    keep = cos >= floor
    cos32 = cos[keep].astype(np.float32)
    qi, ri = qi[keep], ri[keep]
    order = np.lexsort((ri, -cos32, qi))
    for i in order:
        hits = out[qi[i]]
        if len(hits) < k:
            hits.append((float(cos32[i]), int(ri[i])))
    return out


def _memmap_file(mat) -> tuple[str, int] | None:
    """(file name, data offset) of a C-ordered float32 matrix memory-mapped from a file."""
    if (not isinstance(mat, np.memmap) or mat.filename is None or mat.dtype != np.float32
            or not mat.flags.c_contiguous or mat.ndim != 2):
        return None
    return mat.filename, mat.offset


def read_blocks(mat, n: int, step: int):
    """(first row, block) over the first ``n`` rows of ``mat``, ``step`` rows at a time. A
    memory-mapped ``.npy`` is read from its file into one reused buffer (nothing of the
    file stays mapped in the process); any other matrix is sliced."""
    where = _memmap_file(mat)
    if where is None:
        for r0 in range(0, n, step):
            yield r0, np.asarray(mat[r0:min(n, r0 + step)], dtype="float32")
        return
    fname, offset = where
    buf = np.empty((min(step, n), mat.shape[1]), dtype="float32")
    row_bytes = mat.shape[1] * 4
    with open(fname, "rb", buffering=0) as f:
        for r0 in range(0, n, step):
            m = min(step, n - r0)
            _read_into(f, buf[:m].data.cast("B"), offset + r0 * row_bytes)
            yield r0, buf[:m]


def read_rows(mat, rows: np.ndarray) -> np.ndarray:
    """The ``rows`` (sorted, distinct) of ``mat`` as a new float32 array; from a
    memory-mapped file, read with one call per run of rows at most ``READ_GAP`` apart (the
    rows between are read too: many small reads cost more than a few extra rows)."""
    where = _memmap_file(mat)
    if where is None:
        return np.asarray(mat[rows], dtype="float32")
    fname, offset = where
    out = np.empty((len(rows), mat.shape[1]), dtype="float32")
    if not len(rows):
        return out
    row_bytes = mat.shape[1] * 4
    at = rows.tolist()
    scratch = None
    with open(fname, "rb", buffering=0) as f:
        a, n = 0, len(at)
        while a < n:  # one read per run of rows at most READ_GAP apart (and SPAN_ROWS long)
            b = a + 1
            while b < n and at[b] - at[b - 1] <= READ_GAP and at[b] - at[a] < SPAN_ROWS:
                b += 1
            lo, hi = at[a], at[b - 1] + 1
            if hi - lo == b - a:  # consecutive rows: straight into the output
                _read_into(f, out[a:b].data.cast("B"), offset + lo * row_bytes)
            else:
                if scratch is None:
                    scratch = np.empty((SPAN_ROWS, mat.shape[1]), dtype="float32")
                _read_into(f, scratch[:hi - lo].data.cast("B"), offset + lo * row_bytes)
                out[a:b] = scratch[rows[a:b] - lo]
            a = b
    return out


def _read_into(f, view: memoryview, pos: int) -> None:
    """Fill ``view`` from the unbuffered file ``f`` at byte ``pos``."""
    f.seek(pos)
    got = 0
    while got < len(view):
        r = f.readinto(view[got:])
        if not r:
            raise OSError(f"{f.name}: short read")
        got += r
