"""The selection's view of a dump: the edges of the properties the specs walk, held as
integer arrays (memory grows with those edges, not with the dump), and the crawl backend
(:class:`kgcult.acquire.crawl.Backend`) that answers from them. Used by both engines: the
local one fills the index from its worker processes, the Spark one from the edges its
executors collect."""
from __future__ import annotations

from array import array

import numpy as np

from kgcult import ids
from kgcult.acquire.crawl import crawl
from kgcult.acquire.subgraphs import SubgraphSpec


class Ids:
    """Entity id <-> int64: Q123 -> 123*4, P123 -> 123*4+1, L123 -> 123*4+2, others by table."""

    def __init__(self):
        self.other: dict[str, int] = {}
        self.other_rev: list[str] = []

    def enc(self, e: str) -> int:
        parts = ids.split(e)
        if parts:
            return parts[1] * 4 + "QPL".index(parts[0])
        n = self.other.get(e)
        if n is None:
            n = len(self.other_rev) * 4 + 3
            self.other[e] = n
            self.other_rev.append(e)
        return n

    def dec(self, n: int) -> str:
        n = int(n)
        k = n & 3
        if k == 3:
            return self.other_rev[n >> 2]
        return "QPL"[k] + str(n >> 2)


class EdgeIndex:
    """Edges s -p-> o of the structural properties; ``has_value``: subjects with a non-item value."""

    def __init__(self, props: set[str]):
        self.props = set(props)
        self.ids = Ids()
        self._s = {p: array("q") for p in props}
        self._o = {p: array("q") for p in props}
        self.has_value: dict[str, set[int]] = {p: set() for p in props}  # non-item values
        self.subj: dict[str, np.ndarray] = {}
        self.obj: dict[str, np.ndarray] = {}

    def add(self, pid: str, s: str, o: str | None) -> None:
        si = self.ids.enc(s)
        if o is None:
            self.has_value[pid].add(si)
        else:
            self._s[pid].append(si)
            self._o[pid].append(self.ids.enc(o))

    def freeze(self) -> None:
        for p in self.props:
            self.subj[p] = np.frombuffer(self._s[p], dtype=np.int64) if len(self._s[p]) else np.zeros(0, np.int64)
            self.obj[p] = np.frombuffer(self._o[p], dtype=np.int64) if len(self._o[p]) else np.zeros(0, np.int64)

    def enc_all(self, ids) -> np.ndarray:
        return np.array(sorted(self.ids.enc(i) for i in ids), dtype=np.int64)

    def subjects_pointing_to(self, props, targets) -> set[str]:
        return self._other_ends(props, targets, self.obj, self.subj)

    def objects_of(self, props, sources) -> set[str]:
        return self._other_ends(props, sources, self.subj, self.obj)

    def _other_ends(self, props, ends, side: dict, other: dict) -> set[str]:
        """The entities at the ``other`` end of the ``props`` edges whose ``side`` end is in ``ends``."""
        e = self.enc_all(ends)
        out: set[str] = set()
        for p in props:
            out.update(self.ids.dec(x) for x in np.unique(other[p][np.isin(side[p], e)]))
        return out

    def subjects_with_any(self, props, sources) -> set[str]:
        s = self.enc_all(sources)
        sset = set(s.tolist())
        out: set[str] = set()
        for p in props:
            mask = np.isin(s, self.subj[p])
            out.update(self.ids.dec(x) for x in s[mask])
            out.update(self.ids.dec(x) for x in self.has_value[p] & sset)
        return out


class DumpBackend:
    """The crawl's backend for a dump: answers from the edge index."""

    def __init__(self, index: EdgeIndex, specs: dict[str, SubgraphSpec]):
        self.index, self.specs = index, specs
        self.members: dict[str, set[str]] = {}

    def seeds(self, spec):
        out: set[str] = set()
        for name in spec.seed_from:
            dep, mem = self.specs[name], self.members.get(name, set())
            if spec.seed_all:
                if dep.is_labels:
                    out |= mem
                else:
                    out |= self.index.subjects_with_any(dep.properties, mem)
                    out |= self.index.objects_of(dep.properties, mem)
            else:
                out |= self.index.objects_of(set(spec.seed_properties) & set(dep.properties), mem)
        return out

    def down(self, spec, level, frontier):
        return self.index.subjects_pointing_to(spec.member_properties, frontier)

    def fetch(self, spec, level, ids):
        return self.index.objects_of(spec.follow_properties, ids)


def needed_specs(specs: dict[str, SubgraphSpec], chosen: list[SubgraphSpec]) -> list[SubgraphSpec]:
    """``chosen`` and every spec they seed from, in spec order."""
    need: set[str] = set()
    stack = [s.name for s in chosen]
    while stack:
        n = stack.pop()
        if n in need:
            continue
        need.add(n)
        stack.extend(specs[n].seed_from)
    return [s for s in specs.values() if s.name in need]


def select(index: EdgeIndex, specs: dict[str, SubgraphSpec], needed: list[SubgraphSpec], reports) -> DumpBackend:
    """Run the crawl of every needed spec over ``index``; members land in the backend."""
    backend = DumpBackend(index, specs)
    for s in needed:
        members, warnings = crawl(s, backend)
        backend.members[s.name] = members
        if s.name in reports:
            reports[s.name].members = len(members)
            reports[s.name].warnings = warnings
    return backend
