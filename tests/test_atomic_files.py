"""kgcult.files.atomic_sqlite: a database written under a scratch name replaces its path only
when it is complete; a failure leaves the old file (or none) and no scratch file."""
from __future__ import annotations

import sqlite3

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
