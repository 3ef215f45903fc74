"""Reference pools for tests: the fuzzy and token pools built in memory from a list of
(eid, lang, name) rows, as the linker once built them. The linker uses the pools stored
with the index (``kgcult/link/index/name_pools.py``: ``StoredFuzzyPool``,
``StoredTokenPool``); tests/test_link_index.py checks that they answer as these do."""
from __future__ import annotations

import math

from kgcult.link import normalize
from kgcult.link.matching import deletion_variants, fuzzy_bound, nearest, tokens
class FuzzyPool:
    """A deletion-neighbourhood index (one deletion per key, as SymSpell) over the folded
    names of a set of entities; a hit is verified with the real edit distance."""

    def __init__(self, names):
        self.dels: dict[str, list] = {}
        for eid, lang, name in names:
            f = normalize.fold(name)
            if len(f) < 5:
                continue
            entry = (f, eid, lang, name)
            for v in self._variants(f):
                self.dels.setdefault(v, []).append(entry)

    _variants = staticmethod(deletion_variants)

    def search(self, key: str) -> list[tuple[int, str, str, int]]:
        bound = fuzzy_bound(len(key))
        if not bound:
            return []
        return nearest(key, bound, ((eid, lang, name, f) for v in self._variants(key)
                                    for f, eid, lang, name in self.dels.get(v, ())))



class TokenPool:
    """Word-set containment over the names of a set of entities.

    A name N and a mention M (as sets of folded, plural-folded words of two characters or
    more) match when one contains the other; the score is the IDF-weighted share of the
    words they share, sum idf(M & N) / sum idf(M | N), where idf = ln(entities / entities
    with the word) over the pool. "nutmeg seeds" ~ "nutmeg", "Vin de Bellet" ~ "Bellet"
    (common words weigh little), "Noel Hill" ~ nothing unless a food is named "Hill"."""

    @classmethod
    def entries_of(cls, names) -> list[tuple]:
        """(eid, lang, name, words) for names with at least one word."""
        out = []
        for eid, lg, name in names:
            toks = cls.tokens(name, lg)
            if toks:
                out.append((eid, lg, name, toks))
        return out

    def __init__(self, names=None, lang: str = "en", entries=None):
        self.lang = lang
        post: dict[str, list] = {}
        df: dict[str, set] = {}
        ents = set()
        if entries is None:
            entries = self.entries_of(names or ())
        for entry in entries:
            eid, lg, name, toks = entry
            ents.add(eid)
            for t in toks:
                post.setdefault(t, []).append(entry)
                df.setdefault(t, set()).add(eid)
        n = max(1, len(ents))
        self.df = {t: len(e) for t, e in df.items()}
        self.idf = {t: math.log((n + 1) / c) for t, c in self.df.items()}
        self.default_idf = math.log(n + 1)
        self.post = post
        # each name also filed under its rarest word: a name contained in the mention has
        # its rarest word among the mention's words, so short lists suffice for that case
        self.rare: dict[str, list] = {}
        for entry in entries:
            r = min(entry[3], key=lambda t: (self.df[t], t))
            self.rare.setdefault(r, []).append(entry)

    tokens = staticmethod(tokens)

    def search(self, mention: str) -> list[tuple[float, int, str, str]]:
        m = self.tokens(mention, self.lang)
        if not m:
            return []
        idf = self.idf
        best: dict[int, tuple] = {}
        seen = set()
        lists = [self.rare.get(t, ()) for t in m]  # names contained in the mention
        if all(t in self.df for t in m):  # names containing the mention: via its rarest word
            lists.append(self.post[min(m, key=lambda t: (self.df[t], t))])
        for lst in lists:
            for entry in lst:
                eid, lg, name, toks = entry
                if (eid, toks) in seen:
                    continue
                seen.add((eid, toks))
                if not (toks <= m or m <= toks) or toks == m:
                    continue
                shared = sum(idf.get(w, self.default_idf) for w in m & toks)
                union = sum(idf.get(w, self.default_idf) for w in m | toks)
                sc = shared / union if union else 0.0
                cur = best.get(eid)
                if cur is None or (sc, lg, name) > (cur[0], cur[1], cur[2]):
                    best[eid] = (sc, lg, name)
        return sorted(((sc, e, lg, nm) for e, (sc, lg, nm) in best.items()), key=lambda x: (-x[0], x[1]))


