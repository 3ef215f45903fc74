"""Scoring a model's free-text answers to synthesized questions: each answer is linked to
entities with the entity linker and compared with the question's gold QIDs."""
from __future__ import annotations

import re
from typing import Iterable

from kgcult import ids
from kgcult.errors import KgcultError
from kgcult.link import Linker
from kgcult.synth.graph import GraphCache
from kgcult.synth.name_match import normalize_text

MATCH_CLASSES = ("exact", "alias", "ancestor", "miss")
_SPLIT = re.compile(r"\s*(?:[,;/、，；]|\band\b|\bor\b|\n)\s*")


def _answer_text(rec: dict, path, n) -> str:
    for k in ("answer", "prediction", "response", "output"):
        if isinstance(rec.get(k), str):
            return rec[k]
    raise KgcultError(f"{path}:{n}: no answer text (field 'answer', 'prediction', 'response' or 'output')")


def _spans(text: str) -> list[str]:
    t = text.strip().strip(".。!！?？").strip()
    parts = [p.strip().strip(".。!！?？\"'«»「」“”").strip() for p in _SPLIT.split(t)]
    spans = [t] + [p for p in parts if p and p != t]
    return list(dict.fromkeys(spans))


def score_answers(store, questions: Iterable[dict], answers: Iterable[dict], linker=None,
                  answers_path: str = "answers") -> dict:
    """Link each free-text answer (the whole answer, then its comma/and-separated parts) and
    compare with the question's gold QIDs. An answer record holds the question's ``id`` and
    its text (``answer``, ``prediction``, ``response`` or ``output``); a record's ``_line``
    (its line in a file, when it was read from one) is named in errors.

    * exact: a span resolves to a gold QID and is one of its labels (any language; case,
      width and punctuation ignored);
    * alias: a span resolves to a gold QID otherwise (an alias, a fuzzy or token match the
      linker accepted);
    * ancestor: a span resolves to an ancestor of a gold QID in the closure
      (kgc:broader (P31|P279|P361)+, kgc:locatedIn P131+), e.g. "noodle soup" for a ramen;
    * miss: none of these. Unanswered questions count as misses.

    A span longer than the linker's mention cap (``mention_rows.Limits``: 1,000 characters,
    64 words) is not linked: a long answer as a whole names nothing.

    Returns overall figures and the same per topic, language and country."""
    by_id = {}
    for q in questions:
        if "id" not in q or "gold_qids" not in q:
            raise KgcultError(f"questions line {q.get('_line', '?')}: missing 'id' or 'gold_qids'")
        by_id[q["id"]] = q
    if linker is None:
        linker = Linker.open(store)
    results = {}
    cache = GraphCache(store)
    for rec in answers:
        n = rec.get("_line", "?")
        qid = rec.get("id")
        if qid not in by_id:
            raise KgcultError(f"{answers_path}:{n}: id {qid!r} is not in the questions file")
        results[qid] = _classify(store, linker, by_id[qid], _answer_text(rec, answers_path, n), cache)
    per = {qid: results.get(qid, {"class": "miss", "linked": [], "answered": False}) for qid in by_id}
    report = {"questions": len(by_id), "answered": sum(1 for r in per.values() if r["answered"]),
              "overall": _tally(per.values())}
    for key, field_ in (("by_topic", "topic"), ("by_lang", "lang"), ("by_country", "country")):
        groups: dict[str, list] = {}
        for qid, q in by_id.items():
            groups.setdefault(str(q.get(field_, "")), []).append(per[qid])
        report[key] = {g: _tally(rs) for g, rs in sorted(groups.items())}
    report["items"] = [{"id": qid, **per[qid]} for qid in sorted(per)]
    return report


def _surface_key(s: str) -> str:
    return re.sub(r"[\s\W_]+", " ", normalize_text(s)).strip()


def _classify(store, linker, q: dict, text: str, cache: GraphCache) -> dict:
    gold = set(q["gold_qids"])
    cache.fetch_names(ids.iri(g) for g in gold)
    linked = []
    best = "miss"
    for span in _spans(text):
        if not linker.limits.fits(span):  # a long answer as a whole is no name (kgcult/link/mention_rows.py)
            continue
        res = linker.link(span, lang=q.get("lang", "en"))
        cands = []
        if res.get("qid"):
            cands.append(res["qid"])
        cands += [t for t in (res.get("tied") or []) if t != res.get("qid")]
        for c in cands:
            linked.append({"span": span, "qid": c, "match": res.get("match"), "status": res.get("status")})
            if c in gold:
                key = _surface_key(span)
                labels = {_surface_key(v) for v in cache.labels.get(ids.iri(c), {}).values()}
                cls = "exact" if key in labels else "alias"
            elif _is_ancestor(store, c, gold):
                cls = "ancestor"
            else:
                continue
            if MATCH_CLASSES.index(cls) < MATCH_CLASSES.index(best):
                best = cls
        if best == "exact":
            break
    return {"class": best, "linked": linked, "answered": bool(text.strip())}


def _is_ancestor(store, candidate: str, gold: set[str]) -> bool:
    rows = [(ids.node(g), ids.node(candidate)) for g in sorted(gold)]
    res = store.query("ASK { { ?g kgc:broader ?c } UNION { ?g kgc:locatedIn ?c } UNION { ?g kgc:partOf ?c } }",
                      rows=(["g", "c"], rows))
    return bool(res)


def _tally(rs) -> dict:
    rs = list(rs)
    n = len(rs)
    counts = {c: sum(1 for r in rs if r["class"] == c) for c in MATCH_CLASSES}
    d: dict[str, float] = {"n": n, **counts}
    d["exact_rate"] = round(counts["exact"] / n, 4) if n else 0.0
    d["alias_rate"] = round(counts["alias"] / n, 4) if n else 0.0
    d["ancestor_rate"] = round(counts["ancestor"] / n, 4) if n else 0.0
    d["accuracy"] = round((counts["exact"] + counts["alias"]) / n, 4) if n else 0.0
    d["lenient_accuracy"] = round((counts["exact"] + counts["alias"] + counts["ancestor"]) / n, 4) if n else 0.0
    return d


def format_report(report: dict) -> str:
    out = [f"{report['questions']} questions, {report['answered']} answered"]
    head = f"{'':<14} {'n':>4} {'exact':>6} {'alias':>6} {'ancest':>6} {'miss':>5} {'acc':>6} {'lenient':>7}"

    def row(name, d):
        return (f"{name:<14} {d['n']:>4} {d['exact']:>6} {d['alias']:>6} {d['ancestor']:>6} {d['miss']:>5} "
                f"{d['accuracy']:>6.3f} {d['lenient_accuracy']:>7.3f}")
    out.append(head)
    out.append(row("overall", report["overall"]))
    for key, title in (("by_topic", "topic"), ("by_lang", "language"), ("by_country", "country")):
        out.append(f"-- per {title}")
        for g, d in report[key].items():
            out.append(row(g, d))
    return "\n".join(out) + "\n"
