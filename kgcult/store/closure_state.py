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

import json
import os
import secrets
import shutil
from pathlib import Path

import numpy as np

from kgcult.store.closure_write import MARK


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
    local.astype(np.int64).tofile(codes_path)
    terms_path.write_bytes(b"\n".join(terms[i] for i in ids.tolist()))
    tmp = meta_path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"nonce": nonce, "derived": derived, "pairs": int(len(codes))}))
    tmp.replace(meta_path)


def load(directory: Path, name: str, derived: str, nonce: str | None, node_id) -> np.ndarray | None:
    """The spec's codes over this build's node ids (``node_id``: term -> id), or None when
    no state matches ``nonce`` (the store's recorded one) and ``derived``."""
    codes_path, terms_path, meta_path = _paths(directory, name)
    try:
        meta = json.loads(meta_path.read_text())
        if nonce is None or meta.get("nonce") != nonce or meta.get("derived") != derived:
            return None
        local = np.fromfile(codes_path, dtype=np.int64)
        text = terms_path.read_bytes()
    except (OSError, ValueError):
        return None
    if len(local) != meta.get("pairs"):
        return None
    ids = np.array([node_id(t) for t in text.split(b"\n")] if text else [], dtype=np.int64)
    objects = local & MARK
    marks = objects == MARK
    return ids[local >> 32] << 32 | np.where(marks, MARK, ids[np.where(marks, 0, objects)])


def forget(directory: Path, name: str) -> None:
    for p in _paths(directory, name):
        p.unlink(missing_ok=True)


def remove(location: str | os.PathLike) -> None:
    shutil.rmtree(state_dir(location), ignore_errors=True)
