"""The ``xheard`` stage: a Thai mention given with a country, as Thai spells a foreign name
by ear (``kgcult/link/by_ear.py``), among the Latin names of the places there; it reads
xscript's cross-script pools (their ``ear`` column)."""
from __future__ import annotations

from rapidfuzz.distance import Levenshtein

from kgcult.link import by_ear, scripts, thai
from kgcult.link.stages.xscript import CrossScriptFuzzy

MIN_EAR = 3  # consonants heard (thai.ear_key) from which a name spelled by ear is looked up
HEARD_UNPLACED = 2  # edits as heard within which a place located nowhere is the name spelled by ear


class CrossScriptHeard(CrossScriptFuzzy):
    """A Thai mention given with a country, as Thai spells a foreign name by ear, among the
    Latin names of the places there (:meth:`heard_as`); ``sub``: the edits as heard."""
    name = "xheard"
    match = "cross-script-heard"
    base_score = 0.55

    def run(self, batch):
        for s in batch:
            country = s.row.get("country")
            if s.topic is None or not country or s.names_something():
                continue
            s.add_found(self.heard_as(s.text, s.lang, s.topic, country), self)

    def heard_as(self, text: str, lang: str, topic: str, country: str) -> dict:
        """A foreign name that Thai spells by ear (``thai.ear_key``: เบรอตาญ, Bretagne; คย็องจู,
        Gyeongju; โพรวองซ์, Provence), no key of which is a few edits from a Latin name's:
        among the Latin names whose consonants are heard the same, those of places that lie
        in ``country`` or nowhere the graph says (a mirror loses claims), nearest as heard
        with the vowels (``by_ear.heard``), one located nowhere only within
        :data:`HEARD_UNPLACED` edits; among the nearest, the ones in ``country``; one entity,
        or no guess. (A name of a country another language writes by ear, Prancia, is as near
        by its consonants; its vowels keep it apart.)"""
        ear = thai.ear_key(text)
        if ear is None or len(ear) < MIN_EAR:
            return {}
        k = (text, topic, country, "heard")
        found = self._memo.get(k)
        if found is None:
            found = self._memo.put(k, self._heard(text, lang, topic, country, ear))
        return found

    def _heard(self, text: str, lang: str, topic: str, country: str, ear: str) -> dict:
        mine = by_ear.heard(thai.foreign_key(text) or scripts.compact(scripts.romanize(text, lang)))
        nearest: dict = {}  # eid -> (edits as heard, language)
        for key, eid, _flag, _support, lg, _words, _latin in self.pool(topic).by_ear(ear):
            d = Levenshtein.distance(mine, by_ear.heard(key))
            if eid not in nearest or (d, lg) < nearest[eid]:
                nearest[eid] = (d, lg)
        # nearest first: the places of each distance checked until some lie in the country
        # or nowhere (the graph's countries of a place are looked up only so far)
        for d in sorted({v[0] for v in nearest.values()}):
            placed, unplaced = [], []
            for e in sorted(e for e, v in nearest.items() if v[0] == d):
                where = self.ctx.countries(e)
                if country in where:
                    placed.append(e)
                elif not where and d <= HEARD_UNPLACED:
                    unplaced.append(e)
            near = placed or unplaced
            if near:
                return {near[0]: (0, nearest[near[0]][1], float(d))} if len(near) == 1 else {}
        return {}
