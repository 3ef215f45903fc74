"""Processes that read a store through a long-lived read-only open (``kgcult serve``).

A read-only RocksDB open reads the store as it was when it opened: a later write by another
process is not seen until the reader reopens. So a server leaves a marker beside the store
(``<store>.readers/<pid>.json``) while it runs, and a process that opens the store for
writing warns that those readers will keep answering from the old data. Markers of
processes that are gone (killed) are ignored and removed.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from kgcult.files import atomic_write


def _directory(location: str) -> Path:
    return Path(os.path.abspath(location) + ".readers")


def register(location: str, what: str) -> Path:
    """Leave a marker for this process reading ``location``; returns it (for :func:`unregister`)."""
    path = _directory(location) / f"{os.getpid()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({"pid": os.getpid(), "what": what}))
    return path


def unregister(marker: Path) -> None:
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


def live(location: str) -> list[dict]:
    """The readers of ``location`` still running, other than this process."""
    found: list[dict] = []
    directory = _directory(location)
    if not directory.is_dir():
        return found
    for marker in sorted(directory.glob("*.json")):
        try:
            info = json.loads(marker.read_text(encoding="utf-8"))
            pid = int(info["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not _alive(pid):
            unregister(marker)
        elif pid != os.getpid():
            found.append(info)
    return found
