"""The ``dlama`` view: DLAMA §4.1 steps 1-5 (App. B) and the §5 entropy over the local
graph, per DLAMA-v1 pair (or one custom set of culture groups), predicate and culture.

What each predicate selects is data in ``queries/views/dlama.json`` (``config``): how a
triple reaches the culture's country (``culture``), the class filters of step 1
(``select``) and of step 3 (``objects``, DLAMA's re-query of all objects), the
augmentation (``augment``) and the predicate's ``group`` (``v1``, ``dlama-code``,
``kgcult``). Culture groups and their Wikipedia sites are ``ontology/cultures.ttl``.
"""
from __future__ import annotations

import logging
import math
import os
from collections import Counter, defaultdict
from pathlib import Path

from pyoxigraph import NamedNode

from kgcult import ids, ontology, resources, vocab
from kgcult.views import dlama_release as release
from kgcult.views.engine import ViewContext
from kgcult.views.output import Output, item_key
from kgcult.views.spec import ViewError

log = logging.getLogger(__name__)
PRED_KEY = '"predicates"'
CUSTOM = "custom"
FILTER_KEYS = ("subject_is", "subject_not", "object_is", "object_not")


def culture_groups(path: str | os.PathLike | None = None) -> dict[str, list[str]]:
    """{culture name: [member QIDs]} from ``ontology/cultures.ttl`` (or ``path``)."""
    source = Path(path) if path else resources.ontology("cultures.ttl")
    out = {}
    for s, props in ontology.of_type(source, vocab.KGC + "CultureGroup").items():
        names = props.get(vocab.KGC + "cultureName")
        if not names:
            raise ViewError(f"{source}: culture group {s.value} lacks kgc:cultureName")
        members = {ids.shorten(o.value) for o in props.get(vocab.KGC + "member", [])}
        out[names[-1].value] = sorted(members, key=item_key)
    return dict(sorted(out.items()))


def wikipedia_sites(path: str | os.PathLike | None = None) -> dict[str, list[str]]:
    """{country QID: [Wikipedia site IRIs]} (``kgc:wikipediaSite``, DLAMA Table F8)."""
    source = Path(path) if path else resources.ontology("cultures.ttl")
    out: dict[str, list[str]] = {}
    for s, props in ontology.of_type(source, vocab.KGC + "CultureCountry").items():
        out[ids.shorten(s.value)] = sorted(o.value for o in props.get(vocab.KGC + "wikipediaSite", []))
    return out


def entropy(object_lists: list[list[str]]) -> tuple[float, str | None]:
    """DLAMA §5: for each triple keep only its most frequent valid object (counts over all
    the triples' object lists; ties -> the smallest QID), then the entropy (log base 2) of
    the distribution of those objects. Returns (entropy, most common object)."""
    if not object_lists:
        return 0.0, None
    counts = Counter(o for objs in object_lists for o in objs)
    picked = [min(objs, key=lambda o: (-counts[o], item_key(o))) for objs in object_lists if objs]
    dist = Counter(picked)
    n = sum(dist.values())
    h = -sum((k / n) * math.log2(k / n) for k in dist.values())
    most = min(counts, key=lambda o: (-counts[o], item_key(o)))
    return (0.0 if abs(h) < 1e-12 else h), most


def predicate_groups(config: dict) -> dict[str, str]:
    """{predicate: group} from the view's config (``v1`` unless declared otherwise)."""
    return {p: spec.get("group", "v1") for p, spec in config.get("predicates", {}).items()}


def process(ctx: ViewContext) -> list[Output]:
    """Build each chosen DLAMA-v1 pair separately (or the custom set of cultures), then
    write one dlama.jsonl, candidates.jsonl and entropy.jsonl keyed by pair."""
    specs: dict = ctx.view.config.get("predicates", {})
    groups = culture_groups()
    preds = _predicates(ctx, specs)
    sets = _culture_sets(ctx, groups)
    _check_filters(ctx, specs, preds)
    rows: list[dict] = []
    per_lang: defaultdict[tuple, list[dict]] = defaultdict(list)
    entropy_rows: list[dict] = []
    candidate_rows: list[dict] = []
    for name, cultures, langs in sets:
        built = _build_set(ctx, specs, preds, cultures, langs, groups)
        _collect(name, preds, cultures, langs, specs, built, rows, per_lang, entropy_rows, candidate_rows)
    outputs = [Output("dlama.jsonl", rows, ctx.view.fields, main=True),
               Output("candidates.jsonl", candidate_rows, ["pair", "predicate", "obj_uri", "obj_label"]),
               Output("entropy.jsonl", entropy_rows,
                      ["pair", "predicate", "culture", "group", "triples", "entropy", "most_common"])]
    outputs.extend(release.outputs(ctx.view.config, per_lang,
                                   {l: set(preds) for _, _, langs in sets for l in langs}))
    log.info(f"dlama: {len(rows)} triples over {len(preds)} predicates, {len(sets)} set(s)")
    return outputs


def _predicates(ctx: ViewContext, specs: dict) -> list[str]:
    chosen = ctx.params["predicates"]
    if chosen == ["all"]:
        return list(specs)
    if not chosen:
        return [p for p, s in specs.items() if s.get("group", "v1") != "kgcult"]
    for pid in chosen:
        if pid not in specs:
            raise ViewError(f"{ctx.view.path}:{ctx.view.line_of(PRED_KEY)}: view dlama: "
                            f"predicate {pid!r} is not configured (configured: {', '.join(specs)})")
    return chosen


def _culture_sets(ctx: ViewContext, groups: dict) -> list[tuple[str, list[str], list[str]]]:
    """[(name, cultures, languages)]: the chosen v1 pairs, or the custom cultures."""
    langs = ctx.params["languages"]
    if ctx.params["cultures"]:
        cultures = ctx.choose("cultures", groups, "culture", resources.ontology("cultures.ttl"))
        return [(CUSTOM, cultures, langs or ["en"])]
    pairs = ctx.view.config.get("pairs", {})
    out = []
    for name in ctx.params["pairs"] or list(pairs):
        if name not in pairs:
            raise ViewError(f"view dlama: unknown pair {name!r} (config.pairs: {', '.join(pairs)})")
        for c in pairs[name]["cultures"]:
            if c not in groups:
                raise ViewError(f"{ctx.view.path}: pair {name}: unknown culture {c!r}")
        out.append((name, list(pairs[name]["cultures"]), langs or list(pairs[name]["languages"])))
    return out


def _check_filters(ctx: ViewContext, specs: dict, preds: list[str]) -> None:
    lists = ctx.view.config.get("class_lists", {})
    for pid in preds:
        for step in ("select", "objects"):
            for key, names in specs[pid].get(step, {}).items():
                bad = key not in FILTER_KEYS or any(n not in lists for n in _names(names))
                if bad:
                    raise ViewError(f"{ctx.view.path}:{ctx.view.line_of(pid)}: view dlama: predicate {pid}: "
                                    f"bad {step} filter {key}: {names!r} (keys: {', '.join(FILTER_KEYS)}; "
                                    f"class lists: {', '.join(lists)})")


def _names(v) -> list[str]:
    return [v] if isinstance(v, str) else list(v)


def _passes(filters: dict, lists: dict, classes: dict, s: str, o: str | None) -> bool:
    """Whether (s, o) passes DLAMA's class filters: ``*_is`` = P31 one of the classes (or
    the entity itself is one, for DLAMA's VALUES filters), ``*_not`` = none of them."""
    for key, names in filters.items():
        side, how = key.split("_")
        e = s if side == "subject" else o
        if e is None:
            continue
        wanted = {ids.node(q).value for n in _names(names) for q in lists[n]}
        have = classes.get(e, set()) | {e}
        hit = bool(have & wanted)
        if (how == "is") != hit:
            return False
    return True


def _build_set(ctx: ViewContext, specs: dict, preds: list[str], cultures: list[str],
               langs: list[str], groups: dict) -> dict:
    """Steps 1-5 for one set of cultures (a v1 pair): what :func:`_collect` writes."""
    lists = ctx.view.config.get("class_lists", {})
    sites = wikipedia_sites()
    step1 = _culture_triples(ctx, specs, preds, cultures, groups)               # step 1
    classes = _classes(ctx, {e for d in step1.values() for s, pairs in d.items() for e in [s, *(o for o, _ in pairs)]})
    triples: dict[tuple[str, str], dict[str, set[str]]] = {}
    for (pid, culture), d in step1.items():
        f = specs[pid].get("select", {})
        kept: dict[str, set[str]] = {}
        for s, pairs in d.items():
            countries = {c for o, c in pairs if _passes(f, lists, classes, s, o)}
            if countries:
                kept[s] = countries
        triples[(pid, culture)] = kept
    all_subjects = sorted({s for d in triples.values() for s in d})
    sitelinks = _sitelinks(ctx, all_subjects)
    articles = _articles(ctx, all_subjects)                                      # step 2
    require_article = ctx.params["require_article"] == "true" or (ctx.params["require_article"] == "auto" and bool(articles))
    if ctx.params["require_article"] == "auto" and not articles and all_subjects:
        log.warning("dlama: the store holds no Wikipedia article (schema:about) of any subject, so subjects "
                    "are not required to have one (require_article=auto) and are ranked by sitelinks")
    objects: dict[tuple[str, str], set[str]] = defaultdict(set)                 # step 3
    for pid in preds:
        subs = sorted({s for (pp, _), d in triples.items() if pp == pid for s in d})
        prop = NamedNode(vocab.WDT + pid)
        for r in ctx.select("objects", rows=(["s", "p"], [[NamedNode(s), prop] for s in subs])):
            objects[(pid, r["s"])].add(r["o"])
    classes.update(_classes(ctx, {o for objs in objects.values() for o in objs} - set(classes)))
    labels = ctx.labels(set(all_subjects) | {o for objs in objects.values() for o in objs}, langs)   # step 4

    def has_all(e):
        return all(l in labels.get(e, {}) for l in langs)

    selected: dict[tuple[str, str], list[tuple[str, list[str]]]] = {}
    size: dict[tuple[str, str, str], int] = {}
    for (pid, culture), subj_countries in triples.items():
        f = specs[pid].get("objects", {})
        ranked = []
        for s, countries in subj_countries.items():
            own = {a: n for site, arts in articles.get(s, {}).items()
                   if any(site in sites.get(ids.shorten(c), ()) for c in countries) for a, n in arts.items()}
            if require_article and not own:
                continue
            size[(pid, culture, s)] = max(own.values(), default=0)
            ranked.append(s)
        ranked.sort(key=lambda s: (-size[(pid, culture, s)], -sitelinks.get(s, 0), item_key(s)))
        keep = []
        for s in ranked:
            if not has_all(s):
                continue
            objs = sorted((o for o in objects.get((pid, s), ()) if has_all(o) and _passes(f, lists, classes, s, o)),
                          key=item_key)
            if not objs:
                continue
            keep.append((s, objs))
            if len(keep) >= ctx.params["max_subjects"]:
                break
        selected[(pid, culture)] = keep
    augmented = _augment(ctx, specs, preds, selected, labels, has_all, langs)   # step 5
    return {"triples": triples, "sitelinks": sitelinks, "size": size, "selected": selected,
            "augmented": augmented, "labels": labels}


def _culture_triples(ctx: ViewContext, specs: dict, preds: list[str], cultures: list[str],
                     groups: dict[str, list[str]]) -> dict[tuple[str, str], dict[str, set[tuple[str, str]]]]:
    """Step 1: {(pid, culture): {subject: {(object, culture country)}}}."""
    out: dict[tuple[str, str], dict[str, set[tuple[str, str]]]] = {}
    for pid in preds:
        mode = specs[pid].get("culture", "subject")
        prop = NamedNode(vocab.WDT + pid)
        side, _, via = mode.partition("-")
        vias = [NamedNode(vocab.WDT + v) for v in via.split("|")] if via else []
        if side not in ("subject", "object") or (via and not all(v.startswith("P") for v in via.split("|"))):
            raise ViewError(f"{ctx.view.path}:{ctx.view.line_of(pid)}: view dlama: predicate {pid}: unknown "
                            f"culture mode {mode!r} (subject, object, subject-<P>[|<P>], object-<P>[|<P>])")
        for culture in cultures:
            members = [ids.node(q) for q in groups[culture]]
            found: dict[str, set[tuple[str, str]]] = defaultdict(set)
            if not vias:
                key = "by-subject" if side == "subject" else "by-object"
                for r in ctx.select(key, rows=(["p", "country"], [[prop, c] for c in members])):
                    if side == "subject":
                        found[r["country"]].add((r["o"], r["country"]))
                    else:
                        found[r["s"]].add((r["country"], r["country"]))
            else:
                key = "by-subject-country" if side == "subject" else "by-object-country"
                for r in ctx.select(key, rows=(["p", "via", "country"], [[prop, v, c] for v in vias for c in members])):
                    found[r["s"]].add((r["o"], r["country"]))
            out[(pid, culture)] = found
    return out


def _classes(ctx: ViewContext, entities) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    ents = sorted(entities)
    if ents:
        for r in ctx.select("classes", rows=(["e"], [[NamedNode(e)] for e in ents])):
            out[r["e"]].add(r["class"])
    return out


def _sitelinks(ctx: ViewContext, subjects: list[str]) -> dict[str, int]:
    """wikibase:sitelinks per subject, else its number of sitelink articles."""
    rank: dict[str, int] = {}
    if subjects:
        for r in ctx.select("sitelinks", rows=(["s"], [[NamedNode(s)] for s in subjects])):
            n = r.get("sitelinks")
            count = ids.sitelink_count(n) if n not in (None, "") else None
            rank[r["s"]] = count if count is not None else int(r.get("articles", 0) or 0)
    return rank


def _articles(ctx: ViewContext, subjects: list[str]) -> dict[str, dict[str, dict[str, int]]]:
    """{subject: {site: {article: page length (0 when none is loaded)}}}."""
    out: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    if subjects:
        for r in ctx.select("articles", rows=(["s"], [[NamedNode(s)] for s in subjects])):
            n = r.get("length")
            try:
                length = int(float(n)) if n not in (None, "") else 0
            except ValueError:
                length = 0
            out[r["s"]][r["site"]][r["article"]] = length
    return out


def _augment(ctx: ViewContext, specs: dict, preds: list[str], selected: dict, labels: dict,
             has_all, langs: list[str]) -> dict[tuple[str, str], list[str]]:
    """Step 5: {(pid, subject): objects with their ancestors among the predicate's objects
    in this set (P279) and, for P19/P20, every P131 territory they lie in that has all labels}."""
    augmented: dict[tuple[str, str], list[str]] = {}
    for pid in preds:
        aug = specs[pid].get("augment", ["P279"])
        pred_objects = sorted({o for (pp, _), keep in selected.items() if pp == pid for _, objs in keep for o in objs},
                              key=item_key)
        anc: dict[str, set[str]] = {o: {o} for o in pred_objects}
        if "P279" in aug and pred_objects:
            obj_set = set(pred_objects)
            for r in ctx.select("superclasses", rows=(["sub"], [[NamedNode(o)] for o in pred_objects])):
                if r["super"] in obj_set:
                    anc[r["sub"]].add(r["super"])
        if "P131" in aug and pred_objects:
            terr: dict[str, set[str]] = defaultdict(set)
            for r in ctx.select("territories", rows=(["place"], [[NamedNode(o)] for o in pred_objects])):
                terr[r["place"]].add(r["territory"])
            tlabels = ctx.labels({t for ts in terr.values() for t in ts} - set(labels), langs)
            for k, v in tlabels.items():
                labels.setdefault(k, {}).update(v)
            for o, ts in terr.items():
                anc[o] |= {t for t in ts if has_all(t)}
        for (pp, _), keep in selected.items():
            if pp != pid:
                continue
            for s, objs in keep:
                augmented[(pid, s)] = sorted(set().union(*(anc[o] for o in objs)), key=item_key)
    return augmented


def _collect(pair: str, preds, cultures, langs, specs, built, rows, per_lang, entropy_rows, candidate_rows) -> None:
    """Rows of dlama.jsonl, candidates.jsonl, entropy.jsonl and the per-language files."""
    short = ids.shorten
    labels, selected, augmented = built["labels"], built["selected"], built["augmented"]
    for pid in preds:
        group = specs[pid].get("group", "v1")
        pred_candidates: set[str] = set()
        for culture in cultures:
            keep = selected[(pid, culture)]
            lists = []
            for i, (s, objs) in enumerate(keep, 1):
                aug = augmented[(pid, s)]
                lists.append(aug)
                pred_candidates |= set(aug)
                rows.append({
                    "pair": pair, "predicate": pid, "culture": culture, "rank": i, "sub_uri": short(s),
                    "obj_uri": [short(o) for o in aug], "raw_obj_uri": [short(o) for o in objs],
                    "sub_label": {l: labels[s][l] for l in langs},
                    "obj_label": {l: [labels[o][l] for o in aug] for l in langs},
                    "country": sorted((short(c) for c in built["triples"][(pid, culture)][s]), key=item_key),
                    "size": built["size"][(pid, culture, s)], "sitelinks": built["sitelinks"].get(s, 0),
                    "group": group,
                })
                country = release.country_field(specs[pid], short(s), [short(o) for o in objs],
                                                [short(c) for c in built["triples"][(pid, culture)][s]])
                for l in langs:
                    per_lang[(pair, l, pid, culture)].append(release.line(
                        short(s), labels[s][l], [(short(o), labels[o][l]) for o in aug], country,
                        built["size"][(pid, culture, s)]))
            h, most = entropy(lists)
            entropy_rows.append({"pair": pair, "predicate": pid, "culture": culture, "group": group,
                                 "triples": len(keep), "entropy": round(h, 6),
                                 "most_common": short(most) if most else None})
        cands = sorted(pred_candidates, key=item_key)
        candidate_rows.append({"pair": pair, "predicate": pid, "obj_uri": [short(o) for o in cands],
                               "obj_label": {l: [labels[o][l] for o in cands] for l in langs}})
