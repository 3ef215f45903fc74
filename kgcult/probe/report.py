"""Per-country / per-culture result tables from a probe's predictions.jsonl.

FmLAMA: for each template and origin country, mAP and mWS over the country's dishes; the
table gives, per country (and "All"), the mean ± population std over the templates.
DLAMA: per culture and predicate, P@1, object entropy and the most common predictions;
the culture's aggregate P@1 is over all its triples, its entropy the mean over predicates.

Writes results.csv, results.json, results.md and results.png (:mod:`kgcult.probe.plots`).
"""
from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np

from kgcult import files
from kgcult.probe import metrics as M
from kgcult.probe import plots, vectors
from kgcult.probe.run import read_predictions

ALL = "All"


def _fmt(mean, std, scale=100.0, digits=2):
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    return f"{mean * scale:.{digits}f} ± {std * scale:.{digits}f}"


def fmlama_report(out_dir: str | Path, embeddings: str = "auto", plot: bool = True) -> dict:
    run, rows = read_predictions(out_dir)
    vec = vectors.get(embeddings, run.get("lang", "en"))
    if vec is not None and hasattr(vec, "warm"):
        vec.warm({x for r in rows for x in r["gold"] + r["top"][:len(r["gold"])]})
    templates = sorted({r["template"] for r in rows})
    per = defaultdict(lambda: defaultdict(lambda: {"ap": [], "ws": []}))  # origin -> template
    for r in rows:
        ap = M.ap_from_ranks(r["gold_ranks"], len(r["gold"]))
        ws = M.word_similarity(r["top"], r["gold"], vec) if vec is not None else None
        for origin in (r["origin"], ALL):
            cell = per[origin][r["template"]]
            cell["ap"].append(ap)
            if ws is not None:
                cell["ws"].append(ws)
    countries = []
    for origin, by_t in per.items():
        n = len({r["key"] for r in rows if origin == ALL or r["origin"] == origin})
        maps = [float(np.mean(c["ap"])) for c in by_t.values() if c["ap"]]
        mwss = [float(np.mean(c["ws"])) for c in by_t.values() if c["ws"]]
        m, s = M.mean_std(maps)
        wm, wsd = M.mean_std(mwss) if mwss else (float("nan"), float("nan"))
        countries.append({
            "origin": origin, "dishes": n, "mAP": m, "mAP_std": s, "mWS": wm, "mWS_std": wsd,
            "per_template": {t: {"mAP": float(np.mean(c["ap"])) if c["ap"] else None,
                                 "mWS": float(np.mean(c["ws"])) if c["ws"] else None}
                             for t, c in sorted(by_t.items())},
        })
    countries.sort(key=lambda c: (c["origin"] != ALL, -c["dishes"], c["origin"]))
    result = {
        "task": "fmlama", "model": run.get("model"), "lang": run.get("lang"),
        "subject_lang": run.get("subject_lang"), "context": run.get("context"),
        "scoring": run.get("scoring"), "templates": templates,
        "n_candidates": run.get("n_candidates"),
        "embeddings": getattr(vec, "name", None) if vec is not None else None,
        "countries": countries,
    }
    d = Path(out_dir)
    _clean_nan(result)
    files.atomic_write(d / "results.json", json.dumps(result, ensure_ascii=False, indent=2) + "\n")
    with files.atomic_open(d / "results.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["origin", "dishes", "mAP", "mAP_std", "mWS", "mWS_std"])
        for c in countries:
            w.writerow([c["origin"], c["dishes"]] + [_num(c[k]) for k in ("mAP", "mAP_std", "mWS", "mWS_std")])
    lines = [
        f"FmLAMA probing of `{run.get('model')}` ({run.get('kind')}, scoring {run.get('scoring')}); "
        f"templates {run.get('lang')}, subjects {run.get('subject_lang')}, context {run.get('context')}; "
        f"{len(templates)} templates, {run.get('n_candidates')} candidates. "
        f"Mean ± std over templates, in %."
        + ("" if vec is not None else " mWS not computed (no word vectors for this language)."),
        "",
        "| origin | dishes | mAP (%) | mWS (%) |",
        "|---|---:|---:|---:|",
    ]
    for c in countries:
        lines.append(f"| {c['origin']} | {c['dishes']} | {_fmt(c['mAP'], c['mAP_std'])} | "
                     f"{_fmt(c['mWS'], c['mWS_std'])} |")
    files.atomic_write(d / "results.md", "\n".join(lines) + "\n")
    if plot:
        plots.bar_chart(d / "results.png", [c["origin"] for c in countries],
                   [("mAP", [c["mAP"] for c in countries], [c["mAP_std"] for c in countries]),
                    ("mWS", [c["mWS"] for c in countries], [c["mWS_std"] for c in countries])],
                   f"FmLAMA {run.get('lang')}: {run.get('model')}")
    return result


def dlama_report(out_dir: str | Path, plot: bool = True) -> dict:
    run, rows = read_predictions(out_dir)
    groups = defaultdict(list)
    for r in rows:
        groups[(r["culture"], r["predicate"])].append(r)
    cells = []
    def pnum(p):
        return (int(p[1:]) if p[1:].isdigit() else 0, p)

    for (culture, pred), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], pnum(kv[0][1]))):
        top1 = [r["top"][0] if r["top"] else None for r in rs]
        valid = [r["gold"] for r in rs]
        cells.append({
            "culture": culture, "predicate": pred, "facts": len(rs),
            "P@1": M.precision_at_1(top1, valid), "entropy": M.object_entropy(valid),
            "most_common": M.most_common_predictions(top1, valid),
        })
    cultures = []
    for culture in sorted({c["culture"] for c in cells}):
        cs = [c for c in cells if c["culture"] == culture]
        n = sum(c["facts"] for c in cs)
        cultures.append({
            "culture": culture, "facts": n,
            "P@1": sum(c["P@1"] * c["facts"] for c in cs) / n,
            "entropy": float(np.mean([c["entropy"] for c in cs])),
        })
    result = {"task": "dlama", "model": run.get("model"), "lang": run.get("lang"),
              "scoring": run.get("scoring"), "cultures": cultures, "predicates": cells}
    d = Path(out_dir)
    files.atomic_write(d / "results.json", json.dumps(result, ensure_ascii=False, indent=2) + "\n")
    with files.atomic_open(d / "results.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["culture", "predicate", "facts", "P@1", "entropy"])
        for c in cells:
            w.writerow([c["culture"], c["predicate"], c["facts"], _num(c["P@1"]), _num(c["entropy"])])
        for c in cultures:
            w.writerow([c["culture"], ALL, c["facts"], _num(c["P@1"]), _num(c["entropy"])])
    cult_names = [c["culture"] for c in cultures]
    lines = [f"DLAMA probing of `{run.get('model')}` ({run.get('kind')}), {run.get('lang')} templates. "
             f"# facts (entropy) and P@1 (%) per culture.", "",
             "| predicate | " + " | ".join(f"{c} facts (entropy) | {c} P@1" for c in cult_names) + " |",
             "|---|" + "---:|---:|" * len(cult_names)]
    for pred in sorted({c["predicate"] for c in cells}, key=lambda p: int(p[1:]) if p[1:].isdigit() else 0):
        parts = []
        for cn in cult_names:
            c = next((x for x in cells if x["culture"] == cn and x["predicate"] == pred), None)
            parts.append("– | –" if c is None else f"{c['facts']} ({c['entropy']:.1f}) | {100 * c['P@1']:.1f}")
        lines.append(f"| {pred} | " + " | ".join(parts) + " |")
    lines.append("| Aggregated | " + " | ".join(f"{c['facts']} ({c['entropy']:.1f}) | {100 * c['P@1']:.1f}"
                                              for c in cultures) + " |")
    lines += ["", "Most common first predictions (% of the culture's predictions for the predicate):", "",
              "| culture | predicate | correct | wrong |", "|---|---|---|---|"]
    for c in cells:
        mc = c["most_common"]
        f = lambda xs: ", ".join(f"{x['object']} ({x['percent']}%)" for x in xs) or "–"  # noqa: E731
        lines.append(f"| {c['culture']} | {c['predicate']} | {f(mc['correct'])} | {f(mc['wrong'])} |")
    files.atomic_write(d / "results.md", "\n".join(lines) + "\n")
    if plot:
        plots.bar_chart(d / "results.png", cult_names, [("P@1", [c["P@1"] for c in cultures], None)],
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

