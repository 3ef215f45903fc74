"""Reading JSON Lines input (datasets, mention files, answers, gold files) with one
behaviour everywhere: blank lines ignored, each line one JSON object, a malformed line
reported as ``file:line`` and either fatal or skipped (``on_error``)."""
from __future__ import annotations

import json
from typing import IO, Iterator

from kgcult.errors import KgcultError


def iter_jsonl(src, on_error: str = "fail", log=None) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank line of a JSONL file path or text stream."""
    if on_error not in ("fail", "skip"):
        raise KgcultError(f"on_error must be skip or fail, not {on_error!r}")
    name = getattr(src, "name", str(src))
    own = not hasattr(src, "read")
    try:
        f: IO = open(src, encoding="utf-8") if own else src
    except OSError as e:
        raise KgcultError(f"{src}: cannot read: {e}") from None
    try:
        lineno = 0
        while True:
            try:
                line = f.readline()
            except UnicodeDecodeError as e:
                raise KgcultError(f"{name}:{lineno + 1}: not UTF-8 ({e})") from None
            if not line:
                break
            lineno += 1
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                if not isinstance(obj, dict):
                    raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
            except ValueError as e:
                reject(f"{name}:{lineno}: malformed JSON line ({e})", on_error, log)
                continue
            yield lineno, obj
    finally:
        if own:
            f.close()


def reject(message: str, on_error: str = "fail", log=None) -> None:
    """A bad input row: raise (``on_error="fail"``) or report it as skipped."""
    if on_error == "fail":
        raise KgcultError(message)
    if log:
        log(f"skipped: {message}")


def read_jsonl(src, on_error: str = "fail", log=None) -> list[dict]:
    """All objects of a JSONL file, in order."""
    return [obj for _, obj in iter_jsonl(src, on_error=on_error, log=log)]
