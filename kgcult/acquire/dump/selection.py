"""The selection's view of a dump: the edges of the properties the specs walk and the
member sets, held as integer arrays (a few bytes per edge and per membership, whatever the
dump's size), and the crawl backend (:class:`kgcult.acquire.crawl.Backend`) that answers
from them. Used by both engines: the local one fills the index with the integer edges its
worker processes send, the Spark one from the edges its executors collect.

An entity is an integer code (:func:`code`): ``Q123`` -> 123*4, ``P123`` -> 123*4+1,
``L123`` -> 123*4+2; anything else (a lexeme's form or sense) gets 4*k+3 from the index's
table (:class:`Ids`). Codes are stored as int32 while they fit (ids below 536 M), int64
beyond.
"""
from __future__ import annotations

import sys
from array import array

import numpy as np

from kgcult.acquire.crawl import IdSets, crawl
from kgcult.acquire.subgraphs import SubgraphSpec

_KIND = {"Q": 0, "P": 1, "L": 2}
_INT32_MAX = 2**31 - 1
_CHUNK = 1 << 22  # values per membership test: bounds its temporaries (~26 B per value)


def code(e: str) -> int | None:
    """The code of a Q/P/L id (``Q42`` -> 168), None for anything else."""
    k = _KIND.get(e[:1])
    if k is None:
        return None
    num = e[1:]
    if num.isascii() and num.isdigit() and num[:1] != "0":
        return int(num) * 4 + k
    return None


class Ids:
    """Entity id <-> code; ids that are not Q/P/L by a table (4*k+3)."""

    def __init__(self) -> None:
        self.other: dict[str, int] = {}
        self.other_rev: list[str] = []

    def enc(self, e: str) -> int:
        n = code(e)
        if n is not None:
            return n
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


class IdSet:
    """An immutable set of entity codes: a sorted, duplicate-free integer array."""

    __slots__ = ("codes",)

    def __init__(self, codes: np.ndarray):
        self.codes = codes

    @classmethod
    def of(cls, values) -> "IdSet":
        a = np.asarray(values, dtype=np.int64)
        return cls(np.unique(a))

    def __or__(self, other: "IdSet") -> "IdSet":
        if not len(other.codes):
            return self
        if not len(self.codes):
            return other
        return IdSet(np.union1d(self.codes, other.codes))

    def __sub__(self, other: "IdSet") -> "IdSet":
        if not len(other.codes) or not len(self.codes):
            return self
        return IdSet(self.codes[~contains(other.codes, self.codes)])

    def __len__(self) -> int:
        return len(self.codes)

    def __bool__(self) -> bool:
        return len(self.codes) > 0

    def __iter__(self):
        return iter(self.codes.tolist())


def contains(sorted_set: np.ndarray, values: np.ndarray) -> np.ndarray:
    """A boolean mask: which ``values`` are in ``sorted_set`` (sorted, unique)."""
    if not len(sorted_set):
        return np.zeros(len(values), dtype=bool)
    out = np.empty(len(values), dtype=bool)
    for i in range(0, len(values), _CHUNK):
        v = values[i:i + _CHUNK]
        at = np.searchsorted(sorted_set, v)
        at[at == len(sorted_set)] = 0
        out[i:i + _CHUNK] = sorted_set[at] == v
    return out


class EdgeIndex:
    """Edges s -p-> o of the structural properties; ``has_value``: subjects with a non-item value."""

    def __init__(self, props: set[str]):
        self.props = set(props)
        self.ids = Ids()
        self.typecode = "i"
        self._so = {p: array("i") for p in props}   # s, o, s, o, ...
        self._hv = {p: array("i") for p in props}
        self.subj: dict[str, np.ndarray] = {}
        self.obj: dict[str, np.ndarray] = {}
        self.has_value: dict[str, np.ndarray] = {}

    def _widen(self) -> None:
        self.typecode = "q"
        for d in (self._so, self._hv):
            for p in d:
                d[p] = array("q", d[p])

    def add_coded(self, pid: str, so: array, has_value: array) -> None:
        """Edges already coded by a worker: ``so`` interleaved subject, object codes;
        ``has_value`` subjects with a non-item value."""
        for d, values in ((self._so, so), (self._hv, has_value)):
            if not len(values):
                continue
            if self.typecode == "i" and max(values) > _INT32_MAX:
                self._widen()
            d[pid].extend(values if values.typecode == self.typecode else array(self.typecode, values))

    def add(self, pid: str, s: str, o: str | None) -> None:
        """One edge by ids (``o`` None: a non-item value)."""
        values = (self.ids.enc(s),) if o is None else (self.ids.enc(s), self.ids.enc(o))
        if self.typecode == "i" and max(values) > _INT32_MAX:
            self._widen()
        (self._hv if o is None else self._so)[pid].extend(values)

    def nbytes(self) -> int:
        """Bytes the edges take (arrays as allocated, over-allocation included)."""
        return sum(sys.getsizeof(a) for d in (self._so, self._hv) for a in d.values())

    def edge_count(self) -> int:
        return sum(len(a) for a in self._so.values()) // 2

    def freeze(self) -> None:
        dtype = np.int32 if self.typecode == "i" else np.int64
        for p in self.props:
            so = np.frombuffer(self._so[p], dtype=dtype) if len(self._so[p]) else np.zeros(0, dtype)
            self.subj[p], self.obj[p] = so[0::2], so[1::2]
            hv = np.frombuffer(self._hv[p], dtype=dtype) if len(self._hv[p]) else np.zeros(0, dtype)
            self.has_value[p] = np.unique(hv)

    def id_set(self, values) -> IdSet:
        """The codes of ids (strings)."""
        return IdSet.of([self.ids.enc(v) for v in values])

    def names(self, s: IdSet) -> list[str]:
        return [self.ids.dec(x) for x in s.codes]

    def subjects_pointing_to(self, props, targets: IdSet) -> IdSet:
        return self._other_ends(props, targets, self.obj, self.subj)

    def objects_of(self, props, sources: IdSet) -> IdSet:
        return self._other_ends(props, sources, self.subj, self.obj)

    def _other_ends(self, props, ends: IdSet, side: dict, other: dict) -> IdSet:
        """The entities at the ``other`` end of the ``props`` edges whose ``side`` end is in ``ends``."""
        parts = [np.unique(other[p][contains(ends.codes, side[p])]) for p in sorted(props)]
        return IdSet(np.unique(np.concatenate(parts).astype(np.int64))) if parts else IdSet.of([])

    def subjects_with_any(self, props, sources: IdSet) -> IdSet:
        s = sources.codes
        parts = [np.unique(self.subj[p][contains(s, self.subj[p])]).astype(np.int64) for p in sorted(props)]
        parts += [self.has_value[p][contains(s, self.has_value[p])].astype(np.int64) for p in sorted(props)]
        return IdSet(np.unique(np.concatenate(parts))) if parts else IdSet.of([])


class DumpBackend(IdSets):
    """The crawl's backend for a dump: answers from the edge index with :class:`IdSet`\\ s."""

    def __init__(self, index: EdgeIndex, specs: dict[str, SubgraphSpec]):
        self.index, self.specs = index, specs
        self.members: dict[str, IdSet] = {}

    def nbytes(self) -> int:
        return sum(m.codes.nbytes for m in self.members.values())

    def make(self, values) -> IdSet:
        return values if isinstance(values, IdSet) else self.index.id_set(values)

    def ordered(self, s: IdSet) -> IdSet:
        return s  # the order of a level does not change what the index answers

    def seeds(self, spec):
        out = IdSet.of([])
        for name in spec.seed_from:
            dep, mem = self.specs[name], self.members.get(name, IdSet.of([]))
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
        scoped = set(spec.scoped_properties)
        free = [p for p in spec.member_properties if p not in scoped]
        out = self.index.subjects_pointing_to(free, frontier) if free else IdSet.of([])
        if scoped:
            # kgc:scopeProperty: those found through a scoped property must have it with one of the values
            found = self.index.subjects_pointing_to(scoped, frontier)
            within = self.index.subjects_pointing_to([spec.scope_property], self.index.id_set(spec.scope_values))
            out |= IdSet(found.codes[contains(within.codes, found.codes)])
        return out

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
    """Run the crawl of every needed spec over ``index``; members (:class:`IdSet`) land in
    the backend."""
    backend = DumpBackend(index, specs)
    for s in needed:
        members, warnings = crawl(s, backend)
        assert isinstance(members, IdSet)  # the crawl's sets are the backend's (IdSets.make)
        backend.members[s.name] = members
        if s.name in reports:
            reports[s.name].members = len(members)
            reports[s.name].warnings = warnings
    return backend
