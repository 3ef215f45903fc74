"""Maximal matching: a run of text without spaces cut into words of a list (Thai
syllables for the romanizer, ``kgcult/link/thai.py``; the segmenters' word lists of
``kgcult/annotate/segment.py``)."""
from __future__ import annotations


def max_match(run: str, words, longest: int, *, uncovered: int = 1, shortest: int = 2) -> list[tuple[int, int]]:
    """``run`` cut into words of ``words`` (a set, each word costing 1; a dict, word ->
    cost; or a list that answers ``starting(run, i, longest)`` with the (end, cost) of the
    words ``run`` continues with at ``i``, shortest first) of ``shortest`` to ``longest``
    letters by maximal matching: the fewest letters left out of any word, then the lowest
    cost (the fewest words; with costs, a unigram model: 日本|に, not 日|本に); (start, end)
    offsets in order, each letter no word covers a piece of its own, costing ``uncovered``."""
    starting = getattr(words, "starting", None) or in_table(words, shortest)
    n = len(run)
    inf = (n + 1, 1 << 60)
    best: list[tuple[int, int]] = [(0, 0)] + [inf] * n   # (letters left out, cost) to cover run[:i]
    back = [0] * (n + 1)
    for i in range(n):
        if best[i] == inf:
            continue
        left, cost = best[i]
        cand = (left + 1, cost + uncovered)   # one letter no word covers
        if cand < best[i + 1]:
            best[i + 1], back[i + 1] = cand, i
        for j, w in starting(run, i, longest):
            if j - i >= shortest:
                cand = (left, cost + w)
                if cand < best[j]:
                    best[j], back[j] = cand, i
    cuts = []
    j = n
    while j > 0:
        cuts.append((back[j], j))
        j = back[j]
    cuts.reverse()
    return cuts


def in_table(words, shortest: int = 1):
    """``starting`` over a set (each word costing 1) or a dict (word -> cost): a look-up of
    each piece of ``shortest`` letters or more."""
    costs = words if isinstance(words, dict) else None

    def starting(run: str, i: int, longest: int):
        for j in range(i + shortest, min(len(run), i + longest) + 1):
            piece = run[i:j]
            w = costs.get(piece) if costs is not None else (1 if piece in words else None)
            if w is not None:
                yield j, w
    return starting
