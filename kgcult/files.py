"""Files in and out, with one behaviour everywhere.

* JSON Lines input (datasets, mention files, answers, gold files): blank lines ignored,
  each line one JSON object, a malformed line reported as ``file:line`` and either fatal
  or skipped with a warning (``on_error``).
* Atomic output: a file or a directory is written beside its target and renamed over it
  only when complete, so a failed run never leaves a half-written output behind.
* ``sha256_file``: a file's digest, read in blocks.
* ``TapReader``: a file read through, every chunk shown to a callback (hashing, progress).
* ``text_of``: a text input (a query file) as ``str``, or an error that says it is not text.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import marshal
import os
import py_compile
import re
import shutil
import sqlite3
import sys
import tempfile
from functools import lru_cache
from importlib.util import MAGIC_NUMBER, cache_from_source, find_spec
from pathlib import Path
from typing import IO, Callable, Iterator

from kgcult.errors import KgcultError
from kgcult.safe_text import clip

log = logging.getLogger(__name__)


# -- JSON Lines input ----------------------------------------------------------------

def iter_jsonl(src, on_error: str = "fail") -> Iterator[tuple[int, dict]]:
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
                reject(f"{name}:{lineno}: malformed JSON line ({e})", on_error)
                continue
            except RecursionError:  # Python's decoder recurses once per level
                reject(f"{name}:{lineno}: JSON nested too deeply to read", on_error)
                continue
            if _SURROGATE_ESCAPE.search(line) and _lone_surrogate(obj):
                # valid JSON ("sushi\ud800"), but no Unicode text: it broke every later
                # step that encodes it (SQLite, the output file) with a traceback
                reject(f"{name}:{lineno}: a string holds a lone surrogate (a \\uD800-\\uDFFF escape "
                       "without its pair): not Unicode text", on_error)
                continue
            yield lineno, obj
    finally:
        if own:
            f.close()


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _lone_surrogate(obj) -> bool:
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def reject(message: str, on_error: str = "fail") -> None:
    """A bad input row: raise (``on_error="fail"``) or log it as skipped (one line of
    bounded length either way)."""
    message = clip(message)
    if on_error == "fail":
        raise KgcultError(message)
    log.warning("skipped: %s", message)


def read_jsonl(src, on_error: str = "fail") -> list[dict]:
    """All objects of a JSONL file, in order."""
    return [obj for _, obj in iter_jsonl(src, on_error=on_error)]


def jsonl_bytes(rows) -> bytes:
    """Rows as JSON Lines (UTF-8, keys in the rows' order, no ASCII escaping)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


# -- atomic output -------------------------------------------------------------------

def _sibling(path: Path, tag: str) -> Path:
    return path.with_name(f".{path.name}.{tag}-{os.getpid()}")


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", *, fsync: bool = False, **kw):
    """Open a temporary sibling of ``path`` for writing; it replaces ``path`` when the
    block ends without an exception and is removed otherwise. ``path`` "-" is stdout
    (text mode only)."""
    if str(path) == "-":
        yield sys.stdout
        return
    target = Path(path)
    tmp = _sibling(target, "tmp")
    if "b" not in mode:
        kw.setdefault("encoding", "utf-8")
    try:
        with open(tmp, mode, **kw) as f:
            yield f
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


def atomic_write(path: str | os.PathLike, data: bytes | str, *, fsync: bool = False) -> None:
    """Write ``data`` to ``path`` all at once or not at all."""
    with atomic_open(path, "wb" if isinstance(data, bytes) else "w", fsync=fsync) as f:
        f.write(data)


def kept_table(path: Path | None, build: Callable[[], dict]) -> dict:
    """The dict saved at ``path`` (marshal), else ``build()``'s, saved there atomically
    for the next process (a folder that cannot be written: made again then); a file that
    is no such table is made again too."""
    if path is not None:
        try:
            table = marshal.loads(path.read_bytes())
            if isinstance(table, dict):
                return table
        except (OSError, EOFError, ValueError, TypeError):
            pass
    table = build()
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, marshal.dumps(table))
        except OSError:
            pass
    return table


def ensure_bytecode(root: str | os.PathLike | None = None) -> bool:
    """Compile the modules of the package folder ``root`` (default: kgcult's own) whose
    bytecode is missing or stale, when Python will not write it on import
    (``PYTHONDONTWRITEBYTECODE``, as many containers set) and the folder can be written
    (an editable install, which pip leaves uncompiled): every fresh process would compile
    the modules it imports again, 0.15-0.2 s of a fresh ``kgcult annotate``. Whether
    anything was compiled."""
    if not sys.dont_write_bytecode:
        return False  # Python writes it on the first import
    folder = Path(root) if root is not None else Path(__file__).resolve().parent
    if not os.access(folder, os.W_OK):
        return False
    stale = [p for p in sorted(folder.rglob("*.py")) if not _fresh_bytecode(p)]
    for p in stale:
        py_compile.compile(str(p), doraise=False, quiet=2)
    return bool(stale)


def _fresh_bytecode(source: Path) -> bool:
    """Whether the bytecode of ``source`` is there and valid as the import system checks
    it (PEP 552's timestamp header: this interpreter's magic number, the source's mtime
    and size)."""
    try:
        with open(cache_from_source(str(source)), "rb") as f:
            head = f.read(16)
        st = source.stat()
    except OSError:
        return False
    return (len(head) == 16 and head[:4] == MAGIC_NUMBER and int.from_bytes(head[4:8], "little") == 0
            and int.from_bytes(head[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
            and int.from_bytes(head[12:16], "little") == st.st_size & 0xFFFFFFFF)


def read_only_sqlite(path: str | os.PathLike, cache_kib: int) -> sqlite3.Connection:
    """An SQLite file that nothing writes any more (an index, a pool), opened read-only and
    immutable (no locks, no change checks) with a page cache of ``cache_kib``: a process
    opens dozens of them, and the OS page cache does the rest. (Memory-mapping them, PRAGMA
    mmap_size, moved a fresh ``kgcult annotate`` or ``link -i`` by less than the shared
    machine's noise, 0.96-1.05x, and counted the mapped pages in the peak RSS: 169 -> 418
    MiB for ``link -i``.)"""
    con = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro&immutable=1", uri=True,
                          check_same_thread=False)
    con.execute(f"PRAGMA cache_size=-{int(cache_kib)}")
    return con


@contextlib.contextmanager
def atomic_sqlite(path: str | os.PathLike) -> Iterator[sqlite3.Connection]:
    """A new SQLite database written under a scratch name beside ``path`` (no journal: it is
    written once), which replaces ``path`` when the block ends without an exception and is
    removed otherwise."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=scratch_prefix(target.name), dir=target.parent)
    os.close(fd)
    try:
        con = sqlite3.connect(tmp, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=OFF")
            yield con
        finally:
            con.close()
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike):
    """Yield a temporary sibling directory to fill; it is swapped in for ``path`` (which a
    re-run thus replaces whole) when the block succeeds and removed otherwise."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _sibling(target, "tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        yield tmp
        if target.exists():
            old = _sibling(target, "old")
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old)
        else:
            os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


_SCRATCH = re.compile(r"\.tmp-(\d+)(?:-|$)")


def scratch_prefix(name: str) -> str:
    """The name prefix of a scratch file or directory for ``name``, with this process's id
    (``NAME.tmp-PID-``): :func:`remove_dead_scratch` can tell whose it is."""
    return f"{name}.tmp-{os.getpid()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # someone else's process: alive
        return True
    return True


def remove_dead_scratch(directory: str | os.PathLike) -> int:
    """Remove the scratch files and directories in ``directory`` (``NAME.tmp-PID...``:
    :func:`scratch_prefix`, :func:`atomic_open`) whose process is gone: a build killed with
    SIGKILL never reaches its own cleanup, and its scratch (hundreds of MB for a link
    index) would stay forever. A live process's scratch is left alone. Returns how many
    were removed."""
    removed = 0
    try:
        entries = list(Path(directory).iterdir())
    except OSError:
        return 0
    for p in entries:
        m = _SCRATCH.search(p.name)
        if m is None or int(m.group(1)) == os.getpid() or _alive(int(m.group(1))):
            continue
        try:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
            removed += 1
        except OSError as e:
            log.info("scratch %s of a dead process not removed (%s)", p, e)
    return removed


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


# -- text input ------------------------------------------------------------------------

def text_of(data: bytes, name: str) -> str:
    """``data`` read from ``name`` (a query file, stdin) as UTF-8 text; a binary file or
    another encoding is a :class:`KgcultError` naming the file and the offending byte."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    nul = data.find(b"\0")
    if nul >= 0:
        raise KgcultError(f"{name}: a binary file, not text (NUL byte at offset {nul})")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise KgcultError(f"{name}:{line}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})") from None


# -- reading through -------------------------------------------------------------------

class TapReader(io.RawIOBase):
    """A sequential raw file that passes ``raw``'s bytes through and shows every chunk to
    ``on_data`` (e.g. ``hashlib.sha256().update``, or a progress counter) on the way."""

    def __init__(self, raw, on_data, *, close_raw: bool = False):
        self._raw, self._on_data, self._close_raw = raw, on_data, close_raw

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        data = self._raw.read(len(b))
        n = len(data)
        b[:n] = data
        if n:
            self._on_data(data)
        return n

    def close(self) -> None:
        if self._close_raw and not self.closed:
            self._raw.close()
        super().close()

    def drain(self, chunk: int = 1 << 20) -> None:
        """Read (and show) the rest of the file."""
        while data := self._raw.read(chunk):
            self._on_data(data)


def package_cache(package: str, name: str) -> Path | None:
    """Where data derived from an installed package is kept: ``$KGCULT_CACHE`` (default
    ``~/.cache/kgcult``) ``/models/<name>``, ``{version}`` in ``name`` the package's
    installed version (a new release gets its own); None when the package is missing."""
    v = installed_version(package)
    if v is None:
        return None
    return cache_root() / "models" / name.format(version=v)


@lru_cache(maxsize=256)
def installed_version(package: str) -> str | None:
    """The installed release of the importable ``package`` (None when it is not installed):
    from the name of its ``<name>-<version>.dist-info`` folder beside it (the layout the
    wheel and installed-distribution specifications set), else from ``importlib.metadata``,
    whose imports (email, zipfile, csv: about 20 ms) a fresh run then pays. Read once per
    process: listing site-packages took about a millisecond, and the gazetteer asked once
    per language (55 times in a fresh `kgcult link -i` of 3,000 mixed mentions)."""
    try:
        spec = find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    where = list(spec.submodule_search_locations or ()) or ([spec.origin] if spec.origin else [])
    wanted = _dist_name(package)
    for loc in where:
        site = Path(loc).parent
        try:
            infos = [p.name for p in site.iterdir() if p.name.endswith(".dist-info")]
        except OSError:
            continue
        for n in sorted(infos):
            name, _, ver = n[:-len(".dist-info")].partition("-")
            if ver and _dist_name(name) == wanted:
                return ver
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def _dist_name(name: str) -> str:
    """A distribution's name as the specifications compare names (PEP 503's normal form)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def cache_root() -> Path:
    """``$KGCULT_CACHE``, default ``~/.cache/kgcult``."""
    return Path(os.environ.get("KGCULT_CACHE") or Path.home() / ".cache" / "kgcult")
