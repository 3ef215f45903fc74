"""The files FmLAMA released beside its dish files, from the ``fmlama`` view's rows, so
the paper's own scripts (lizhou21/FmLAMA-master) read a kgcult build unchanged:

* ``<lang>_count.jsonl`` lines are JSON arrays, ``["All", 1549]`` then
  ``[origin, count]`` by count (``construct_Data/03-language_split.py`` writes the sorted
  ``Counter`` items);
* ``country_info.json``: {country: continent}, English labels
  (``01-obtain_country_info.py``; read by ``results/code/*.py`` and ``analysis/``);
* ``Dish_Count.json``: {country: (dish, language) rows of its origin query}, every
  country, zero included (``template_klg.get_dish``);
* ``ingredient_info_English.json``: {English ingredient: {count, origin, continent}}
  over ``data_lang/en`` (``05-dataset_statistics.py``; read by ``analysis/02-error-study``
  and ``analysis/03-human-evaluation``);
* Chinese labels in simplified script on request (``zh_script=simplified``; FmLAMA
  converted its ``zh`` rows with zhconv), with OpenCC's ``t2s`` conversion.
"""
from __future__ import annotations

import importlib.metadata
from collections import Counter

import opencc

from kgcult.views.output import Output, item_key

COUNT_FIELDS = ["origin", "count"]
ZH_FIELDS = ("sub_label", "origin_name", "obj_label", "description", "materials")
OPENCC_CONFIG = "t2s"


def count_output(path: str, rows: list[dict]) -> Output:
    """``<lang>_count.jsonl``: ``["All", n]`` first, then ``[origin, count]`` by count
    (descending); ties in the order the origins first occur in ``rows`` (FmLAMA sorts the
    Counter's items, a stable sort over first occurrences)."""
    c = Counter(r["origin"] for r in rows)
    counts = [{"origin": "All", "count": len(rows)}] + [
        {"origin": o, "count": n} for o, n in sorted(c.items(), key=lambda t: -t[1])]
    return Output(path, counts, COUNT_FIELDS, form="arrays")


def country_continents(countries: dict[str, set[str]], labels: dict[str, dict[str, str]]) -> dict[str, str]:
    """{country English label: continent English label}, by English label. FmLAMA's script
    kept, for a country on several continents, the last of WDQS's rows (an arbitrary
    order); kgcult takes the continent with the largest QID, which gives the release's
    answer for the Europe/Asia and Africa/Asia countries (Russia, Turkey, Armenia,
    Azerbaijan, Kazakhstan: Asia; Egypt: Asia) and Indonesia (Oceania), not for the United
    States (release: North America; Q538 Insular Oceania is larger)."""
    out = {}
    for c in sorted(countries, key=item_key):
        name = labels.get(c, {}).get("en")
        named = [k for k in countries[c] if "en" in labels.get(k, {})]
        if name is not None and named:
            out[name] = labels[max(named, key=item_key)]["en"]
    return dict(sorted(out.items()))


def dish_count(names: dict[str, str], candidate_rows: Counter) -> dict[str, int]:
    """{country English label: rows} for every country ({IRI: English label}), zero
    included, by English label; ``candidate_rows`` counts rows by country IRI."""
    out: Counter = Counter()
    for c, name in names.items():
        out[name] += candidate_rows.get(c, 0)
    return dict(sorted(out.items()))


def ingredient_info(rows: list[dict], continent_of: dict[str, str]) -> dict[str, dict]:
    """FmLAMA's ingredient statistics over English dish rows, in file order: per
    ingredient label, the rows naming it, and its origins and their continents in the
    order first met. An origin without a continent in ``continent_of`` adds none (the
    release's script would stop there)."""
    info: dict[str, dict] = {}
    for r in rows:
        cont = continent_of.get(r["origin"])
        for ing in r["obj_label"]:
            e = info.setdefault(ing, {"count": 0, "origin": [], "continent": []})
            e["count"] += 1
            if r["origin"] not in e["origin"]:
                e["origin"].append(r["origin"])
            if cont is not None and cont not in e["continent"]:
                e["continent"].append(cont)
    return info


def is_chinese(lang: str) -> bool:
    return lang == "zh" or lang.startswith("zh-")


def simplify(per_lang: dict[str, list[dict]]) -> dict:
    """Chinese rows' text in simplified script (OpenCC ``t2s``), in place; lists stay
    sorted and distinct. Returns what the manifest records."""
    conv = opencc.OpenCC(OPENCC_CONFIG)
    langs = sorted(l for l in per_lang if is_chinese(l))
    for lang in langs:
        for r in per_lang[lang]:
            for f in ZH_FIELDS:
                v = r.get(f)
                if isinstance(v, str):
                    r[f] = conv.convert(v)
                elif isinstance(v, list):
                    r[f] = sorted({conv.convert(x) for x in v})
    return {"to": "simplified Chinese script", "languages": langs, "fields": list(ZH_FIELDS),
            "tool": f"opencc {importlib.metadata.version('opencc')}", "config": OPENCC_CONFIG}
