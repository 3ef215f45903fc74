"""Reading RDF files: format from the file name, transparent .gz/.bz2/.zst decompression,
and syntax errors turned into ``file:line:column`` messages."""
from __future__ import annotations

import bz2
import gzip
import io
import os
import re
import threading
from pathlib import Path
from typing import BinaryIO

import zstandard
from pyoxigraph import RdfFormat

from kgcult.errors import KgcultError, RdfSyntaxError, syntax_error  # noqa: F401 (re-exported)

FORMATS = {
    ".nt": RdfFormat.N_TRIPLES,
    ".ntriples": RdfFormat.N_TRIPLES,
    ".nq": RdfFormat.N_QUADS,
    ".nquads": RdfFormat.N_QUADS,
    ".ttl": RdfFormat.TURTLE,
    ".turtle": RdfFormat.TURTLE,
    ".trig": RdfFormat.TRIG,
}
COMPRESSIONS = (".gz", ".bz2", ".zst")
QUAD_FORMATS = (RdfFormat.N_QUADS, RdfFormat.TRIG)


def split_name(path: str | os.PathLike) -> tuple[RdfFormat, str | None]:
    """Return (format, compression suffix or None) from a file name like ``x.nt.gz``."""
    name = Path(path).name.lower()
    compression = None
    for suffix in COMPRESSIONS:
        if name.endswith(suffix):
            compression = suffix
            name = name[: -len(suffix)]
            break
    fmt = FORMATS.get(Path(name).suffix)
    if fmt is None:
        known = ", ".join(sorted(FORMATS))
        raise KgcultError(
            f"{path}: cannot tell the RDF format from the file name "
            f"(expected one of {known}, optionally followed by .gz, .bz2 or .zst)"
        )
    return fmt, compression


def open_binary(path: str | os.PathLike) -> BinaryIO:
    """Open a file for reading, decompressing by suffix."""
    p = str(path)
    if p.endswith(".gz"):
        return gzip.open(p, "rb")
    if p.endswith(".bz2"):
        return bz2.open(p, "rb")
    if p.endswith(".zst"):
        return zstandard.ZstdDecompressor().stream_reader(open(p, "rb"), closefd=True)
    return open(p, "rb")


class decompressing_pipe:
    """Context manager giving a binary stream of the decompressed file, fed by a thread.

    The thread reads and decompresses the file and writes into an OS pipe; the reader
    (Oxigraph's parser) runs in parallel. A read or decompression error in the thread
    is re-raised when the context exits. ``progress(n)`` receives compressed byte counts."""

    def __init__(self, path: str, progress=None):
        self.path, self.progress = path, progress
        self.error: BaseException | None = None

    def __enter__(self):
        r, w = os.pipe()
        self._reader = open(r, "rb", buffering=1 << 20)
        self._thread = threading.Thread(target=self._pump, args=(w,), daemon=True)
        self._thread.start()
        return self._reader

    def _pump(self, w: int) -> None:
        try:
            raw = open(self.path, "rb")
            counted = CountingReader(raw, self.progress or (lambda n: None))
            buffered = io.BufferedReader(counted, 1 << 20)
            _, compression = split_name(self.path)
            with _decompress(compression, buffered) as src, open(w, "wb", buffering=0) as sink:
                while block := src.read(1 << 20):
                    sink.write(block)
        except BrokenPipeError:  # the parser stopped reading (syntax error): fine
            pass
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            self.error = e

    def __exit__(self, exc_type, exc, tb):
        self._reader.close()
        self._thread.join()
        if exc_type is None and self.error is not None:
            raise OSError(str(self.error)) from self.error
        return False


def _decompress(compression: str | None, raw):
    if compression == ".gz":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if compression == ".bz2":
        return bz2.BZ2File(raw, "rb")
    if compression == ".zst":
        return zstandard.ZstdDecompressor().stream_reader(raw, closefd=True)
    return raw


class CountingReader(io.RawIOBase):
    """Wraps the *compressed* file object so progress can be reported in file bytes."""

    def __init__(self, raw: BinaryIO, on_read):
        self._raw, self._on_read = raw, on_read

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        data = self._raw.read(len(b))
        n = len(data)
        b[:n] = data
        if n:
            self._on_read(n)
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


