"""Spectral macro-structure measures (Measuring Meta-Cultural Competency, §3.1, §3.3).

For one question, H is the n × t matrix of country distributions over the t items
(row c = p^c, Σ p^c = 1). The country adjacency is the cosine-similarity matrix

    A = D⁻¹ H Hᵀ D⁻¹,   D = diag(‖p^{c_1}‖₂, …, ‖p^{c_n}‖₂)                      (eq. 1)

and with λ₁ ≥ … ≥ λ_n the eigenvalues of A (symmetric positive semi-definite),

    ER = exp(−Σ λ̃_i log λ̃_i),  λ̃_i = λ_i / Σ_j λ_j  over the λ_i > 0;   SR = λ₁ / λ₂   (eq. 2)

"λ_i > 0" is applied with a tolerance (λ_i > 1e-10 · λ₁) so that round-off negatives and
zeros do not enter. ER and SR are binarized high/low against their medians over all
questions (and models) analysed together (high = strictly above the median), and the
labels concatenated, ER first: LH, HL, HH, LL (§3.1.1, §3.3).
"""
from __future__ import annotations

import math

import numpy as np

from kgcult.errors import KgcultError


def adjacency(H: np.ndarray) -> np.ndarray:
    H = np.asarray(H, dtype=np.float64)
    norms = np.linalg.norm(H, axis=1)
    if np.any(norms == 0):
        raise KgcultError(f"{int(np.sum(norms == 0))} row(s) of H are all zero: cosine undefined")
    Dinv = 1.0 / norms
    return (H * Dinv[:, None]) @ (H * Dinv[:, None]).T


def eigenvalues(A: np.ndarray) -> np.ndarray:
    """Eigenvalues of the symmetric A, descending."""
    return np.sort(np.linalg.eigvalsh((A + A.T) / 2.0))[::-1]


def effective_rank(lams: np.ndarray, rtol: float = 1e-10) -> float:
    lams = np.asarray(lams, dtype=np.float64)
    if lams.size == 0 or lams.max() <= 0:
        return float("nan")
    pos = lams[lams > rtol * lams.max()]
    p = pos / pos.sum()
    return float(np.exp(-np.sum(p * np.log(p))))


def spectral_ratio(lams: np.ndarray, rtol: float = 1e-10) -> float:
    lams = np.sort(np.asarray(lams, dtype=np.float64))[::-1]
    if lams.size < 2:
        return float("inf")
    if lams[1] <= rtol * max(lams[0], 1e-300):
        return float("inf")
    return float(lams[0] / lams[1])


def analyse(H: np.ndarray) -> dict:
    lams = eigenvalues(adjacency(H))
    return {"ER": effective_rank(lams), "SR": spectral_ratio(lams), "eigenvalues": lams.tolist(),
            "n_countries": int(H.shape[0]), "n_items": int(H.shape[1])}


def categorize(rows: list[dict]) -> list[dict]:
    """Add ER_level, SR_level and category (ER first) by median split over ``rows``."""
    er = np.array([r["ER"] for r in rows], dtype=float)
    sr = np.array([r["SR"] for r in rows], dtype=float)
    er_med = float(np.median(er[np.isfinite(er)])) if np.isfinite(er).any() else float("nan")
    sr_med = float(np.median(sr[~np.isnan(sr)])) if (~np.isnan(sr)).any() else float("nan")
    def high(v, med):
        # SR is infinite when λ₂ = 0; when the median itself is infinite, only the
        # infinite values are high
        return v > med if math.isfinite(med) else math.isinf(v) and v > 0

    for r in rows:
        e = "H" if high(r["ER"], er_med) else "L"
        s = "H" if high(r["SR"], sr_med) else "L"
        r.update(ER_level=e, SR_level=s, category=e + s, ER_median=er_med, SR_median=sr_med)
    return rows
