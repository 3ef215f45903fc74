"""The result record of a linked mention (its fields: the module docstring of
``kgcult.link`` and docs/link.md, "Output"): the input's fields, the top candidates, and for
a resolved or ambiguous mention its entity's fields. The fields of an entity and of a
candidate are memoized (bounded), as mentions repeat."""
from __future__ import annotations

from kgcult.link import disambiguate, memo
from kgcult.link.state import Ranked, State

MAX_CANDIDATES = 10
INPUT_FIELDS = frozenset({"mention", "lang", "topic", "country"})
UNRESOLVED = {"qid": None, "label": None, "label_en": None, "match": None, "lang_used": None,
              "status": "unresolved", "candidates": None, "evidence": None, "granularity": None,
              "granularity_score": None, "country": None, "description": None}


class Records:
    """Builds result records over one index and its graph facts."""

    def __init__(self, facts: disambiguate.GraphFacts):
        self.facts = facts
        self.ix = facts.ix
        self._entities = memo.Memo(memo.ENTITIES)    # (eid, lang, topic) -> the entity's output fields
        self._candidates = memo.Memo(memo.ENTITIES)  # candidate output dicts (copied into each result)

    def record(self, s: State, ranked: list[Ranked], decided: list[dict] | None,
               tied: list[str] | None) -> dict:
        """The record of ``s``, whose candidates are ``ranked`` (the tie at the top settled:
        ``decided``, the steps; ``tied``, the QIDs left tied, or None)."""
        out = head(s)
        cands = self.candidates(ranked[:MAX_CANDIDATES], s.lang)
        top = ranked[0] if ranked else None
        if top is None or not top.valid:
            out.update(UNRESOLVED)
            out["candidates"] = cands
            out["evidence"] = []
            out["country"] = []
            return out
        ent = self.entity(top.eid, s.lang, s.topic)
        out["qid"] = ent["qid"]
        out["label"] = ent["label"]
        out["label_en"] = ent["label_en"]
        out["match"] = top.cand.stage.match_name(top.cand.alias)
        out["lang_used"] = top.cand.lang
        out["status"] = "ambiguous" if tied else "resolved"
        out["candidates"] = cands
        out["evidence"] = [list(x) for x in ent["evidence"]]
        out["granularity"] = ent["granularity"]
        out["granularity_score"] = ent["granularity_score"]
        out["country"] = list(ent["country"])
        out["description"] = ent["description"]
        if decided:
            out["decided_by"] = decided
        if tied:
            out["tied"] = tied
        return out

    def candidates(self, ranked: list[Ranked], lang: str) -> list[dict]:
        """The ``candidates`` field: one dict per ranked candidate."""
        ix, memo_ = self.ix, self._candidates
        out = []
        for r in ranked:
            c = r.cand
            ck = (r.eid, lang, c.stage, c.alias, c.lang, c.sub, r.valid)
            d = memo_.get(ck)
            if d is None:
                d = memo_.put(ck, {
                    "qid": ix.qids[r.eid],
                    "label": ix.label(r.eid, lang) or ix.label(r.eid, "en") or ix.label(r.eid, c.lang),
                    "match": c.stage.match_name(c.alias), "lang": c.lang, "valid": r.valid,
                    "sitelinks": ix.sitelinks[r.eid], "score": c.stage.score(c.alias, c.sub),
                })
            out.append(d.copy())
        return out

    def entity(self, eid: int, lang: str, topic: str | None) -> dict:
        """The fields of the linked entity (label, evidence, granularity, country, ...)."""
        ek = (eid, lang, topic)
        ent = self._entities.get(ek)
        if ent is None:
            ix, facts = self.ix, self.facts
            gran, gscore = facts.granularity(eid, topic)
            ent = self._entities.put(ek, {
                "qid": ix.qids[eid], "label": ix.label(eid, lang), "label_en": ix.label(eid, "en"),
                "evidence": facts.evidence(eid, topic) if topic else [],
                "granularity": gran, "granularity_score": gscore,
                "country": facts.shown_countries(eid), "description": ix.description(eid, lang),
            })
        return ent


def head(s: State) -> dict:
    """The input's part of the record: id, mention, lang, topic, the prompt's country as
    ``prompt_country``, and what else the caller attached (type, model, group, ...)."""
    row = s.row
    out = {"id": row["id"]} if "id" in row else {}
    out["mention"] = s.mention
    out["lang"] = s.lang
    out["topic"] = s.topic
    if len(row) > 3 or row.get("country") is not None:
        if row.get("country") is not None:
            out["prompt_country"] = row["country"]
        for k, v in row.items():  # pass through what the caller attached (type, model, ...)
            if k not in out and k not in INPUT_FIELDS and v is not None:
                out[k] = v
    return out
