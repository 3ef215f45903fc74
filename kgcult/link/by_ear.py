"""Names as a script that writes foreign names by ear hears them (Thai spells Bretagne
เบรอตาญ, Gyeongju คย็องจู, Provence โพรวองซ์ with its own letters): the romanized key of a
Latin name as its sounds (:func:`heard`) and its consonants (:func:`ear_key`), in the classes
``kgcult.link.thai.ear_key`` reads a Thai name's letters into. The linker's ``xheard`` stage
(``kgcult/link/stages/heard.py``) compares them."""
from __future__ import annotations

import re
from functools import lru_cache

from kgcult.link.scripts import compact

# a name as a script that writes foreign names by ear hears it (Thai spells Bretagne เบรอตาญ,
# Gyeongju คย็องจู, Provence โพรวองซ์ with its own letters): the digraphs as one sound (C: the
# sound of ch, j, sh), voiced stops as voiceless ones, soft c and z as s, v as w, h silent
_HEARD_DIGRAPHS = (("tch", "C"), ("sch", "s"), ("ph", "p"), ("th", "t"), ("kh", "k"), ("gh", "k"),
                   ("ch", "C"), ("sh", "C"), ("zh", "C"), ("dj", "C"), ("qu", "k"), ("ck", "k"),
                   ("gn", "n"), ("ng", "n"), ("tz", "s"), ("ts", "s"), ("x", "ks"))
_SOFT_C = re.compile("c(?=[eiy])")
_HEARD = str.maketrans("cgjbdzqv", "kkCptskw", "h")
_HEARD_VOWELS = str.maketrans("", "", "aeiouyw")
_DOUBLED_HEARD = re.compile(r"([a-zC])\1+")


@lru_cache(maxsize=65536)
def heard(key: str) -> str:
    """A romanized key as a script that spells names by ear hears it: the consonant
    sounds (:data:`_HEARD_DIGRAPHS`) and the vowels, doubled letters once
    (``gyeongju`` kyeonCu, ``bretagne`` pretane)."""
    k = compact(key)
    for a, b in _HEARD_DIGRAPHS:
        k = k.replace(a, b)
    return _DOUBLED_HEARD.sub(r"\1", _SOFT_C.sub("s", k).translate(_HEARD))


def ear_key(key: str) -> str:
    """The consonants of :func:`heard` (``siemreap`` smrp, ``provence`` prns)."""
    return _DOUBLED_HEARD.sub(r"\1", heard(key).translate(_HEARD_VOWELS))
