"""Facts derived from a store's data (its content hash, its label languages), kept beside the
store until the data changes, for read-only opens as well as writable ones.

Every write marks the data with a new version (``kgc:dataVersion`` in the metadata graph,
:func:`kgcult.store.provenance.stale_ops`). :func:`cached` keeps each fact in
``<store>.facts.json`` with the version it was computed for, so a command that opens the
store read-only (``kgcult build``) reads it back instead of reading the whole store again.
A store written by an older kgcult gets a version on its next writable open; until then a
read-only open keys the facts by the store's file listing. A remote store keeps nothing here.
"""
from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any, Callable

from kgcult.files import atomic_write
from kgcult.store import provenance

log = logging.getLogger(__name__)


def path_of(store) -> Path:
    return Path(str(store.location).rstrip("/") + ".facts.json")


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def store_files(location: Path) -> list | None:
    """An embedded store directory's files as (name, size, mtime): what identifies its
    content without opening it (RocksDB never rewrites a file in place: any write adds to
    the log or adds a table file; a read-only open changes nothing but LOG files)."""
    try:
        return sorted((p.name, st.st_size, st.st_mtime_ns) for p in location.iterdir()
                      if not p.name.startswith(("LOG", "LOCK")) and (st := p.stat()))
    except OSError:
        return None


def data_version(store) -> str | None:
    """The version of the store's data: ``kgc:dataVersion``; for a store written by an older
    kgcult, one is set on a writable open, and a read-only open uses its file listing."""
    version = store.get_state("dataVersion")
    if version:
        return version
    if not store.read_only:
        version = provenance.new_data_version()
        store.set_state("dataVersion", version)
        return version
    files = store_files(Path(str(store.location)))
    return None if files is None else "files:" + hashlib.sha256(json.dumps(files).encode()).hexdigest()


def cached(store, name: str, compute: Callable[[], Any]) -> Any:
    """``compute()``, or the value it gave for the store's current data version."""
    if getattr(store, "remote", False):
        return compute()
    version = data_version(store)
    if not version:
        return compute()
    path = path_of(store)
    data = _read(path)
    facts = data.get("facts") if data.get("dataVersion") == version else None
    if isinstance(facts, dict) and name in facts:
        return facts[name]
    value = compute()
    # another process may have written other facts for this version meanwhile: keep them
    data = _read(path)
    kept = data.get("facts") if data.get("dataVersion") == version else None
    known = kept if isinstance(kept, dict) else {}
    known[name] = value
    try:
        atomic_write(path, json.dumps({"dataVersion": version, "facts": known}, ensure_ascii=False))
    except OSError as e:
        log.debug("cannot keep %s beside the store (%s): it will be computed again", name, e)
    return value
