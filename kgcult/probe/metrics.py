"""Metrics with the papers' definitions.

FmLAMA (§4.3):
  P@k = |ing_i ∩ topk_i| / k
  AP_i = (1/|ing_i|) Σ_{k=1..n} P@k · rel@k          (n = size of the candidate set)
  mAP = (1/|G|) Σ_{i∈G} AP_i
  S@l(i, g) = max_{p ∈ topl_i} cos(w_g, w_p),  l = |ing_i|
  WS_i = (1/|ing_i|) Σ_{g∈ing_i} S@l(i, g);   mWS = (1/|G|) Σ_{i∈G} WS_i
DLAMA (§5.2):
  P@1 = share of triples whose first prediction is one of the triple's valid objects
  Entropy({objs}) = Σ_o −p_o log p_o over, for each triple, the most frequent (in the
  culture's set) of its valid objects; log base 2 (the base that reproduces the paper's
  Table 2 values, e.g. 7.3 for 468 sister-city facts, above ln 468 = 6.1).
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Iterable, Sequence

import numpy as np


# -- FmLAMA ---------------------------------------------------------------------------

def average_precision(ranked: Sequence[str], gold: Iterable[str]) -> float:
    """AP of a ranked candidate list against a gold set (FmLAMA eq. 3-4).

    Golds absent from the ranking count in |ing_i| and are never retrieved."""
    gold = set(gold)
    if not gold:
        raise ValueError("average precision needs at least one gold item")
    hits, total = 0, 0.0
    for k, item in enumerate(ranked, 1):
        if item in gold:
            hits += 1
            total += hits / k  # P@k · rel@k
    return total / len(gold)


def ap_from_ranks(ranks: Iterable[int | None], n_gold: int | None = None) -> float:
    """The same AP from the 1-based ranks of the gold items (None = not ranked)."""
    ranks = list(ranks)
    n = len(ranks) if n_gold is None else n_gold
    found = sorted(r for r in ranks if r is not None)
    return sum((j + 1) / r for j, r in enumerate(found)) / n if n else 0.0


def word_similarity(top: Sequence[str], gold: Sequence[str], vectors) -> float | None:
    """WS_i (FmLAMA eq. 6-7): per gold g the best cosine among the top-l predictions.

    ``vectors(label) -> np.ndarray | None``. A gold without a vector cannot be compared (the
    paper's zero-vector case) and is left out; None when no gold has one. A prediction
    without a vector has cosine 0."""
    l = len(gold)
    preds = [vectors(p) for p in list(top)[:l]]
    scores = []
    for g in gold:
        wg = vectors(g)
        if wg is None or not np.any(wg):
            continue
        best = max((cosine(wg, wp) for wp in preds), default=0.0)
        scores.append(best)
    return float(np.mean(scores)) if scores else None


def cosine(a, b) -> float:
    if a is None or b is None:
        return 0.0
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


# -- DLAMA ----------------------------------------------------------------------------

def precision_at_1(top1: Sequence[str | None], valid: Sequence[Iterable[str]]) -> float:
    """Share of triples whose first prediction is among the triple's valid objects."""
    if len(top1) != len(valid):
        raise ValueError("one first prediction per triple")
    if not top1:
        return float("nan")
    return sum(1 for p, v in zip(top1, valid) if p is not None and p in set(v)) / len(top1)


def object_entropy(object_sets: Sequence[Iterable[str]], base: float = 2.0) -> float:
    """DLAMA's object entropy: each triple contributes its valid object that is most frequent
    across the set (ties: alphabetically first); entropy of that distribution."""
    sets = [sorted(set(s)) for s in object_sets if s]
    if not sets:
        return 0.0
    freq = Counter(o for s in sets for o in s)
    chosen = Counter(min(s, key=lambda o: (-freq[o], o)) for s in sets)
    n = sum(chosen.values())
    h = -sum((c / n) * math.log(c / n) for c in chosen.values())
    return h / math.log(base) + 0.0


def most_common_predictions(top1: Sequence[str | None], valid: Sequence[Iterable[str]], k: int = 3) -> dict:
    """DLAMA Table 3: the k most common correct and wrong first predictions, % of predictions
    (None: a triple without a prediction, a wrong one)."""
    n = len(top1)
    right = Counter(p for p, v in zip(top1, valid) if p in set(v))
    wrong = Counter(p for p, v in zip(top1, valid) if p not in set(v))

    def fmt(c):
        return [{"object": o, "count": m, "percent": round(100.0 * m / n, 1)}
                for o, m in sorted(c.items(), key=lambda x: (-x[1], x[0] or ""))[:k]]

    return {"correct": fmt(right), "wrong": fmt(wrong)}


# -- aggregation ----------------------------------------------------------------------

def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof=1, as FmLAMA's ``statistics.stdev``) over
    templates; NaNs ignored; a single value has a spread of 0 (stdev is undefined there)."""
    v = np.array([x for x in values if x is not None and not math.isnan(x)], dtype=float)
    if v.size == 0:
        return float("nan"), float("nan")
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0
