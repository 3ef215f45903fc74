"""What query workers read. Served read-only, the store itself (:class:`StoreView`).
With ``--writable`` the server process writes to the store, and a read-only open of a
store that another process writes to is unsafe (RocksDB compaction deletes files a reader
still needs: "Corruption ... No such file"); so workers read :class:`Checkpoints`:
pyoxigraph's ``Store.backup`` (hard links to RocksDB's immutable files, cheap on the same
file system), made at start and after each update. A checkpoint never changes; it is
deleted once a newer one exists and no job is reading it.

Checkpoints live in a hidden directory beside the store (the same file system, so hard
links work), removed when the server stops.
"""
from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path

from kgcult.errors import KgcultError


class StoreView:
    """The store itself, for a server that never writes."""

    def __init__(self, location):
        self.latest = str(location)

    def acquire(self) -> str:
        return self.latest

    def release(self, path: str) -> None:
        pass

    def close(self) -> None:
        pass


class Checkpoints:
    """Checkpoints of a store the server writes to; ``acquire`` gives the newest for a job
    and ``release`` returns it (an older checkpoint goes once no job holds it)."""

    def __init__(self, store) -> None:
        location = Path(store.location).resolve()
        self.store = store
        self.root = Path(tempfile.mkdtemp(prefix=f".{location.name}.kgcult-serve-", dir=location.parent))
        self._count = 0
        self._refs: dict[str, int] = {}
        self._lock = threading.Lock()
        self.latest = ""
        self.make()

    def make(self) -> str:
        """A new checkpoint of the store as it is now (after an update); returns its path."""
        self._count += 1
        path = str(self.root / f"view{self._count}")
        try:
            self.store.backup(path)
        except OSError as e:
            raise KgcultError(f"cannot checkpoint the store into {path}: {e}") from None
        with self._lock:
            old, self.latest = self.latest, path
            self._refs[path] = 0
            self._drop_unused(old)
        return path

    def acquire(self) -> str:
        with self._lock:
            self._refs[self.latest] += 1
            return self.latest

    def release(self, path: str) -> None:
        with self._lock:
            self._refs[path] -= 1
            self._drop_unused(path)

    def _drop_unused(self, path: str) -> None:
        if path and path != self.latest and self._refs.get(path) == 0:
            del self._refs[path]
            shutil.rmtree(path, ignore_errors=True)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
