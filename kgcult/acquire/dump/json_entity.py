"""One JSON dump line as the entity the scan needs, decoded as little as possible.

Most of an entity's JSON is claims the subgraphs never look at (with their qualifiers and
references), labels in languages they do not keep and sitelinks they only count. With
msgspec installed (``kgcult[dump]``) the scan decodes a line into types made for its plan
(:class:`_Shape`): the wanted claims' main snaks and ranks, the wanted languages' terms as
raw JSON, nothing else (several times faster than a full parse). Anything that does not
fit Wikibase's shapes (``"claims": []``, a missing ``id``, a bad line) is parsed in full
instead, with orjson when installed, else the standard library's json, so the result and
the error messages are those of a full parse.
"""
from __future__ import annotations

import json
from typing import Any, Callable

from kgcult import vocab
from kgcult.acquire.dump import truthy

loads: Callable[[bytes], Any]
try:  # optional: kgcult[dump]
    import orjson
    loads = orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    orjson = None  # type: ignore[assignment]  # (mypy's idiom for an optional module)
    loads = json.loads

try:  # optional: kgcult[dump]
    import msgspec
except ImportError:  # pragma: no cover - depends on the environment
    msgspec = None  # type: ignore[assignment]


if msgspec is not None:
    class Snak(msgspec.Struct):
        """A main snak: what its truthy object needs (``None``/"" where the JSON has no field)."""
        snaktype: str | None = None
        datatype: str | None = ""
        datavalue: dict | None = None

    class Statement(msgspec.Struct):
        """A statement's id, main snak and rank (qualifiers and references skipped)."""
        mainsnak: Snak | None = None
        rank: str | None = None
        id: str | None = None

    _ANY = msgspec.json.Decoder()
    _ENCODE = msgspec.json.Encoder().encode
    _ERRORS = (msgspec.MsgspecError, UnicodeDecodeError)


def parser_name() -> str:
    """What parses the JSON lines (for the log)."""
    if msgspec is not None:
        return "msgspec (wanted claims and languages only)" + (", orjson for the rest" if orjson else "")
    if orjson is not None:
        return "orjson (install msgspec, kgcult[dump], to decode only the wanted parts)"
    return "the standard json module (install kgcult[dump] for msgspec and orjson)"


def scan_entity(line, props, languages, label_props, sitelinks: bool):
    """What the scan needs of one dump line: (id, {pid: the N-Triples objects of its truthy
    claims} for the ``props`` it has, terms record), or None for a ``[``/``]``/blank line.
    With msgspec, only the wanted claims are decoded, each statement's main snak and rank
    alone (qualifiers and references skipped unread), and the terms are kept undecoded in
    the record. The record holds what :func:`kgcult.acquire.dump.truthy.term_lines` needs (the
    terms in ``languages``, lower-case tags, and the sitelink count) as a JSON object
    (:func:`terms`), b"" when there is nothing: the emission decodes it for the members of
    a labels subgraph only. ValueError when the line is not a JSON entity. (A block's lines
    go through one :func:`scanner`.)"""
    return scanner(props, languages, label_props, sitelinks)(line)


def scanner(props, languages, label_props, sitelinks: bool):
    """:func:`scan_entity` for the given plan, as a function of the line."""
    props, languages, label_props = tuple(props), frozenset(languages), frozenset(label_props)
    shape = _shape(props, tuple(sorted(languages)), label_props, sitelinks) if msgspec is not None else None

    def scan(line):
        if shape is not None:
            s = _object(line)
            if s is not None:
                try:
                    e = shape.decode(s)
                except _ERRORS:
                    pass  # not the usual shape: the full parse decides (and words any error)
                else:
                    return e.id, shape.objects(e), shape.record(e)
        e = truthy.parse_entity_line(line if isinstance(line, bytes) else bytes(line), loads)
        if e is None:
            return None
        claims = e.get("claims") or {}
        count = len(e["sitelinks"] or {}) if "sitelinks" in e else None
        return (e["id"], {p: truthy.claim_objects(e, p) for p in props if p in claims},
                _record(e["id"], e.get("labels"), e.get("aliases"), e.get("descriptions"), count, languages,
                        label_props, sitelinks))
    return scan


def _object(line):
    """A dump line's JSON object without its comma (a zero-copy slice of ``line``, bytes or
    a memoryview), or None when the line is not exactly ``{...}`` or ``{...},``."""
    n = len(line)
    if n > 1 and line[0] == 0x7B:  # {
        if line[n - 1] == 0x7D:  # }
            return line
        if line[n - 1] == 0x2C and line[n - 2] == 0x7D:  # },
            return line[:n - 1]
    return None


class _Shape:
    """msgspec types for one scan plan: an entity holding only the wanted claims (typed
    statements) and its terms in the wanted languages (raw JSON), every other field and
    language skipped unread; and the terms record it is re-encoded into."""

    def __init__(self, props: tuple, languages: tuple, label_props: frozenset, sitelinks: bool):
        unset, raw = msgspec.UnsetType, msgspec.Raw
        self.props = props
        langs = msgspec.defstruct("Languages", [(f"l{i}", raw | unset, msgspec.UNSET) for i in range(len(languages))],
                                  rename={f"l{i}": t for i, t in enumerate(languages)})
        claims = msgspec.defstruct("Claims", [(f"p{i}", list[Statement] | unset, msgspec.UNSET)
                                              for i in range(len(props))],
                                   rename={f"p{i}": p for i, p in enumerate(props)})
        self.sections = tuple(key for key, prop in _SECTIONS if prop in label_props) if languages else ()
        self.sitelinks = sitelinks
        terms = [(key, langs | unset, msgspec.UNSET) for key in self.sections]
        fields: list[tuple[str, Any] | tuple[str, Any, Any]] = [("id", str), ("claims", claims | unset, msgspec.UNSET)]
        fields += terms
        if sitelinks:
            fields.append(("sitelinks", dict[str, msgspec.Raw] | unset, msgspec.UNSET))
        self.decode = msgspec.json.Decoder(msgspec.defstruct("Entity", fields)).decode
        # a class made at run time: its fields are known to no checker
        self.Record: Any = msgspec.defstruct("Record", [("id", str)] + terms
                                             + ([("sitelinks", int | unset, msgspec.UNSET)] if sitelinks else []))

    def objects(self, e) -> dict:
        if e.claims is msgspec.UNSET:
            return {}
        return {p: _objects(st, p) for p, st in zip(self.props, msgspec.structs.astuple(e.claims))
                if st is not msgspec.UNSET}

    def record(self, e) -> bytes:
        if not self.sections and not self.sitelinks:
            return b""
        rec = self.Record(e.id, *(getattr(e, key) for key in self.sections))
        if self.sitelinks and e.sitelinks is not msgspec.UNSET:
            rec.sitelinks = len(e.sitelinks)
        return _ENCODE(rec)


_SHAPES: dict = {}


def _shape(props: tuple, languages: tuple, label_props: frozenset, sitelinks: bool) -> _Shape:
    key = (props, languages, label_props, sitelinks)
    shape = _SHAPES.get(key)
    if shape is None:
        shape = _SHAPES[key] = _Shape(*key)
    return shape


def _objects(statements, pid: str) -> list[str]:
    """:func:`kgcult.acquire.dump.truthy.claim_objects` of typed statements of ``pid``."""
    best = [s for s in statements if s.rank == "preferred"] or [s for s in statements if s.rank != "deprecated"]
    out = []
    for s in best:
        snak = s.mainsnak
        if snak is not None:
            if snak.snaktype == "somevalue":
                o = truthy.somevalue_iri(s.id, pid)
            else:
                o = truthy.snak_nt(snak.snaktype, snak.datatype, snak.datavalue)
            if o is not None:
                out.append(o)
    return out


_SECTIONS = (("labels", vocab.RDFS + "label"), ("aliases", vocab.SKOS + "altLabel"),
             ("descriptions", vocab.SCHEMA + "description"))


def _record(eid, labels, aliases, descriptions, count, languages, label_props, sitelinks: bool) -> bytes:
    rec = {}
    if languages and label_props:
        for (key, prop), section in zip(_SECTIONS, (labels, aliases, descriptions)):
            if prop in label_props and section and isinstance(section, dict):
                picked = {t: section[t] for t in section.keys() & languages}
                if picked:
                    rec[key] = picked
    if sitelinks and count is not None:
        rec["sitelinks"] = count
    if not rec:
        return b""
    rec["id"] = eid
    return _ENCODE(rec) if msgspec is not None else _dumps(rec)


def _dumps(obj) -> bytes:
    return orjson.dumps(obj) if orjson is not None else json.dumps(obj, ensure_ascii=False).encode()


def terms(record: bytes) -> dict:
    """A terms record (:func:`entity_terms`) as a dict: ``id``, the term sections, and
    ``sitelinks`` (the count) when the entity had sitelinks and they are wanted."""
    return _ANY.decode(record) if msgspec is not None else loads(record)
