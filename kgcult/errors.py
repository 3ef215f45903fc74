"""kgcult's exceptions: the CLI turns each into a one-line ``error: ...`` on stderr and
a non-zero exit; the message says what went wrong and where (file:line:column or field)."""
from __future__ import annotations

import re


class KgcultError(Exception):
    """A user-facing error: the message says what went wrong and where."""

    exit_code = 1


class RdfSyntaxError(KgcultError):
    """A malformed RDF file; the message names the file, line and column."""

    def __init__(self, path: str, line: int | None, column: int | None, detail: str):
        self.path, self.line, self.column, self.detail = path, line, column, detail
        where = f"{path}:{line}:{column}" if line else path
        super().__init__(f"{where}: malformed RDF: {detail}")


_POSITION = re.compile(r"line (\d+) column (\d+)")


def syntax_error(path: str, exc: SyntaxError) -> RdfSyntaxError:
    """Translate a pyoxigraph parser error into an RdfSyntaxError with file and line."""
    line, column = exc.lineno, exc.offset
    message = str(exc.args[0]) if exc.args else str(exc)
    if line is None:
        m = _POSITION.search(message)
        if m:
            line, column = int(m.group(1)), int(m.group(2))
    detail = re.sub(r"^Parser error (?:between|at) line \d+ (?:column \d+(?: and line \d+ column \d+)?"
                    r"|between columns \d+ and \d+): ", "", message)
    detail = re.sub(r" \([^()]*, line \d+\)$", "", detail)
    return RdfSyntaxError(path, line, column, detail)


class QuerySyntaxError(KgcultError):
    """A SPARQL syntax error with line and column."""

    def __init__(self, message: str, line: int | None, column: int | None, query: str):
        self.line, self.column, self.query = line, column, query
        super().__init__(message)

    @classmethod
    def at(cls, query: str, line: int, column: int, detail: str) -> "QuerySyntaxError":
        """An error at ``line``:``column`` (1-based) with the query line and a caret under it."""
        lines = query.splitlines() or [""]
        line = min(max(line, 1), len(lines))
        src = lines[line - 1]
        column = min(max(column, 1), len(src) + 1)
        caret = " " * (column - 1) + "^"
        return cls(f"SPARQL syntax error at line {line}, column {column}: {detail}\n  {src}\n  {caret}",
                   line, column, query)

    @classmethod
    def from_oxigraph(cls, query: str, exc: SyntaxError) -> "QuerySyntaxError":
        """Oxigraph's parser error with its grammar dump cut down to a readable line."""
        text = str(exc.args[0]) if exc.args else str(exc)
        m = re.search(r"error at (\d+):(\d+): (.*)", text, re.S)
        if not m:
            return cls(f"SPARQL syntax error: {text}", None, None, query)
        return cls.at(query, int(m.group(1)), int(m.group(2)), _readable(m.group(3)))


def _readable(detail: str) -> str:
    """``expected one of ABS, AVG, ['0' ..= '9' | ...], ...`` -> a short ``expected ...``."""
    detail = re.sub(r"\[[^\]]*\]", "", detail.replace("\n", " "))  # character classes
    items = [i.strip() for i in re.sub(r"^expected (one of )?", "", detail).split(",") if i.strip()]
    if not detail.startswith("expected"):
        return detail.strip() or "unexpected input"
    if not items:
        return "unexpected input"
    if len(items) > 8:
        items = items[:8] + ["..."]
    return "unexpected input; expected " + ("one of " if len(items) > 1 else "") + ", ".join(items)
