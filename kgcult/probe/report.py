"""Per-country / per-culture result tables from a probe's predictions.jsonl.

FmLAMA: for each template and origin country, mAP and mWS over the country's dishes; the
table gives, per country (and "All"), the mean ± sample std (ddof=1, FmLAMA's
``statistics.stdev``) over the templates; then the same with the 14 release countries and
every other origin as "Others", and by continent (P30), as the paper's figures group them.
DLAMA: per pair, culture and predicate, P@1, object entropy (from the object QIDs, as
DLAMA §5) and the most common predictions; the culture's aggregate P@1 is over the triples
of DLAMA-v1's 20 predicates, its entropy the mean over them; P407 and kgcult's extra
predicates are reported in their own rows. Causal-LM runs are labelled as kgcult's own
protocol (:func:`protocol`).

Writes results.csv, results.json, results.md and results.png (:mod:`kgcult.probe.plots`).
"""
from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from kgcult import files, ids
from kgcult.probe import metrics as M
from kgcult.probe import plots, vectors
from kgcult.probe.run import read_predictions
from kgcult.views import dlama as dlama_view
from kgcult.views.registry import get_view
from kgcult.safe_text import csv_row

ALL = "All"


def _fmt(mean, std, scale=100.0, digits=2):
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    return f"{mean * scale:.{digits}f} ± {std * scale:.{digits}f}"


OTHERS = "Others"


def _fmlama_groups(rows: list[dict], vec, key) -> list[dict]:
    """mAP and mWS per group (``key(row)`` gives the row's groups), mean ± sample std over
    templates (FmLAMA's ``statistics.stdev``)."""
    per: defaultdict[str, defaultdict[str, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: {"ap": [], "ws": []}))  # group -> template
    members = defaultdict(set)
    for r in rows:
        ap = M.ap_from_ranks(r["gold_ranks"], len(r["gold"]))
        ws = M.word_similarity(r["top"], r["gold"], vec) if vec is not None else None
        for g in key(r):
            cell = per[g][r["template"]]
            cell["ap"].append(ap)
            members[g].add(r["key"])
            if ws is not None:
                cell["ws"].append(ws)
    out: list[dict[str, Any]] = []
    for g, by_t in per.items():
        maps = [float(np.mean(c["ap"])) for c in by_t.values() if c["ap"]]
        mwss = [float(np.mean(c["ws"])) for c in by_t.values() if c["ws"]]
        m, s = M.mean_std(maps)
        wm, wsd = M.mean_std(mwss) if mwss else (float("nan"), float("nan"))
        out.append({
            "origin": g, "dishes": len(members[g]), "mAP": m, "mAP_std": s, "mWS": wm, "mWS_std": wsd,
            "per_template": {t: {"mAP": float(np.mean(c["ap"])) if c["ap"] else None,
                                 "mWS": float(np.mean(c["ws"])) if c["ws"] else None}
                             for t, c in sorted(by_t.items())},
        })
    out.sort(key=lambda c: (c["origin"] != ALL, c["origin"] == OTHERS, -c["dishes"], c["origin"]))
    return out


def fmlama_report(out_dir: str | Path, embeddings: str = "auto", plot: bool = True) -> dict:
    """Per origin country (and All), per release country with the rest as "Others", and per
    continent (when the rows carry them): mAP and mWS, mean ± sample std over templates."""
    run, rows = read_predictions(out_dir)
    vec = vectors.get(embeddings, run.get("lang", "en"))
    if vec is not None and hasattr(vec, "warm"):
        vec.warm({x for r in rows for x in r["gold"] + r["top"][:len(r["gold"])]})
    templates = sorted({r["template"] for r in rows})
    countries = _fmlama_groups(rows, vec, lambda r: (r["origin"], ALL))
    release = set(get_view("fmlama").config.get("release_countries", []))
    groupings = {}
    if rows and all(r.get("origin_uri") for r in rows):
        groupings["release_and_others"] = _fmlama_groups(
            rows, vec, lambda r: (r["origin"] if r["origin_uri"] in release else OTHERS, ALL))
    if any(r.get("continent") for r in rows):
        groupings["continent"] = _fmlama_groups(rows, vec, lambda r: (*(r.get("continent") or ["–"]), ALL))
    result = {
        "task": "fmlama", "model": run.get("model"), "lang": run.get("lang"),
        "subject_lang": run.get("subject_lang"), "context": run.get("context"),
        "scoring": run.get("scoring"), "templates": templates,
        "n_candidates": run.get("n_candidates"),
        "embeddings": getattr(vec, "name", None) if vec is not None else None,
        "protocol": protocol(run), "countries": countries, "groupings": groupings,
    }
    d = Path(out_dir)
    _clean_nan(result)
    files.atomic_write(d / "results.json", json.dumps(result, ensure_ascii=False, indent=2) + "\n")
    with files.atomic_open(d / "results.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(csv_row(["grouping", "origin", "dishes", "mAP", "mAP_std", "mWS", "mWS_std"]))
        for gname, table in [("origin", countries), *groupings.items()]:
            for c in table:
                w.writerow(csv_row([gname, c["origin"], c["dishes"]]
                                   + [_num(c[k]) for k in ("mAP", "mAP_std", "mWS", "mWS_std")]))
    lines = [
        f"FmLAMA probing of `{run.get('model')}` ({run.get('kind')}, scoring {run.get('scoring')}); "
        f"templates {run.get('lang')}, subjects {run.get('subject_lang')}, context {run.get('context')}; "
        f"{len(templates)} templates, {run.get('n_candidates')} candidates. "
        f"Mean ± sample std over templates, in %."
        + ("" if vec is not None else " mWS not computed (no word vectors for this language).")
        + (f" Scoring: {protocol(run)}." if protocol(run) else ""),
    ]
    titles = {"release_and_others": "The 14 countries of FmLAMA's release, every other origin as Others",
              "continent": "By continent (P30 of the origin; a country on two continents counts in both)"}
    for gname, table in [("origin", countries), *groupings.items()]:
        if gname != "origin":
            lines += ["", titles[gname] + ":"]
        lines += ["", "| origin | dishes | mAP (%) | mWS (%) |", "|---|---:|---:|---:|"]
        for c in table:
            lines.append(f"| {c['origin']} | {c['dishes']} | {_fmt(c['mAP'], c['mAP_std'])} | "
                         f"{_fmt(c['mWS'], c['mWS_std'])} |")
    files.atomic_write(d / "results.md", "\n".join(lines) + "\n")
    if plot:
        plots.bar_chart(d / "results.png", [c["origin"] for c in countries],
                        [("mAP", [c["mAP"] for c in countries], [c["mAP_std"] for c in countries]),
                         ("mWS", [c["mWS"] for c in countries], [c["mWS_std"] for c in countries])],
                        f"FmLAMA {run.get('lang')}: {run.get('model')}")
    return result


def protocol(run: dict) -> str | None:
    """How the run's model was scored, when it is not the originals' own protocol: causal
    LMs are scored by kgcult's own protocol (stated in every report)."""
    if run.get("kind") == "causal":
        return (f"kgcult's own protocol: each candidate ranked by the causal LM's {run.get('scoring')} "
                f"log-probability of the {run.get('span') or 'object'} span in the filled template; "
                "neither the paper's free generation nor the released code's scoring")
    return None


def _group_of(r: dict, declared: dict[str, str]) -> str:
    return r.get("group") or declared.get(r["predicate"], "v1")


def dlama_report(out_dir: str | Path, plot: bool = True) -> dict:
    """P@1 per (pair, culture, predicate); object entropy from the object QIDs when the rows
    carry them (DLAMA §5, as the view's entropy.jsonl), else from labels; the aggregate per
    culture is over DLAMA-v1's predicates only, kgcult's extras and P407 in their own rows."""
    run, rows = read_predictions(out_dir)
    declared = dlama_view.predicate_groups(get_view("dlama").config)
    groups = defaultdict(list)
    for r in rows:
        groups[(r.get("pair", ""), r["culture"], r["predicate"])].append(r)
    cells = []

    def pnum(p):
        return (int(p[1:]) if p[1:].isdigit() else 0, p)

    for (pair, culture, pred), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], pnum(kv[0][2]))):
        top1 = [r["top"][0] if r["top"] else None for r in rs]
        valid = [r["gold"] for r in rs]
        if all(r.get("gold_ids") for r in rs):
            h, _ = dlama_view.entropy([[ids.node(q).value for q in r["gold_ids"]] for r in rs])
            source = "qid"
        else:
            h, source = M.object_entropy(valid), "label"
        cells.append({
            "pair": pair, "culture": culture, "predicate": pred, "group": _group_of(rs[0], declared),
            "facts": len(rs), "P@1": M.precision_at_1(top1, valid), "entropy": h, "entropy_from": source,
            "most_common": M.most_common_predictions(top1, valid),
        })
    cultures = []
    for pair, culture in sorted({(c["pair"], c["culture"]) for c in cells}):
        for scope, keep in (("v1", ("v1",)), ("extras", ("dlama-code", "kgcult"))):
            cs = [c for c in cells if (c["pair"], c["culture"]) == (pair, culture) and c["group"] in keep]
            if not cs:
                continue
            n = sum(c["facts"] for c in cs)
            cultures.append({
                "pair": pair, "culture": culture, "scope": scope, "facts": n,
                "P@1": sum(c["P@1"] * c["facts"] for c in cs) / n,
                "entropy": float(np.mean([c["entropy"] for c in cs])),
            })
    result = {"task": "dlama", "model": run.get("model"), "lang": run.get("lang"),
              "scoring": run.get("scoring"), "protocol": protocol(run),
              "cultures": cultures, "predicates": cells}
    d = Path(out_dir)
    files.atomic_write(d / "results.json", json.dumps(result, ensure_ascii=False, indent=2) + "\n")
    ent_lines = [json.dumps({k: c[k] for k in ("pair", "culture", "predicate", "group", "facts", "entropy_from")}
                            | {"entropy": round(c["entropy"], 6)}, ensure_ascii=False) for c in cells]
    files.atomic_write(d / "entropy.jsonl", "".join(x + "\n" for x in ent_lines))
    with files.atomic_open(d / "results.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(csv_row(["pair", "culture", "predicate", "group", "facts", "P@1", "entropy"]))
        for c in cells:
            w.writerow(csv_row([c["pair"], c["culture"], c["predicate"], c["group"], c["facts"], _num(c["P@1"]),
                                _num(c["entropy"])]))
        for c in cultures:
            w.writerow(csv_row([c["pair"], c["culture"], ALL if c["scope"] == "v1" else "extras", c["scope"],
                                c["facts"], _num(c["P@1"]), _num(c["entropy"])]))

    def name(c):
        return f"{c['pair']}: {c['culture']}" if c["pair"] else c["culture"]

    cols = sorted({(c["pair"], c["culture"]) for c in cells})
    col_names = [f"{p}: {c}" if p else c for p, c in cols]
    lines = [f"DLAMA probing of `{run.get('model')}` ({run.get('kind')}), {run.get('lang')} templates. "
             f"# facts (entropy of object QIDs) and P@1 (%) per culture. The aggregate is over "
             f"DLAMA-v1's 20 predicates; P407 (DLAMA's code, not v1) and kgcult's extras are below it."]
    if protocol(run):
        lines += ["", f"Scoring: {protocol(run)}."]
    lines += ["", "| predicate | " + " | ".join(f"{c} facts (entropy) | {c} P@1" for c in col_names) + " |",
              "|---|" + "---:|---:|" * len(cols)]

    def row_for(pred):
        parts = []
        for pair, cn in cols:
            c = next((x for x in cells if (x["pair"], x["culture"], x["predicate"]) == (pair, cn, pred)), None)
            parts.append("– | –" if c is None else f"{c['facts']} ({c['entropy']:.1f}) | {100 * c['P@1']:.1f}")
        return " | ".join(parts)

    preds = sorted({c["predicate"] for c in cells}, key=pnum)
    v1 = [p for p in preds if any(c["group"] == "v1" for c in cells if c["predicate"] == p)]
    for pred in v1:
        lines.append(f"| {pred} | {row_for(pred)} |")

    def agg(scope):
        parts = []
        for pair, cn in cols:
            c = next((x for x in cultures if (x["pair"], x["culture"], x["scope"]) == (pair, cn, scope)), None)
            parts.append("– | –" if c is None else f"{c['facts']} ({c['entropy']:.1f}) | {100 * c['P@1']:.1f}")
        return " | ".join(parts)

    lines.append(f"| Aggregated (DLAMA-v1) | {agg('v1')} |")
    for pred in [p for p in preds if p not in v1]:
        lines.append(f"| {pred} (not v1) | {row_for(pred)} |")
    if any(c["scope"] == "extras" for c in cultures):
        lines.append(f"| Aggregated (not v1) | {agg('extras')} |")
    lines += ["", "Most common first predictions (% of the culture's predictions for the predicate):", "",
              "| culture | predicate | correct | wrong |", "|---|---|---|---|"]
    for c in cells:
        mc = c["most_common"]
        f = lambda xs: ", ".join(f"{x['object']} ({x['percent']}%)" for x in xs) or "–"  # noqa: E731
        lines.append(f"| {name(c)} | {c['predicate']} | {f(mc['correct'])} | {f(mc['wrong'])} |")
    files.atomic_write(d / "results.md", "\n".join(lines) + "\n")
    if plot:
        v1c = [c for c in cultures if c["scope"] == "v1"]
        plots.bar_chart(d / "results.png", [name(c) for c in v1c], [("P@1", [c["P@1"] for c in v1c], None)],
                        f"DLAMA {run.get('lang')}: {run.get('model')}")
    return result


def report(out_dir: str | Path, embeddings: str = "auto", plot: bool = True) -> dict:
    run, _ = read_predictions(out_dir)
    if run.get("task") == "dlama":
        return dlama_report(out_dir, plot)
    return fmlama_report(out_dir, embeddings, plot)


def _num(x):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return f"{x:.6f}"


def _clean_nan(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, float) and math.isnan(v):
                obj[k] = None
            else:
                _clean_nan(v)
    elif isinstance(obj, list):
        for v in obj:
            _clean_nan(v)

