"""One toolkit for Wikidata entity ids, used by every command: what a valid id is, how a
user may write one, and how ids map to IRIs and sort.

An id is ``Q`` (item), ``P`` (property) or ``L`` (lexeme) followed by a number without
leading zeros: ``Q42``, ``P279``. A lexeme's form or sense (``L7-F1``, ``L7-S2``) is an
*entity* too (:func:`is_entity`, :func:`entity_of_term`): the graph may reference one,
but no command takes it where an id is asked for.

Users may write an id as ``Q42``, ``q42``, ``wd:Q42`` or the full IRI
``http://www.wikidata.org/entity/Q42``; :func:`parse` accepts all of them and raises a
:class:`KgcultError` naming the field otherwise.
"""
from __future__ import annotations

import re

from pyoxigraph import NamedNode

from kgcult.errors import KgcultError
from kgcult.vocab import WD

_ID = re.compile(r"^([QPL])([1-9][0-9]*)$")
_ENTITY = re.compile(r"^([QPL])([1-9][0-9]*)((?:-[FS][1-9][0-9]*)?)$")
_KIND_NAMES = {"Q": "item", "P": "property", "L": "lexeme"}


def is_id(value: str, kinds: str = "QP") -> bool:
    """``Q42`` -> True for kinds containing ``Q``; anything not an id -> False."""
    m = _ID.match(value) if isinstance(value, str) else None
    return m is not None and m.group(1) in kinds


def is_item(value: str) -> bool:
    return is_id(value, "Q")


def is_entity(value: str) -> bool:
    """An id, or a lexeme's form or sense (``L7-F1``)."""
    return isinstance(value, str) and bool(_ENTITY.match(value))


def split(value: str) -> tuple[str, int] | None:
    """``Q42`` -> ("Q", 42); anything but an id -> None."""
    m = _ID.match(value) if isinstance(value, str) else None
    return (m.group(1), int(m.group(2))) if m else None


def parse(value: str, kinds: str = "QP", field: str = "id") -> str:
    """The canonical id (``Q42``) of what a user wrote (``Q42``, ``q42``, ``wd:Q42``, the
    entity IRI); a :class:`KgcultError` naming ``field`` for anything else."""
    text = value.strip() if isinstance(value, str) else ""
    if text.startswith(WD):
        text = text[len(WD):]
    elif text[:3].lower() == "wd:":
        text = text[3:]
    text = text[:1].upper() + text[1:]
    if not is_id(text, kinds):
        expected = " or ".join(f"{k}123 ({_KIND_NAMES[k]})" for k in kinds)
        raise KgcultError(f"{field}: not a Wikidata id: {value!r} (expected {expected})")
    return text


def _local_name(iri: str, pattern: re.Pattern) -> str | None:
    if isinstance(iri, str) and iri.startswith(WD):
        local = iri[len(WD):]
        if pattern.match(local):
            return local
    return None


def of_iri(iri: str) -> str | None:
    """``http://www.wikidata.org/entity/Q42`` -> ``Q42``; any other IRI -> None."""
    return _local_name(iri, _ID)


def of_term(term, kinds: str = "QPL") -> str | None:
    """The id of a pyoxigraph ``wd:`` entity term, else None."""
    if isinstance(term, NamedNode):
        qid = of_iri(term.value)
        if qid and qid[0] in kinds:
            return qid
    return None


def entity_of_iri(iri: str) -> str | None:
    """The entity (id, form or sense) of a ``wd:`` IRI, else None."""
    return _local_name(iri, _ENTITY)


def entity_of_term(term) -> str | None:
    """The entity (id, form or sense) of a pyoxigraph ``wd:`` term, else None."""
    return entity_of_iri(term.value) if isinstance(term, NamedNode) else None


MAX_SITELINKS = 100_000  # far above any entity's sitelinks (Wikimedia has under 1,000 wikis)


def sitelink_count(value) -> int | None:
    """A ``wikibase:sitelinks`` value (a literal's lexical form, or a term) as a count, or
    None when it is not one: ASCII digits only, at most :data:`MAX_SITELINKS`. Where counts
    enter the store they are refused unless this reads them; where they are read, a value
    it does not read is skipped, so a 40-digit count or a string from a loaded file never
    breaks a command (issue 40)."""
    text = getattr(value, "value", value)
    if not isinstance(text, str) or not (0 < len(text) <= 6 and text.isascii() and text.isdigit()):
        return None
    n = int(text)
    return n if n <= MAX_SITELINKS else None


def shorten(iri: str) -> str:
    """The entity of a ``wd:`` IRI (Q42, L7-F1), any other IRI unchanged (for display and
    output rows)."""
    return entity_of_iri(iri) or iri


def iri(qid: str) -> str:
    """``Q42`` -> its entity IRI (an IRI is returned unchanged)."""
    return qid if "://" in qid else WD + qid


def node(qid: str) -> NamedNode:
    """``Q42`` -> ``NamedNode(wd:Q42)``."""
    return NamedNode(iri(qid))


def sort_key(value: str) -> tuple:
    """A total, deterministic order: entities by kind then number (Q2 < Q10 < P1 ...), a
    lexeme's forms and senses after it, entity IRIs as their entities, anything else after
    them as text."""
    m = _ENTITY.match(entity_of_iri(value) or value) if isinstance(value, str) else None
    if not m:
        return ("~", 0, value)
    return (m.group(1), int(m.group(2)), m.group(3))
