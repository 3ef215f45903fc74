"""Candidate generation stages over the label index: exact, normalized, English fallback,
any language, fuzzy (bounded edit distance), tokens (a name's words contained in the
mention's or the other way round, weighted by rarity). The embedding stage is in
``embed.py``.

``FuzzyPool`` and ``TokenPool`` build their structures in memory from a list of names;
the linker uses the same pools stored with the index (``pools.StoredFuzzyPool``,
``pools.StoredTokenPool``: same results, nothing to build in a fresh process).

Each stage returns ``{eid: (alias, lang_used, detail)}``; ``alias`` is 0 for an
rdfs:label, 1 for a skos:altLabel.
"""
from __future__ import annotations

import math

from kgcult.link import normalize
from kgcult.link.index import LabelIndex
from kgcult.link.index_format import LANG_BITS, codes
from kgcult.link.matching import deletion_variants, fuzzy_bound, levenshtein, nearest, tokens
from kgcult.link.pools import StoredFuzzyPool, StoredTokenPool

STAGES = ("exact", "normalized", "english", "any", "fuzzy", "tokens", "embedding")


def _merge(out: dict, eid: int, alias: int, lang: str, detail=None) -> None:
    cur = out.get(eid)
    if cur is None or (alias, lang) < (cur[0], cur[1]):
        out[eid] = (alias, lang, detail)


def exact(ix: LabelIndex, mention: str, lang: str) -> dict:
    out: dict = {}
    d = ix.exact.get(lang)
    if d is not None:
        for c in codes(d.get(mention)):
            _merge(out, c >> 1, c & 1, lang)
    return out


def normalized(ix: LabelIndex, mention: str, lang: str, keys=None) -> dict:
    out: dict = {}
    d = ix.norm.get(lang)
    if d is not None:
        _, _, s = keys or normalize.keys(mention, lang)
        for c in codes(d.get(s)):
            _merge(out, c >> 1, c & 1, lang)
    return out


def english(ix: LabelIndex, mention: str, lang: str) -> dict:
    if lang == "en":
        return {}
    out = exact(ix, mention, "en")
    if out:
        return out
    return normalized(ix, mention, "en", normalize.keys(mention, "en"))


_LMASK = (1 << LANG_BITS) - 1


def any_language(ix: LabelIndex, mention: str, lang: str, keys=None) -> dict:
    _, f, s = keys or normalize.keys(mention, lang)
    out: dict = {}
    langs = ix.langs
    for k in (f, s) if s != f else (f,):
        for c in codes(ix.anyl.get(k)):
            alias = c & 1
            rest = c >> 1
            _merge(out, rest >> LANG_BITS, alias, langs[rest & _LMASK])
    return out


# -- fuzzy ---------------------------------------------------------------------------

__all__ = ["STAGES", "exact", "normalized", "english", "any_language", "levenshtein", "fuzzy_bound",
           "FuzzyPool", "TokenPool", "StoredFuzzyPool", "StoredTokenPool"]


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


# -- tokens --------------------------------------------------------------------------

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
