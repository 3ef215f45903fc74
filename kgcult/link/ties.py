"""A tie of the ranking (``rank.py``) narrowed in order: the closer name for the
normalized / English / any-language stages (``closeness``), the graph
(``disambiguate.settle``: specificity, country, coherence, popularity, granularity), then an
rdfs:label before a skos:altLabel (``label``). Each step that narrowed the tie is
reported in ``decided_by``."""
from __future__ import annotations

from kgcult.link import disambiguate, rank


def settle_tie(facts: disambiguate.GraphFacts, tied: list[tuple], mention: str, *,
               topic: str | None, country: str | None, context: list[int]) -> tuple[list[int], list[dict]]:
    """``tied``: (eid, stage, alias, lang used) of the tied candidates in ranking order.
    Returns (the eids left, in that order; the ``decided_by`` steps)."""
    ix = facts.ix
    eids = [t[0] for t in tied]
    steps: list[dict] = []
    if tied[0][1] in rank.CLOSENESS_STAGES:  # all tied hits come from the same stage
        m = mention.strip()
        close = {e: rank.closeness(facts.names(e, lg), m, lg) for e, _stage, _alias, lg in tied}
        best = min(close.values())
        if best < max(close.values()):
            steps.append({"by": "closeness", "values": {ix.qids[e]: close[e] for e in eids}})
            eids = [e for e in eids if close[e] == best]
    keep, graph = disambiguate.settle(eids, facts, topic=topic, country=country, context=context)
    steps += graph
    if len(keep) > 1:  # then a label before an alias
        alias_of = {t[0]: t[2] for t in tied}
        best = min(alias_of[e] for e in keep)
        labels = [e for e in keep if alias_of[e] == best]
        if len(labels) < len(keep):
            steps.append({"by": "label", "values": {ix.qids[e]: alias_of[e] for e in keep}})
            keep = labels
    return keep, steps
