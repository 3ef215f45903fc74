"""The mirror's memory across runs: a SQLite checkpoint and the staged batch files.

The checkpoint (``<store>.mirror-checkpoint.sqlite`` by default) holds, per subgraph, the
run in progress and the result of every finished query, keyed by the query's sha256. Each
fetched batch waits as a validated N-Triples file under
``<checkpoint>.staging/<subgraph>/<run>/`` (written, fsynced, renamed into place before
the checkpoint records it) until the subgraph's crawl is complete and the files are
loaded in one go. A run killed at any point resumes from both.
"""
from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pyoxigraph as ox

from kgcult.files import atomic_write

_SMALL = 64 << 20  # staged bytes loaded in one ordinary transaction; more go to the bulk loader


class Checkpoint:
    """SQLite file next to the store: per subgraph, the run in progress and the memoized
    result of every finished query (keyed by the query's sha256)."""

    def __init__(self, path: str):
        self.path = path
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")  # WAL: survives kill -9 (not power loss)
        self.db.execute("CREATE TABLE IF NOT EXISTS runs (subgraph TEXT PRIMARY KEY, run_id TEXT, "
                        "fingerprint TEXT, endpoint TEXT, started TEXT, phase TEXT)")
        self.db.execute("CREATE TABLE IF NOT EXISTS done (subgraph TEXT, key TEXT, value TEXT, "
                        "PRIMARY KEY (subgraph, key))")

    def run(self, subgraph: str) -> dict | None:
        r = self.db.execute("SELECT run_id, fingerprint, endpoint, started, phase FROM runs WHERE subgraph=?",
                            (subgraph,)).fetchone()
        return dict(zip(("run_id", "fingerprint", "endpoint", "started", "phase"), r)) if r else None

    def start(self, subgraph: str, run_id: str, fingerprint: str, endpoint: str, started: str) -> None:
        self.db.execute("BEGIN")
        self.db.execute("DELETE FROM done WHERE subgraph=?", (subgraph,))
        self.db.execute("INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?)",
                        (subgraph, run_id, fingerprint, endpoint, started, "crawl"))
        self.db.execute("COMMIT")

    def results(self, subgraph: str) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, value FROM done WHERE subgraph=?", (subgraph,)))

    def put(self, subgraph: str, key: str, value) -> None:
        self.db.execute("INSERT OR REPLACE INTO done VALUES (?,?,?)", (subgraph, key, json.dumps(value)))

    def finish(self, subgraph: str) -> None:
        self.db.execute("BEGIN")
        self.db.execute("DELETE FROM done WHERE subgraph=?", (subgraph,))
        self.db.execute("DELETE FROM runs WHERE subgraph=?", (subgraph,))
        self.db.execute("COMMIT")

    def close(self) -> None:
        self.db.close()


def default_path(store) -> str:
    """``<store>.mirror-checkpoint.sqlite``, beside the store directory."""
    return str(store.location).rstrip("/\\") + ".mirror-checkpoint.sqlite"


def staging_root(cp_path: str) -> Path:
    """Where every subgraph's staged batches live: ``<checkpoint>.staging/``."""
    return Path(cp_path + ".staging")


def staging_dir(cp_path: str, subgraph: str, run_id: str) -> Path:
    """Where finished batches wait (validated N-Triples, one file per query) until the
    subgraph is complete and loaded: ``<checkpoint>.staging/<subgraph>/<run>/``."""
    return staging_root(cp_path) / subgraph / run_id


def write_batch(path: Path, triples: list) -> None:
    """Stage one fetched batch as an N-Triples file, all at once or not at all."""
    atomic_write(path, ox.serialize(triples, format=ox.RdfFormat.N_TRIPLES) or b"", fsync=True)


def load_batches(store, graph: str, files: list[Path]) -> None:
    """Load staged batch files into ``graph``: one ordinary transaction when they are
    small (the bulk loader's fixed cost dominates there), the bulk loader otherwise."""
    files = [f for f in files if f.stat().st_size]
    if not files:
        return
    # a graph in the default graph's set (not a staging graph) gets the triples there too,
    # after its own copy (inside the run's journaled write, which a kill rolls back)
    if sum(f.stat().st_size for f in files) <= _SMALL:
        store.append(graph, data=b"".join(f.read_bytes() for f in files))
    else:
        store.append(graph, stream=lambda: _ChainedFiles(files))


class _ChainedFiles(io.RawIOBase):
    """The concatenation of several files as one binary stream (for one bulk load)."""

    def __init__(self, paths):
        self._paths = list(paths)
        self._f = None

    def readable(self):
        return True

    def readinto(self, b):
        while True:
            if self._f is None:
                if not self._paths:
                    return 0
                self._f = open(self._paths.pop(0), "rb")
            n = self._f.readinto(b)
            if n:
                return n
            self._f.close()
            self._f = None

    def close(self):
        if self._f is not None:
            self._f.close()
        super().close()
