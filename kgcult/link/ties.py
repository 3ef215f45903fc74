"""A tie of the ranking (``rank.py``) narrowed in order: the closer name for the
normalized / English / any-language stages (``closeness``), the graph
(``disambiguate.settle``: specificity, country, coherence, popularity, granularity), then an
rdfs:label before a skos:altLabel (``label``). Each step that narrowed the tie is
reported in ``decided_by``."""
from __future__ import annotations

from kgcult.link import disambiguate, rank
from kgcult.link.state import Ranked, State


def settle_top(facts: disambiguate.GraphFacts, ranked: list[Ranked], s: State,
               context: list[int] | None = None) -> tuple[list[dict] | None, list[str] | None]:
    """Settle a tie at the top of ``ranked`` (reordered in place: the candidates left
    first, in their order). Returns (the ``decided_by`` steps, the QIDs still tied when
    more than one is left); (None, None) without a tie. ``context``: the entities resolved
    for the mention's group."""
    n = rank.tied_at_top(ranked)
    if not n:
        return None, None
    keep, decided = settle_tie(facts, ranked[:n], s.mention, topic=s.topic,
                               country=s.row.get("country"), context=context or [])
    order = {e: i for i, e in enumerate(keep)}
    ranked[:n] = sorted(ranked[:n], key=lambda r: (r.eid not in order, order.get(r.eid, 0), r.key))
    return decided, ([facts.ix.qids[e] for e in keep] if len(keep) > 1 else None)


def settle_tie(facts: disambiguate.GraphFacts, tied: list[Ranked], mention: str, *,
               topic: str | None, country: str | None, context: list[int]) -> tuple[list[int], list[dict]]:
    """``tied``: the tied candidates in ranking order. Returns (the eids left, in that
    order; the ``decided_by`` steps)."""
    ix = facts.ix
    eids = [t.eid for t in tied]
    steps: list[dict] = []
    if tied[0].cand.stage.closeness:  # all tied hits come from the same stage
        m = mention.strip()
        close = {t.eid: rank.closeness(facts.names(t.eid, t.cand.lang), m, t.cand.lang) for t in tied}
        best = min(close.values())
        if best < max(close.values()):
            steps.append({"by": "closeness", "values": {ix.qids[e]: close[e] for e in eids}})
            eids = [e for e in eids if close[e] == best]
    keep, graph = disambiguate.settle(eids, facts, topic=topic, country=country, context=context)
    steps += graph
    if len(keep) > 1:  # then a label before an alias
        alias_of = {t.eid: t.cand.alias for t in tied}
        best = min(alias_of[e] for e in keep)
        labels = [e for e in keep if alias_of[e] == best]
        if len(labels) < len(keep):
            steps.append({"by": "label", "values": {ix.qids[e]: alias_of[e] for e in keep}})
            keep = labels
    return keep, steps
