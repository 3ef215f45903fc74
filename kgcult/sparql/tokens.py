"""A SPARQL lexer: the query text as tokens with their offsets, so that a rewrite can
replace exactly the tokens it understands and leave every other character (and so every
line and column a later error names) where it was.

The lexer never fails: a character it does not know becomes a one-character ``other``
token and is left for Oxigraph's parser to report.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# order matters: long strings before short ones, prefixed names before bare words
_TOKEN = re.compile(r"""
  (?P<ws>\s+)
| (?P<comment>\#[^\n]*)
| (?P<string>\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"|'''(?:[^'\\]|\\.|'(?!''))*'''
            |"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
| (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
| (?P<var>[?$][\w\u00B7]+)
| (?P<bnode>_:[\w.-]*\w|_:\w)
| (?P<pname>(?:[^\W\d_][\w.-]*)?:(?:(?:[\w:%-]|\\[^\s])(?:(?:[\w.:%-]|\\[^\s])*(?:[\w:%-]|\\[^\s]))?)?)
| (?P<langtag>@[A-Za-z]+(?:-[A-Za-z0-9]+)*)
| (?P<number>\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?)
| (?P<word>[A-Za-z_][A-Za-z0-9_]*)
| (?P<punct>\^\^|&&|\|\||!=|<=|>=|[{}()\[\].,;|/^*+?!=<>-])
| (?P<other>.)
""", re.X | re.S)


# the data block of a VALUES clause, as one token: only terms, strings lexed whole
_VALUES_BLOCK = re.compile(
    r"\{(?:[^{}\"'#<]++"                 # anything but braces, quotes, comments, IRIs
    r"|<[^<>\"{}|^`\\\x00-\x20]*+>|<"    # an IRI (may hold '#')
    r'|"(?:[^"\\\n]++|\\.)*+"'         # strings, escapes included
    r"|'(?:[^'\\\n]++|\\.)*+'"
    r"|\#[^\n]*+)*+\}")                 # a comment


@dataclass(frozen=True, slots=True)
class Token:
    kind: str    # string iri var bnode pname langtag number word punct other values
    text: str
    start: int   # offset in the query text
    end: int

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.text.upper() in words

    def is_punct(self, *chars: str) -> bool:
        return self.kind == "punct" and self.text in chars


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``, whitespace and comments left out. The data block of a
    ``VALUES`` clause (thousands of bound rows, from kgcult's own value binding) is one
    ``values`` token: nothing in it is ever rewritten."""
    out: list[Token] = []
    pos, n = 0, len(text)
    values_at = -1  # index in out of the last VALUES keyword
    while pos < n:
        m = _TOKEN.match(text, pos)
        assert m is not None and m.lastgroup is not None  # (?P<other>.) matches any character
        kind, pos = m.lastgroup, m.end()
        if kind in ("ws", "comment"):
            continue
        tok = Token(kind, m.group(), m.start(), pos)
        if kind == "word" and tok.text.upper() == "VALUES":
            values_at = len(out)
        elif kind == "punct" and tok.text == "{" and values_at >= 0 and _values_header(out[values_at + 1:]):
            block = _VALUES_BLOCK.match(text, tok.start)
            if block:
                tok = Token("values", block.group(), tok.start, block.end())
                pos = block.end()
            values_at = -1
        out.append(tok)
    return out


def _values_header(tokens: list[Token]) -> bool:
    """``?x`` or ``( ?x ?y ... )``: what lies between VALUES and its data block."""
    if len(tokens) == 1:
        return tokens[0].kind == "var"
    return bool(tokens) and tokens[0].text == "(" and tokens[-1].text == ")" \
        and all(t.kind == "var" for t in tokens[1:-1])


def matching_close(tokens: list[Token], i: int) -> int:
    """Index of the bracket closing the one at ``tokens[i]`` (``{``, ``(`` or ``[``);
    len(tokens) if it is never closed."""
    open_, close = tokens[i].text, {"{": "}", "(": ")", "[": "]"}[tokens[i].text]
    depth = 0
    for j in range(i, len(tokens)):
        t = tokens[j]
        if t.kind == "punct":
            if t.text == open_:
                depth += 1
            elif t.text == close:
                depth -= 1
                if depth == 0:
                    return j
    return len(tokens)


def enclosing_open(tokens: list[Token], i: int) -> int | None:
    """Index of the unclosed ``{`` that ``tokens[i]`` lies in (None at the top level)."""
    depth = 0
    for j in range(i - 1, -1, -1):
        t = tokens[j]
        if t.is_punct("}"):
            depth += 1
        elif t.is_punct("{"):
            if depth == 0:
                return j
            depth -= 1
    return None


def blank_out(text: str) -> str:
    """``text`` with every character but newlines made a space: a deleted span keeps the
    lines and columns of what follows."""
    return re.sub(r"[^\n]", " ", text)


__all__ = ["Token", "tokenize", "matching_close", "enclosing_open", "blank_out"]
