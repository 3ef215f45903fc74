"""A cheap scan that refuses a query or update too deeply nested for the engine, before it
is parsed. Oxigraph's parser and evaluator recurse once per nesting level and once per
link of a chain of binary operators (``UNION``, ``OPTIONAL``, ``||``, ``+``, ``/``, ...):
5,000 nested groups or parentheses, or a 9,000-branch ``UNION``, overflow the native stack
and the process dies with SIGSEGV (no Python exception, no message). Every query entry
point runs :func:`check` first (the embedded store's ``query``/``update``, ``kgcult
serve`` before a query reaches a worker and before an update runs).

The scan is linear and skips strings, comments and IRIs; it counts the depth of ``{ ( [``
together and the binary operators of the whole text. The limits are far above any query a
person writes (a few dozen levels, a few hundred branches) and far below the overflow.
"""
from __future__ import annotations

import re

from kgcult.errors import KgcultError

MAX_DEPTH = 128       # { ( [ open at once; Oxigraph overflows at ~5,000 nested groups
MAX_OPERATORS = 2000  # UNION, OPTIONAL, MINUS, || && + - * / | in one text; overflow at ~9,000

# SPARQL's lexical units as Oxigraph reads them, in one pass: what ``skip`` matches (strings,
# comments, IRIs with their \u escapes, whitespace) can hold no keyword or bracket; ``name``
# is a keyword, prefixed name (with its \-escapes), variable, number or language tag
LEXEMES = re.compile(r"""
  (?P<skip>\"\"\"[^"\\]*+(?:(?:\\.|"(?!""))[^"\\]*+)*+(?:\"\"\"|\Z)
          |'''[^'\\]*+(?:(?:\\.|'(?!''))[^'\\]*+)*+(?:'''|\Z)
          |"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"|'[^'\\\n]*+(?:\\.[^'\\\n]*+)*+'
          |\#[^\n]*+
          |<[^<>"{}|^`\\\x00-\x20]*+(?:(?:\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})[^<>"{}|^`\\\x00-\x20]*+)*+>
          |\s++)
| (?P<name>[?$@]?(?:[\w:%]|\\\S)[\w.:%-]*+(?:\\\S[\w.:%-]*+)*+)
| (?P<open>[{(\[])
| (?P<close>[})\]])
| (?P<op>\|\||&&|[-+*/|])
| (?P<other>.)
""", re.X | re.S)
_CHAIN_WORDS = {"UNION", "OPTIONAL", "MINUS"}


def check(text: str, what: str = "query") -> None:
    """Raise KgcultError naming the limit and where it is passed if ``text`` nests deeper
    than :data:`MAX_DEPTH` or chains more than :data:`MAX_OPERATORS` binary operators."""
    if _surely_within(text):
        return
    depth = operators = 0
    for m in LEXEMES.finditer(text):
        kind = m.lastgroup
        if kind == "open":
            depth += 1
            if depth > MAX_DEPTH:
                raise KgcultError(f"{what} at {_where(text, m.start())}: nested more than {MAX_DEPTH} levels "
                                  "deep ({ ( [ together); kgcult refuses it before parsing (the engine would "
                                  "overflow its stack): flatten it")
        elif kind == "close":
            depth = max(depth - 1, 0)
        elif kind == "op" or (kind == "name" and m.group().upper() in _CHAIN_WORDS):
            operators += 1
            if operators > MAX_OPERATORS:
                raise KgcultError(f"{what} at {_where(text, m.start())}: more than {MAX_OPERATORS} UNION/OPTIONAL/"
                                  "MINUS branches and operators; kgcult refuses it before parsing (the engine "
                                  "would overflow its stack): use VALUES or IN (...) for long alternatives")


def _surely_within(text: str) -> bool:
    """Upper bounds counted at C speed (brackets and operator characters anywhere, strings
    and IRIs included): when they are within the limits, so is the text."""
    if sum(text.count(c) for c in "{([") > MAX_DEPTH:
        return False
    upper = text.upper()
    ops = sum(text.count(c) for c in "+-*/|&") + sum(upper.count(w) for w in _CHAIN_WORDS)
    return ops <= MAX_OPERATORS


def _where(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    return f"line {line}, column {offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


__all__ = ["check", "MAX_DEPTH", "MAX_OPERATORS", "LEXEMES"]
