"""The documentation is true: the Python API page runs as a doctest, every command is
documented in the README and has --help, the examples of probe, spectral, synth and taxonomy
parse (and those of synth and taxonomy run) as written, and tests/README.md places every test file."""
from __future__ import annotations

import doctest
import re
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import kgcult
from kgcult import resources
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


# -- the examples of probe, spectral, synth and taxonomy, as written ----------------------

EXAMPLE_COMMANDS = ("probe", "spectral", "synth", "taxonomy")
DOC_FILES = ["README.md", "docs/probe.md", "docs/synth.md"]


def _example_lines(text: str):
    """``kgcult ...`` lines (backslash continuations joined) of the given commands."""
    joined = re.sub(r"\\\n\s*", " ", text)
    for raw in joined.splitlines():
        line = raw.strip()
        m = re.match(r"(?:\$ )?kgcult (?:--store \S+ )?(\w+)", line)
        if not m or m.group(1) not in EXAMPLE_COMMANDS or " ... " in line:
            continue
        yield line


def _doc_examples():
    out = []
    for name in DOC_FILES:
        text = (ROOT / name).read_text(encoding="utf-8")
        for block in re.findall(r"```(?:sh|bash|console)?\n(.*?)```", text, flags=re.S):
            out += [(name, line) for line in _example_lines(block)]
    for path, cmd in _commands(main):
        if path[0] in EXAMPLE_COMMANDS:
            out += [(f"kgcult {' '.join(path)} --help", line) for line in _example_lines(cmd.help or "")]
    return sorted(set(out))


def _argv(line: str) -> list[str]:
    argv = shlex.split(line, comments=True)[1:]
    if argv[:1] == ["--store"]:
        argv = argv[2:]
    return argv


@pytest.fixture(scope="module")
def example_dir(tmp_path_factory):
    """A working directory holding what the examples read: the views `kgcult build` writes
    (at its default place, build/views/, and with --out build) and the seed store."""
    d = tmp_path_factory.mktemp("examples") / "work"
    d.mkdir()
    with kgcult.open(d / "store") as kg:
        kg.import_snapshot(resources.seed())
        kg.closure()
        for view, params in (("fmlama", {"languages": ["en", "zh"]}), ("dlama", {}), ("spectral-items", {})):
            r = kg.build(view, **params)
            r.write(d / "build" / "views")
            r.write(d / "build")
    return d


def _placeholders(argv: list[str], cwd: Path) -> None:
    """Create the files a doc example names as a stand-in for the reader's own: bare file
    names (fm.jsonl, answers.jsonl), output folders under runs/, the shared reference
    data, a downloaded release. A path under build/ must be one `kgcult build` writes."""
    for tok in argv:
        if tok.startswith("-") or "=" in tok:
            continue
        p = cwd / tok
        if p.exists() or tok.startswith("build/"):
            continue
        if re.fullmatch(r"[\w.-]+\.(jsonl|bin)", tok):
            p.write_text("", encoding="utf-8")
        elif tok.startswith(("runs/", "../shared/", "./FmLAMA/")):
            if re.search(r"\.\w+$", tok):
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text("", encoding="utf-8")
            else:
                p.mkdir(parents=True, exist_ok=True)


def _parse(argv: list[str]):
    """Parse an argument list as `kgcult` would, down to the command that runs, without
    running it: a wrong option, a missing required one or a missing file fails here."""
    cmd, i = main, 0
    while isinstance(cmd, click.Group) and i < len(argv) and argv[i] in cmd.commands:
        cmd, i = cmd.commands[argv[i]], i + 1
    return cmd.make_context(cmd.name, argv[i:])


@pytest.mark.parametrize("where,line", _doc_examples())
def test_doc_examples_parse(where, line, example_dir, monkeypatch):
    """Every example of these commands in the README, the docs and --help parses as written:
    its options exist (`--param` on `probe fmlama`, say) and the files it reads are where
    `kgcult build` puts them (`probe fmlama --help`'s --dataset path)."""
    monkeypatch.chdir(example_dir)
    argv = _argv(line)
    _placeholders(argv, example_dir)
    try:
        _parse(argv)
    except click.ClickException as e:
        pytest.fail(f"{where}: `{line}` does not parse: {e.format_message()}")


@pytest.mark.slow
@pytest.mark.parametrize("where,line", [(w, l) for w, l in _doc_examples()
                                        if re.match(r"kgcult (synth (knowledge|--topic)|taxonomy)", l)
                                        and "--generator" not in l])  # a model the reader has
def test_doc_examples_run(where, line, example_dir, monkeypatch):
    """The synth and taxonomy examples run as written on the seed store (a knowledge point
    with --embeddings and no --topic, say, fails here)."""
    monkeypatch.chdir(example_dir)
    r = CliRunner().invoke(main, ["--store", str(example_dir / "store"), *_argv(line)])
    assert r.exit_code == 0, f"{where}: `{line}` failed: {r.output}"
