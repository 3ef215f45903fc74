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
MENTIONS    16,384  a mention text's keys, decision or candidate hits: 200-500 B
ENTITIES    32,768  an entity's label, description, edges, names, output fields,
                    or a name's index entry: 100-400 B
WORDS       65,536  a word's stem, or a piece of the semantic encoder's
                    vocabulary: 100-150 B
PER_PART     4,096  the same, in a memo of one (topic, language) part's pool:
                    a process opens hundreds of them
=========  =======  ============================================================

Measured with `bench/link_scale.py` (1x stand-in): `link -i` on 3,000 mixed mentions is
as fast as with the earlier 100k-1M caps, and on 100,000 mentions the process peaks far
lower (docs/link.md). A memo's contents never change an answer: tests compare linked
output with the caps shrunk to a few entries.
"""
from __future__ import annotations

VECTORS = 4_096
MENTIONS = 16_384
ENTITIES = 32_768
WORDS = 65_536
PER_PART = 4_096


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
