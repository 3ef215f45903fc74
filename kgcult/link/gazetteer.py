"""Place names in every language from the Unicode CLDR, as Babel ships it: the names of
the world's countries, territories and continents (``Locale.territories``: Thai
``เวียดนาม``, Hindi ``अफ़्रीका``) and of the ~420 cities that name a time zone
(``Locale.time_zones``, exemplar cities: Thai ``โซล``, ``เวียงจันทน์``), each with its
English name (the ``en`` locale's; a time zone's city not named there is its zone id's
last part, ``Asia/Seoul`` -> Seoul).

A mirror holds labels in some languages only (the stand-in has no Thai label of Seoul);
CLDR's translators name these places in every language, and the English name then
reaches the entity by its English label (``kgcult.link.stages.gazetteer``).
:func:`english_names` is deterministic for one Babel release (pinned in
``constraints.txt``: CLDR's names change between releases).

Reading Babel's locale data costs a process about 0.25 s for its first language; the table
of each language is kept, once made, in ``$KGCULT_CACHE/models/cldr-<babel version>-v<FORMAT>/<lang>.marshal``
(plain containers), which ``kgcult link index`` writes for the languages of the grammar file.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from kgcult.files import kept_table, package_cache
from kgcult.link import normalize

FORMAT = 3

# "Myanmar (Burma)", "Congo - Kinshasa": the name before a qualifier CLDR adds
_QUALIFIER = re.compile(r"\s*(\(.*\)|\s-\s.*)$")


def _plain(name: str) -> str:
    return _QUALIFIER.sub("", name).strip()


@lru_cache(maxsize=1)
def _english() -> tuple[dict, dict]:
    """CLDR's English territory names by code, and city names by time zone."""
    from babel import Locale

    en = Locale.parse("en")
    return dict(en.territories), {z: v.get("city") for z, v in en.time_zones.items() if v.get("city")}


def _directory() -> Path | None:
    """Where the tables of this Babel release are kept; None without Babel."""
    return package_cache("babel", f"cldr-{{version}}-v{FORMAT}")


@lru_cache(maxsize=64)
def tables(lang: str) -> dict[str, dict[str, tuple[str, ...]]]:
    """{"territories": ..., "cities": ...}: each {normalized name in ``lang``
    (``normalize.keys``' folded key): its English names} of CLDR's territories, and of its
    time zones' exemplar cities; empty for a language CLDR does not know (or English
    itself: its names are the labels), or without Babel."""
    base = normalize.base_lang(lang)
    if not base or base == "en" or not base.isalpha():
        return {}
    folder = _directory()
    if folder is None:
        return {}
    return kept_table(folder / f"{base}.marshal", lambda: _from_babel(base))


def english_names(lang: str) -> dict[str, tuple[str, ...]]:
    """{normalized name in ``lang``: its English names}, territories' and cities' (:func:`tables`)."""
    t = tables(lang)
    return {**t.get("territories", {}), **t.get("cities", {})} if t else {}


def city_names(lang: str) -> dict[str, tuple[str, ...]]:
    """The exemplar cities of :func:`tables`: a name CLDR gives a time zone is a city's
    (Thai เวียงจันทน์ is the city of Vientiane, not the province named so too)."""
    return tables(lang).get("cities", {})


def territory_names(lang: str) -> dict[str, tuple[str, ...]]:
    """The territories of :func:`tables` (countries, territories, continents)."""
    return tables(lang).get("territories", {})


def _from_babel(base: str) -> dict[str, dict[str, tuple[str, ...]]]:
    from babel import Locale, UnknownLocaleError

    try:
        loc = Locale.parse(base)
    except (UnknownLocaleError, ValueError):
        return {}
    territories, cities = _english()

    def put(out: dict, local: str | None, english: str | None) -> None:
        if not local or not english:
            return
        for name in dict.fromkeys((local, _plain(local))):
            key = normalize.keys(name, base)[1]
            if key:
                out.setdefault(key, set()).add(_plain(english))

    places: dict[str, set[str]] = {}
    towns: dict[str, set[str]] = {}
    for code, local in loc.territories.items():
        put(places, local, territories.get(code))
    whole = set(territories.values())
    for zone, names in loc.time_zones.items():
        english = cities.get(zone) or zone.rsplit("/", 1)[-1].replace("_", " ")
        if english not in whole:  # a zone named for its territory is under the territory's
            put(towns, names.get("city"), english)  # own name (Thai คริสต์มาส: the holiday)
    return {"territories": {k: tuple(sorted(v)) for k, v in sorted(places.items())},
            "cities": {k: tuple(sorted(v)) for k, v in sorted(towns.items()) if k not in places}}


def prepare(langs) -> bool:
    """The tables of ``langs`` made ready on disk (``kgcult link index``); whether one was
    made now."""
    folder = _directory()
    made = False
    for lang in langs:
        base = normalize.base_lang(lang)
        made |= folder is not None and not (folder / f"{base}.marshal").exists() and bool(tables(lang))
    return made
