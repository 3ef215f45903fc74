"""The stem and compound stages: the mention's Snowball stem key (``stem``) or compound key
(``compound``, for the compounding languages) among the topic's names in the mention's
language, then in English. The keys and the in-memory pool are ``morphology.py``; a pool
is built on first use and kept beside the label index (``morphology_pools.py``)."""
from __future__ import annotations

from kgcult.link import memo, normalize
from kgcult.link.stages import morphology
from kgcult.link.stages import morphology_pools as morph_store
from kgcult.link.stages.base import Stage


class Stem(Stage):
    """Names with the mention's stem key (word order free; topic required)."""
    name = "stem"
    base_score = 0.75
    needs = ("snowballstemmer",)
    feature = morphology.FEATURE
    compound = False

    def __init__(self, ctx, rank: int):
        super().__init__(ctx, rank)
        self.pools = memo.Pools.cached_in(ctx.cache_dir)  # (topic, lang) -> morphology.KeyPool

    def run(self, batch):
        for s in batch:
            s.add_found(self.search(s.text, s.lang, s.topic), self)

    def search(self, mention: str, lang: str, topic: str | None) -> dict:
        if topic is None:
            return {}
        base = normalize.base_lang(lang)
        if self.compound and base not in morphology.COMPOUNDING:
            return {}
        for lg in dict.fromkeys((base, "en")):
            if self.compound and lg not in morphology.COMPOUNDING:
                continue
            if not morphology.stems_in(lg):
                continue
            pool = self.pools.get_or_open((topic, lg), lambda: self._pool(topic, lg))
            hits = pool.search(mention)
            if hits:
                return {eid: (0, nlg, None) for eid, (nlg, _name) in hits.items()}
        return {}

    def _path(self, topic: str, lg: str):
        ctx = self.ctx
        if ctx.cache_dir is None:
            return None
        return ctx.cache_dir / (
            f"morph-{ctx.ix.content_hash[:16]}-{ctx.ix.topics_key}-{self.name}-{topic}-{lg}"
            f"-k{morphology.KEY_VERSION}.sqlite")

    def caches(self) -> list:
        """The pools :meth:`search` may open: per topic, each language with a stemmer
        (a compounding one for ``compound``) that is its own base language."""
        if self.ctx.cache_dir is None:
            return []
        return [((t.name, lg), n) for t in self.ctx.ix.topics for lg, n in self.ctx.ix.parts(t.name)
                if n and lg == normalize.base_lang(lg) and morphology.stems_in(lg)
                and (not self.compound or lg in morphology.COMPOUNDING)]

    def build_cache(self, key) -> bool:
        path = self._path(*key)
        had = path is not None and path.exists()
        pool = self._pool(*key)
        close = getattr(pool, "close", None)
        if close is not None:
            close()
        return not had

    def _pool(self, topic: str, lg: str) -> morphology.KeyPool | morph_store.StoredKeyPool:
        """The pool of the topic's names in ``lg``, read from beside the label index when
        saved there, else built and saved."""
        ctx = self.ctx
        cache = self._path(topic, lg)
        if cache is not None:
            stored = morph_store.open_pool(cache, lg) if cache.exists() else None
            if stored is not None:
                return stored
        pool = morphology.KeyPool(ctx.names(topic, {lg}), lg, compound=self.compound)
        if cache is not None:  # searched on disk from now on (morphology_pools.py)
            return morph_store.save(pool, cache) or pool
        return pool


class Compound(Stem):
    """Words split into parts that are words of the topic's names, then stemmed (the
    compounding languages: ``morphology.COMPOUNDING``; topic required)."""
    name = "compound"
    base_score = 0.72
    compound = True
