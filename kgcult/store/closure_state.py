"""What the last build wrote for each closure spec, kept beside the store, so that a
rebuild finds the old side of its difference without reading the closure back.

Reading a closure back out of Oxigraph costs a dictionary lookup per term (an IRI is
stored as a hash; ``id2str`` gives its text), about as long as writing it: on the 100k-edge
hierarchy, 100 s for the 1.4 M triples of ``kgc:typedAs``. So after writing a spec the
build keeps its triples as integer codes (``closure_write``: ``subject << 32 | object``,
``MARK`` for a cycle mark) over the spec's own terms, in ``.<store>.closure-state/`` beside
the store: ``<spec>.i64`` (the codes), ``<spec>.terms`` (one N-Triples term a line) and
``<spec>.json`` (the build's nonce). The store's input record of the spec carries the same
nonce (``closure_inputs``), written after the spec's last triple: a state whose nonce is the
store's recorded one describes exactly what the store holds for that spec. Anything else
(no state, another nonce, a killed build, a copied store) and the rebuild reads the
closure back as before.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import shutil
from pathlib import Path

import numpy as np

from kgcult.store.closure_write import MARK

log = logging.getLogger(__name__)


def state_dir(location: str | os.PathLike) -> Path:
    loc = Path(location).resolve()
    return loc.parent / f".{loc.name}.closure-state"


def new_nonce() -> str:
    return secrets.token_hex(8)


def _paths(directory: Path, name: str) -> tuple[Path, Path, Path]:
    return directory / f"{name}.i64", directory / f"{name}.terms", directory / f"{name}.json"


def save(directory: Path, name: str, derived: str, nonce: str, codes: np.ndarray, terms: list[bytes]) -> None:
    """Keep ``codes`` (over the build's node ids, ``terms``; pairs of ``derived``) as the
    spec's state."""
    directory.mkdir(parents=True, exist_ok=True)
    forget(directory, name)  # the json last: a half-written state is never read
    subjects, objects = codes >> 32, codes & MARK
    marks = objects == MARK
    # the terms it uses, renumbered in their order: a flag per build node and a running count
    # (linear; sorting the 28 M ends of a 1 M-edge spec's pairs took seconds)
    used = np.zeros(len(terms) + 1, dtype=bool)
    used[subjects] = True
    used[np.where(marks, len(terms), objects)] = True
    used[len(terms)] = False
    ids = np.flatnonzero(used)
    local_of = np.cumsum(used) - 1
    del used
    local = local_of[subjects] << 32 | np.where(marks, MARK, local_of[np.where(marks, 0, objects)])
    del local_of, subjects, objects, marks
    codes_path, terms_path, meta_path = _paths(directory, name)
    data = local.astype(np.int64).tobytes()
    text = b"\n".join(terms[i] for i in ids.tolist())
    codes_path.write_bytes(data)
    terms_path.write_bytes(text)
    tmp = meta_path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"nonce": nonce, "derived": derived, "pairs": int(len(codes)),
                               "sha256": _digest(data, text)}))
    tmp.replace(meta_path)


def _digest(codes: bytes, terms: bytes) -> str:
    h = hashlib.sha256(codes)
    h.update(b"\0terms\0")
    h.update(terms)
    return h.hexdigest()


def _read(path: Path) -> bytes:
    """A state file's bytes, never through a link (a symlinked file is not the state)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as f:
        return f.read()


def load(directory: Path, name: str, derived: str, nonce: str | None, node_id) -> np.ndarray | None:
    """The spec's codes over this build's node ids (``node_id``: term -> id), or None when
    no state matches ``nonce`` (the store's recorded one) and ``derived``."""
    codes_path, terms_path, meta_path = _paths(directory, name)
    try:
        meta = json.loads(_read(meta_path))
        if nonce is None or not isinstance(meta, dict) or meta.get("nonce") != nonce or meta.get("derived") != derived:
            return None
        data, text = _read(codes_path), _read(terms_path)
    except (OSError, ValueError):
        return None
    terms = text.split(b"\n") if text else []
    local = np.frombuffer(data, dtype=np.int64) if len(data) % 8 == 0 else np.zeros(0, dtype=np.int64)
    objects = local & MARK
    marks = objects == MARK
    if (meta.get("sha256") != _digest(data, text) or len(local) != meta.get("pairs")
            or (len(local) and (int((local >> 32).min()) < 0 or int((local >> 32).max()) >= len(terms)
                                or int(np.where(marks, 0, objects).max()) >= len(terms)))):
        log.warning("%s: the closure state of %s is damaged or was changed (checksum or codes out of range): "
                    "the closure is read back from the store instead (slower, same result)", directory, name)
        return None
    ids = np.array([node_id(t) for t in terms], dtype=np.int64)
    return ids[local >> 32] << 32 | np.where(marks, MARK, ids[np.where(marks, 0, objects)])


def forget(directory: Path, name: str) -> None:
    for p in _paths(directory, name):
        p.unlink(missing_ok=True)


def remove(location: str | os.PathLike) -> None:
    shutil.rmtree(state_dir(location), ignore_errors=True)
