"""Which entity a span names, among those whose names it matches: the country the prompt
names when it is one of them (한국, Korea and South Korea: South Korea in a text about it);
not one that lies only in other countries than the prompt's where another does not (Sinop
in a text about Turkey); never a region another
candidate is located in (the city of Kyoto, not Kyoto Prefecture); the names in the text's
language first (a label before an alias), then the graph settles what is left
(``kgcult.link.disambiguate.settle``: specificity, the prompt's country, coherence with the
other entities the text names, popularity, granularity), the lowest QID last."""
from __future__ import annotations

from kgcult.link import disambiguate
from kgcult.link.index.reader import label_chain
from kgcult.annotate.grammar import grammar
from kgcult.annotate.names import decode


def tiers(codes: tuple[int, ...], langs: list[str], lang: str) -> dict[int, int]:
    """eid -> its best tier: 0 a label in the text's language (or its fallbacks and kin), 1 an
    alias there, 2 a label in another language, 3 an alias there."""
    chain = set(label_chain(lang)) | set(grammar(lang).kin)
    out: dict[int, int] = {}
    for c in codes:
        eid, lid, _, alias = decode(c)
        t = (0 if langs[lid] in chain else 2) + alias
        if t < out.get(eid, 9):
            out[eid] = t
    return out


def choose(codes: tuple[int, ...], langs: list[str], lang: str, *, facts: disambiguate.GraphFacts,
           topic: str, country: str | None, context: list[int]) -> tuple[int, int, list[dict]]:
    """(eid, tier, the criteria that settled it) of the entity a span with ``codes`` names."""
    t = tiers(codes, langs, lang)
    if len(t) > 1 and country is not None:
        e = facts.ix.eid_of.get(country)
        if e in t:  # the country the prompt names, among the name's entities, is the one meant
            return e, t[e], [{"by": "prompt_country", "values": {facts.ix.qids[x]: int(x == e) for x in sorted(t)}}]
    if len(t) > 1 and country is not None:
        # the prompt's country: a name's entities that lie only in other countries are
        # another place or another cuisine's dish than the one meant, where one of them
        # does not (Sinop in a text about Turkey, not the Brazilian town; chili in one
        # about India, the pepper, not the Mexican dish)
        foreign = {e for e in t if (cs := facts.countries(e)) and country not in cs}
        if foreign and len(foreign) < len(t):
            t = {e: v for e, v in t.items() if e not in foreign}
    if len(t) > 1:
        inside = disambiguate.containers(t, facts.ix)
        if inside:
            t = {e: v for e, v in t.items() if e not in inside}
    best = min(t.values())
    tied = sorted((e for e, v in t.items() if v == best), key=lambda e: facts.ix.qnums[e])
    steps: list[dict] = []
    if len(tied) > 1:
        tied, steps = disambiguate.settle(tied, facts, topic=topic, country=country,
                                          context=[e for e in context if e not in tied])
    return tied[0], best, steps
