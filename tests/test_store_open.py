"""Read commands open the store read-only and never create it (issue 12 item 15); write
commands create it. Real CLI processes-in-process through click, real stores."""
from __future__ import annotations

import json

import pytest

import kgcult
from kgcult.errors import KgcultError
from kgcult.store import Store

from tests.conftest import FIXTURES, run_cli

MINI = FIXTURES / "foundation" / "mini.ttl"

READ_COMMANDS = [
    ["sparql", "SELECT * WHERE { ?s ?p ?o } LIMIT 1"],
    ["stats"],
    ["show", "Q1"],
    ["build", "fmlama"],
    ["link", "lemon", "--lang", "en"],
    ["snapshot", "export", "{tmp}/snap"],
    ["serve", "--port", "0"],
    ["synth", "knowledge", "Q1"],
]


@pytest.mark.parametrize("args", READ_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_read_command_on_a_missing_store_fails_and_creates_nothing(tmp_path, args):
    missing = tmp_path / "typo" / "store"
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    res = run_cli(args, missing)
    assert res.exit_code == 1, (res.stdout, res.stderr)
    assert f"no store at {missing}" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "typo").exists()
    assert not (tmp_path / "snap").exists()


@pytest.mark.parametrize("args", [["load", str(MINI)], ["snapshot", "import", "--seed"]])
def test_write_commands_create_the_store(tmp_path, args):
    res = run_cli(args, tmp_path / "new")
    assert res.exit_code == 0, res.stderr
    assert (tmp_path / "new").is_dir()


def test_read_commands_work_read_only_on_an_existing_store(tmp_path):
    assert run_cli(["load", str(MINI)], tmp_path / "s").exit_code == 0
    res = run_cli(["sparql", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "--format", "jsonl", "--graph", "mini"],
                  tmp_path / "s")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["n"] > 0
    res = run_cli(["stats", "--format", "json"], tmp_path / "s")
    assert res.exit_code == 0, res.stderr
    # a stale closure is rebuilt by the commands that need it
    res = run_cli(["show", "Q1"], tmp_path / "s")
    assert res.exit_code in (0, 1) and "Traceback" not in res.stderr
    s = Store(tmp_path / "s", read_only=True)
    assert s.triple_count() > 0
    s.close()


def test_api_open_read_only(tmp_path):
    with pytest.raises(KgcultError, match="no store at"):
        kgcult.open(tmp_path / "nope", read_only=True)
    assert not (tmp_path / "nope").exists()
    with kgcult.open(tmp_path / "s") as kg:  # the default creates, as write commands do
        kg.load(MINI)
    with kgcult.open(tmp_path / "s", read_only=True) as kg:
        assert kg.sparql("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")[0]["n"] > 0
        with pytest.raises(KgcultError, match="read-only"):
            kg.load(MINI)


@pytest.mark.parametrize("name", ["missing.nt", "file.unknown"])
def test_a_failed_first_load_leaves_no_store_folder(tmp_path, name):
    """issue 41: `kgcult load missing.nt` left an empty store folder behind."""
    if name == "file.unknown":
        (tmp_path / name).write_text("x")
    res = run_cli(["load", str(tmp_path / name)], tmp_path / "new")
    assert res.exit_code == 1 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not (tmp_path / "new").exists()
    assert not list(tmp_path.glob("new.*"))


def test_a_second_writer_is_told_who_holds_the_store(tmp_path):
    """issue 41: a second writer got RocksDB's "IO error: While lock file: .../LOCK:
    Resource temporarily unavailable"; it is told which kgcult process holds the store
    (pid, command) and what to do, and read commands keep working."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    store = tmp_path / "s"
    assert run_cli(["load", str(MINI)], store).exit_code == 0
    env = {**os.environ, "PYTHONPATH": str(root)}
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from kgcult.store import Store; "
                               "s = Store(sys.argv[1]); print('HELD', flush=True); time.sleep(120)", str(store)],
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert holder.stdout.readline().strip() == "HELD"
        res = subprocess.run([sys.executable, "-m", "kgcult", "--store", str(store), "load", str(MINI),
                              "--graph", "again"], capture_output=True, text=True, env=env, timeout=120)
        errors = [x for x in res.stderr.splitlines() if x.startswith("error:")]
        assert res.returncode == 1 and len(errors) == 1 and "Traceback" not in res.stderr, res.stderr
        assert f"pid {holder.pid}" in errors[0] and "Only one process may write" in errors[0], errors
        assert "While lock file" not in res.stderr
        res = subprocess.run([sys.executable, "-m", "kgcult", "--store", str(store), "stats"],
                             capture_output=True, text=True, env=env, timeout=120)
        assert res.returncode == 0, res.stderr
    finally:
        holder.kill()
        holder.wait()
