"""MakiEval's own linking procedure (§3.3 and its code, as DESIGN.md describes it), run on
the same label index, so ``kgcult link eval`` can show it side by side with kgcult's
linker on the same input.

Per mention: an exact ``rdfs:label``/``skos:altLabel`` match in the prompt's language,
then the lower-cased mention; if nothing matched, the same in English; keep the
candidates with a path (P31|P279|P361)+ to a root of the topic (the closure, as the
paper's traversal); a *random* pick among them (seeded per mention, so a run is
repeatable); no candidate -> unmatched (MakiEval's "missing QID", App. C.2).
"""
from __future__ import annotations

import hashlib
import random

from kgcult.link.index.reader import LabelIndex
from kgcult.link.index.encoding import codes


def _matches(ix: LabelIndex, mention: str, lang: str) -> list[int]:
    d = ix.exact.get(lang) or {}
    for text in (mention, mention.lower()):
        found = sorted({c >> 1 for c in codes(d.get(text))})
        if found:
            return found
    return []


def link(ix: LabelIndex, mention: str, lang: str, topic: str | None, seed: int = 0) -> str | None:
    """The QID MakiEval's procedure gives ``mention``, or None (unmatched)."""
    m = mention.strip()
    if not m:
        return None
    cands = _matches(ix, m, lang) or (_matches(ix, m, "en") if lang != "en" else [])
    if topic:
        bit = ix.topic_bit(topic)
        cands = [e for e in cands if ix.topic_bits[e] & bit]
    if not cands:
        return None
    h = hashlib.sha256(f"{seed}\t{lang}\t{m}".encode()).digest()
    return ix.qids[random.Random(h).choice(cands)]


def link_rows(ix: LabelIndex, rows: list[dict], seed: int = 0) -> list[dict]:
    """Results shaped like the linker's (qid, status, match) for ``kgcult link eval``."""
    out: list[dict] = []
    for r in rows:
        q = link(ix, r["mention"], (r.get("lang") or "en").lower(), r.get("topic"), seed)
        out.append({"qid": q, "status": "resolved" if q else "unresolved",
                    "match": "makieval" if q else None, "candidates": []})
    return out
