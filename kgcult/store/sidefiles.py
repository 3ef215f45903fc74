"""The files kept beside a store, all named in one place (:func:`side_path`), and what is
in two of them. A store at ``DIR/NAME`` has, beside it:

- ``NAME.journal.json``: the journal that steers recovery (:mod:`kgcult.store.recovery`);
- ``.NAME.closure-state/``: what the last closure build wrote (:mod:`kgcult.store.closure_state`);
- ``.NAME.closure-build/``: a closure build's scratch records, while it runs;
- ``NAME.facts.json``: facts derived from the data, kept per data version (below);
- ``NAME.readers/``: servers reading the store (below);
- ``NAME.link-index/``: the linker's index (:mod:`kgcult.link.index`).

One content key keeps the derived ones fresh: the data version (``kgc:dataVersion``), which
every write changes.

**Facts.** Facts derived from a store's data (its content hash, its label languages), kept beside the
store until the data changes, for read-only opens as well as writable ones.

Every write marks the data with a new version (``kgc:dataVersion`` in the metadata graph,
:func:`kgcult.store.provenance.stale_ops`). :func:`cached` keeps each fact in
``<store>.facts.json`` with the version it was computed for, so a command that opens the
store read-only (``kgcult build``) reads it back instead of reading the whole store again.
A remote store keeps nothing here.

**Readers.** Processes that read a store through a long-lived read-only open (``kgcult serve``).

A read-only RocksDB open reads the store as it was when it opened: a later write by another
process is not seen until the reader reopens. So a server leaves a marker beside the store
(``<store>.readers/<pid>.json``) while it runs, and a process that opens the store for
writing warns that those readers will keep answering from the old data. Markers of
processes that are gone (killed) are ignored and removed.
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Callable

from kgcult.files import atomic_write

log = logging.getLogger(__name__)

_SUFFIX = {"journal": ".journal.json", "facts": ".facts.json", "readers": ".readers", "link-index": ".link-index"}


def side_path(location, what: str) -> Path:
    """Where the side file ``what`` (journal, facts, readers, closure-state, closure-build,
    link-index) of the store at ``location`` lives."""
    if what in ("closure-state", "closure-build"):
        real = Path(location).resolve()
        return real.parent / f".{real.name}.{what}"
    loc = Path(os.path.abspath(location))
    return loc.with_name(loc.name + _SUFFIX[what])


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
    """The version of the store's data: ``kgc:dataVersion``, new with every write (None: an
    empty store)."""
    return store.get_state("dataVersion")


def cached(store, name: str, compute: Callable[[], Any]) -> Any:
    """``compute()``, or the value it gave for the store's current data version."""
    if getattr(store, "remote", False):
        return compute()
    version = data_version(store)
    if not version:
        return compute()
    path = side_path(store.location, "facts")
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


# -- readers ------------------------------------------------------------------------------

def register_reader(location: str, what: str) -> Path:
    """Leave a marker for this process reading ``location``; returns it (for :func:`unregister_reader`)."""
    path = side_path(location, "readers") / f"{os.getpid()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({"pid": os.getpid(), "what": what}))
    return path


def unregister_reader(marker: Path) -> None:
    try:
        marker.unlink()
        marker.parent.rmdir()  # only when no other reader is left
    except OSError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def live_readers(location: str) -> list[dict]:
    """The readers of ``location`` still running, other than this process."""
    found: list[dict] = []
    directory = side_path(location, "readers")
    if not directory.is_dir():
        return found
    for marker in sorted(directory.glob("*.json")):
        try:
            info = json.loads(marker.read_text(encoding="utf-8"))
            pid = int(info["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not _alive(pid):
            unregister_reader(marker)
        elif pid != os.getpid():
            found.append(info)
    return found
