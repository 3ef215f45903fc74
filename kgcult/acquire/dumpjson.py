"""One JSON dump line as the entity the scan needs, decoded as little as possible.

Most of an entity's JSON is claims the subgraphs never look at (with their qualifiers and
references), labels in languages they do not keep and sitelinks they only count. With
msgspec installed (``kgcult[dump]``) a line is decoded into a :class:`Lazy` entity: its
sections as maps of raw, undecoded JSON values, of which only the wanted claims and
languages are then decoded (several times faster than a full parse). Anything that does
not fit Wikibase's shapes (``"claims": []``, a missing ``id``, a bad line) is parsed in
full instead, with orjson when installed, else the standard library's json, so the result
and the error messages are those of a full parse.
"""
from __future__ import annotations

import json

from kgcult.acquire import truthy

try:  # optional: kgcult[dump]
    import orjson
    loads = orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    orjson = None
    loads = json.loads

try:  # optional: kgcult[dump]
    import msgspec
except ImportError:  # pragma: no cover - depends on the environment
    msgspec = None


if msgspec is not None:
    _Raw = dict[str, msgspec.Raw]

    class Lazy(msgspec.Struct):
        """An entity's sections, values undecoded (unknown fields skipped)."""
        id: str
        labels: _Raw = {}
        descriptions: _Raw = {}
        aliases: _Raw = {}
        claims: _Raw = {}
        sitelinks: _Raw | msgspec.UnsetType = msgspec.UNSET

    _LAZY = msgspec.json.Decoder(Lazy)
    _ANY = msgspec.json.Decoder()
    _ERRORS = (msgspec.MsgspecError, UnicodeDecodeError)


def parser_name() -> str:
    """What parses the JSON lines (for the log)."""
    if msgspec is not None:
        return "msgspec (wanted claims and languages only)" + (", orjson for the rest" if orjson else "")
    if orjson is not None:
        return "orjson (install msgspec, kgcult[dump], to decode only the wanted parts)"
    return "the standard json module (install kgcult[dump] for msgspec and orjson)"


def entity(line: bytes, props, languages):
    """The entity of one dump line (``[``/``]``/blank lines give None), as a dict with at
    least its id, its claims of ``props`` and its terms in ``languages`` (lower-case tags)
    and its sitelinks; ValueError when the line is not a JSON entity."""
    if msgspec is not None:
        s = line.strip()
        if s.endswith(b","):
            s = s[:-1]
        if s.startswith(b"{"):
            try:
                return _partial(_LAZY.decode(s), props, languages)
            except _ERRORS:
                pass  # not the usual shape: the full parse decides (and words any error)
    return truthy.parse_entity_line(line, loads)


def _partial(e, props, languages) -> dict:
    dec = _ANY.decode
    out = {"id": e.id, "claims": {p: dec(e.claims[p]) for p in props if p in e.claims}}
    for key in ("labels", "descriptions", "aliases"):
        section = getattr(e, key)
        out[key] = {t: dec(section[t]) for t in languages if t in section}
    if e.sitelinks is not msgspec.UNSET:
        out["sitelinks"] = e.sitelinks
    return out
