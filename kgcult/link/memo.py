"""The linker's memos, bounded so that a long `kgcult link -i` stays flat in memory.

A linker remembers what it looked up: the stems of words, the index's answers for names
and entities, the keys and decisions of mention texts, the vectors of mentions. Mentions
repeat a lot in model outputs, so these memos pay; but a process that links hundreds of
thousands of distinct mentions must not keep every answer. Each memo here forgets
everything when it is full (the next lookups refill it from the index, which is on disk),
and its size is one of the caps below, chosen by what one entry costs:

=========  =======  ============================================================
cap        entries  what one entry holds (about)
=========  =======  ============================================================
VECTORS      4,096  a mention's 512-float vector: 2 KB (8 MB in all)
MENTIONS     4,096  a mention text's keys, decision or candidate hits: 200-500 B
ENTITIES     8,192  an entity's label, description, edges, names, output fields,
                    or a name's index entry: 100-400 B
WORDS       16,384  a word's stem (one memo for the process): 100-150 B
PIECES     131,072  a prefix of the semantic encoder's vocabulary (250k in all),
                    loaded by buckets: 100-150 B; a text's pieces are read
                    from disk again after a clear, so this one is larger
PER_PART     1,024  a row, a word's membership or document frequency, a key's
                    hits, in a memo of one (topic, language) part's pool
POOLS          128  open pools of one kind (:class:`Pools`): an index has
                    hundreds of languages, and a pool holds its memos and, for
                    some kinds, a file descriptor or a SQLite connection
=========  =======  ============================================================

A memo's contents never change an answer: a test links with every cap shrunk to 2 and
compares. ``bench/link_long.py`` measures fresh `link -i` processes on 3,000 to 100,000
mentions side by side with the caps lifted (what the linker kept before): the same output,
at about the same speed, and a far lower peak on long runs (BENCHMARKS.md).
"""
from __future__ import annotations

from collections import OrderedDict

VECTORS = 4_096
MENTIONS = 4_096
ENTITIES = 8_192
WORDS = 16_384
PIECES = 131_072
PER_PART = 1_024
POOLS = 128


class Memo(dict):
    """A dict that empties itself before an insertion would take it past ``limit`` entries.
    Read it as a dict (``get``, ``in``); write it with :meth:`put`."""

    __slots__ = ("limit",)

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit

    def put(self, key, value):
        """Remember ``value`` under ``key`` (forgetting the rest first when full); returns
        ``value``."""
        if len(self) >= self.limit:
            self.clear()
        self[key] = value
        return value

    def put_many(self, items: dict) -> None:
        """Remember all of ``items`` (forgetting the rest first when they would not fit):
        a batch's entries are kept whole, even past the limit, since they are read next."""
        if len(self) + len(items) > self.limit:
            self.clear()
        self.update(items)


class Pools(OrderedDict):
    """The open pools of (topic, language) parts of one kind, the ``limit`` most recently
    used. An index has hundreds of languages, so a multilingual run would otherwise keep a
    pool (its memos, and for some kinds a file descriptor or a SQLite connection) for every
    part it ever reached; a pool pushed out is closed and opened again when needed.
    ``limit`` None: every pool stays open."""

    def __init__(self, limit: int | None):
        super().__init__()
        self.limit = limit

    @classmethod
    def cached_in(cls, cache_dir) -> "Pools":
        """Pools whose contents are cached in ``cache_dir`` (name vectors, morphology
        pools), so that reopening one is cheap; without a cache directory a pool pushed out
        would be built again (its names encoded, its keys computed), so then all stay open."""
        return cls(POOLS if cache_dir is not None else None)

    def get_or_open(self, key, open_pool):
        """The pool under ``key``, opened by ``open_pool()`` when it is not open."""
        pool = self.get(key)
        if pool is not None:
            self.move_to_end(key)
            return pool
        pool = self[key] = open_pool()
        while self.limit is not None and len(self) > self.limit:
            _key, old = self.popitem(last=False)
            close = getattr(old, "close", None)
            if close is not None:
                close()
        return pool
