"""``kgcult link eval``: precision, recall and F1 of the linker against a gold file.

Gold rows: ``{"mention", "lang", "topic", "gold_qid"}`` (``gold_qid`` null = must not
link; optional ``alt``, other QIDs that count as right), or texts with their gold spans
(``{"id", "text", "lang", "topic", "country", "spans": [...]}``, one row per span); other fields (e.g. ``source``) are carried into the error file and, for
``source = "<dataset>:<case>"``, into a per-case breakdown; the linker never sees them.

Counting: a prediction is the result's ``qid`` (resolved or ambiguous; with
``count_ambiguous=False`` an ambiguous result counts as no link). TP: qid == gold; FP: a
qid that is not the gold (including any qid for a negative); FN: a positive whose gold
was not predicted. P = TP/(TP+FP), R = TP/positives, F1 their harmonic mean.

The *kind* of a row is the case of its ``source`` (``<dataset>:<case>``). Beside the
linker, MakiEval's own procedure (``link_baseline.py``) runs on the same input; both report
their *unmatched rate*, the share of mentions left without a QID (MakiEval App. C.2's
"missing QIDs"), overall and per language. ``plot`` draws F1 per kind and per language
and the unmatched rates, the two side by side.
"""
from __future__ import annotations

import os
import time
from collections import defaultdict
from pathlib import Path

from kgcult import extras, ids
from kgcult.errors import KgcultError
from kgcult.files import iter_jsonl, reject
from kgcult.eval import link_baseline
from kgcult.link.linker import Linker


def _prf(tp: int, fp: int, pos: int) -> dict:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / pos if pos else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f, 4),
            "tp": tp, "fp": fp, "positives": pos}


def _span_rows(obj: dict, path, lineno: int, on_error: str) -> list[dict]:
    """A text with its gold spans (``../shared/annotation`` format: id, text, lang, topic,
    country, spans [{start, end, text, qid, alt?}]) as one gold row per span: the span's
    text as the mention, the text's id as its group."""
    rows = []
    for i, sp in enumerate(obj["spans"]):
        if not isinstance(sp, dict) or not isinstance(sp.get("text"), str) or "qid" not in sp:
            reject(f"{path}:{lineno}: span {i} needs the fields text and qid", on_error)
            return []
        row = {"mention": sp["text"], "lang": obj.get("lang"), "topic": obj.get("topic"),
               "gold_qid": sp["qid"], "source": f"{obj.get('id')}:{obj.get('lang')}"}
        if obj.get("country") is not None:
            row["country"] = obj["country"]
        if obj.get("id") is not None:
            row["group"] = obj["id"]
        if sp.get("alt"):
            row["alt"] = sp["alt"]
        rows.append(row)
    return rows


def read_gold(path: str | os.PathLike, on_error: str = "fail") -> list[dict]:
    """The gold rows of a JSONL file, each with its line number as ``_line``. A row with
    ``spans`` (a text with its gold spans) gives one row per span (:func:`_span_rows`)."""
    rows = []
    for lineno, obj in iter_jsonl(path, on_error=on_error):
        if isinstance(obj.get("spans"), list) and "mention" not in obj:
            for row in _span_rows(obj, path, lineno, on_error):
                if not _gold_ok(row, path, lineno, on_error):
                    break
                row["_line"] = lineno
                rows.append(row)
            continue
        if "mention" not in obj or "gold_qid" not in obj:
            reject(f"{path}:{lineno}: a gold row needs the fields mention and gold_qid", on_error)
            continue
        if not _gold_ok(obj, path, lineno, on_error):
            continue
        obj["_line"] = lineno
        rows.append(obj)
    if not rows:
        raise KgcultError(f"{path}: no gold rows")
    return rows


def _gold_ok(obj: dict, path, lineno: int, on_error: str) -> bool:
    g = obj["gold_qid"]
    if g is not None and not ids.is_item(g):
        reject(f"{path}:{lineno}: gold_qid must be a QID or null, got {g!r}", on_error)
        return False
    alt = obj.get("alt", [])
    if not isinstance(alt, list) or not all(isinstance(a, str) and ids.is_item(a) for a in alt):
        reject(f"{path}:{lineno}: alt must be a list of QIDs, got {alt!r}", on_error)
        return False
    return True


def score(gold: list[dict], results: list[dict], count_ambiguous: bool = True):
    """(report, errors) of ``results`` against ``gold``, row by row."""
    overall = [0, 0, 0]
    groups: dict[str, dict] = {"lang": defaultdict(lambda: [0, 0, 0]),
                               "match": defaultdict(lambda: [0, 0, 0]),
                               "case": defaultdict(lambda: [0, 0, 0]),
                               "status": defaultdict(lambda: [0, 0, 0])}
    errors = []
    for g, r in zip(gold, results):
        pred = r["qid"]
        if r["status"] == "ambiguous" and not count_ambiguous:
            pred = None
        gq = g["gold_qid"]
        # ``alt``: other QIDs as right as the gold (near-duplicates in the graph)
        tp = int(pred is not None and gq is not None and (pred == gq or pred in g.get("alt", ())))
        fp = int(pred is not None and not tp)
        pos = int(gq is not None)
        src = g.get("source")
        case = src.split(":", 1)[1] if isinstance(src, str) and ":" in src else None
        keys = {"lang": g.get("lang") or "en", "match": r["match"] or "none",
                "case": case, "status": r["status"]}
        for acc in [overall] + [groups[k][v] for k, v in keys.items() if v is not None]:
            acc[0] += tp
            acc[1] += fp
            acc[2] += pos
        if not tp and (fp or pos):
            errors.append({"line": g.get("_line"), "mention": g["mention"], "lang": g.get("lang"),
                           "topic": g.get("topic"), "gold_qid": gq, "predicted": pred,
                           "status": r["status"], "match": r["match"],
                           "kind": "wrong" if fp and pos else ("false-link" if fp else "missed"),
                           "source": src,
                           "candidates": [c["qid"] for c in r["candidates"][:5]]})
    report = {"overall": _prf(*overall), "unmatched": _unmatched(gold, results)}
    for k, d in groups.items():
        if d:
            report[f"by_{k}"] = {v: _prf(*acc) for v, acc in sorted(d.items())}
    return report, errors


def _unmatched(gold: list[dict], results: list[dict]) -> dict:
    """Share of mentions without a QID: of all, of the positives, and per language."""
    by: dict = defaultdict(lambda: [0, 0])
    n = pos_un = pos = 0
    for g, r in zip(gold, results):
        un = r["qid"] is None
        n += un
        acc = by[g.get("lang") or "en"]
        acc[0] += un
        acc[1] += 1
        if g["gold_qid"] is not None:
            pos += 1
            pos_un += un
    return {"rate": round(n / len(gold), 4) if gold else 0.0,
            "rate_positives": round(pos_un / pos, 4) if pos else 0.0,
            "by_lang": {k: round(a / b, 4) for k, (a, b) in sorted(by.items())}}


def _inputs(gold: list[dict]) -> list[dict]:
    """What the linker may read of a gold row: mention, lang, topic, and, when the row has
    them, the prompt's country and the response group (never ``source`` or the gold)."""
    out = []
    for g in gold:
        row = {"mention": g["mention"], "lang": g.get("lang") or "en", "topic": g.get("topic")}
        for k in ("country", "group"):
            if g.get(k) is not None:
                row[k] = g[k]
        out.append(row)
    return out


def evaluate(linker: Linker, gold: list[dict], *, stage_gain: bool = True,
             count_ambiguous: bool = True, makieval: bool = True) -> dict:
    """Score the linker as configured; with ``stage_gain``, also score it with its stages
    enabled cumulatively (exact; + normalized; + english; ...), giving each stage's recall;
    with ``makieval``, also score MakiEval's procedure (``link_baseline.py``) on the same rows."""
    inputs = _inputs(gold)
    t0 = time.perf_counter()
    results = list(linker.link_many(inputs))
    secs = time.perf_counter() - t0
    report, errors = score(gold, results, count_ambiguous)
    report["mentions"] = len(gold)
    report["seconds"] = round(secs, 3)
    report["stages"] = list(linker.stages)
    if stage_gain:
        gains = []
        prev_r = 0.0
        for i in range(1, len(linker.stages) + 1):
            res = list(linker.with_stages(linker.stages[:i]).link_many(inputs))
            rep, _ = score(gold, res, count_ambiguous)
            o = rep["overall"]
            gains.append({"stages": "+".join(linker.stages[:i]), "added": linker.stages[i - 1],
                          "precision": o["precision"], "recall": o["recall"], "f1": o["f1"],
                          "recall_gain": round(o["recall"] - prev_r, 4)})
            prev_r = o["recall"]
        report["stage_gain"] = gains
    if makieval:
        t0 = time.perf_counter()
        base = link_baseline.link_rows(linker.ix, inputs)
        brep, _ = score(gold, base, count_ambiguous)
        brep["seconds"] = round(time.perf_counter() - t0, 3)
        report["makieval"] = brep
    return {"report": report, "errors": errors, "results": results}


def format_report(rep: dict) -> str:
    """The report as the text ``kgcult link eval`` prints."""
    o = rep["overall"]
    lines = [f"mentions {rep['mentions']}  stages {'+'.join(rep['stages'])}",
             f"overall  P {o['precision']:.3f}  R {o['recall']:.3f}  F1 {o['f1']:.3f}  "
             f"(tp {o['tp']}, fp {o['fp']}, positives {o['positives']})"]
    if "unmatched" in rep:
        lines.append(f"unmatched {rep['unmatched']['rate']:.3f} of mentions, "
                     f"{rep['unmatched']['rate_positives']:.3f} of positives")
    titles = {"by_case": "by kind"}
    for k in ("by_lang", "by_match", "by_status", "by_case"):
        if k not in rep:
            continue
        lines.append(f"{titles.get(k, k.replace('_', ' '))}:")
        for v, m in rep[k].items():
            lines.append(f"  {v:<28} P {m['precision']:.3f}  R {m['recall']:.3f}  F1 {m['f1']:.3f}  "
                         f"(tp {m['tp']}, fp {m['fp']}, pos {m['positives']})")
    if "makieval" in rep:
        lines += _side_by_side(rep)
    if "stage_gain" in rep:
        lines.append("recall gained by each stage (stages enabled cumulatively):")
        for g in rep["stage_gain"]:
            lines.append(f"  +{g['added']:<11} R {g['recall']:.3f} (+{g['recall_gain']:.3f})  "
                         f"P {g['precision']:.3f}  F1 {g['f1']:.3f}")
    return "\n".join(lines) + "\n"


def _side_by_side(rep: dict) -> list[str]:
    b = rep["makieval"]
    o, bo = rep["overall"], b["overall"]
    lines = ["kgcult vs MakiEval's procedure (exact label/alias, lower-case, English; random pick) "
             "on the same input:",
             f"  {'':<28} {'kgcult P/R/F1':>21} {'unmatched':>10}   {'MakiEval P/R/F1':>21} {'unmatched':>10}",
             f"  {'overall':<28} {o['precision']:.3f} {o['recall']:.3f} {o['f1']:.3f}"
             f" {rep['unmatched']['rate']:>10.3f}   {bo['precision']:.3f} {bo['recall']:.3f} {bo['f1']:.3f}"
             f" {b['unmatched']['rate']:>10.3f}"]
    for k, title in (("by_lang", "language"), ("by_case", "kind")):
        if k not in rep:
            continue
        lines.append(f"  per {title}:")
        for v, m in rep[k].items():
            bm = b.get(k, {}).get(v)
            un = rep["unmatched"]["by_lang"].get(v) if k == "by_lang" else None
            bun = b["unmatched"]["by_lang"].get(v) if k == "by_lang" else None
            lines.append(
                f"  {v:<28} {m['precision']:.3f} {m['recall']:.3f} {m['f1']:.3f}"
                f" {'' if un is None else f'{un:.3f}':>10}   "
                + (f"{bm['precision']:.3f} {bm['recall']:.3f} {bm['f1']:.3f}" if bm else " " * 17)
                + f" {'' if bun is None else f'{bun:.3f}':>10}")
    return lines


def plot(rep: dict, path: str | Path) -> None:
    """A PNG: F1 per kind, F1 per language, unmatched rate per language; kgcult's bars
    beside MakiEval's procedure's (when the report has it)."""
    plt = extras.pyplot("link", "the link eval chart")
    base = rep.get("makieval")
    panels = [("F1 per kind", rep.get("by_case", {}), (base or {}).get("by_case", {}), "f1"),
              ("F1 per language", rep.get("by_lang", {}), (base or {}).get("by_lang", {}), "f1"),
              ("unmatched rate per language", rep["unmatched"]["by_lang"],
               (base or {}).get("unmatched", {}).get("by_lang", {}), None)]
    fig, axes = plt.subplots(len(panels), 1, figsize=(12, 11))
    for ax, (title, ours, theirs, field) in zip(axes, panels):
        keys = list(ours)
        xs = range(len(keys))
        val = (lambda d, k: d[k][field] if k in d else 0.0) if field else (lambda d, k: d.get(k, 0.0))
        ax.bar([x - 0.2 for x in xs], [val(ours, k) for k in keys], width=0.4, label="kgcult")
        if base:
            ax.bar([x + 0.2 for x in xs], [val(theirs, k) for k in keys], width=0.4,
                   label="MakiEval procedure")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(keys, rotation=45, ha="right", fontsize=8)
        ax.set_ylim(0, 1)
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)

