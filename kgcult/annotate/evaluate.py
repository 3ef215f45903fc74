"""Scores of annotated texts against a gold file (``../shared/annotation``'s format: rows
with ``spans`` of start, end, qid or null, optional ``alt`` QIDs), overall and per language:

* strong match: a predicted span with the gold span's offsets and QID (one of ``alt``, or
  both null);
* weak match: a predicted span overlapping a gold span, with its QID;
* span only: the gold span's offsets, whatever the QID;
* NIL linked: the gold null spans that a predicted span with a QID overlaps.

Precision is over predicted spans, recall over gold spans; each gold span is matched once."""
from __future__ import annotations

from collections import defaultdict


def _ok(p: dict, g: dict) -> bool:
    q = p.get("qid")
    return q == g.get("qid") or (q is not None and q in (g.get("alt") or ()))


def _prf(tp_p: int, n_p: int, tp_g: int, n_g: int) -> dict:
    p = tp_p / n_p if n_p else 0.0
    r = tp_g / n_g if n_g else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f, 4)}


def score_text(pred: list[dict], gold: list[dict]) -> dict:
    """Counts for one text."""
    exact = {(g["start"], g["end"]): g for g in gold}
    strong = sum(1 for p in pred if (g := exact.get((p["start"], p["end"]))) is not None and _ok(p, g))
    span = sum(1 for p in pred if (p["start"], p["end"]) in exact)
    weak_p = sum(1 for p in pred if any(p["start"] < g["end"] and g["start"] < p["end"] and _ok(p, g) for g in gold))
    weak_g = sum(1 for g in gold if any(p["start"] < g["end"] and g["start"] < p["end"] and _ok(p, g) for p in pred))
    nil = [g for g in gold if g.get("qid") is None]
    nil_linked = sum(1 for g in nil if any(p.get("qid") and p["start"] < g["end"] and g["start"] < p["end"]
                                          for p in pred))
    return {"pred": len(pred), "gold": len(gold), "strong": strong, "span": span, "weak_p": weak_p,
            "weak_g": weak_g, "nil": len(nil), "nil_linked": nil_linked}


def summarize(c: dict) -> dict:
    return {"texts": c["texts"], "gold": c["gold"], "pred": c["pred"],
            "strong": _prf(c["strong"], c["pred"], c["strong"], c["gold"]),
            "weak": _prf(c["weak_p"], c["pred"], c["weak_g"], c["gold"]),
            "span": _prf(c["span"], c["pred"], c["span"], c["gold"]),
            "nil": c["nil"], "nil_linked": c["nil_linked"],
            "nil_linked_rate": round(c["nil_linked"] / c["nil"], 4) if c["nil"] else 0.0}


def score(gold_rows: list[dict], predicted: dict) -> dict:
    """``{"overall", "by_lang"}`` of ``predicted`` (id -> spans) against ``gold_rows``."""
    tot: dict = defaultdict(int)
    by: dict = defaultdict(lambda: defaultdict(int))
    for g in gold_rows:
        c = score_text(predicted.get(g["id"], []), g["spans"])
        for k, v in c.items():
            tot[k] += v
            by[g["lang"]][k] += v
        tot["texts"] += 1
        by[g["lang"]]["texts"] += 1
    return {"overall": summarize(tot), "by_lang": {lg: summarize(c) for lg, c in sorted(by.items())}}


def errors(gold_rows: list[dict], predicted: dict) -> list[dict]:
    """The spans that are not strong matches, both sides, per text."""
    out = []
    for g in gold_rows:
        pred = predicted.get(g["id"], [])
        gk = {(s["start"], s["end"], s.get("qid")) for s in g["spans"]}
        pk = {(s["start"], s["end"], s.get("qid")) for s in pred}
        for s in g["spans"]:
            if (s["start"], s["end"], s.get("qid")) not in pk and not any(
                    (p["start"], p["end"]) == (s["start"], s["end"]) and _ok(p, s) for p in pred):
                out.append({"id": g["id"], "side": "missed", "text": s["text"], "qid": s.get("qid"),
                            "start": s["start"]})
        for p in pred:
            if (p["start"], p["end"], p.get("qid")) not in gk and not any(
                    (p["start"], p["end"]) == (s["start"], s["end"]) and _ok(p, s) for s in g["spans"]):
                out.append({"id": g["id"], "side": "wrong", "text": p["text"], "qid": p.get("qid"),
                            "label": p.get("label"), "match": p.get("match"), "start": p["start"]})
    return out
