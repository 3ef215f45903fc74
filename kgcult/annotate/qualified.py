"""A head noun and what qualifies it as one span, in the languages that write the head
first (the linker's ``reorder`` stage, ``kgcult/link/stages/reorder.py``, does the
lookup): the head and its qualifier, read in English order, the qualifier first, name
another entity of the topic.

* A span and the words right after it (``arroz jollof``: jollof rice; ``salsa de
  tomate``: tomato sauce, after a linking word of the language), the longest first;
* a word right before a span, a name in the text's language that made no span by itself,
  maybe with linking words between (``pollo al burro``: butter chicken; pollo, the bird,
  is no food of the stand-in).

The annotator's dictionary tells cheaply which lookups cannot succeed: a rendering of the
qualifier that no name of the topic begins with, an English name made that is no key or
beginning of one in either number.
"""
from __future__ import annotations

import re

from kgcult.annotate.finder import Finder
from kgcult.annotate.rows import TextRow
from kgcult.annotate.text import fold
from kgcult.link.index.reader import LabelIndex
from kgcult.link.record import Records
from kgcult.link.stages import reorder

# the words after a span, one space between each (an elided article on one: d'oignon)
_FOLLOWING = re.compile(r" ([^\W\d_]+['\u2019])?[^\W\d_]+")
MAX_AFTER = 4  # words a qualifier and its linking words may take after its head
_LAST_WORD = re.compile(r"([^\W\d_]+['\u2019]?)( ?)$")
_ELIDED = ("'", "\u2019")


def spans(ix: LabelIndex, records: Records, row: TextRow, fd: Finder, found: list[dict]) -> list[dict]:
    """``found`` (the text's spans, in order) with each head and its qualifier made one
    span of the entity they name (match ``reordered``)."""
    bit = ix.topic_bit(row.topic)
    names = fd.names
    valid = lambda e: (ix.topic_bits[e] & bit) != 0 and e not in names.generic  # noqa: E731
    begins = lambda q: fold(q) in names.heads  # noqa: E731 - some name of the topic begins so
    maybe = lambda m: any(f in names.exact or f in names.heads for f in numbers(fold(m)))  # noqa: E731
    lookup = (ix, row.lang, valid, begins, maybe)
    out = _after(records, row, found, lookup)
    return _before(records, row, out, lookup)


def _after(records: Records, row: TextRow, found: list[dict], lookup) -> list[dict]:
    """Each span with the words after it that qualify it, the longest first."""
    ix, lang, valid, begins, maybe = lookup
    out: list[dict] = []
    skip_to = -1
    for i, s in enumerate(found):
        if s["start"] < skip_to:
            continue
        later = found[i + 1] if i + 1 < len(found) else None
        ends = [e for e in following(row.text, s["end"]) if later is None or not later["start"] < e < later["end"]]
        head = ix.eid_of[s["qid"]]
        hit = None
        for end in reversed(ends):
            q = reorder.qualifier(row.text[s["end"]:end], lang)
            hits = reorder.reordered(ix, [head], q[0], lang, valid, begins, maybe) if q else {}
            if len(hits) == 1:
                hit = (end, *next(iter(hits.items())))
                break
        if hit is None:
            out.append(s)
            continue
        end, eid, (alias, _lg, _d) = hit
        out.append(_span(records, row, s["start"], end, eid, alias))
        skip_to = end
    return out


def _before(records: Records, row: TextRow, found: list[dict], lookup) -> list[dict]:
    """Each span with the word before it that it qualifies, where that word made no span."""
    ix, lang, valid, begins, maybe = lookup
    out: list[dict] = []
    for i, s in enumerate(found):
        floor = found[i - 1]["end"] if i else 0
        hit = None
        for a, b in preceding(row.text, s["start"], floor):
            q = reorder.qualifier(row.text[b:s["end"]], lang)
            if q is None or not any(begins(r) for r in reorder.renderings(ix, q[0], lang)):
                continue  # no name begins with the qualifier: the head is not looked up
            heads = reorder.named(ix, row.text[a:b], lang)
            hits = reorder.reordered(ix, heads, q[0], lang, valid, begins, maybe) if heads else {}
            if len(hits) == 1:
                hit = (a, *next(iter(hits.items())))
                break
        if hit is None:
            out.append(s)
            continue
        start, eid, (alias, _lg, _d) = hit
        out.append(_span(records, row, start, s["end"], eid, alias))
    return out


def _span(records: Records, row: TextRow, start: int, end: int, eid: int, alias: int) -> dict:
    """A span of ``eid`` over ``row.text[start:end]`` with the linker's record of it."""
    ent = records.entity(eid, row.lang, row.topic)
    return {"start": start, "end": end, "text": row.text[start:end],
            "qid": ent["qid"], "label": ent["label"] or ent["label_en"],
            "match": f"reordered-{'alias' if alias else 'label'}",
            "evidence": [list(x) for x in ent["evidence"]],
            "granularity": ent["granularity"], "granularity_score": ent["granularity_score"],
            "country": list(ent["country"])}


def following(text: str, pos: int) -> list[int]:
    """Where each of the (at most :data:`MAX_AFTER`) words right after ``pos`` ends."""
    ends: list[int] = []
    m = _FOLLOWING.match(text, pos)
    while m is not None and len(ends) < MAX_AFTER:
        ends.append(m.end())
        m = _FOLLOWING.match(text, m.end())
    return ends


def preceding(text: str, end: int, floor: int) -> list[tuple[int, int]]:
    """(start, end) of the words that may head a span beginning at ``end``: the word
    right before it, then the two before that (linking words between: ``pollo al``),
    nearest first; one space between words (none after an elided article, ``d'``), none
    before ``floor``."""
    out = []
    tail = text[floor:end]
    for _ in range(3):
        m = _LAST_WORD.search(tail)
        if m is None or bool(m.group(2)) == m.group(1).endswith(_ELIDED):
            break
        if not m.group(1).endswith(_ELIDED):
            out.append((floor + m.start(1), floor + m.end(1)))
        tail = tail[:m.start(1)]
    return out


def numbers(key: str) -> tuple[str, ...]:
    """A folded English name in both numbers, as a name may be written (``tomato sauce``,
    ``tomato sauces``; ``black bean``, ``black beans``; ``berry``, ``berries``)."""
    out = [key, key + "s", key + "es"]
    if key.endswith("y"):
        out.append(key[:-1] + "ies")
    if key.endswith("s"):
        out.append(key[:-1])
    if key.endswith("ies"):
        out.append(key[:-3] + "y")
    return tuple(out)
