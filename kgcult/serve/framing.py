"""Strict HTTP/1.1 request framing (RFC 9112), so that the server and any proxy in front
of it agree where one request ends and the next begins (no request smuggling):

- a repeated ``Content-Length`` (even with equal values), ``Transfer-Encoding`` or
  ``Host`` header is refused with 400 (cheroot kept the last ``Content-Length`` and read
  the rest of the body as a second request; RFC 9112 §6.3 item 5, §3.2);
- ``Content-Length`` together with ``Transfer-Encoding`` is refused with 400 (§6.1: such
  a message "ought to be handled as an error"; it gave 500);
- either way the connection is closed (cheroot closes it when a request is not ready).

:class:`StrictHeaderReader` replaces cheroot's header reader; :func:`length_problem`
is asked once the headers are read (kgcult.serve.app).
"""
from __future__ import annotations

from collections import Counter

from cheroot.server import HeaderReader

SINGLE = (b"Content-Length", b"Transfer-Encoding", b"Host")


class _Counting(dict):
    def __init__(self) -> None:
        super().__init__()
        self.sets: Counter = Counter()

    def __setitem__(self, key, value):
        self.sets[key] += 1
        super().__setitem__(key, value)


class StrictHeaderReader(HeaderReader):
    """cheroot's header reader, refusing a header that framing depends on when it comes
    more than once (a folded continuation line counts as once more)."""

    def __call__(self, rfile, hdict=None):
        counting = _Counting()
        super().__call__(rfile, counting)
        for name in SINGLE:
            if counting.sets[name] > 1:
                raise ValueError(f"{name.decode()} sent more than once (RFC 9112: refused)")
        if hdict is None:
            hdict = {}
        hdict.update(counting)
        return hdict


def length_problem(headers: dict) -> str | None:
    """Why the body length of a request is ambiguous, or None."""
    if b"Content-Length" in headers and b"Transfer-Encoding" in headers:
        return "Content-Length and Transfer-Encoding together (RFC 9112 §6.1: refused)"
    return None


__all__ = ["StrictHeaderReader", "length_problem"]
