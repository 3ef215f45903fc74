"""kgcult.files.atomic_sqlite: a database written under a scratch name replaces its path only
when it is complete; a failure leaves the old file (or none) and no scratch file."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kgcult.files import atomic_sqlite


def _rows(path) -> list:
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT x FROM t").fetchall()
    finally:
        con.close()


def test_a_complete_database_replaces_the_old_one(tmp_path):
    path = tmp_path / "sub" / "t.sqlite"
    for value in (1, 2):
        with atomic_sqlite(path) as con:
            con.execute("CREATE TABLE t(x INTEGER)")
            con.execute("INSERT INTO t VALUES (?)", (value,))
    assert _rows(path) == [(2,)]
    assert [p.name for p in path.parent.iterdir()] == ["t.sqlite"]


def test_a_failed_write_keeps_the_old_database_and_leaves_no_scratch(tmp_path):
    path = tmp_path / "t.sqlite"
    with atomic_sqlite(path) as con:
        con.execute("CREATE TABLE t(x INTEGER)")
        con.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(RuntimeError), atomic_sqlite(path) as con:
        con.execute("CREATE TABLE t(x INTEGER)")
        con.execute("INSERT INTO t VALUES (2)")
        raise RuntimeError("cut")
    assert _rows(path) == [(1,)]
    assert [p.name for p in tmp_path.iterdir()] == ["t.sqlite"]


def test_installed_version_is_the_one_package_metadata_gives(tmp_path, monkeypatch):
    """A cache named after a package's release (``package_cache``) reads the release from
    the ``.dist-info`` folder beside the package, as ``importlib.metadata`` answers it
    (which a fresh run then need not import); None for a package that is not there."""
    from importlib.metadata import version

    from kgcult.files import installed_version, package_cache

    for pkg in ("pyoxigraph", "click", "rapidfuzz"):
        assert installed_version(pkg) == version(pkg), pkg
    assert installed_version("kgcult_no_such_package") is None
    monkeypatch.setenv("KGCULT_CACHE", str(tmp_path))
    assert package_cache("click", "x-{version}") == tmp_path / "models" / f"x-{version('click')}"
    assert package_cache("kgcult_no_such_package", "x-{version}") is None


def test_read_only_sqlite_opens_a_bounded_reader_that_refuses_writes(tmp_path):
    """A finished database (index, pool) is opened read-only, with the bounded page cache
    asked for; a write through it is refused and changes nothing."""
    from kgcult.files import read_only_sqlite

    p = tmp_path / "pool.sqlite"
    with atomic_sqlite(p) as con:
        con.execute("CREATE TABLE t(k TEXT)")
        con.executemany("INSERT INTO t VALUES (?)", [("a",), ("b",)])
    con = read_only_sqlite(p, 128)
    assert con.execute("PRAGMA cache_size").fetchone()[0] == -128
    assert [k for (k,) in con.execute("SELECT k FROM t ORDER BY k")] == ["a", "b"]
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        con.execute("INSERT INTO t VALUES ('c')")
    con.close()
    assert sqlite3.connect(p).execute("SELECT count(*) FROM t").fetchone()[0] == 2


def test_ensure_bytecode_compiles_what_python_would_not_write(tmp_path, monkeypatch):
    """Where Python writes no bytecode (PYTHONDONTWRITEBYTECODE), the package's modules
    whose bytecode is missing or stale are compiled once, valid for the import system;
    nothing where Python writes it itself, nor when all of it is current."""
    import importlib.util
    import sys

    from kgcult.files import _fresh_bytecode, ensure_bytecode

    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    for p in (pkg / "a.py", pkg / "sub" / "b.py"):
        p.write_text("X = 1\n", encoding="utf-8")
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert ensure_bytecode(pkg) is False and not (pkg / "__pycache__").exists()
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert ensure_bytecode(pkg) is True
    for p in (pkg / "a.py", pkg / "sub" / "b.py"):
        assert Path(importlib.util.cache_from_source(str(p))).exists() and _fresh_bytecode(p)
    assert ensure_bytecode(pkg) is False  # all current
    (pkg / "a.py").write_text("X = 22\n", encoding="utf-8")  # edited: stale (its size changed)
    assert not _fresh_bytecode(pkg / "a.py") and _fresh_bytecode(pkg / "sub" / "b.py")
    assert ensure_bytecode(pkg) is True and _fresh_bytecode(pkg / "a.py")


def test_kept_table_built_once_then_read_and_remade_when_damaged(tmp_path):
    from kgcult.files import kept_table

    calls = []

    def build():
        calls.append(1)
        return {"a": "b"}

    p = tmp_path / "sub" / "t.marshal"
    assert kept_table(p, build) == {"a": "b"} and p.exists()
    assert kept_table(p, build) == {"a": "b"} and len(calls) == 1  # read back, not built
    p.write_bytes(b"\x00garbage")
    assert kept_table(p, build) == {"a": "b"} and len(calls) == 2  # damaged: made again
    assert kept_table(None, build) == {"a": "b"} and len(calls) == 3  # nowhere to keep it
