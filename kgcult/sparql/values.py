"""SPARQL terms as typed Python values, for the notebook API (``kg.sparql``).

An IRI becomes an :class:`IRI` and a language-tagged string a :class:`LangString`: both are
``str`` subclasses, so they compare, hash and print as the plain strings they hold, and keep
what a plain string loses (``.lang``; ``.qid`` for a Wikidata entity). Numbers, booleans and
dates become ``int``, ``Decimal``, ``float``, ``bool``, ``datetime.date`` and
``datetime.datetime``; a literal whose lexical form does not parse as its datatype stays its
lexical ``str``, as do strings and other datatypes. Blank nodes are :class:`BNode`, RDF-star
triples their N-Triples text.
"""
from __future__ import annotations

import datetime as dt
from decimal import Decimal, InvalidOperation
from typing import Any, Callable

from pyoxigraph import BlankNode, Literal, NamedNode

from kgcult import vocab


class IRI(str):
    """An IRI: the string itself, with ``.qid`` for a Wikidata entity (``"Q17"``, else None)."""

    __slots__ = ()

    @property
    def qid(self) -> str | None:
        return self[len(vocab.WD):] if self.startswith(vocab.WD) else None


class BNode(str):
    """A blank node's label."""

    __slots__ = ()


class LangString(str):
    """A language-tagged string: the text, with its tag in ``.lang``."""

    __slots__ = ("lang",)
    lang: str

    def __new__(cls, text: str, lang: str) -> "LangString":
        obj = super().__new__(cls, text)
        obj.lang = lang
        return obj

    def __reduce__(self):  # pickling keeps the tag
        return (LangString, (str(self), self.lang))


def _date(text: str) -> dt.date:
    return dt.date.fromisoformat(text[:10]) if text[:1] != "-" else _raise(text)


def _datetime(text: str) -> dt.datetime:
    if text[:1] == "-":  # BCE: Python's datetime has no year <= 0
        _raise(text)
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def _raise(text: str):
    raise ValueError(text)


def _bool(text: str) -> bool:
    if text in ("true", "1"):
        return True
    if text in ("false", "0"):
        return False
    raise ValueError(text)


_X = vocab.XSD
_PARSERS: dict[str, Callable[[str], Any]] = {
    **{_X + t: int for t in ("integer", "int", "long", "short", "byte", "nonNegativeInteger",
                             "positiveInteger", "negativeInteger", "nonPositiveInteger",
                             "unsignedInt", "unsignedLong", "unsignedShort", "unsignedByte")},
    _X + "decimal": Decimal,
    _X + "double": float,
    _X + "float": float,
    _X + "boolean": _bool,
    _X + "date": _date,
    _X + "dateTime": _datetime,
}


def python_value(term) -> Any:
    """The Python value of a pyoxigraph term (None stays None)."""
    if term is None:
        return None
    if isinstance(term, NamedNode):
        return IRI(term.value)
    if isinstance(term, Literal):
        if term.language:
            return LangString(term.value, term.language)
        parse = _PARSERS.get(term.datatype.value)
        if parse is not None:
            try:
                return parse(term.value)
            except (ValueError, InvalidOperation):
                return term.value
        return term.value
    if isinstance(term, BlankNode):
        return BNode(term.value)
    return str(term)
