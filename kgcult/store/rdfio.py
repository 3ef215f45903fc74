"""Reading RDF files: format from the file name, transparent .gz/.bz2/.zst decompression
streamed into the parser (never an uncompressed copy on disk), a leading UTF-8 byte-order
mark skipped, and syntax and decompression errors turned into one-line messages naming
the file."""
from __future__ import annotations

import bz2
import gzip
import io
import os
import threading
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

import zstandard
import pyoxigraph
from pyoxigraph import RdfFormat

from kgcult.errors import KgcultError, RdfSyntaxError, syntax_error  # noqa: F401 (re-exported)
from kgcult.files import TapReader

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
BOM = b"\xef\xbb\xbf"
# Written after the data when decompression fails, so that the parser stops with an error
# (and the bulk load commits nothing) instead of taking a truncated input for a whole one.
_POISON = b"\n<kgcult: the input could not be decompressed> .\n"


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


def open_binary(path: str | os.PathLike):
    """Open a file for reading, decompressing by suffix."""
    p = str(path)
    return _decompress(next((c for c in COMPRESSIONS if p.endswith(c)), None), open(p, "rb"))


class ZstdFrames(io.RawIOBase):
    """A .zst file decompressed frame after frame (pzstd and zstd -T write several). Unlike
    ``zstandard``'s stream reader, which ends quietly where a cut file ends, a file that
    stops inside a frame raises EOFError, as gzip and bz2 do."""

    CHUNK = 1 << 20

    def __init__(self, raw: BinaryIO):
        self._file = raw
        self._dctx = zstandard.ZstdDecompressor()
        self._dobj = self._dctx.decompressobj()
        self._pending = b""
        self._fed = False
        self._done = False

    def readable(self) -> bool:
        return True

    def _fill(self) -> None:
        while not self._pending and not self._done:
            chunk = self._file.read(self.CHUNK)
            if not chunk:
                if not self._fed or not self._dobj.eof:
                    raise EOFError("the zstd stream ends inside a frame")
                self._done = True
                return
            if self._dobj.eof:  # the previous frame ended exactly at a chunk boundary
                self._dobj = self._dctx.decompressobj()
            self._fed = True
            out = [self._dobj.decompress(chunk)]
            while self._dobj.eof and self._dobj.unused_data:  # the next frame starts in this chunk
                rest = self._dobj.unused_data
                self._dobj = self._dctx.decompressobj()
                out.append(self._dobj.decompress(rest))
            self._pending = b"".join(out)

    def readinto(self, buffer) -> int:
        self._fill()
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self) -> None:
        self._file.close()
        super().close()


class chunk_pipe:
    """Context manager giving a readable OS pipe fed by a thread with the byte blocks of
    ``chunks``, so that a consumer in Rust (Oxigraph's bulk loader, by the pipe's
    ``/dev/fd`` path: :func:`reader_source`) reads while Python produces. If producing
    fails, the thread ends the stream with a line no parser accepts, so the consumer fails
    rather than commit a truncated input, and leaving the context raises the producer's
    error (after the consumer's own, which it replaces). A consumer that stops reading
    (its own syntax error) ends the producer quietly."""

    def __init__(self, chunks: Iterable[bytes], *, buffering: int = 1 << 20):
        self.chunks, self.buffering = chunks, buffering
        self.error: BaseException | None = None

    def __enter__(self):
        r, w = os.pipe()
        self._reader = open(r, "rb", buffering=self.buffering)
        self._thread = threading.Thread(target=self._pump, args=(w,), name="kgcult-pipe", daemon=True)
        self._thread.start()
        return self._reader

    def _pump(self, w: int) -> None:
        with open(w, "wb", buffering=0) as sink:
            try:
                for chunk in self.chunks:
                    sink.write(chunk)
            except BrokenPipeError:  # the consumer stopped reading (a syntax error): fine
                pass
            except BaseException as e:  # noqa: BLE001 - handed to the main thread
                self.error = e
                try:
                    sink.write(_POISON)
                except OSError:
                    pass

    def __exit__(self, exc_type, exc, tb):
        self._reader.close()
        self._thread.join()
        if self.error is not None:
            # no frame of this object holds the error once raised (an in-process caller
            # may reopen the store as soon as it has it)
            errors, self.error = [self.error], None
            raise errors.pop()
        return False


class _Stopped(Exception):
    """:meth:`decompressing_pipe.stop` ends the stream (with the unparsable line)."""


class decompressing_pipe(chunk_pipe):
    """Context manager giving a binary stream of the decompressed file, fed by a thread
    (:class:`chunk_pipe`): the reader (Oxigraph's parser) runs in parallel, and nothing is
    written to disk. A leading UTF-8 BOM is dropped. A file that cannot be read or
    decompressed ends the stream with a line no parser accepts, and leaving the context
    raises a KgcultError naming the file and the cause (in place of the parser's error).
    ``progress(n)`` receives compressed byte counts; ``lines(n, raw)`` the newlines of each
    decompressed block and the compressed bytes read so far (N-Triples and N-Quads: one
    triple a line), and ``(0, None)`` once the whole file is read; ``digest`` (a hashlib
    object) is updated with the file's bytes as they are read, so a consumer that read it
    all has its hash without a read of its own. :meth:`stop` (from any thread, e.g. on
    Ctrl-C) ends the stream early with the unparsable line, so the consumer stops within a
    block and commits nothing more."""

    def __init__(self, path: str, progress=None, *, lines=None, digest=None):
        super().__init__(self._blocks())
        self.path, self.progress, self.lines, self.digest = path, progress, lines, digest
        self._stop = threading.Event()
        self._raw_read = 0

    def stop(self) -> None:
        self._stop.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def _count(self, data: bytes) -> None:
        self._raw_read += len(data)
        if self.digest is not None:
            self.digest.update(data)
        if self.progress:
            self.progress(len(data))

    def _blocks(self) -> Iterator[bytes]:
        counted = TapReader(open(self.path, "rb"), self._count, close_raw=True)
        _, compression = split_name(self.path)
        with _decompress(compression, io.BufferedReader(counted, 1 << 20)) as src:
            first = True
            while block := src.read(1 << 20):
                if self._stop.is_set():
                    raise _Stopped
                if first and block.startswith(BOM):
                    block = block[len(BOM):]
                first = False
                yield block
                if self.lines is not None:
                    self.lines(block.count(b"\n"), self._raw_read)
        if self._stop.is_set():  # the parser may not have read it all: stop it still
            raise _Stopped
        if self.lines is not None:
            self.lines(0, None)  # the whole file was read

    def __exit__(self, exc_type, exc, tb):
        try:
            return super().__exit__(exc_type, exc, tb)
        except _Stopped:
            return False
        except BaseException as e:  # noqa: BLE001 - the file's own error, named
            raise read_error(self.path, e) from None


def reader_source(stream: BinaryIO) -> dict:
    """How Oxigraph should read a decompressing pipe: by its ``/dev/fd`` path where the
    system has one, so that Rust reads the pipe without taking Python's GIL for every
    chunk (the decompressing thread needs it); through the Python stream otherwise."""
    fd_path = f"/dev/fd/{stream.fileno()}"
    if os.path.exists(fd_path):
        return {"path": fd_path}
    return {"input": stream}


def read_error(path: str, exc: BaseException) -> KgcultError:
    """A one-line error for a file that cannot be read or decompressed."""
    _, compression = split_name(path)
    if isinstance(exc, EOFError):
        what = f"the compressed ({compression}) data ends early: the file is truncated"
    elif compression and isinstance(exc, (OSError, ValueError, zstandard.ZstdError)):
        what = f"not valid {compression} data ({exc})"
    else:
        what = str(exc) or type(exc).__name__
    return KgcultError(f"{path}: cannot read: {what}")


def check_file(path: str, fmt: RdfFormat, on_quad=None, *, lines=None, digest=None) -> int:
    """Parse a whole file without storing it (streamed, bounded memory); ``on_quad(quad,
    n)`` (n: the quad's 1-based position) may raise to refuse it; ``lines`` and ``digest``
    as for :class:`decompressing_pipe`. Returns the quad count."""
    n = 0
    err: SyntaxError | None
    too_long: KgcultError | None
    with decompressing_pipe(path, lines=lines, digest=digest) as stream:
        try:
            for quad in pyoxigraph.parse(input=stream, format=fmt):
                n += 1
                if on_quad is not None:
                    on_quad(quad, n)
        except SyntaxError as e:
            err = e
        except MemoryError as e:  # Oxigraph's parser: "Reached the buffer maximal size of 16777216"
            err = None
            too_long = KgcultError(f"{path}:{n + 1}: a line or literal is larger than the parser's buffer ({e})")
        else:
            err = too_long = None
    if err is not None:
        raise syntax_error(path, err) from None
    if too_long is not None:
        raise too_long
    return n


def _decompress(compression: str | None, raw):
    if compression == ".gz":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if compression == ".bz2":
        return bz2.BZ2File(raw, "rb")
    if compression == ".zst":
        return io.BufferedReader(ZstdFrames(raw), buffer_size=1 << 20)
    return raw


