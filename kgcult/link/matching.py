"""String matching primitives of the fuzzy and tokens stages, shared by the in-memory pools
(``stages/lexical.py``) and the pools stored with the index (``index/name_pools.py``)."""
from __future__ import annotations

# the bounded edit distance (insertions, deletions, substitutions, each 1; ``bound + 1`` past
# ``score_cutoff``): RapidFuzz's banded C code, ~300x the pure-Python rows it replaced
from rapidfuzz.distance.Levenshtein import distance as _levenshtein

from kgcult.link import normalize


def fuzzy_bound(n: int) -> int:
    """Edits allowed for a key of n characters: none below 5, 1 up to 9, 2 from 10."""
    if n < 5:
        return 0
    return 1 if n < 10 else 2


FUZZY_MIN_LEN = 5  # shorter folded names are not in the fuzzy pools


def nearest(key: str, bound: int, rows) -> list[tuple[int, str, str, int]]:
    """The fuzzy stage's answer: for each entity among ``rows`` ((eid, lang, name, folded
    name), the candidates a deletion index found), its closest name within ``bound`` edits
    of ``key`` (ties: language, then name), as sorted (eid, lang, name, distance); a name
    equal to the key is the exact stages' business and left out."""
    hits: dict = {}
    for eid, lang, name, f in rows:
        if f == key:
            continue
        d = _levenshtein(key, f, score_cutoff=bound)
        if d <= bound:
            cur = hits.get(eid)
            if cur is None or (d, lang, name) < cur:
                hits[eid] = (d, lang, name)
    return sorted((e, lg, nm, d) for e, (d, lg, nm) in hits.items())


def deletion_variants(k: str):
    """``k`` and every distinct string one deletion away (SymSpell's neighbourhood)."""
    yield k
    seen = {k}
    for i in range(len(k)):
        v = k[:i] + k[i + 1:]
        if v not in seen:
            seen.add(v)
            yield v


def tokens(text: str, lang: str) -> frozenset:
    """The words of a name or mention for the tokens stage: folded, plural-folded, two
    characters or more."""
    return frozenset(w for w in normalize.stem(normalize.fold(text), lang).split(" ") if len(w) >= 2)
