"""A response body while a query writes it: held in memory up to ``in_memory`` bytes, then
in a file, and never more than ``limit`` bytes in all. The server streams the finished
body to the client from there, so a large result costs disk, not memory, and the status
(507 past the limit, 504 past the deadline) is still known before the first byte goes out.
"""
from __future__ import annotations

import io
import os
import re
import shutil
import tempfile

IN_MEMORY = 1 << 20  # bytes kept in memory before the body moves to a file
CHUNK = 256 << 10    # bytes per piece when a spooled body is sent


class TooLarge(Exception):
    """The body would grow past the spool's limit."""


class Spool:
    """A write-only byte sink with a size limit (:class:`TooLarge` past it)."""

    def __init__(self, limit: int, directory: str | None, in_memory: int = IN_MEMORY):
        self.limit, self.directory, self.in_memory = limit, directory, in_memory
        self.size = 0
        self._mem = io.BytesIO()
        self._file: tuple[io.BufferedWriter, str] | None = None  # once the body outgrew memory

    def write(self, data) -> int:
        if isinstance(data, str):
            data = data.encode("utf-8")
        if self.size + len(data) > self.limit:
            raise TooLarge(f"more than {self.limit} bytes")
        self.size += len(data)
        if self._file is None:
            self._mem.write(data)
            if self._mem.tell() > self.in_memory:
                fd, path = tempfile.mkstemp(prefix="body-", dir=self.directory)
                self._file = (os.fdopen(fd, "wb"), path)
                self._file[0].write(self._mem.getbuffer())
                self._mem = io.BytesIO()
        else:
            self._file[0].write(data)
        return len(data)

    def flush(self) -> None:
        pass

    def finish(self) -> tuple[bytes | None, str | None]:
        """The body: ``(bytes, None)`` when it stayed in memory, else ``(None, path)`` of a
        file the caller sends and deletes (:func:`stream_file`)."""
        if self._file is None:
            return self._mem.getvalue(), None
        f, path = self._file
        f.close()
        return None, path

    def discard(self) -> None:
        """Drop what was written (an error answer replaces it)."""
        if self._file is not None:
            f, path = self._file
            f.close()
            try:
                os.unlink(path)
            except OSError:
                pass
        self._file, self._mem, self.size = None, io.BytesIO(), 0


PREFIX = "kgcult-serve-"
_STALE = re.compile(re.escape(PREFIX) + r"(\d+)-")


def spool_folder() -> tempfile.TemporaryDirectory:
    """The server's spool folder, named with its process id; folders a killed server
    (SIGKILL: nothing of it runs) left behind are removed first (:func:`remove_stale`)."""
    remove_stale()
    return tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-")


def remove_stale(directory: str | None = None) -> list[str]:
    """Remove this user's spool folders whose server process is gone; returns their paths."""
    directory = directory or tempfile.gettempdir()
    gone: list[str] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return gone
    for name in names:
        m = _STALE.match(name)
        path = os.path.join(directory, name)
        if not m or not os.path.isdir(path) or os.stat(path).st_uid != os.getuid():
            continue
        try:
            os.kill(int(m.group(1)), 0)
            continue  # its server runs
        except ProcessLookupError:
            pass
        except (PermissionError, OverflowError, ValueError):
            continue
        shutil.rmtree(path, ignore_errors=True)
        gone.append(path)
    return gone


def stream_file(path: str):
    """Yield a spooled body in pieces; the file is unlinked at once (it is gone even if
    the client hangs up or the server is killed half way)."""
    f = open(path, "rb")
    try:
        os.unlink(path)
    except OSError:
        pass

    def pieces():
        try:
            while True:
                data = f.read(CHUNK)
                if not data:
                    return
                yield data
        finally:
            f.close()

    return pieces()
