"""The documentation is true: the Python API page runs as a doctest, every command is
documented in the README and has --help, and tests/README.md places every test file."""
from __future__ import annotations

import doctest
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from kgcult.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_python_api_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the examples create demo-store/ and datasets/ here
    result = doctest.testfile(str(ROOT / "docs" / "python-api.md"), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, raise_on_error=False)
    assert result.attempted > 20
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of docs/python-api.md failed (see above)"


def _commands(group: click.Group, prefix=()):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        yield (*prefix, name), cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*prefix, name))


@pytest.mark.parametrize("path", [" ".join(p) for p, _ in _commands(main)])
def test_every_command_is_in_the_readme_with_help(path):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(rf"kgcult (--store \S+ )?{re.escape(path)}\b", readme), f"`kgcult {path}` is not in README.md"
    r = CliRunner().invoke(main, [*path.split(), "--help"])
    assert r.exit_code == 0 and "Usage:" in r.output


def test_tests_readme_places_every_test_file():
    """tests/README.md tells a newcomer where a new test goes: its table names every test
    file, and names none that is gone."""
    text = (ROOT / "tests" / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`(test_\w+\.py)`", text))
    files = {p.name for p in (ROOT / "tests").glob("test_*.py")}
    assert not files - named, f"not in tests/README.md: {sorted(files - named)}"
    assert not named - files, f"tests/README.md names files that do not exist: {sorted(named - files)}"
