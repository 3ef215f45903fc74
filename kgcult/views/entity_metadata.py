"""The ``entity-metadata`` view: QID -> labels, descriptions, country and the topic roots
it falls under (kgc:broader, i.e. (P31|P279|P361)+, the MakiEval typing)."""
from __future__ import annotations

import logging
from collections import defaultdict

from pyoxigraph import NamedNode

from kgcult import ids
from kgcult.views.engine import ViewContext
from kgcult.views.output import Output, item_key

log = logging.getLogger(__name__)
# Where the country comes from, in order of preference: origin P495, nationality P27, the
# P27 of its author/performer (P50/P175), P17.
COUNTRY_SOURCES = ("P495", "P27", "creator-P27", "P17")


def process(ctx: ViewContext) -> list[Output]:
    p = ctx.params
    langs = p["languages"]
    roots = [ids.node(q) for q in p["roots"]]
    members: dict[str, set[str]] = defaultdict(set)     # entity -> the roots it falls under
    if p["entities"]:
        for q in p["entities"]:
            members[ids.iri(q)]
        for r in ctx.select("roots-of", rows=(["entity", "root"],
                                              [[ids.node(q), rt] for q in p["entities"] for rt in roots])):
            members[r["entity"]].add(r["root"])
    else:
        for r in ctx.select("members", rows=(["root"], [[rt] for rt in roots])):
            members[r["entity"]].add(r["root"])
        for rt in roots:  # a root is its own topic
            members[rt.value].add(rt.value)
    ents = sorted(members, key=item_key)
    labels = ctx.labels(ents, langs)
    descs = ctx.labels(ents, langs, key="descriptions")
    countries: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    if ents:
        for r in ctx.select("countries", rows=(["entity"], [[NamedNode(e)] for e in ents])):
            countries[r["entity"]][r["source"]].add(r["country"])
    rows = []
    for e in ents:
        src = next((s for s in COUNTRY_SOURCES if countries[e].get(s)), None)
        rows.append({
            "qid": ids.shorten(e),
            "labels": labels.get(e, {}),
            "descriptions": descs.get(e, {}),
            "country": sorted((ids.shorten(c) for c in countries[e][src]), key=item_key) if src else [],
            "country_source": src,
            "topic_roots": sorted((ids.shorten(r) for r in members[e]), key=item_key),
        })
    log.info(f"entity-metadata: {len(rows)} entities")
    return [Output("entity-metadata.jsonl", rows, ctx.view.fields, main=True)]
