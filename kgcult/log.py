"""Logging: every module logs to ``logging.getLogger(__name__)``; the CLI shows INFO and
above on stderr as plain lines (``-q`` for warnings only, ``-v`` for debug), a library user
configures logging as usual. Progress bars are tqdm with ``disable=None`` (shown only on a
terminal)."""
from __future__ import annotations

import importlib
import logging
import sys
import threading
import time

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
        except Exception:  # noqa: BLE001 - logging must never raise  # pragma: no cover
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
    """Progress on stderr, through one facility: a tqdm bar when stderr is a terminal;
    otherwise (a log file, CI, a pipe) a log line every :data:`LOG_EVERY` seconds with the
    same figures, so long work is never silent. ``disable=True`` turns both off."""
    kw.setdefault("disable", None)
    kw.setdefault("file", sys.stderr)
    kw.setdefault("leave", False)
    if kw["disable"] is None and not _is_terminal(kw["file"]) and logging.getLogger(ROOT).isEnabledFor(logging.INFO):
        return LogProgress(iterable, total=kw.get("total"), desc=kw.get("desc") or "progress",
                           unit=kw.get("unit", "it"), unit_scale=kw.get("unit_scale", False))
    return importlib.import_module("tqdm").tqdm(iterable, **kw)  # not at start-up: ~35 ms


LOG_EVERY = 10.0  # seconds between progress lines when stderr is not a terminal


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class LogProgress:
    """tqdm's interface (update, close, a context manager, iteration) as periodic log lines."""

    disable = False
    postfix = ""

    def __init__(self, iterable=None, *, total=None, desc="progress", unit="it", unit_scale=False):
        self.iterable, self.total, self.desc, self.unit, self.unit_scale = iterable, total, desc, unit, unit_scale
        self.n = 0
        self._start = self._last = time.monotonic()
        self._log = logging.getLogger(ROOT + ".progress")
        # a line every LOG_EVERY seconds even when nothing is counted: a bulk load reads its
        # whole input early and then indexes it for a long while
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, name="kgcult-progress", daemon=True)
        self._beat.start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(LOG_EVERY / 2):
            if time.monotonic() - self._last >= LOG_EVERY and not self._stop.is_set():
                self._last = time.monotonic()
                self._log.info("%s", self._line())

    def _amount(self, n: float) -> str:
        if not self.unit_scale:
            return f"{n:,.0f}"
        for size, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if n >= size:
                return f"{n / size:.1f} {prefix}"
        return f"{n:.0f} "

    def _line(self) -> str:
        done = f"{self._amount(self.n)}{self.unit}"
        if self.total:
            done = f"{100 * self.n / self.total:.0f}% ({done} of {self._amount(self.total)}{self.unit})"
            if self.n >= self.total:
                done += ", all read, still working"
        extra = f" [{self.postfix}]" if self.postfix else ""
        return f"{self.desc}: {done} after {time.monotonic() - self._start:.0f} s{extra}"

    def update(self, n: float = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self._last >= LOG_EVERY:
            self._last = now
            self._log.info("%s", self._line())

    def set_description(self, desc: str, refresh: bool = True) -> None:
        self.desc = desc

    def set_postfix(self, ordered_dict=None, refresh: bool = True, **kwargs) -> None:
        self.postfix = ", ".join(f"{k}={v}" for k, v in {**(ordered_dict or {}), **kwargs}.items())

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix = s

    def refresh(self) -> None:
        pass

    def __iter__(self):
        for x in self.iterable:
            yield x
            self.update(1)

    def close(self, *, stopped: bool = False) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        if threading.current_thread() is not self._beat:
            self._beat.join(1.0)  # no line of this progress after it is closed
        if time.monotonic() - self._start >= LOG_EVERY:  # only long work gets a closing line
            self._log.info("%s: %s after %.0f s", self.desc, "stopped" if stopped else "done",
                           time.monotonic() - self._start)

    def __enter__(self) -> "LogProgress":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(stopped=exc_type is not None)  # an error or Ctrl-C: not "done"
