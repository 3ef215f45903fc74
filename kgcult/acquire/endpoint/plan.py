"""The mirror's plan: how large each part of a member walk is, counted at the endpoint
before it is enumerated, and the enumeration queries cut to fit.

Before anything is fetched, :func:`estimate` counts every spec's first level (its roots'
fan-out, ``count-one.rq``: one triple pattern with everything bound, which Blazegraph
answers from its index range counts; under a scope, one ``count-partition.rq`` per scope
value). A spec whose first level exceeds ``max_members`` is refused with the number and a
pointer to ``kgcult ingest``. During the walk, :meth:`Planner.units` turns the counts of a
batch of classes (``count.rq``) into enumeration queries that each return at most
``page_size`` rows: small classes packed together, a large class under a scope split by
scope value (one partition per value, e.g. per country of citizenship), and any part
still too large split by the last digits of the entity IRI (10, 100, ... parts plus one
for the ids with fewer digits: complete and disjoint). Classes with no members are not
enumerated at all. No query sorts or pages.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from kgcult.acquire.endpoint.queries import count_classes_query, count_one_query, members_query
from kgcult.acquire.subgraphs import SubgraphSpec
from kgcult.errors import KgcultError

DEFAULT_MAX_MEMBERS = 5_000_000


class PlanRefused(KgcultError):
    """Specs too large for an endpoint (their counts say so), refused before fetching."""


@dataclass
class Unit:
    """One enumeration query and what it is expected to return."""
    template: str      # template name (members, members-scoped, members-partition)
    query: str
    rows: int          # the count it was sized by (an upper bound for a scoped batch)
    what: str


@dataclass
class Estimate:
    """A spec's size as counted before the run: its first level (roots' fan-out, within
    the scope), or None where nothing can be counted before earlier specs ran (seeded)."""
    name: str
    first_level: int | None
    roots: int = 0
    partitions: int = 0                  # scope values with members at the first level
    detail: dict = field(default_factory=dict)   # "P31 Q5 [Q30]" -> count
    refused: str | None = None

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def suffix_patterns(n: int, page: int) -> list[str]:
    """Regular expressions that split ``n`` entities into parts of about ``page`` by the
    last k digits of their IRI: 10**k suffixes plus one for ids of fewer digits."""
    if n <= page:
        return [""]
    k = max(1, math.ceil(math.log10(n / page)))
    pats = [f"{i:0{k}d}$" for i in range(10 ** k)]
    if k > 1:
        pats.append(f"[^0-9][0-9]{{1,{k - 1}}}$")
    return pats


class Planner:
    """Counts (cached per query for the run) and the enumeration units built from them.
    ``ask(query, what) -> int`` runs a one-number count, ``ask_rows(query, what) ->
    {class: n}`` a grouped one (the backend supplies both, memoized in the checkpoint)."""

    def __init__(self, templates: dict[str, str], page_size: int, max_members: int = DEFAULT_MAX_MEMBERS):
        self.tpl, self.page, self.max_members = templates, page_size, max_members

    # -- before the run --------------------------------------------------------------------
    def estimate(self, spec: SubgraphSpec, ask) -> Estimate:
        est = Estimate(spec.name, None, roots=len(spec.roots))
        if not spec.roots:
            return est
        total = len(spec.roots)
        if spec.member_properties and spec.member_depth:
            for p in spec.member_properties:
                for r in spec.roots:
                    n = ask(count_one_query(self.tpl["count-one"], r, p), f"{spec.name}: plan, count {p} {r}")
                    if p in spec.scoped_properties and n > self.page:
                        parts = self.partition_counts(spec, p, r, ask)
                        est.partitions = max(est.partitions, sum(1 for v in parts.values() if v))
                        n = min(n, sum(parts.values()))
                    est.detail[f"{p} {r}"] = n
                    total += n
        est.first_level = total
        if total > self.max_members:
            est.refused = (f"{spec.name}: about {total:,} members at its first level (more than "
                           f"--max-members {self.max_members:,})")
        return est

    def partition_counts(self, spec: SubgraphSpec, prop: str, cls: str, ask) -> dict[str, int]:
        """Members of one class per scope value (count-partition.rq each)."""
        return {v: ask(count_one_query(self.tpl["count-partition"], cls, prop, spec.scope_property, v),
                       f"{spec.name}: count {prop} {cls} with {spec.scope_property} {v}")
                for v in spec.scope_values}

    # -- during the walk -------------------------------------------------------------------
    def class_counts(self, spec: SubgraphSpec, prop: str, classes: list[str], level: int, ask, ask_rows,
                     what: str) -> dict[str, int]:
        """{class: members one ``prop`` below it}: count-one.rq per root at the first level
        (the plan's own queries), count.rq per batch below."""
        if level == 0:
            return {c: ask(count_one_query(self.tpl["count-one"], c, prop), f"{spec.name}: plan, count {prop} {c}")
                    for c in classes}
        return ask_rows(count_classes_query(self.tpl["count"], classes, prop), what)

    def units(self, spec: SubgraphSpec, prop: str, counts: dict[str, int], order: list[str], ask,
              what: str) -> list[Unit]:
        """Enumeration queries for the classes ``order`` (in that order) with ``counts``."""
        scoped = prop in spec.scoped_properties
        out: list[Unit] = []
        group: list[str] = []
        rows = 0

        def flush():
            nonlocal group, rows
            if group:
                if scoped:
                    q = members_query(self.tpl["members-scoped"], group, prop, scope=spec.scope_property,
                                      values=list(spec.scope_values))
                    out.append(Unit("members-scoped", q, rows, f"{what}, {prop} below {group[0]}..{group[-1]} "
                                                               f"({len(group)} classes, scoped)"))
                else:
                    q = members_query(self.tpl["members"], group, prop)
                    out.append(Unit("members", q, rows, f"{what}, {prop} below {group[0]}..{group[-1]} "
                                                        f"({len(group)} classes)"))
            group, rows = [], 0

        for c in order:
            n = counts.get(c, 0)
            if not n:
                continue
            if n <= self.page:
                if rows + n > self.page:
                    flush()
                group.append(c)
                rows += n
                continue
            if scoped:
                parts = self.partition_counts(spec, prop, c, ask)
                for v in spec.scope_values:
                    m = parts[v]
                    if m > self.max_members:
                        raise PlanRefused(self.refusal(spec, f"{prop} {c} with {spec.scope_property} {v}", m))
                    for pat in (suffix_patterns(m, self.page) if m else []):
                        q = members_query(self.tpl["members-partition"], [c], prop, pat,
                                          scope=spec.scope_property, value=v)
                        out.append(Unit("members-partition", q, m, f"{what}, {prop} {c} with "
                                                                   f"{spec.scope_property} {v}" + (f" /{pat}/" if pat else "")))
            else:
                if n > self.max_members:
                    raise PlanRefused(self.refusal(spec, f"{prop} {c}", n))
                for pat in suffix_patterns(n, self.page):
                    q = members_query(self.tpl["members"], [c], prop, pat)
                    out.append(Unit("members", q, n, f"{what}, {prop} below {c} /{pat}/"))
        flush()
        return out

    def refusal(self, spec: SubgraphSpec, part: str, n: int) -> str:
        return (f"{spec.name}: {part} has {n:,} members, more than --max-members {self.max_members:,}: "
                + POINTER)


POINTER = ("too large to mirror from an endpoint within its limits; take it from a dump with "
           "`kgcult ingest` (docs/mirror.md), or scope the spec (kgc:scopeProperty in --specs) "
           "or raise --max-members")


def refuse(estimates: list[Estimate]) -> None:
    """Raise :class:`PlanRefused` naming every refused spec, with its number and the pointer."""
    reasons = [e.refused for e in estimates if e.refused]
    if reasons:
        raise PlanRefused("; ".join(reasons) + ": " + POINTER)
