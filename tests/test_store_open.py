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
