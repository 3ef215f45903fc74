"""The last check before a query or update reaches the engine: no ``SERVICE`` at all in
the text the engine will read. Oxigraph evaluates ``SERVICE <iri>`` by sending an HTTP
request to that IRI; kgcult never does anything on a query's behalf (no server-side
request forgery), and the one service it supports, the WDQS label service, has been
rewritten into plain SPARQL by then (:mod:`kgcult.sparql.wdqs`).

The check reads the text as Oxigraph's lexer does (:data:`kgcult.sparql.nesting.LEXEMES`:
strings, comments and IRIs with their ``\\u`` escapes are skipped whole, prefixed names with
their ``\\`` escapes are one name), not through the rewriting step's lexer, and refuses every
``SERVICE`` keyword, whatever its target looks like. The rewriting step recognises a SERVICE
target by its text, which let two spellings through: an IRI with a ``\\u`` escape
(``<http://127.0.0.1:7878/x\\u0031>`` is an IRI to Oxigraph, not to that lexer), and a
``SERVICE`` after a ``VALUES`` block holding an escaped ``\\#`` (read as a comment there, so
the block seemed to run on past the SERVICE). Keywords cannot be escaped in SPARQL, so a
SERVICE keyword is always the literal word, in any case.
"""
from __future__ import annotations

import re

from kgcult.errors import KgcultError
from kgcult.safe_text import printable
from kgcult.sparql.nesting import LEXEMES

_UCHAR = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")


def refuse_services(text: str, what: str = "query") -> None:
    """Raise KgcultError naming the target if ``text`` holds a SERVICE keyword."""
    if "service" not in text.lower():
        return  # the keyword cannot be written any other way
    lexemes = [m for m in LEXEMES.finditer(text) if m.lastgroup != "skip" or not m.group().isspace()]
    for i, m in enumerate(lexemes):
        if m.lastgroup == "name" and m.group().upper() == "SERVICE":
            j = i + 1
            if j < len(lexemes) and lexemes[j].group().upper() == "SILENT":
                j += 1
            target = _show(lexemes[j].group()) if j < len(lexemes) else "(nothing)"
            raise KgcultError(f"SERVICE {target} is refused in a{'n' if what[0] in 'aeiou' else ''} {what}: "
                              "kgcult never sends a request on a query's behalf (only SERVICE wikibase:label "
                              "is answered, locally)")


def _show(target: str) -> str:
    if target.startswith("<"):
        target = _UCHAR.sub(lambda m: _char(m.group(1) or m.group(2)), target)
    return printable(target[:200])


def _char(hexdigits: str) -> str:
    try:
        return chr(int(hexdigits, 16))
    except (ValueError, OverflowError):
        return "\ufffd"


__all__ = ["refuse_services"]
