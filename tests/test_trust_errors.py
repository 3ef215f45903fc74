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
