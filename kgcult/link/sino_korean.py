"""Korean readings of Chinese characters, induced from the graph's own names, for reading
a name written in characters as Korean reads it (``stages/xscript.py``: Chinese 济州 or
Japanese 済州 in a text about Korea is 제주, jeju, Jeju).

No maintained package on PyPI reads hanja without pinning test tools as its runtime
dependencies (hanja 0.15 pins pytest, coveralls and PyYAML 6.0.1). Korean names of places
are mostly Sino-Korean, one syllable to a character, and the graph names many such places
in Korean and in Chinese or Japanese: in each entity's Korean name in Hangul and a name of
the same length in characters, the syllable at a character's place is a reading of it.
A character's reading is the syllable seen most often at its place, in two names at
least (characters folded to simplified Chinese: ``scripts.han_fold``); on the stand-in's
index, 1,837 characters from 21,700 pairs of names (釜山 부산, 仁川 인천; 0.8 s).

The table is kept beside the label index (``hanja-<index hash>-v<FORMAT>.marshal``);
``kgcult link index`` writes it.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from kgcult.files import kept_table
from kgcult.link import scripts

FORMAT = 1
MIN_SEEN = 2  # pairs of names a reading must be seen in


def _hangul(text: str) -> bool:
    return bool(text) and all("\uac00" <= c <= "\ud7a3" for c in text)


def build(ix) -> dict[str, str]:
    """{folded character: Hangul syllable} from the index's Korean names in Hangul and its
    Chinese, Japanese and Korean names in characters, entity by entity."""
    lids = {i: lg for lg, i in ix.lang_id.items() if lg in ("ja", "ko") or lg.split("-", 1)[0] == "zh"}
    if "ko" not in ix.lang_id or not lids:
        return {}
    korean: dict[int, set] = defaultdict(set)
    han: dict[int, set] = defaultdict(set)
    ph = ",".join("?" * len(lids))
    q = f"SELECT eid, lang, text FROM names WHERE lang IN ({ph}) ORDER BY eid, lang, text"
    for eid, li, text in ix.db.execute(q, sorted(lids)):
        t = text.replace(" ", "")
        if lids[li] == "ko" and _hangul(t):
            korean[eid].add(t)
        elif scripts.han_only(t) and t == text:
            han[eid].add(scripts.han_fold(t))
    seen: dict[str, Counter] = defaultdict(Counter)
    for eid in sorted(korean.keys() & han.keys()):
        for k in sorted(korean[eid]):
            for h in sorted(han[eid]):
                if len(k) == len(h):
                    for c, syl in zip(h, k):
                        seen[c][syl] += 1
    out = {}
    for c in sorted(seen):
        syl, n = min(seen[c].items(), key=lambda x: (-x[1], x[0]))
        if n >= MIN_SEEN:
            out[c] = syl
    return out


def path(cache_dir: Path | None, ix) -> Path | None:
    return None if cache_dir is None else Path(cache_dir) / f"hanja-{ix.content_hash[:16]}-v{FORMAT}.marshal"


def table(cache_dir: Path | None, ix) -> dict[str, str]:
    """The readings of ``ix``'s names: read from beside the index, else built (and saved
    there when it can be)."""
    return kept_table(path(cache_dir, ix), lambda: build(ix))


def hangul(text: str, readings: dict[str, str]) -> str | None:
    """``text`` in characters read as Korean, syllable by syllable; None when a character
    has no reading."""
    out = []
    for c in scripts.han_fold(text):
        syl = readings.get(c)
        if syl is None:
            return None
        out.append(syl)
    return "".join(out)
