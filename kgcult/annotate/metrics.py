"""MakiEval's four metrics from raw answers, with no LLM: each answer annotated
(``Annotator``), each linked span a row of ``kgcult.eval.makieval.compute`` (granularity
from the graph: there is no extraction type), and the same metrics from any other spans
(the gold ones) for a side-by-side comparison.

A row's prompt is its ``model`` (default ``-``), ``lang``, ``topic``, ``country`` (the
prompt country; none: a neutral prompt) and ``prompt_type`` (default explicit/neutral)."""
from __future__ import annotations

from kgcult.eval import makieval


def linked_rows(ann, row: dict, spans: list[dict]) -> list[dict]:
    """The rows MakiEval's metrics read, one per span with a QID (the entity's granularity
    and countries from the graph, as ``kgcult link`` gives them)."""
    out = []
    for s in spans:
        q = s.get("qid")
        if not q:
            continue
        if "granularity_score" in s and "country" in s:
            gscore, country = s["granularity_score"], s["country"]
        else:
            eid = ann.ix.eid_of.get(q)
            if eid is None:
                continue
            ent = ann.records.entity(eid, row["lang"], row["topic"])
            gscore, country = ent["granularity_score"], list(ent["country"])
        r = {"qid": q, "lang": row["lang"], "topic": row["topic"], "prompt_country": row.get("country"),
             "model": row.get("model"), "granularity_score": gscore, "country": country, "status": "resolved"}
        if row.get("prompt_type"):
            r["prompt_type"] = row["prompt_type"]
        out.append(r)
    return out


def metrics(ann, rows: list[dict], spans_by_id: dict) -> dict:
    """``makieval.compute`` over the spans of ``rows`` (``spans_by_id``: id -> spans)."""
    linked = [x for r in rows for x in linked_rows(ann, r, spans_by_id.get(r["id"], []))]
    return makieval.compute(linked, granularity_from="graph")


def summary(res: dict) -> dict:
    """Means over prompts: granularity, diversity, specificity of the explicit prompts,
    consensus (Jaccard) over language pairs."""
    def mean(xs):
        xs = [x for x in xs if x is not None]
        return round(sum(xs) / len(xs), 4) if xs else None
    return {"granularity": mean(g["granularity"] for g in res["granularity"]),
            "diversity": mean(d["diversity"] for d in res["diversity"]),
            "specificity": mean(s["specificity"] for s in res["specificity"] if s["prompt_type"] != "neutral"),
            "consensus": mean(c["jaccard"] for c in res["consensus"])}
