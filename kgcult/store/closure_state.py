"""What the last closure build did, kept so that a rebuild does only what changed.

- **Its input**, per spec: a store-state value ``kgc:closureInput "<spec IRI> <sha256>
  <triples> <nonce>"`` in the metadata graph, the fingerprint of the spec and of the edges
  of the properties it follows (one hash over the edges a rebuild reads anyway). A rebuild
  keeps a spec whose fingerprint is unchanged: most data changes (labels, a new dataset's
  facts) leave most hierarchies as they were. The record is dropped before the spec's
  triples are touched and written by the build's commit, so a killed build leaves none.
- **Its triples**, per spec, as integer codes beside the store (``.<store>.closure-state/``:
  ``<spec>.i64``, ``subject << 32 | object`` or ``MARK`` for a cycle mark over the spec's
  own terms, ``<spec>.terms``, one N-Triples term a line, and ``<spec>.json``, the build's
  nonce and a checksum): the old side of a rebuild's difference. Reading a closure back
  out of Oxigraph costs a dictionary lookup per term, about as long as writing it (100 s
  for the 1.4 M triples of ``kgc:typedAs`` on the 100k-edge hierarchy). A state whose
  nonce is the store's recorded one describes exactly what the store holds for that spec;
  anything else (no state, another nonce, a killed build, a copied store) and the rebuild
  reads the closure back.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from pyoxigraph import Literal, NamedNode, Quad

from kgcult import lazy, vocab
from kgcult.store import provenance, setgraph, sidefiles
from kgcult.store.closure_write import MARK

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy.module("numpy")

log = logging.getLogger(__name__)


def state_dir(location: str | os.PathLike) -> Path:
    return sidefiles.side_path(location, "closure-state")


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


# -- the input record, in the store ----------------------------------------------------
# Part of every fingerprint: change it when the same edges would give a graph different
# content (a new cycle marking, another derived term), so old records stop matching.
# Version 2: the closure lives in the default graph only.
ALGORITHM = b"kgcult-closure-2\n"
_RECORD = vocab.kgc("closureInput")


def fingerprint(spec, digests: dict) -> str:
    """The spec's definition and the digests (sha256 objects) of the properties it follows."""
    h = hashlib.sha256(ALGORITHM)
    h.update(f"{spec.name}\n{spec.graph}\n{spec.derived}\n{spec.first or ''}\n".encode())
    for prop in ([spec.first] if spec.first else []) + list(spec.steps):
        h.update(f"{prop} {digests[prop].hexdigest()}\n".encode())
    return h.hexdigest()


def recorded(ox) -> dict[str, tuple[str, int, str | None]]:
    """spec IRI -> (fingerprint, triples, nonce) of the specs built whole by an earlier
    build (the nonce names that write: ``closure_state``; None in older records)."""
    out = {}
    for q in ox.quads_for_pattern(provenance.STATE, _RECORD, None, provenance.META):
        graph, fp, triples, *rest = vocab.value(q.object).split(" ")
        out[graph] = (fp, int(triples), rest[0] if rest else None)
    return out


def forget_input(ox, graph: str) -> None:
    """Drop a spec's record (before its triples are touched)."""
    for q in list(ox.quads_for_pattern(provenance.STATE, _RECORD, None, provenance.META)):
        if vocab.value(q.object).split(" ", 1)[0] == graph:
            ox.remove(q)


def record_op(graph: str, fp: str, triples: int, nonce: str | None) -> str:
    """The operation recording a spec written whole from the input with fingerprint ``fp``
    (by the write named ``nonce``); its earlier record was dropped before its triples were
    touched (:func:`forget_input`)."""
    return provenance.insert_data([Quad(provenance.STATE, _RECORD, Literal(f"{graph} {fp} {triples}" + (f" {nonce}" if nonce else "")),
                                        provenance.META)])


def still_there(ox, spec, triples: int) -> bool:
    """Whether a recorded closure is still in the store (a cheap check: one of its triples;
    its content is only ever written by the closure build)."""
    return triples == 0 or any(True for _ in ox.quads_for_pattern(None, NamedNode(spec.derived), None,
                                                                  setgraph.DEFAULT))
