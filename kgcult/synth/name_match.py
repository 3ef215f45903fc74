"""Finding an entity's name in free text (rewritten questions, a model's answers)."""
from __future__ import annotations

import re
import unicodedata

_SPACED = re.compile(r"^[\w\s'’\-.]+$")


def normalize_text(s: str) -> str:
    return unicodedata.normalize("NFKC", s).casefold().strip()


def mentions(text: str, form: str) -> bool:
    """Does ``text`` contain the surface form? Whole words for scripts written with
    spaces between words (Latin, Cyrillic, Greek); plain substring otherwise (CJK, Hangul
    with particles, Arabic and Hebrew with clitics)."""
    t, f = normalize_text(text), normalize_text(form)
    if not f:
        return False
    if all(ord(ch) < 0x0590 for ch in f) and _SPACED.match(f):
        return re.search(r"(?<!\w)" + re.escape(f) + r"(?!\w)", t) is not None
    return f in t
