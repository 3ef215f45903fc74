"""Integer-coded directed graphs for the hierarchy closure: nodes are interned to dense ids,
edges are held as CSR arrays (numpy), strongly connected components are found without
recursion, and each node's reach (the nodes it reaches in one or more steps) is produced
component by component in reverse topological order, keeping a component's reach only
while a predecessor still needs it.

Nothing here knows about RDF: ``kgcult.store.hierarchy`` reads the edges, asks for the
reach of every node and writes the triples.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

from kgcult import lazy

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy.module("numpy")

ID = "int32"           # node ids' dtype (2^31 nodes is far beyond one machine's closure)


class NodeIds:
    """Dense ids for node keys (any hashable; kgcult uses the N-Triples form ``b"<iri>"``)."""

    def __init__(self) -> None:
        self._ids: dict = {}
        self.keys: list = []

    def id(self, key) -> int:
        i = self._ids.get(key)
        if i is None:
            i = self._ids[key] = len(self.keys)
            self.keys.append(key)
        return i


@dataclass
class Csr:
    """Out-edges of nodes ``0..n-1``: the successors of ``v`` are
    ``targets[offsets[v]:offsets[v + 1]]`` (sorted, without duplicates)."""
    offsets: np.ndarray
    targets: np.ndarray

    @property
    def n(self) -> int:
        return len(self.offsets) - 1

    @classmethod
    def from_edges(cls, sources: np.ndarray, targets: np.ndarray, n: int) -> "Csr":
        key = np.unique(sources.astype(np.int64) * n + targets.astype(np.int64)) if n else np.zeros(0, np.int64)
        src = (key // max(n, 1)).astype(ID)
        dst = (key % max(n, 1)).astype(ID)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=offsets[1:])
        return cls(offsets, dst)

    def successors(self, v: int) -> np.ndarray:
        return self.targets[self.offsets[v]:self.offsets[v + 1]]


def strong_components(g: Csr) -> tuple[np.ndarray, list[list[int]]]:
    """Tarjan's algorithm without recursion. Returns each node's component number and the
    components' members; components are numbered in reverse topological order (every
    component a component reaches has a smaller number)."""
    n = g.n
    offsets = g.offsets.tolist()
    targets = g.targets.tolist()
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    comp = np.full(n, -1, dtype=ID)
    components: list[list[int]] = []
    stack: list[int] = []
    counter = 0
    for root in range(n):
        if index[root] != -1:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        work = [(root, offsets[root])]
        while work:
            v, i = work[-1]
            end = offsets[v + 1]
            descended = False
            while i < end:
                w = targets[i]
                i += 1
                if index[w] == -1:
                    work[-1] = (v, i)
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, offsets[w]))
                    descended = True
                    break
                if on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
            if descended:
                continue
            work.pop()
            if work:
                u = work[-1][0]
                if low[v] < low[u]:
                    low[u] = low[v]
            if low[v] == index[v]:
                members = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    members.append(w)
                    if w == v:
                        break
                c = len(components)
                comp[members] = c
                components.append(members)
    return comp, components


class Reach:
    """Iterating yields, for every strongly connected component in reverse topological
    order: its members, the sorted ids of the nodes they reach in one or more steps, and
    whether it is a cycle (several members, or one with a self-loop: its members then reach
    themselves).

    A component's reach is held only until its last predecessor has used it, so memory
    follows the frontier of the walk, not the closure. Reaches of components holding a
    node flagged in ``keep`` (a boolean array over nodes) stay available afterwards through
    ``reach_of(node)``."""

    def __init__(self, g: Csr, keep: np.ndarray | None = None) -> None:
        self.g = g
        self.keep = keep
        self.comp = np.zeros(0, dtype=ID)
        self._kept: dict[int, np.ndarray] = {}

    def reach_of(self, node: int) -> np.ndarray:
        return self._kept.get(int(self.comp[node]), np.zeros(0, dtype=ID))

    def __iter__(self) -> Iterator[tuple[list[int], np.ndarray, bool]]:
        g = self.g
        comp, components = strong_components(g)
        self.comp = comp
        n_comp = len(components)
        # the condensation (edges between components), and how many predecessors will
        # read each component's reach
        src_comp = np.repeat(comp, np.diff(g.offsets))
        dst_comp = comp[g.targets] if len(g.targets) else np.zeros(0, ID)
        cross = src_comp != dst_comp
        cond = Csr.from_edges(src_comp[cross], dst_comp[cross], n_comp)
        readers = np.bincount(cond.targets, minlength=n_comp).tolist()
        self_loop = np.zeros(n_comp, dtype=bool)
        self_loop[src_comp[~cross]] = True
        kept_comp = np.zeros(n_comp, dtype=bool)
        if self.keep is not None and len(self.keep):
            kept_comp[comp[np.flatnonzero(self.keep)]] = True
        kept_comp = kept_comp.tolist()
        self_loop = self_loop.tolist()
        cond_offsets = cond.offsets.tolist()
        cond_targets = cond.targets
        # a component's members plus its reach: what it adds to each predecessor's reach
        closed: dict[int, np.ndarray] = {}
        for c, members in enumerate(components):
            lo, hi = cond_offsets[c], cond_offsets[c + 1]
            succ = cond_targets[lo:hi].tolist()
            if not succ:
                r = np.zeros(0, dtype=ID)
            elif len(succ) == 1:
                r = closed[succ[0]]
            else:
                r = np.unique(np.concatenate([closed[s] for s in succ]))
            cyclic = self_loop[c] or len(members) > 1
            if cyclic:
                r = np.union1d(r, np.array(members, dtype=ID)).astype(ID)
            yield members, r, cyclic
            for s in succ:
                readers[s] -= 1
                if readers[s] == 0:
                    del closed[s]
            if readers[c]:
                closed[c] = r if cyclic else np.union1d(r, np.array(members, dtype=ID)).astype(ID)
            if kept_comp[c]:
                self._kept[c] = r

