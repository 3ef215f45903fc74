"""The selection of a subgraph's members, shared by the endpoint and the dump sources.

:func:`crawl` walks down from the spec's roots along its member properties, adds the seeds
read from other subgraphs, then fetches the members' claims and follows the objects of
its follow properties to a fixpoint, within the spec's depth bounds. What a step asks
for is answered by a :class:`Backend`: SPARQL queries against an endpoint
(:mod:`kgcult.acquire.endpoint.mirror`) or an in-memory edge index of a dump
(:mod:`kgcult.acquire.dump.ingest`).
"""
from __future__ import annotations

import logging
from typing import Protocol

from kgcult import ids
from kgcult.acquire.subgraphs import SubgraphSpec

log = logging.getLogger(__name__)

class IdSets:
    """How a backend's entity sets are made and ordered: Python sets of ids, levels sorted
    by id (the default). A backend may hold sets its own way (the dump's integer arrays):
    the crawl only unites, subtracts, counts and iterates them."""

    def make(self, values):
        """A set of the entities ``values`` (ids)."""
        return set(values)

    def ordered(self, s):
        """A level, in the order its batches are asked for."""
        return sorted(s, key=ids.sort_key)


class Backend(Protocol):
    """What a crawl needs from a data source (sets as :class:`IdSets` says, when the
    backend is one)."""

    def seeds(self, spec: SubgraphSpec) -> set[str]:
        """Entities the subgraphs ``spec`` seeds from lead to."""

    def down(self, spec: SubgraphSpec, level: int, frontier: list[str]) -> set[str]:
        """Entities x with x p c for p in spec.member_properties, c in frontier."""

    def fetch(self, spec: SubgraphSpec, level: int, ids: list[str]) -> set[str]:
        """Fetch (write) the members' claims; return entity objects of follow properties."""


def crawl(spec: SubgraphSpec, backend: Backend) -> tuple[set[str], list[str]]:
    """Run the selection of ``spec`` against ``backend``; return (members, warnings), the
    members a set of the backend's kind (:class:`IdSets`), the warnings also logged.
    Deterministic: levels are sorted and cut into batches the same way on every run."""
    warnings: list[str] = []
    sets = backend if isinstance(backend, IdSets) else IdSets()
    seen = sets.make(spec.roots)
    frontier = sets.ordered(seen)
    for depth in range(spec.member_depth):
        if not frontier or not spec.member_properties:
            break
        new = backend.down(spec, depth, frontier) - seen
        seen |= new
        frontier = sets.ordered(new)
    else:
        if frontier and spec.member_properties and spec.member_depth > 1:
            warnings.append(f"{spec.name}: the member walk stopped at its depth bound {spec.member_depth} "
                            f"(the last level's {len(frontier)} entities were not expanded)")
    done = seen | backend.seeds(spec)
    level_ids = sets.ordered(done)
    for depth in range(spec.follow_depth + 1):
        if not level_ids:
            break
        objects = backend.fetch(spec, depth, level_ids)
        new = objects - done
        if depth == spec.follow_depth:
            if new and spec.follow_properties:
                warnings.append(f"{spec.name}: follow depth bound {spec.follow_depth} reached; "
                                f"{len(new)} referenced entities were not followed")
            break
        done |= new
        level_ids = sets.ordered(new)
    for w in warnings:
        log.warning(w)
    return done, warnings
