"""The stem and compound pools of the morphology stages (``morphology.KeyPool``) kept on
disk as small SQLite files beside the label index and searched there, instead of
unpickled whole into every process (75 MB of dicts for the stand-in's food and place
parts, growing with the names).

A file holds the pool's ``key -> {eid: (lang, name)}`` map as rows (in the map's order)
and, for a compound pool, its word list (``split_word`` only asks whether a word is in
it). :class:`StoredKeyPool` answers ``search`` and ``key`` as the ``KeyPool`` it was
written from (tests/test_link_index.py compares them).
"""
from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path

from kgcult.files import read_only_sqlite, scratch_prefix
from kgcult.link import memo
from kgcult.link.stages import morphology

FORMAT = 1


class _Vocab:
    """``word in vocab`` over the stored word list (memoized)."""

    def __init__(self, con: sqlite3.Connection):
        self.con = con
        self.memo = memo.Memo(memo.PER_PART)
        # the longest word (``morphology.split_word`` looks no further back for a part)
        self.maxlen = con.execute("SELECT coalesce(max(length(word)), 0) FROM vocab").fetchone()[0]

    def __contains__(self, word) -> bool:
        v = self.memo.get(word)
        if v is None:
            v = self.memo.put(word, self.con.execute("SELECT 1 FROM vocab WHERE word = ?", (word,)).fetchone() is not None)
        return v

CACHE_KIB = 128  # page cache of one open pool


class StoredKeyPool:
    """A ``morphology.KeyPool`` read from its file (:func:`save` writes one)."""

    def __init__(self, path: Path, lang: str):
        self.path = Path(path)
        self.lang = lang
        # a process opens dozens of these small files: a small page cache each (SQLite's
        # default is 2 MB a connection), the OS page cache does the rest
        self.con = read_only_sqlite(self.path, CACHE_KIB)
        meta = dict(self.con.execute("SELECT key, value FROM meta"))
        if int(meta.get("format", -1)) != FORMAT:
            self.con.close()
            raise ValueError(f"{path}: not a morphology pool of format {FORMAT}")
        self.compound = bool(int(meta["vocab"]))  # an empty word list: stem keys (as KeyPool)
        self.vocab: _Vocab | frozenset[str] = _Vocab(self.con) if self.compound else frozenset()
        self._memo = memo.Memo(memo.PER_PART)

    def key(self, text: str) -> str:
        if self.compound:
            return morphology.compound_key(text, self.lang, self.vocab)
        return morphology.stem_key(text, self.lang)

    def search(self, text: str) -> dict:
        """{eid: (lang, name)} of the names whose key is the text's key."""
        k = self.key(text)
        v = self._memo.get(k)
        if v is None:
            v = {e: (lg, name) for e, lg, name in self.con.execute(
                "SELECT eid, lang, name FROM keys WHERE key = ? ORDER BY seq", (k,))}
            self._memo.put(k, v)
        return v

    def close(self) -> None:
        self.con.close()


def open_pool(path: Path, lang: str) -> StoredKeyPool | None:
    """The pool stored at ``path``, or None when there is none (or it is unreadable)."""
    try:
        return StoredKeyPool(path, lang)
    except (sqlite3.Error, ValueError, KeyError, OSError):
        return None


def save(pool: morphology.KeyPool, path: Path) -> StoredKeyPool | None:
    """Write ``pool`` to ``path`` (atomically) and open it; None when it cannot be written."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=scratch_prefix(path.name), dir=path.parent)
        os.close(fd)
    except OSError:
        return None
    try:
        con = sqlite3.connect(tmp, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=OFF")
            con.execute("PRAGMA synchronous=OFF")
            con.execute("BEGIN")
            con.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)")
            con.execute("CREATE TABLE keys(key TEXT, seq INTEGER, eid INTEGER, lang TEXT, name TEXT, "
                        "PRIMARY KEY (key, seq)) WITHOUT ROWID")
            con.execute("CREATE TABLE vocab(word TEXT PRIMARY KEY) WITHOUT ROWID")
            con.executemany("INSERT INTO meta VALUES (?, ?)",
                            [("format", str(FORMAT)), ("vocab", str(int(bool(pool.vocab))))])
            con.executemany("INSERT INTO keys VALUES (?, ?, ?, ?, ?)",
                            ((k, i, e, lg, name) for k, d in pool.keys.items()
                             for i, (e, (lg, name)) in enumerate(d.items())))
            con.executemany("INSERT INTO vocab VALUES (?)", ((w,) for w in sorted(pool.vocab)))
            con.execute("COMMIT")
        finally:
            con.close()
        os.replace(tmp, path)
    except (OSError, sqlite3.Error):
        return None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return open_pool(path, pool.lang)
