"""Logging: every module logs to ``logging.getLogger(__name__)``; the CLI shows INFO and
above on stderr as plain lines (``-q`` for warnings only, ``-v`` for debug), a library user
configures logging as usual. Progress bars are tqdm with ``disable=None`` (shown only on a
terminal)."""
from __future__ import annotations

import importlib
import logging
import sys

ROOT = "kgcult"


class _PlainStderr(logging.Handler):
    """Messages as they are (``warning: ...`` for warnings), written through tqdm so
    that they do not break a progress bar."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
            if record.levelno >= logging.WARNING and not msg.startswith(("warning:", "error:")):
                msg = f"warning: {msg}"
            tq = sys.modules.get("tqdm")  # imported only with a progress bar (~35 ms, ~3 MB)
            if tq is None:  # no bar to keep intact
                print(msg, file=sys.stderr, flush=True)
            else:
                tq.tqdm.write(msg, file=sys.stderr)
        except Exception:  # pragma: no cover - logging must never raise
            self.handleError(record)


def setup_cli(verbosity: int = 0) -> None:
    """Route kgcult's log records to stderr for a command-line run."""
    logger = logging.getLogger(ROOT)
    for h in list(logger.handlers):
        if isinstance(h, _PlainStderr):
            logger.removeHandler(h)
    logger.addHandler(_PlainStderr())
    logger.setLevel(logging.DEBUG if verbosity > 0 else logging.WARNING if verbosity < 0 else logging.INFO)
    logger.propagate = False


def progress(iterable=None, **kw):
    """A tqdm progress bar on stderr, shown only when stderr is a terminal."""
    kw.setdefault("disable", None)
    kw.setdefault("file", sys.stderr)
    kw.setdefault("leave", False)
    return importlib.import_module("tqdm").tqdm(iterable, **kw)  # not at start-up: ~35 ms
