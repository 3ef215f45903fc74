"""The stored link index's format, shared by its builder (:mod:`kgcult.link.index.build`)
and its reader (:class:`kgcult.link.index.reader.LabelIndex`): the format number, how name codes
pack an entity id, a language and the alias flag, QID numbers, and the read-only views
(columns, key tables, cached lookups) through which the reader keeps the attribute shapes
the linker reads (``exact[lang].get(name)``, ``qids[eid]``, ``topic_bits[eid]``, ...)."""
from __future__ import annotations

import bisect
import numbers

from kgcult.link import memo

FORMAT = 9
LANG_BITS = 10


def codes(v) -> tuple:
    if v is None:
        return ()
    if isinstance(v, int):
        return (v,)
    return v


def code_value(cs: list):
    """Codes as the in-memory index held them: None, one int, or a tuple."""
    if not cs:
        return None
    return cs[0] if len(cs) == 1 else tuple(cs)


# -- read-only views over the stored tables (the attributes the linker reads) ---------------

class Cached:
    """A bounded memo of one lookup function."""

    def __init__(self, fn):
        self.fn = fn
        self.memo = memo.Memo(memo.ENTITIES)

    def __call__(self, *key):
        v = self.memo.get(key, self)
        if v is self:
            v = self.memo.put(key, self.fn(*key))
        return v


class Column:
    """One int per entity, a memoryview of the mapped array (``layout.load_array``)."""

    def __init__(self, arr):
        self.arr = arr

    def __len__(self) -> int:
        return len(self.arr)

    def __getitem__(self, i):
        return self.arr[i]

    def __iter__(self):
        for i in range(0, len(self.arr), 65536):
            yield from self.arr[i:i + 65536].tolist()


class QidList(Column):
    """eid -> QID string."""

    def __getitem__(self, i) -> str:
        return f"Q{self.arr[i]}"

    def __iter__(self):
        for n in super().__iter__():
            yield f"Q{n}"


class EidMap:
    """QID string -> eid (a binary search in the sorted QID numbers)."""

    def __init__(self, qnum):
        self.qnum = qnum

    def get(self, qid, default=None):
        n = qnum_of(qid) if isinstance(qid, str) else None
        if n is None or not len(self.qnum):
            return default
        i = bisect.bisect_left(self.qnum, n)
        return i if i < len(self.qnum) and self.qnum[i] == n else default

    def __getitem__(self, qid) -> int:
        e = self.get(qid)
        if e is None:
            raise KeyError(qid)
        return e

    def __contains__(self, qid) -> bool:
        return self.get(qid) is not None

    def __len__(self) -> int:
        return len(self.qnum)


def is_eid(x) -> bool:
    """Whether ``x`` can be an entity id: an int (numpy's integers too), not a bool."""
    return type(x) is int or (isinstance(x, numbers.Integral) and not isinstance(x, bool))


class EntitySet:
    """``eid in s`` over a column of flags (a memoryview of bools)."""

    def __init__(self, flags):
        self.flags = flags

    def __contains__(self, eid) -> bool:
        return is_eid(eid) and 0 <= eid < len(self.flags) and bool(self.flags[eid])

    def __len__(self) -> int:
        return bytes(self.flags).count(1)

    def __iter__(self):
        return iter([i for i, f in enumerate(self.flags) if f])


class KeyTable:
    """text key -> code(s), as the in-memory dicts answered ``get``."""

    def __init__(self, lookup, size: int):
        self._lookup = lookup
        self._size = size

    def get(self, key, default=None):
        v = self._lookup(key) if isinstance(key, str) else None
        return default if v is None else v

    def __getitem__(self, key):
        v = self.get(key)
        if v is None:
            raise KeyError(key)
        return v

    def __contains__(self, key) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        return self._size


class PerLang:
    """lang -> a per-language view (``exact``, ``norm``, ``labels``, ``descriptions``)."""

    def __init__(self, views: dict):
        self._views = views

    def get(self, lang, default=None):
        return self._views.get(lang, default)

    def __getitem__(self, lang):
        return self._views[lang]

    def __contains__(self, lang) -> bool:
        return lang in self._views

    def __iter__(self):
        return iter(self._views)

    def __len__(self) -> int:
        return len(self._views)

    def keys(self):
        return self._views.keys()

    def values(self):
        return self._views.values()

    def items(self):
        return self._views.items()


class EntityText:
    """eid -> text of one language (a label or a description)."""

    def __init__(self, lookup, lang):
        self._lookup = lookup
        self._lang = lang

    def get(self, eid, default=None):
        v = self._lookup(int(eid), self._lang)
        return default if v is None else v

    def __getitem__(self, eid):
        v = self.get(eid)
        if v is None:
            raise KeyError(eid)
        return v

    def __contains__(self, eid) -> bool:
        return self.get(eid) is not None


class Lookup:
    """key -> value through a function (``country``, ``edges``), ``get``-compatible."""

    def __init__(self, fn):
        self._fn = fn

    def get(self, key, default=None):
        v = self._fn(key)
        return default if v is None else v

    def __getitem__(self, key):
        v = self._fn(key)
        if v is None:
            raise KeyError(key)
        return v

    def __contains__(self, key) -> bool:
        return self._fn(key) is not None


def qnum_of(qid: str | None) -> int | None:
    """``Q42`` -> 42; anything that is not an item id -> None."""
    if qid and qid[0] == "Q" and qid[1:].isdigit() and qid[1] != "0" and qid.isascii():
        return int(qid[1:])
    return None

