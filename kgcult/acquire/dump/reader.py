"""Reading a dump once: its format, a parallel decompressor when one is installed, and the
sha256 of the compressed file computed from the same read.

Decompressors, best first (each used when present; otherwise Python's own module, and the
log says the read is single-threaded):

* ``.gz``: on 1 or 2 cores Python's ``gzip`` in this process (pigz inflates on one thread
  too, and with the cores this few, copying everything through its pipe costs more than
  it saves: d60000.json.gz ingests ~10 % faster); else ``pigz -dc`` (inflate, check and
  I/O on separate threads, in its own process), then rapidgzip (PyPI, ``kgcult[dump]``:
  parallel inflate inside this process; it holds more memory, and on a few cores the
  parse, not the inflate, is the bottleneck);
* ``.bz2``: ``lbzip2 -dc`` (parallel), then indexed_bzip2 (PyPI, ``kgcult[dump]``, from the
  family of rapidgzip: parallel bzip2 decoding inside this process, on 2 cores or more),
  then Python's ``bz2``;
* ``.zst``: ``zstd -dc``, then the ``zstandard`` module.

A command-line decompressor reads the compressed bytes from a pipe that a feeder thread
fills while hashing them; rapidgzip and indexed_bzip2 read the file themselves (in
parallel, out of order), so a thread hashes the compressed file beside them (the
compressed bytes are read twice, but decompressed once).
"""
from __future__ import annotations

import bz2
import fcntl
import gzip
import hashlib
import io
import logging
import mmap
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Literal

from kgcult.errors import KgcultError
from kgcult.files import TapReader
from kgcult.store import rdfio

try:  # optional: kgcult[dump]
    import rapidgzip
except ImportError:  # pragma: no cover - depends on the environment
    rapidgzip = None
try:  # optional: kgcult[dump]
    import indexed_bzip2
except ImportError:  # pragma: no cover - depends on the environment
    indexed_bzip2 = None

log = logging.getLogger(__name__)

BLOCK = 1 << 22  # bytes handed to a worker at a time (whole lines)


class IngestError(KgcultError):
    """A dump that cannot be read or parsed (names the file and line)."""


def dump_format(path: str, fmt: str = "auto") -> str:
    """``json`` or ``ntriples``, from ``fmt`` or the file name."""
    if fmt != "auto":
        return fmt
    name = Path(path).name
    for suffix in rdfio.COMPRESSIONS:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    if name.endswith(".json"):
        return "json"
    if name.endswith(".nt"):
        return "ntriples"
    raise IngestError(f"{path}: cannot tell the dump format from the name (expected .json or .nt, "
                      "optionally .gz/.bz2/.zst); pass --format json|ntriples")


def compression(path: str) -> str | None:
    for suffix in rdfio.COMPRESSIONS:
        if str(path).endswith(suffix):
            return suffix
    return None


_TOOLS = {".gz": ["pigz", "-dc"], ".bz2": ["lbzip2", "-dc"], ".zst": ["zstd", "-dcq"]}


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def decompressor(path: str, threads: int | None = None) -> str:
    """The decompressor :class:`DumpReader` will use for ``path`` (for logs and benchmarks)."""
    comp = compression(path)
    if comp is None:
        return "none"
    tool = _TOOLS[comp][0]
    if comp == ".gz" and (threads or cpu_count()) <= 2:
        return "python-gzip"
    if shutil.which(tool):
        return tool
    if comp == ".gz" and rapidgzip is not None and (threads or cpu_count()) > 1:
        return "rapidgzip"
    if comp == ".bz2" and indexed_bzip2 is not None and (threads or cpu_count()) > 1:
        return "indexed_bzip2"
    return {".gz": "python-gzip", ".bz2": "python-bz2", ".zst": "python-zstandard"}[comp]



class DumpReader:
    """Context manager: ``.stream`` gives the decompressed bytes; after the stream is read
    to its end, :meth:`sha256` gives the hash of the file as stored."""

    def __init__(self, path: str, threads: int | None = None):
        self.path = path
        self.threads = threads or cpu_count()
        self.sha = hashlib.sha256()
        self.tool = decompressor(path, self.threads)
        self._threads: list[threading.Thread] = []
        self._errors: list[BaseException] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self._closers: list = []
        self.stream: io.BufferedIOBase

    def __enter__(self) -> "DumpReader":
        comp = compression(self.path) or ""  # "" for a file stored as it is
        try:
            raw = open(self.path, "rb")
        except OSError as e:
            raise IngestError(f"{self.path}: cannot read: {e}") from None
        self._closers.append(raw)
        if self.tool in ("pigz", "lbzip2", "zstd"):
            cmd = list(_TOOLS[comp])
            if self.tool == "lbzip2":
                cmd[1:1] = ["-n", str(self.threads)]
            self._proc = proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                 stderr=subprocess.PIPE, bufsize=0)
            assert isinstance(proc.stdin, io.FileIO) and isinstance(proc.stdout, io.FileIO)  # pipes, bufsize=0
            for pipe in (proc.stdin, proc.stdout):
                widen_pipe(pipe)
            self._spawn(self._feed, raw, proc.stdin)
            self.stream = io.BufferedReader(proc.stdout, 1 << 20)
        elif self.tool == "rapidgzip":
            self._spawn(self._hash_file)
            self.stream = io.BufferedReader(rapidgzip.open(raw, parallelization=self.threads), 1 << 20)
            self._closers.append(self.stream)
        elif self.tool == "indexed_bzip2":
            self._spawn(self._hash_file)
            self.stream = io.BufferedReader(indexed_bzip2.open(raw, parallelization=self.threads), 1 << 20)
            self._closers.append(self.stream)
        else:
            self._hashing = TapReader(raw, self.sha.update)
            buffered = io.BufferedReader(self._hashing, 1 << 20)
            if comp == ".gz":
                self.stream = gzip.GzipFile(fileobj=buffered, mode="rb")
            elif comp == ".bz2":
                self.stream = bz2.BZ2File(buffered, "rb")
            elif comp == ".zst":
                self.stream = io.BufferedReader(rdfio.ZstdFrames(buffered), 1 << 20)  # a cut file raises
            else:
                self.stream = buffered
            self._closers.append(self.stream)
        if self.tool == "python-gzip" and self.threads <= 2:
            log.info("%s: decompressing with Python's gzip in this process (on %d core%s it costs less than "
                     "a pipe from pigz)", self.path, self.threads, "s" if self.threads > 1 else "")
        elif self.tool.startswith("python-"):
            log.info("%s: decompressing on one thread with Python's module (install %s for a parallel "
                     "read)", self.path, {".gz": "pigz or rapidgzip (kgcult[dump])",
                                          ".bz2": "lbzip2 or indexed_bzip2 (kgcult[dump])",
                                          ".zst": "zstd"}[comp])
        else:
            log.info("%s: decompressing with %s", self.path, self.tool)
        self.ends = StreamEnds(self.stream)
        self.stream = io.BufferedReader(self.ends, 1 << 20)
        return self

    def check_complete(self, kind: str, records: int) -> None:
        """Refuse a dump that holds nothing, or a JSON dump that does not open with ``[`` and
        close with ``]`` (Wikidata's ``latest-all.json`` does both: a file cut at a line
        boundary would otherwise pass for a whole dump)."""
        what = "entities" if kind == "json" else "triples"
        if records == 0:
            raise IngestError(f"{self.path}: no {what} in the dump: nothing to ingest (an empty or cut file?)")
        if kind == "json":
            head, tail = self.ends.head.lstrip(), self.ends.tail.rstrip()
            if not head.startswith(b"["):
                raise IngestError(f"{self.path}: a JSON dump starts with a '[' line; this one does not")
            if not tail.endswith(b"]"):
                raise IngestError(f"{self.path}: the JSON dump does not end with its closing ']' line: "
                                  "the file is cut (a complete dump ends with ']'); nothing was ingested")

    def _spawn(self, fn, *args) -> None:
        def run():
            try:
                fn(*args)
            except BrokenPipeError:
                pass
            except BaseException as e:  # noqa: BLE001 - re-raised by finish()
                self._errors.append(e)
        t = threading.Thread(target=run, daemon=True)
        t.start()
        self._threads.append(t)

    def _feed(self, raw, sink) -> None:
        try:
            while data := raw.read(1 << 20):
                self.sha.update(data)
                sink.write(data)
        finally:
            sink.close()

    def _hash_file(self) -> None:
        with open(self.path, "rb") as f:
            while data := f.read(1 << 22):
                self.sha.update(data)

    def blocks(self, size: int = BLOCK):
        """Blocks of whole lines, about ``size`` bytes each."""
        rest = b""
        try:
            while data := self.stream.read(size):
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    rest += data
                    continue
                yield rest + data[:cut]
                rest = data[cut:]
        except self.read_errors() as e:
            raise IngestError(f"{self.path}: cannot read: {e}") from None
        if rest:
            yield rest + b"\n"

    def ring_blocks(self, ring: "BlockRing", on_bytes=None):
        """:meth:`BlockRing.blocks` of the stream, read errors worded as an :class:`IngestError`."""
        try:
            yield from ring.blocks(self.stream, on_bytes)
        except self.read_errors() as e:
            raise IngestError(f"{self.path}: cannot read: {e}") from None

    def read_errors(self):
        """The exceptions a failed read raises, to word as an :class:`IngestError`."""
        return (EOFError, OSError, ValueError, RuntimeError)

    def sha256(self) -> str:
        """The hex sha256 of the file; checks the decompressor ended well."""
        for t in self._threads:
            t.join()
        if self._proc is not None:
            assert self._proc.stderr is not None  # a pipe
            err = self._proc.stderr.read().decode("utf-8", "replace").strip()
            if self._proc.wait() != 0:
                raise IngestError(f"{self.path}: cannot read: {self.tool}: {err or 'failed'}")
        if self._errors:
            raise IngestError(f"{self.path}: cannot read: {self._errors[0]}")
        if getattr(self, "_hashing", None) is not None:
            self._hashing.drain()
        return self.sha.hexdigest()

    def __exit__(self, *exc) -> Literal[False]:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            for f in (self._proc.stdout, self._proc.stderr):
                if f is not None:
                    f.close()
        for c in reversed(self._closers):
            try:
                c.close()
            except Exception:  # noqa: BLE001 - closing after an error
                pass
        for t in self._threads:
            t.join(timeout=5)
        return False


def widen_pipe(pipe) -> None:
    """A 1 MiB buffer for ``pipe`` (a file or descriptor) where the system allows it (with
    the default 64 KiB, reader and writer wake each other 16 times as often)."""
    try:
        fcntl.fcntl(pipe, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)  # Linux
    except OSError:
        pass


class StreamEnds(io.RawIOBase):
    """A stream read through unchanged, keeping its first and last bytes (``head``, ``tail``)."""

    KEEP = 256

    def __init__(self, stream):
        self._stream = stream
        self.head = b""
        self.tail = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._stream.readinto(buffer)
        if n:
            data = bytes(memoryview(buffer)[:n]) if n <= self.KEEP else bytes(memoryview(buffer)[n - self.KEEP:n])
            if len(self.head) < self.KEEP:
                self.head += bytes(memoryview(buffer)[:min(n, self.KEEP - len(self.head))])
            self.tail = (self.tail + data)[-self.KEEP:]
        return n or 0


class BlockRing:
    """Blocks of whole lines, read straight into ``slots`` slots of ``size`` bytes in an
    anonymous shared mapping, which worker processes forked after it was made see as it is:
    a block goes to a worker as (offset, length), its bytes are neither copied nor pickled.
    Block ``k`` uses slot ``k % slots``: the reader must not run more than ``slots - 1``
    blocks ahead of the oldest one still being parsed. A line longer than a slot comes as a
    block of bytes instead."""

    def __init__(self, slots: int, size: int | None = None):
        self.slots, self.size = slots, size or BLOCK
        self.mem = mmap.mmap(-1, slots * self.size)

    def blocks(self, stream, on_bytes=None):
        """(offset, length) of each block of whole lines of ``stream`` (a last line without
        its newline gets one), or bytes for a block of one line longer than a slot;
        ``on_bytes(n)`` for every n bytes read."""
        view = memoryview(self.mem)
        carry, k = b"", 0
        try:
            while True:
                base = (k % self.slots) * self.size
                n = len(carry)
                view[base:base + n] = carry
                while n < self.size:
                    got = stream.readinto(view[base + n:base + self.size])
                    if not got:
                        break
                    n += got
                if on_bytes is not None:
                    on_bytes(n - len(carry))
                if n == 0:
                    return
                end = base + n
                if n < self.size:  # the end of the stream
                    if self.mem[end - 1] != 0x0A:
                        view[end:end + 1] = b"\n"
                        n += 1
                    yield base, n
                    return
                cut = self.mem.rfind(b"\n", base, end) + 1
                if cut == 0:
                    block, carry = self._long_line(self.mem[base:end], stream, on_bytes)
                    yield block
                    continue
                carry = self.mem[cut:end]
                yield base, cut - base
                k += 1
        finally:
            view.release()

    def _long_line(self, head: bytes, stream, on_bytes):
        """(the bytes up to and with the first newline after ``head``, what follows)."""
        parts = [head]
        while True:
            more = stream.read(self.size)
            if on_bytes is not None:
                on_bytes(len(more))
            if not more:
                return b"".join(parts) + b"\n", b""
            cut = more.find(b"\n") + 1
            if cut:
                parts.append(more[:cut])
                return b"".join(parts), more[cut:]
            parts.append(more)

    def close(self) -> None:
        self.mem.close()
