"""The lexical stages over the label index: exact, normalized, English fallback, any
language, fuzzy (bounded edit distance), anyfuzzy (one edit in another language), tokens
(a name's words contained in the mention's or the other way round, weighted by rarity).

The functions (``exact``, ``normalized``, ``english``, ``any_language``) and
:class:`LexicalStages` (the fuzzy and token pools stored with the index,
``index/name_pools.py``) return ``{eid: (alias, lang_used, detail)}``; ``alias`` is 0 for an
rdfs:label, 1 for a skos:altLabel. The stage classes at the end run them over a batch.
"""
from __future__ import annotations

import re
from functools import lru_cache
import unicodedata
from pathlib import Path

from kgcult.files import kept_table
from kgcult.link import affixes, memo, normalize
from kgcult.link.index.reader import LabelIndex, label_chain
from kgcult.link.index.encoding import LANG_BITS, codes
from kgcult.link.matching import nearest, tokens
from kgcult.link.index.name_pools import fuzzy_rows, part_ids, part_samples, pool_langs, search_parts
from kgcult.link.stages.base import Stage

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


# -- the lexical fallback stages as the linker runs them -------------------------------

ANY_FUZZY_MIN_LEN = 6  # cross-language fuzzy: keys of 6+ characters, one edit
SCRIPTS_FORMAT = 1  # the parts' scripts kept beside the index


def _script(text: str) -> str | None:
    """The script of the first letter (``LATIN``, ``CYRILLIC``, ``CJK``, ...)."""
    for ch in text:
        if ch.isalpha():
            return _letter_script(ch)
    return None


@lru_cache(maxsize=8192)
def _letter_script(ch: str) -> str:
    return unicodedata.name(ch, "?").split(" ")[0]


_CODE = re.compile(r"(\d+)([^\W\d_]*)")


def codes_of(folded: str) -> list[str]:
    """The numbers of a folded name, spaces ignored, each with the letters that follow it
    when they are three or fewer (a sub-number: ``E 331i`` -> ``331i``, ``E341 ii`` ->
    ``341ii``, ``vitamin b9 tablets`` -> ``9``): the parts of a name that identify rather
    than spell."""
    return [d + (a if len(a) <= 3 else "") for d, a in _CODE.findall(folded.replace(" ", ""))]


def _refined(key: str, hits) -> list:
    """Fuzzy hits (eid, lang, name, distance) minus those whose numbers (with a letter
    suffix glued on) differ from the key's: they identify (E331 is not E332, E451i not
    E451ii, vitamin B1 not B9); with distance 0 for a name that differs from the key only
    by spaces and punctuation (``E331i`` ~ ``E 331i``), ahead of a one-letter neighbour."""
    kd = codes_of(key)
    kc = key.replace(" ", "")
    out = []
    for eid, lg, name, d in hits:
        f = normalize.fold(name)
        if codes_of(f) != kd:
            continue
        out.append((eid, lg, name, 0 if f.replace(" ", "") == kc else d))
    return out


class LexicalStages:
    """The fuzzy, cross-language fuzzy and tokens stages over the pools stored with the
    index, one pool per (topic, language) opened on first use and kept.

    * ``fuzzy``: edit distance within ``fuzzy_bound`` among the names, in the mention's
      language and English, of the topic's entities;
    * ``anyfuzzy``: one edit among the topic's names in every *other* language of the
      index (a Dutch mention one letter from a German or Swedish name: ``Confituren`` ~
      ``Konfitüren``), for one-word keys of ``ANY_FUZZY_MIN_LEN``+ characters, and only
      when one entity alone is that close (names in ~200 languages collide by chance more
      often than names in one, hence the longer key and the uniqueness; spelling
      neighbours across languages are words, a phrase differs in more than one place).
      One query over the parts written in the key's script (a part's script: that of most
      of its first names), ~1-2 ms per mention that reaches the stage;
    * ``tokens``: word containment, IDF-weighted share >= ``tokens_min`` and
      ``tokens_margin`` ahead of the next entity; or, failing that, one entity alone has
      a name holding every word of the mention (``Osterberg`` ~ ``Alsace Grand Cru
      Osterberg``; the search finds every name that holds the mention's rarest word).
    """

    def __init__(self, ix: LabelIndex, cache_dir: Path | None = None):
        self.ix = ix
        self.cache_dir = cache_dir  # where the parts' scripts are kept (None: found again per process)
        self._fuzzy = memo.Pools(memo.POOLS)   # (topic, lang) -> StoredFuzzyPool
        self._tokens = memo.Pools(memo.POOLS)  # (topic, lang) -> StoredTokenPool
        self._parts: dict = {}
        self._script_of: dict = {}
        self._anyfuzzy = memo.Memo(memo.MENTIONS)   # (topic, lang, key) -> the stage's answer

    def _fuzzy_pool(self, topic, lg):
        return self._fuzzy.get_or_open((topic, lg), lambda: self.ix.fuzzy_pool(topic, lg))

    def fuzzy(self, key: str, lang: str, topic: str | None) -> dict:
        hits: dict = {}
        parts = [self._fuzzy_pool(topic, lg) for lg in sorted({lang, normalize.base_lang(lang), "en"})]
        for found in search_parts(self.ix.pool_db, parts, key):  # one query over the parts
            for eid, nlg, name, d in _refined(key, found):
                cur = hits.get(eid)
                if cur is None or (d, nlg, name) < cur:
                    hits[eid] = (d, nlg, name)
        return {eid: (0, nlg, d) for eid, (d, nlg, _n) in hits.items()}

    def _scripts(self, topic: str) -> list[tuple[int, str, str]]:
        """(part id, language, script) of the topic's parts; a part's script is the one
        most of its first names are written in. The scripts by language are kept in the
        cache directory (:meth:`scripts_path`; ``kgcult link index`` writes them, the
        ``anyfuzzy`` stage's caches): sampling the ~300 parts took a fresh process 12-14
        ms per topic."""
        v = self._script_of.get(topic)
        if v is None:
            by_lang = kept_table(self.scripts_path(topic), lambda: self._part_scripts(topic))
            v = [(pid, lg, by_lang.get(lg)) for pid, lg in part_ids(self.ix.pool_db, topic)]
            self._script_of[topic] = v
        return v

    def scripts_path(self, topic: str | None) -> Path | None:
        """Where the scripts of the topic's parts are kept (None without a cache directory)."""
        if self.cache_dir is None:
            return None
        return self.cache_dir / (f"part-scripts-{self.ix.content_hash[:16]}-{self.ix.topics_key}"
                                 f"-{topic or '_'}-v{SCRIPTS_FORMAT}.marshal")

    def _part_scripts(self, topic: str) -> dict[str, str | None]:
        """{language: the script most of the first names of the topic's part in it are written in}."""
        out: dict[str, str | None] = {}
        for _pid, lg, folded in part_samples(self.ix.pool_db, topic):
            seen: dict = {}
            for f in folded:
                sc = _script(f)
                seen[sc] = seen.get(sc, 0) + 1
            out[lg] = max(sorted(seen, key=str), key=seen.__getitem__) if seen else None
        return out

    def _other_parts(self, topic: str, lang: str, script: str | None) -> tuple[tuple, dict]:
        """The pool parts (ids) of the topic's names written in ``script``, in every
        language but the mention's, its base language and English, and their languages."""
        k = (topic, lang, script)
        v = self._parts.get(k)
        if v is None:
            own = {lang, normalize.base_lang(lang), "en"}  # the fuzzy stage's parts
            rows = [(p, lg) for p, lg, sc in self._scripts(topic) if sc == script and lg not in own]
            v = self._parts[k] = (tuple(p for p, _ in rows), dict(rows))
        return v

    def any_fuzzy(self, key: str, lang: str, topic: str | None) -> dict:
        if topic is None or len(key) < ANY_FUZZY_MIN_LEN or " " in key:
            return {}
        mk = (topic, lang, key)
        hit = self._anyfuzzy.get(mk)
        if hit is None:
            hit = self._anyfuzzy.put(mk, self._any_fuzzy(key, lang, topic))
        return dict(hit)

    def _any_fuzzy(self, key: str, lang: str, topic: str) -> tuple:
        # a name one edit away is written in the mention's script: only those parts are probed
        pids, lang_of = self._other_parts(topic, lang, _script(key))
        if not pids:
            return ()
        # one search over every part (the stored deletion index of index/name_pools.py), not one per language
        rows = [(e, lang_of[p], name, f) for e, p, name, f in fuzzy_rows(self.ix.pool_db, pids, key)]
        if any(f == key for _e, _lg, _n, f in rows):  # the any stage's exact key: not a fuzzy hit
            return ()
        hits = _refined(key, nearest(key, 1, rows))
        if not hits:
            return ()
        best = min(h[3] for h in hits)
        top = [h for h in hits if h[3] == best]
        if len({h[0] for h in top}) != 1:  # several entities as close: no guess
            return ()
        eid, nlg, _name, d = min(top, key=lambda h: (h[1], h[2]))
        return ((eid, (0, nlg, d)),)

    def _token_pool(self, topic: str, lang: str):
        return self._tokens.get_or_open((topic, lang), lambda: self.ix.token_pool(topic, lang))

    def owns_rarest_word(self, mention: str, lang: str, topic: str, eid: int) -> bool:
        """Whether the mention has two words or more, the rarest of those the topic's names
        (in the token pool's languages) hold belongs to one entity's names alone, and that
        entity is ``eid`` (the semantic stage's cross-check)."""
        m = tokens(mention, lang)
        if len(m) < 2:
            return False
        pool = self._token_pool(topic, lang)
        dfs = {t: pool.df(t) for t in m}
        known = [t for t in m if dfs[t]]
        if not known:
            return False
        rare = min(known, key=lambda t: (dfs[t], t))
        if dfs[rare] != 1:
            return False
        return any(rare in tokens(name, lg) for _e, lg, name in self.ix.names_of([eid], pool_langs(lang)))

    def tokens(self, mention: str, lang: str, topic: str | None, tokens_min: float,
               tokens_margin: float) -> dict:
        if topic is None:  # word overlap without a topic to check against is too loose
            return {}
        pool = self._token_pool(topic, lang)
        hits = pool.search(mention)
        if not hits:
            return {}
        sc, eid, lg, _name = hits[0]
        other = hits[1][0] if len(hits) > 1 else 0.0
        if sc >= tokens_min and sc - other >= tokens_margin:
            return {eid: (0, lg, -round(sc, 6))}
        m = tokens(mention, lang)
        holders = [(sc, eid, lg) for sc, eid, lg, name in hits if m <= tokens(name, lg)]
        if len({h[1] for h in holders}) == 1:  # one entity alone has a name holding every word
            sc, eid, lg = holders[0]
            return {eid: (0, lg, -round(sc, 6))}
        return {}


# -- the stages ------------------------------------------------------------------------

class Exact(Stage):
    """The mention verbatim as a label or alias in its language (else its base language)."""
    name = "exact"
    base_score = 1.0
    own_name = True

    def match_name(self, alias: int) -> str:
        return "exact-alias" if alias else "exact-label"

    def run(self, batch):
        ix = self.ctx.ix
        designated_topics = affixes.designator_topics()
        for s in batch:
            lang, m = s.lang, s.text
            d = ix.exact.get(lang)
            v = d.get(m) if d is not None else None
            if v is not None and v.__class__ is int:  # the common case: one entity
                s.add(v >> 1, self, v & 1, lang)
                if s.topic in designated_topics:
                    self.designated(s, m, lang)
                continue
            found = exact(ix, m, lang)
            for lg in label_chain(lang)[1:]:  # base language, variants, mul
                if found:
                    break
                found = exact(ix, m, lg)
            s.add_found(found, self)
            if found and s.topic in designated_topics:
                self.designated(s, m, lang)

    def designated(self, s, m: str, lang: str) -> None:
        """A place's name is as exact with a designator its language writes onto it
        (``京都`` of ``京都市`` beside the prefecture's alias ``京都``): those namesakes
        tie with the hit, and the graph settles the tie (the text's other places)."""
        ix = self.ctx.ix
        for v in affixes.designated(m, lang):
            for e, (_a, lg, _d) in exact(ix, v, lang).items():
                s.add(e, self, 1, lg)


class Normalized(Stage):
    """The mention's normalized key among the normalized names in its language."""
    name = "normalized"
    base_score = 0.9
    own_name = True
    closeness = True

    def run(self, batch):
        ctx = self.ctx
        ix = ctx.ix
        for s in batch:
            keys = ctx.keys(s)
            d = ix.norm.get(s.lang)
            v = d.get(keys[2]) if d is not None else None
            if v is None:
                continue
            if v.__class__ is int:
                s.add(v >> 1, self, v & 1, s.lang)
            else:
                s.add_found(normalized(ix, s.text, s.lang, keys), self)


class English(Stage):
    """Exact, then normalized, among English names (MakiEval's fallback)."""
    name = "english"
    base_score = 0.85
    closeness = True

    def run(self, batch):
        ix = self.ctx.ix
        for s in batch:
            s.add_found(english(ix, s.text, s.lang), self)


class AnyLanguage(Stage):
    """The language-free key among the names in every language."""
    name = "any"
    match = "any-language"
    base_score = 0.8
    closeness = True

    def run(self, batch):
        ctx = self.ctx
        for s in batch:
            s.add_found(any_language(ctx.ix, s.text, s.lang, ctx.keys(s)), self)


class Fuzzy(Stage):
    """:meth:`LexicalStages.fuzzy`; ``sub`` is the edit distance."""
    name = "fuzzy"
    scored = True

    def score(self, alias, sub):
        return round(0.7 - 0.1 * sub, 4)

    def run(self, batch):
        ctx = self.ctx
        for s in batch:
            s.add_found(ctx.lexical.fuzzy(ctx.keys(s)[1], s.lang, s.topic), self)


class AnyFuzzy(Stage):
    """:meth:`LexicalStages.any_fuzzy`; ``sub`` is the edit distance."""
    name = "anyfuzzy"
    match = "any-language-fuzzy"
    scored = True

    def score(self, alias, sub):
        return round(0.68 - 0.1 * sub, 4)

    def run(self, batch):
        ctx = self.ctx
        for s in batch:
            s.add_found(ctx.lexical.any_fuzzy(ctx.keys(s)[1], s.lang, s.topic), self)

    def caches(self) -> list:
        """The scripts of each topic's pool parts (which parts a key's script probes)."""
        lexical = self.ctx.lexical
        return [(t.name, sum(n for _lg, n in self.ctx.ix.parts(t.name)))
                for t in self.ctx.ix.topics if lexical.scripts_path(t.name) is not None]

    def build_cache(self, key) -> bool:
        path = self.ctx.lexical.scripts_path(key)
        had = path is not None and path.exists()
        self.ctx.lexical._scripts(key)
        return not had


class Tokens(Stage):
    """:meth:`LexicalStages.tokens`, not for a mention that names something else;
    ``sub`` is minus the share."""
    name = "tokens"
    scored = True

    def score(self, alias, sub):
        return round(0.65 * max(0.0, -sub), 4)

    def run(self, batch):
        ctx = self.ctx
        for s in batch:
            if s.names_something():  # the mention is another entity's name
                continue
            s.add_found(ctx.lexical.tokens(s.text, s.lang, s.topic, ctx.tokens_min, ctx.tokens_margin), self)
