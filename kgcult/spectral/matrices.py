"""The country × item matrices H that the spectral measures read.

Model-derived H: for each question prompt and country, the item log-probabilities
(multi-token items summed, as in §3.3) softmaxed over the item list. Ground-truth H: the
graph's country → item facts, each country's row uniform over its items (countries
without any item in the domain are left out).
"""
from __future__ import annotations

import numpy as np


def softmax_rows(logp: np.ndarray) -> np.ndarray:
    x = np.asarray(logp, dtype=np.float64)
    x = np.where(np.isfinite(x), x, -np.inf)
    m = np.max(x, axis=1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=1, keepdims=True)


def model_matrix(scorer, template, countries: list[str], items: list[str]) -> np.ndarray:
    """H from a model: per country, softmax over the items' summed log-probabilities."""
    queries = [template.split("", c) for c in countries]
    prepared = scorer.prepare(items)
    return softmax_rows(scorer.score(queries, prepared))


def ground_truth_matrix(pairs: list[tuple[str, str]], countries: list[str], items: list[str]):
    """(H, kept countries): uniform over each country's items; empty countries dropped."""
    ci = {c: i for i, c in enumerate(countries)}
    ii = {x: j for j, x in enumerate(items)}
    H = np.zeros((len(countries), len(items)))
    for c, x in pairs:
        if c in ci and x in ii:
            H[ci[c], ii[x]] = 1.0
    keep = H.sum(1) > 0
    H = H[keep]
    return H / H.sum(1, keepdims=True), [c for c, k in zip(countries, keep) if k]
