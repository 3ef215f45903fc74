"""The documentation is true: the Python API page runs as a doctest, and every command
is documented in the README and has --help."""
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
