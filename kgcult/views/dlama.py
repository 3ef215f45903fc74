"""The ``dlama`` view: DLAMA §4.1 steps 1-5 (App. B) and the §5 entropy over the local
graph, per predicate and culture group (``ontology/cultures.ttl``)."""
from __future__ import annotations

import logging
import math
import os
from collections import Counter, defaultdict
from pathlib import Path

from pyoxigraph import NamedNode

from kgcult import ids, ontology, resources, vocab
from kgcult.views.engine import ViewContext
from kgcult.views.output import Output, item_key
from kgcult.views.spec import ViewError

log = logging.getLogger(__name__)
PRED_KEY = '"predicates"'


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


def process(ctx: ViewContext) -> list[Output]:
    """Per predicate and culture: (1) triples whose subject (or object, or the subject's
    P17/P495 country, per the predicate's `culture` mode) is one of the culture's
    countries; (2) subjects ranked by sitelink count (desc; ties by QID); (3) all objects
    of each subject, whatever their country; (4) (subject, object) pairs dropped when
    either lacks a label in any requested language, subjects with no object left dropped,
    the first `max_subjects` subjects kept; (5) objects augmented with their P279
    ancestors among the predicate's objects (App. B), and for place predicates with the
    P131 territories they lie in (countries excepted) that have all labels.
    """
    langs: list[str] = ctx.params["languages"]
    specs: dict = ctx.view.config.get("predicates", {})
    groups = culture_groups()
    preds = ctx.params["predicates"] or list(specs)
    for pid in preds:
        if pid not in specs:
            raise ViewError(f"{ctx.view.path}:{ctx.view.line_of(PRED_KEY)}: view dlama: "
                            f"predicate {pid!r} is not configured (configured: {', '.join(specs)})")
    cultures = ctx.choose("cultures", groups, "culture", resources.ontology("cultures.ttl"))

    triples = _culture_triples(ctx, specs, preds, cultures, groups)            # step 1
    all_subjects = sorted({s for d in triples.values() for s in d})
    rank = _sitelinks(ctx, all_subjects)                                       # step 2
    objects: dict[tuple[str, str], set[str]] = defaultdict(set)               # step 3: (pid, subject) -> objects
    for pid in preds:
        subs = sorted({s for (pp, _), d in triples.items() if pp == pid for s in d})
        prop = NamedNode(vocab.WDT + pid)
        for r in ctx.select("objects", rows=(["s", "p"], [[NamedNode(s), prop] for s in subs])):
            objects[(pid, r["s"])].add(r["o"])
    # Step 4: labels in every language.
    labels = ctx.labels(set(all_subjects) | {o for objs in objects.values() for o in objs}, langs)

    def has_all(e):
        return all(l in labels.get(e, {}) for l in langs)

    selected: dict[tuple[str, str], list[tuple[str, list[str]]]] = {}
    for (pid, culture), subj_countries in triples.items():
        keep = []
        for s in sorted(subj_countries, key=lambda s: (-rank.get(s, 0), item_key(s))):
            if not has_all(s):
                continue
            objs = sorted((o for o in objects.get((pid, s), ()) if has_all(o)), key=item_key)
            if not objs:
                continue
            keep.append((s, objs))
            if len(keep) >= ctx.params["max_subjects"]:
                break
        selected[(pid, culture)] = keep
    augmented = _augment(ctx, specs, preds, selected, labels, has_all)        # step 5
    return _outputs(ctx, preds, cultures, triples, rank, selected, augmented, labels)


def _culture_triples(ctx: ViewContext, specs: dict, preds: list[str], cultures: list[str],
                     groups: dict[str, list[str]]) -> dict[tuple[str, str], dict[str, set[str]]]:
    """Step 1: {(pid, culture): {subject: the culture's countries it was selected by}}."""
    triples: dict[tuple[str, str], dict[str, set[str]]] = {}
    for pid in preds:
        mode = specs[pid].get("culture", "subject")
        prop = NamedNode(vocab.WDT + pid)
        for culture in cultures:
            members = [ids.node(q) for q in groups[culture]]
            subj_countries: dict[str, set[str]] = defaultdict(set)
            if mode == "subject":
                for r in ctx.select("by-subject", rows=(["p", "country"], [[prop, c] for c in members])):
                    subj_countries[r["country"]].add(r["country"])
            elif mode == "object":
                for r in ctx.select("by-object", rows=(["p", "country"], [[prop, c] for c in members])):
                    subj_countries[r["s"]].add(r["country"])
            elif mode.startswith("subject-"):
                via = NamedNode(vocab.WDT + mode.split("-", 1)[1])
                for r in ctx.select("by-subject-country",
                                    rows=(["p", "via", "country"], [[prop, via, c] for c in members])):
                    subj_countries[r["s"]].add(r["country"])
            else:
                raise ViewError(f"{ctx.view.path}:{ctx.view.line_of(pid)}: view dlama: predicate {pid}: "
                                f"unknown culture mode {mode!r} (subject, object, subject-<P>)")
            triples[(pid, culture)] = subj_countries
    return triples


def _sitelinks(ctx: ViewContext, subjects: list[str]) -> dict[str, int]:
    """Step 2: wikibase:sitelinks per subject, else its number of sitelink articles."""
    rank: dict[str, int] = {}
    if subjects:
        for r in ctx.select("sitelinks", rows=(["s"], [[NamedNode(s)] for s in subjects])):
            n = r.get("sitelinks")
            rank[r["s"]] = int(float(n)) if n not in (None, "") else int(r.get("articles", 0) or 0)
    return rank


def _augment(ctx: ViewContext, specs: dict, preds: list[str], selected: dict, labels: dict,
             has_all) -> dict[tuple[str, str], list[str]]:
    """Step 5: {(pid, subject): objects with their ancestors among the predicate's objects
    (P279) and, for place predicates, the P131 territories with all labels}."""
    langs: list[str] = ctx.params["languages"]
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


def _outputs(ctx: ViewContext, preds, cultures, triples, rank, selected, augmented, labels) -> list[Output]:
    """dlama.jsonl, candidates.jsonl, entropy.jsonl and DLAMA's per-language files."""
    langs: list[str] = ctx.params["languages"]
    short = ids.shorten
    rows, per_lang, entropy_rows, candidate_rows = [], defaultdict(list), [], []
    for pid in preds:
        pred_candidates: set[str] = set()
        for culture in cultures:
            keep = selected[(pid, culture)]
            lists = []
            for i, (s, objs) in enumerate(keep, 1):
                aug = augmented[(pid, s)]
                lists.append(aug)
                pred_candidates |= set(aug)
                rows.append({
                    "predicate": pid, "culture": culture, "rank": i, "sub_uri": short(s),
                    "obj_uri": [short(o) for o in aug], "raw_obj_uri": [short(o) for o in objs],
                    "sub_label": {l: labels[s][l] for l in langs},
                    "obj_label": {l: [labels[o][l] for o in aug] for l in langs},
                    "country": sorted((short(c) for c in triples[(pid, culture)][s]), key=item_key),
                    "sitelinks": rank.get(s, 0),
                })
                for l in langs:
                    per_lang[(l, pid, culture)].append({
                        "sub_uri": short(s), "obj_uri": [short(o) for o in aug],
                        "sub_label": labels[s][l], "obj_label": [labels[o][l] for o in aug]})
            h, most = entropy(lists)
            entropy_rows.append({"predicate": pid, "culture": culture, "triples": len(keep),
                                 "entropy": round(h, 6), "most_common": short(most) if most else None})
        cands = sorted(pred_candidates, key=item_key)
        candidate_rows.append({"predicate": pid, "obj_uri": [short(o) for o in cands],
                               "obj_label": {l: [labels[o][l] for o in cands] for l in langs}})
    outputs = [Output("dlama.jsonl", rows, ctx.view.fields, main=True),
               Output("candidates.jsonl", candidate_rows, ["predicate", "obj_uri", "obj_label"]),
               Output("entropy.jsonl", entropy_rows, ["predicate", "culture", "triples", "entropy", "most_common"])]
    for (l, pid, culture), prow in sorted(per_lang.items()):
        outputs.append(Output(f"{l}/{pid}_{culture}.jsonl", prow, ["sub_uri", "obj_uri", "sub_label", "obj_label"]))
    log.info(f"dlama: {len(rows)} triples over {len(preds)} predicates x {len(cultures)} cultures")
    return outputs
