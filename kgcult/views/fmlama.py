"""The ``fmlama`` view: FmLAMA §3 (and its released construction scripts) over the local
graph: dishes with one origin country and ingredient labels per language, the aligned
subset, and per-country counts."""
from __future__ import annotations

import logging
from collections import Counter, defaultdict

from pyoxigraph import NamedNode

from kgcult import ids, vocab
from kgcult.views import fmlama_release as release
from kgcult.views.engine import ViewContext
from kgcult.views.output import Output, item_key
from kgcult.views.spec import ViewError

log = logging.getLogger(__name__)


def process(ctx: ViewContext) -> list[Output]:
    """1. dishes: kgc:typedAs dish; candidate origins from fmlama-origins.rq (P495, or the
       P17/P495 country of a P2012/P361 cuisine; a dish whose P495 names another value is
       not a dish of that country); origins restricted to P31 country items with an English
       label (FmLAMA keys its countries by English label), minus `exclude_countries`;
    2. per language L: a (dish, country) row exists when the dish, the country and at least
       one P527 ingredient have an rdfs:label in L (FmLAMA joins them with
       FILTER(LANG(..) = LANG(?dishLabel)));
    3. per language, dishes found under more than one origin country are dropped (FmLAMA's
       language split keeps only URLs that occur once);
    4. `countries` (optional) restricts the output to those origin countries (FmLAMA's
       data_lang step keeps 14 countries); the aligned subset keeps the dishes present in
       every requested language (FmLAMA's data_filter step).
    """
    p = ctx.params
    langs: list[str] = p["languages"]
    if not langs:
        raise ViewError(f"{ctx.view.path}: view fmlama: parameter languages is empty")
    per_lang, candidates = _rows_per_language(ctx, langs)
    kept_dishes = sorted({r["url"] for rows in per_lang.values() for r in rows})
    _add_optional_fields(ctx, per_lang, kept_dishes, langs)
    _add_continents(ctx, per_lang)
    if p["zh_script"] == "simplified":
        ctx.conversions["zh_script"] = release.simplify(per_lang)
    for rows in per_lang.values():
        rows.sort(key=lambda r: (r["origin"], item_key(r["url"])))

    fields = ctx.view.fields
    order = {l: i for i, l in enumerate(langs)}
    all_rows = [r for lang in sorted(per_lang, key=lambda l: (order.get(l, len(order)), l)) for r in per_lang[lang]]
    aligned_ids = set.intersection(*[{r["url"] for r in per_lang[l]} for l in langs])
    outputs = [Output("fmlama.jsonl", _public(all_rows), fields, main=True),
               Output("counts.jsonl", _country_counts(all_rows, aligned_ids, langs),
                      ["country", "origin", "rows", "dishes", "aligned_dishes", "languages"])]
    for lang in langs:
        rows = _public(per_lang[lang])
        arows = [r for r in rows if r["url"] in aligned_ids]
        outputs.append(Output(f"data_lang/{lang}/{lang}_dishes.jsonl", rows, fields))
        outputs.append(release.count_output(f"data_lang/{lang}/{lang}_count.jsonl", rows))
        outputs.append(Output(f"data_filter/{lang}/{lang}_dishes.jsonl", arows, fields))
        outputs.append(release.count_output(f"data_filter/{lang}/{lang}_count.jsonl", arows))
    outputs.extend(_release_files(ctx, candidates, per_lang.get("en")))
    log.info(f"fmlama: {len(all_rows)} rows, {len(kept_dishes)} dishes, {len(aligned_ids)} aligned")
    return outputs


def _rows_per_language(ctx: ViewContext, langs: list[str]) -> tuple[dict[str, list[dict]], Counter]:
    """Steps 1-4: {language: rows}, each row remembering its country IRI (``_country``),
    and the (dish, language) rows per country IRI before steps 3 and 4 (Dish_Count.json)."""
    p = ctx.params
    dish_class, country_class = ids.node(p["dish_class"]), ids.node(p["country_class"])
    excluded = {ids.iri(q) for q in p["exclude_countries"]}
    wanted = {ids.iri(q) for q in p["countries"]}

    pairs = [(r["dish"], r["country"]) for r in ctx.select(
        "origins", bindings={"dishClass": dish_class, "countryClass": country_class})]
    pairs = [(d, c) for d, c in pairs if c not in excluded]
    countries = sorted({c for _, c in pairs})
    log.info(f"fmlama: {len({d for d, _ in pairs})} dishes with a candidate origin among {len(countries)} countries")

    country_labels = ctx.labels(countries, sorted(set(langs) | {"en"}))
    pairs = [(d, c) for d, c in pairs if "en" in country_labels.get(c, {})]
    ingredients: dict[str, set[str]] = defaultdict(set)
    for r in ctx.select("ingredients", bindings={"dishClass": dish_class}):
        ingredients[r["dish"]].add(r["ingredient"])
    # Only dishes with a candidate origin and an ingredient can make a row.
    pairs = [(d, c) for d, c in pairs if d in ingredients]
    dish_labels = ctx.labels({d for d, _ in pairs}, langs)
    ing_labels = ctx.labels({i for d, _ in pairs for i in ingredients[d]}, langs)

    per_lang: dict[str, list[dict]] = {}
    candidates: Counter = Counter()
    for lang in langs:
        cand = []
        for d, c in pairs:
            sub = dish_labels.get(d, {}).get(lang)
            origin_name = country_labels.get(c, {}).get(lang)
            objs = sorted({ing_labels[i][lang] for i in ingredients.get(d, ()) if lang in ing_labels.get(i, {})})
            if sub is None or origin_name is None or not objs:
                continue
            cand.append({"url": d, "origin": country_labels[c]["en"], "origin_name": origin_name,
                         "lang": lang, "sub_label": sub, "obj_label": objs, "_country": c})
        candidates.update(r["_country"] for r in cand)
        n_origins = Counter(r["url"] for r in cand)
        kept = [r for r in cand if n_origins[r["url"]] == 1]
        if wanted:
            kept = [r for r in kept if r["_country"] in wanted]
        per_lang[lang] = kept
    return per_lang, candidates


def _release_files(ctx: ViewContext, candidates: Counter, en_rows: list[dict] | None) -> list[Output]:
    """country_info.json, Dish_Count.json and (with English rows) ingredient_info_English.json
    over every country of ``country_class`` with an English label, minus the excluded ones."""
    p = ctx.params
    excluded = {ids.iri(q) for q in p["exclude_countries"]}
    continents: dict[str, set[str]] = defaultdict(set)
    for r in ctx.select("countries", bindings={"countryClass": ids.node(p["country_class"])}):
        if r["country"] not in excluded:
            continents[r["country"]].update([r["continent"]] if r.get("continent") else [])
    labels = ctx.labels(set(continents) | {k for ks in continents.values() for k in ks}, ["en"])
    names = {c: labels[c]["en"] for c in continents if "en" in labels.get(c, {})}
    info = release.country_continents({c: continents[c] for c in names}, labels)
    out = [Output("country_info.json", [info], [], form="document", indent=4),
           Output("Dish_Count.json", [release.dish_count(names, candidates)], [], form="document")]
    if en_rows is not None:
        out.append(Output("ingredient_info_English.json",
                          [release.ingredient_info(_public(en_rows), info)], [], form="document"))
    return out


def _add_optional_fields(ctx: ViewContext, per_lang: dict[str, list[dict]], dishes: list[str],
                         langs: list[str]) -> None:
    """Description (in the row's language), P186 materials (labels in it), P18 images."""
    extras: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))   # dish -> property IRI -> values
    if dishes:
        for r in ctx.select("extras", rows=(["dish"], [[NamedNode(d)] for d in dishes])):
            extras[r["dish"]][r["property"]].add(r["value"])
    materials, images = vocab.WDT + "P186", vocab.WDT + "P18"
    material_labels = ctx.labels({m for e in extras.values() for m in e.get(materials, ())}, langs)
    descriptions = ctx.labels(dishes, langs, key="descriptions")
    for lang, rows in per_lang.items():
        for r in rows:
            d = r["url"]
            desc = descriptions.get(d, {}).get(lang)
            if desc is not None:
                r["description"] = desc
            mats = sorted({material_labels[m][lang] for m in extras[d].get(materials, ())
                           if lang in material_labels.get(m, {})})
            if mats:
                r["materials"] = mats
            imgs = sorted(extras[d].get(images, ()))
            if imgs:
                r["image"] = imgs


def _add_continents(ctx: ViewContext, per_lang: dict[str, list[dict]]) -> None:
    """``origin_uri`` (the origin's QID) and ``continent`` (English labels of its P30
    continents) on every row: what the probe report's Others and by-continent groupings use."""
    countries = sorted({r["_country"] for rows in per_lang.values() for r in rows})
    cont: dict[str, set[str]] = defaultdict(set)
    if countries:
        for r in ctx.select("continents", rows=(["country"], [[NamedNode(c)] for c in countries])):
            cont[r["country"]].add(r["continent"])
    labels = ctx.labels({c for cs in cont.values() for c in cs}, ["en"])
    for rows in per_lang.values():
        for r in rows:
            r["origin_uri"] = ids.shorten(r["_country"])
            r["continent"] = sorted({labels[c]["en"] for c in cont.get(r["_country"], ()) if "en" in labels.get(c, {})})


def _country_counts(rows: list[dict], aligned_ids: set[str], langs: list[str]) -> list[dict]:
    """Per-country counts over all requested languages (FmLAMA's Dish_Count.json counts
    (dish, language) rows per country)."""
    by_country: dict[str, dict] = {}
    for r in rows:
        c = by_country.setdefault(r["_country"], {"country": ids.shorten(r["_country"]), "origin": r["origin"],
                                                   "rows": 0, "dishes": set(), "aligned": set(),
                                                   "languages": Counter()})
        c["rows"] += 1
        c["dishes"].add(r["url"])
        c["languages"][r["lang"]] += 1
        if r["url"] in aligned_ids:
            c["aligned"].add(r["url"])
    return [{"country": c["country"], "origin": c["origin"], "rows": c["rows"],
             "dishes": len(c["dishes"]), "aligned_dishes": len(c["aligned"]),
             "languages": {l: c["languages"][l] for l in langs if c["languages"][l]}}
            for c in sorted(by_country.values(), key=lambda c: (-c["rows"], c["origin"], item_key(c["country"])))]


def _public(rows: list[dict]) -> list[dict]:
    """Rows without the working fields (``_country``)."""
    return [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]
