"""The generic processor ``table``: the ``main`` query's solutions, optionally grouped.

config: ``{"group_by": [vars], "lists": [vars]}`` gives one row per distinct group_by
tuple, the ``lists`` variables collected into sorted lists of distinct values; with
``"qids": true`` IRIs under ``wd:`` are written as QIDs. ``qid``, ``str``, ``int`` and
``bool`` parameters are bound by name (``?name``)."""
from __future__ import annotations

from kgcult import ids
from kgcult.views.engine import ViewContext
from kgcult.views.output import Output, item_key


def process(ctx: ViewContext) -> list[Output]:
    v = ctx.view
    bindings = {}
    for name, p in v.parameters.items():
        value = ctx.params[name]
        if p.type == "qid":
            bindings[name] = ids.node(value)
        elif p.type in ("str", "int", "bool"):
            bindings[name] = value
    rows = ctx.select("main", bindings=bindings or None)
    if v.config.get("qids"):
        rows = [{k: ids.shorten(x) for k, x in r.items()} for r in rows]
    group_by = v.config.get("group_by")
    lists = v.config.get("lists", [])
    fields = v.fields or sorted({k for r in rows for k in r if not k.endswith("@lang")})
    if not group_by:
        rows = [{k: r[k] for k in fields if k in r} for r in rows]
        rows.sort(key=lambda r: [item_key(str(r.get(k, ""))) for k in fields])
        return [Output(f"{v.name}.jsonl", rows, fields, main=True)]
    groups: dict[tuple, dict] = {}
    for r in rows:
        key = tuple(r.get(k) for k in group_by)
        g = groups.setdefault(key, {k: r.get(k) for k in fields if k not in lists and k in r})
        for lk in lists:
            g.setdefault(lk, set())
            if r.get(lk) is not None:
                g[lk].add(r[lk])
    grouped = []
    for key in sorted(groups, key=lambda t: [item_key(x or "") for x in t]):
        g = groups[key]
        for lk in lists:
            g[lk] = sorted(g[lk], key=item_key)
        grouped.append(g)
    return [Output(f"{v.name}.jsonl", grouped, fields, main=True)]
