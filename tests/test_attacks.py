"""The attack catalogue (tests/attacks.toml, issue 30) cannot rot: every entry is well
formed, every node id it names is a test that exists (a function of that file; a
parameter id among those the test declares), and `make attacks` runs exactly them."""
from __future__ import annotations

import ast
import importlib
import re
import tomllib
from pathlib import Path

import pytest

from tests import attacks

ROOT = Path(__file__).resolve().parent.parent


def _tests_of(path: Path) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


def _param_ids(fn: ast.FunctionDef, module: str) -> set[str] | None:
    """The ids a parametrized test declares (``ids=[...]``, ``pytest.param(..., id=...)`` or plain string values; values
    computed from the module's names are evaluated in it), or None when it is not
    parametrized."""
    found: set[str] | None = None
    for dec in fn.decorator_list:
        if not (isinstance(dec, ast.Call) and ast.unparse(dec.func).endswith("parametrize")):
            continue
        found = found or set()
        values = [kw.value for kw in dec.keywords if kw.arg == "ids"] or dec.args[1:2]
        for v in values:
            if not isinstance(v, (ast.List, ast.Tuple)):  # e.g. sorted(CASES): the module's values
                namespace = vars(importlib.import_module(module))
                found.update(str(x) for x in eval(compile(ast.Expression(v), module, "eval"), namespace))
                continue
            for elt in v.elts:
                if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                    found.add(elt.value)
                elif isinstance(elt, ast.Call) and any(k.arg == "id" and isinstance(k.value, ast.Constant)
                                                       for k in elt.keywords):
                    found.update(str(k.value.value) for k in elt.keywords  # pytest.param(..., id="x")
                                 if k.arg == "id" and isinstance(k.value, ast.Constant))
                elif isinstance(elt, ast.Call) and elt.args and isinstance(elt.args[0], ast.Constant):
                    found.add(str(elt.args[0].value))  # pytest.param("x", marks=...)
                elif isinstance(elt, ast.Tuple) and elt.elts and isinstance(elt.elts[0], ast.Constant):
                    found.add(str(elt.elts[0].value))
    return found


def test_the_catalogue_is_well_formed_and_covers_the_issue():
    entries = attacks.load()
    assert len(entries) >= 45  # the issue's 45 findings, split where a sentence lists several
    assert {e["category"] for e in entries} == set(attacks.CATEGORIES)
    pending = {e["id"]: e["pending"] for e in entries if e.get("pending")}
    # a pending attack says why it is still open, in a word first: "open: ..."
    assert all(v.startswith("open: ") for v in pending.values()), pending
    assert set(pending) == {"killed-swap-slow-finish", "import-slower-than-load"}, pending


@pytest.mark.parametrize("node", attacks.node_ids(attacks.load()))
def test_every_catalogued_node_id_names_a_test(node):
    m = re.fullmatch(r"(tests/test_\w+\.py)::(test_\w+)(?:\[(.+)\])?", node)
    assert m, f"{node}: not a node id of the form tests/test_x.py::test_y[param]"
    path = ROOT / m.group(1)
    assert path.is_file(), f"{node}: no file {m.group(1)}"
    fn = _tests_of(path).get(m.group(2))
    assert fn is not None, f"{node}: no test {m.group(2)} in {m.group(1)}"
    if m.group(3) is not None:
        ids = _param_ids(fn, "tests." + path.stem)
        assert ids is not None and m.group(3) in ids, f"{node}: {m.group(2)} declares no parameter {m.group(3)!r}"


def test_the_rerun_counts_what_held(tmp_path):
    """The runner's verdicts and report from pytest's outcomes, without running them."""
    cat = tmp_path / "a.toml"
    cat.write_text('[[attack]]\nid = "a"\ncategory = "leaks"\nattack = "x"\ntests = ["tests/test_x.py::test_a"]\n'
                   '[[attack]]\nid = "b"\ncategory = "leaks"\nattack = "y"\ntests = ["tests/test_x.py::test_b[p]"]\n'
                   '[[attack]]\nid = "c"\ncategory = "way-in"\nattack = "z"\npending = "serveload"\n')
    entries = attacks.load(cat)
    outcome = {"tests/test_x.py::test_a[1]": "passed", "tests/test_x.py::test_a[2]": "passed",
               "tests/test_x.py::test_b[p]": "failed", "tests/test_x.py::test_b[q]": "passed"}
    assert attacks.verdicts(entries, outcome) == {"a": "held", "b": "failed", "c": "pending"}
    assert attacks.verdicts(entries, {}) == {"a": "not run", "b": "not run", "c": "pending"}
    text = attacks.report(entries, attacks.verdicts(entries, outcome))
    assert "leaks             1/2" in text and "NOT HELD (failed): b: y" in text
    bad = tmp_path / "bad.toml"
    bad.write_text('[[attack]]\nid = "a"\ncategory = "leaks"\nattack = "x"\n')
    with pytest.raises(ValueError, match="either tests"):
        attacks.load(bad)
    assert tomllib.loads(attacks.CATALOGUE.read_text(encoding="utf-8"))  # the real one parses


def test_make_attacks_runs_the_catalogue():
    make = (ROOT / "Makefile").read_text()
    assert re.search(r"^attacks:\n\t\$\(PY\) -m tests\.attacks", make, re.M)
