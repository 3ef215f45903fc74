"""Where the link index lives on disk: one directory holding an SQLite file (the tables
keyed by text: names, normalized keys, labels, descriptions, edges, the fuzzy and token
pools; a build stages rows in a scratch database beside it, deleted at the end) and ``.npy`` arrays, one value per entity (QID number, topic bits, sitelinks, ...),
opened memory-mapped so a process only holds the pages it touches.

Helpers here know nothing about linking: open the database for building (bounded page
cache, scratch sorts in temporary files) or for reading (read-only, immutable), save and
map an array beside it, append arrays to a file as raw bytes and read them back.
"""
from __future__ import annotations

import hashlib
import json
import mmap
import re
import sqlite3
import struct
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kgcult import lazy
from kgcult.errors import KgcultError
from kgcult.files import read_only_sqlite

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy.module("numpy")

DB_NAME = "index.sqlite"
SCRATCH_NAME = "scratch.sqlite"  # staging tables of a build, removed at its end
BUILD_CACHE_KIB = 8 * 1024    # page cache while building (SQLite sorts spill to temp files)
READ_CACHE_KIB = 2048  # page cache of a reader; the OS page cache does the rest
MAX_PARAMS = 30_000           # bound variables per statement (SQLite allows 32766)
ALIGN = 64                    # byte alignment of each array write_raw appends


def connect(directory: str | Path, *, write: bool = False, name: str = DB_NAME,
            scratch: str = SCRATCH_NAME) -> sqlite3.Connection:
    """The index database of ``directory`` (``name``: another database of it): writable
    for a build (no journal: a failed build leaves a file that is thrown away; its
    staging tables in ``scratch``), else read-only."""
    path = Path(directory) / name
    if write:
        con = sqlite3.connect(path, isolation_level=None, uri=True)  # uri: ATTACH read-only by URI
        con.execute("ATTACH DATABASE ? AS scratch", (str(Path(directory) / scratch),))
        for schema in ("main", "scratch"):
            con.execute(f"PRAGMA {schema}.journal_mode=OFF")
            con.execute(f"PRAGMA {schema}.synchronous=OFF")
            con.execute(f"PRAGMA {schema}.cache_size=-{BUILD_CACHE_KIB // 2}")
        con.execute("PRAGMA locking_mode=EXCLUSIVE")
        con.execute("PRAGMA temp_store=FILE")
        con.execute("BEGIN")
        return con
    return read_only_sqlite(path, READ_CACHE_KIB)


def script(con: sqlite3.Connection, sql: str) -> None:
    """Run statements of a build (executescript commits first; the build goes on in a
    new transaction: one commit per step, not per row)."""
    con.executescript(sql)
    con.execute("BEGIN")


def finish_build(con: sqlite3.Connection, directory: str | Path, scratch: str = SCRATCH_NAME) -> None:
    """Commit, drop the scratch database (staging tables), close."""
    con.execute("COMMIT")
    con.execute("DETACH DATABASE scratch")
    con.close()
    (Path(directory) / scratch).unlink(missing_ok=True)


def read_only_uri(path: str | Path) -> str:
    """The URI that opens (or ATTACHes) an index database read-only, immutable."""
    return f"{Path(path).resolve().as_uri()}?mode=ro&immutable=1"


def save_array(directory: str | Path, name: str, arr: np.ndarray) -> None:
    """Persist ``arr`` as ``<directory>/<name>.npy`` (read back by ``load_array``), with its
    identity beside it (``<name>.npy.json``: name, dtype, shape, sha256 of the file)."""
    path = Path(directory) / f"{name}.npy"
    arr = np.ascontiguousarray(arr)
    np.save(path, arr, allow_pickle=False)
    identity = {"name": name, "dtype": arr.dtype.str, "shape": list(arr.shape), "sha256": _sha256(path)}
    (Path(directory) / f"{name}.npy.json").write_text(json.dumps(identity, sort_keys=True) + "\n")


def load_array(directory: str | Path, name: str):
    """``<directory>/<name>.npy`` memory-mapped read-only, once its identity is checked:
    KgcultError when the file is not the array ``name`` the index was built with (two
    same-size arrays swapped resolved every mention to Q0, exit 0). A one-dimensional
    array comes back as a ``memoryview`` of the mapping (indexing gives Python ints or
    bools; pages load as they are touched), a two-dimensional one as a tuple of its rows'
    views: reading the index imports no numpy (``kgcult/lazy.py``). ``np.asarray`` of a
    view is the ndarray, without a copy."""
    path = Path(directory) / f"{name}.npy"
    try:
        identity = json.loads((Path(directory) / f"{name}.npy.json").read_text())
    except (OSError, ValueError):
        raise KgcultError(f"{path}: the link index array has no readable identity record ({name}.npy.json); "
                          "rebuild the index (kgcult link index --rebuild)") from None
    if not isinstance(identity, dict) or identity.get("name") != name or identity.get("sha256") != _sha256(path):
        raise KgcultError(f"{path}: not the '{name}' array this link index was built with (its checksum differs "
                          "from the one recorded: swapped, replaced or damaged); rebuild the index "
                          "(kgcult link index --rebuild)")
    dtype, shape, offset = _npy_header(path)
    if dtype != identity.get("dtype") or list(shape) != identity.get("shape"):
        raise KgcultError(f"{path}: dtype {dtype} and shape {list(shape)}, not the "
                          f"{identity.get('dtype')} {identity.get('shape')} recorded; rebuild the index")
    fmt = _STRUCT.get(dtype) if sys.byteorder == "little" or dtype[0] == "|" else None
    if fmt is None or len(shape) > 2:
        raise KgcultError(f"{path}: dtype {dtype} of {len(shape)} dimensions is not one a link index holds; "
                          "rebuild the index")
    count = 1
    for n in shape:
        count *= n
    size = count * struct.calcsize(fmt)
    flat = memoryview(b"")
    if size:
        with open(path, "rb") as f:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if len(mapped) < offset + size:
            raise KgcultError(f"{path}: shorter than its header says ({list(shape)} of {dtype}); rebuild the index")
        flat = memoryview(mapped)[offset:offset + size]
    flat = flat.cast(fmt)  # type: ignore[call-overload]  # one of _STRUCT's formats
    if len(shape) < 2:
        return flat
    rows, cols = shape
    return tuple(flat[i * cols:(i + 1) * cols] for i in range(rows))


# the dtypes of the index's arrays (numpy's ``dtype.str``) as ``struct`` formats
_STRUCT = {"<i8": "q", "<u8": "Q", "<i4": "i", "<u4": "I", "<i2": "h", "<u2": "H",
           "|i1": "b", "|u1": "B", "|b1": "?"}
_NPY_MAGIC = b"\x93NUMPY"
_NPY_HEADER = re.compile(r"""\{'descr': '([<>|=][a-z]\d+)', 'fortran_order': (True|False), 'shape': \(([\d, ]*)\), \}""")


def _npy_header(path: Path) -> tuple[str, tuple[int, ...], int]:
    """(dtype, shape, offset of the data) of an ``.npy`` file, read as numpy's
    ``format.write_array`` writes the header (versions 1-3: the magic, the version, the
    header's length, its dict); KgcultError for another file."""
    with open(path, "rb") as f:
        head = f.read(12)
        if len(head) < 12 or head[:6] != _NPY_MAGIC or head[6] not in (1, 2, 3):
            raise KgcultError(f"{path}: not a .npy array; rebuild the index (kgcult link index --rebuild)")
        if head[6] == 1:
            length, start = struct.unpack("<H", head[8:10])[0], 10
        else:
            length, start = struct.unpack("<I", head[8:12])[0], 12
        f.seek(start)
        text = f.read(length).decode("latin-1").strip()
    m = _NPY_HEADER.fullmatch(text)
    if m is None or m.group(2) == "True":
        raise KgcultError(f"{path}: an .npy header this reader does not take ({text[:80]!r}); rebuild the index")
    shape = tuple(int(x) for x in m.group(3).replace(" ", "").split(",") if x)
    return m.group(1), shape, start + length


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def write_raw(f, arr: np.ndarray) -> dict:
    """Append ``arr``'s bytes (C order) to the binary file ``f`` at the next ``ALIGN``
    boundary; returns the spec (dtype, shape, offset: JSON-ready) :func:`read_raw` reads
    it back with."""
    arr = np.ascontiguousarray(arr)
    if arr.dtype.hasobject:
        raise ValueError("object arrays cannot be cached")
    f.write(b"\0" * (-f.tell() % ALIGN))
    spec = {"dtype": arr.dtype.str, "shape": list(arr.shape), "offset": f.tell()}
    f.write(arr.tobytes())
    return spec


def read_raw(path: Path, spec: dict) -> np.ndarray:
    """The array ``spec`` (from :func:`write_raw`) describes in ``path``, read with
    ``np.fromfile``: no ``.npy`` header is parsed, so a worker thread may call it (numpy
    parses headers with ``ast``, and CPython 3.11 fails when two threads parse at once)."""
    shape = tuple(spec["shape"])
    count = int(np.prod(shape, dtype=np.int64))
    arr = np.fromfile(path, dtype=np.dtype(spec["dtype"]), count=count, offset=spec["offset"])
    if arr.size != count:
        raise ValueError(f"{path}: short array at offset {spec['offset']}")
    return arr.reshape(shape)


def chunks(seq, n: int = MAX_PARAMS):
    for i in range(0, len(seq), n):
        yield seq[i:i + n]
