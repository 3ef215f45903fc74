"""Issue 40: the link index's arrays carry their own identity, and bad input rows are one
error line (deep nesting, lone surrogates, error lines capped in length)."""
from __future__ import annotations

import pytest

from kgcult.errors import KgcultError
from tests.conftest import run_cli


@pytest.fixture
def linked_store(tmp_path):
    from tests.test_link import make_store

    path = tmp_path / "store"
    make_store(path).close()
    r = run_cli(["link", "index"], path)
    assert r.exit_code == 0, r.output
    return path


def _index_dir(store_path):
    (d,) = [p for p in (store_path.parent / (store_path.name + ".link-index")).glob("labels-*") if p.is_dir()]
    return d


def test_swapped_index_arrays_are_detected(linked_store):
    """Before: swapping two same-size arrays (qnum.npy, sitelinks.npy) resolved every
    mention to Q0, with exit 0."""
    from kgcult.link.index.reader import LabelIndex

    d = _index_dir(linked_store)
    a, b = d / "qnum.npy", d / "sitelinks.npy"
    assert a.stat().st_size == b.stat().st_size  # the same size: only their identity tells them apart
    tmp = d / "swap"
    a.rename(tmp)
    b.rename(a)
    tmp.rename(b)
    with pytest.raises(KgcultError, match="qnum.npy: not the 'qnum' array"):
        LabelIndex(d)
    r = run_cli(["link", "Japan", "--lang", "en"], linked_store)  # said, rebuilt, answered right
    assert r.exit_code == 0 and "Q17" in r.stdout and "Q0\t" not in r.stdout and '"Q0"' not in r.stdout, r.output
    assert "not the 'qnum' array" in r.stderr and "rebuilding" in r.stderr
    LabelIndex(_index_dir(linked_store)).close()  # the rebuilt index checks out


def test_an_index_array_without_its_identity_is_refused(linked_store):
    from kgcult.link.index.reader import LabelIndex

    d = _index_dir(linked_store)
    (d / "sitelinks.npy.json").unlink()
    with pytest.raises(KgcultError, match="no readable identity record"):
        LabelIndex(d)


# -- every input error is one line ---------------------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000


def _errors(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr[-2000:]
    return [ln for ln in stderr.splitlines() if ln.startswith("error")]


def test_a_dump_record_nested_100000_deep_is_one_error_line(tmp_path):
    """Before: 63 lines (RecursionError in the parse worker, then BufferError)."""
    from tests.test_ingest_wdqs_form import _three_sources

    _, spec_path, _, _, _, _ = _three_sources(tmp_path)
    dump = tmp_path / "deep.json"
    dump.write_text('[\n{"type": "item", "id": "Q31", "labels": {"en": {"language": "en", "value": "x"}}, '
                    f'"extra": {DEEP}}}\n]\n')
    for jobs in ("1", "2"):
        r = run_cli(["ingest", str(dump), "--specs", str(spec_path), "--no-progress", "-j", jobs], tmp_path / "store")
        errors = _errors(r.stderr)
        assert r.exit_code == 1 and len(errors) == 1 and f"{dump}:2: " in errors[0] and "nested too deeply" in errors[0]


@pytest.fixture
def link_store(tmp_path):
    from tests.test_link import make_store

    path = tmp_path / "store"
    make_store(path).close()
    return path


def _rows(tmp_path, first: str) -> str:
    f = tmp_path / "rows.jsonl"
    f.write_text(first + "\n" + '{"mention": "sushi", "lang": "en"}\n', encoding="utf-8")
    return str(f)


BAD_ROWS = {
    "deep": ('{"mention": "x", "lang": "en", "extra": ' + DEEP + "}", "nested too deeply"),
    "lone-surrogate": ('{"mention": "sushi\\ud800", "lang": "en"}', "lone surrogate"),
}


@pytest.mark.parametrize("name", sorted(BAD_ROWS))
def test_a_bad_mention_row_is_one_error_line_and_skip_skips_it(tmp_path, link_store, name):
    """Before: a mention row nested deep gave a 47-line RecursionError; a lone surrogate
    (valid JSON "sushi\\ud800") a 54-line UnicodeEncodeError, even with --on-error skip."""
    row, says = BAD_ROWS[name]
    rows = _rows(tmp_path, row)
    r = run_cli(["link", "-i", rows, "-o", str(tmp_path / "out.jsonl")], link_store)
    errors = _errors(r.stderr)
    assert r.exit_code == 1 and len(errors) == 1 and f"{rows}:1: " in errors[0] and says in errors[0], r.stderr
    r = run_cli(["link", "-i", rows, "-o", str(tmp_path / "out.jsonl"), "--on-error", "skip"], link_store)
    assert r.exit_code == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    out = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()
    assert [__import__("json").loads(x)["qid"] for x in out] == ["Q46383"]


def test_an_error_line_is_capped_in_length(tmp_path, link_store):
    """Before: one error line ran to 1.6 MB, echoing a 200,000-element topic list."""
    import json

    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"mention": "sushi", "lang": "en", "topic": ["food"] * 200_000}) + "\n")
    r = run_cli(["link", "-i", str(rows), "-o", str(tmp_path / "out.jsonl")], link_store)
    errors = _errors(r.stderr)
    assert r.exit_code == 1 and len(errors) == 1 and "unknown topic" in errors[0]
    assert len(r.stderr) < 3_000, len(r.stderr)


def test_the_cli_caps_any_error_line():
    from kgcult.safe_text import MAX_MESSAGE, clip

    assert clip("x" * 10) == "x" * 10
    long = clip("y" * 1_000_000)
    assert len(long) < MAX_MESSAGE + 60 and long.endswith("(998,000 more characters)")
