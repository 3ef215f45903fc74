"""The ``gazetteer`` stage: a mention that is CLDR's name of a country, territory,
continent or time zone city in the mention's language (``kgcult/link/gazetteer.py``:
Thai ``เวียดนาม``, ``โซล``) reaches the entity by that place's English name, as exact or
normalized English label (an alias may be another place's: London, the City of London's);
for the mirror's missing labels in the mention's language."""
from __future__ import annotations

from kgcult.link import disambiguate, gazetteer, normalize
from kgcult.link.stages.base import Stage
from kgcult.link.stages.lexical import exact, normalized


class Gazetteer(Stage):
    """A place's name in the mention's language, as CLDR's translators give it."""
    name = "gazetteer"
    base_score = 0.75
    needs = ("babel",)
    feature = "the linker's gazetteer stage (CLDR's place names)"

    def run(self, batch):
        ix = self.ctx.ix
        for s in batch:
            if s.topic is None or s.names_something():
                continue
            key = self.ctx.keys(s)[1]
            places = gazetteer.territory_names(s.lang).get(key)
            cities = gazetteer.city_names(s.lang).get(key)
            for name in places or cities or ():
                found = exact(ix, name, "en") or normalized(ix, name, "en", normalize.keys(name, "en"))
                # the place's English label, not a name another entity has as an alias
                # (London: the City of London's alias; Christmas: Christmas Island's)
                found = {e: v for e, v in found.items() if not v[0]}
                if cities and len(found) > 1:
                    # a time zone's city: the settlement, not the region named so too
                    # (เวียงจันทน์, the city of Vientiane, not Vientiane Province, whose
                    # English label is the same): by type, else by P131 (the region holds it)
                    towns = {e for e in found if self.ctx.settlement(e)}
                    if not towns or len(towns) == len(found):
                        towns = set(found) - disambiguate.containers(found, ix)
                    if towns:
                        found = {e: v for e, v in found.items() if e in towns}
                s.add_found(found, self)

    def caches(self) -> list:
        """CLDR's table of each language of the index (kept under ``$KGCULT_CACHE``)."""
        return [(lang, 1) for lang in sorted({normalize.base_lang(lg) for lg in self.ctx.ix.langs})]

    def build_cache(self, key) -> bool:
        return gazetteer.prepare([key])
