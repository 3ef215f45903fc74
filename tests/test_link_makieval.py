"""MakiEval metrics (§4) on a small hand-made linked file: every number checked by hand."""
from __future__ import annotations

import csv
import json

import pytest

from kgcult.errors import KgcultError
from kgcult.eval import makieval


def row(lang, qid, country=None, prompt_country=None, type_=None, gscore=None, topic="food",
        status="resolved", model="m1"):
    r = {"lang": lang, "topic": topic, "qid": qid, "status": status, "country": country or [],
         "granularity_score": gscore, "model": model}
    if prompt_country:
        r["prompt_country"] = prompt_country
    if type_:
        r["type"] = type_
    return r


ROWS = [
    # English, explicit prompt about Spain (Q29): paella twice, tomato, gazpacho, one unlinked
    row("en", "Q1", ["Q29"], "Q29", "dish_name"),
    row("en", "Q1", ["Q29"], "Q29", "dish_name"),
    row("en", "Q2", [], "Q29", "ingredient_category"),
    row("en", "Q3", ["Q29"], "Q29", "dish_name"),
    row("en", None, [], "Q29", "dish_name", status="unresolved"),
    # Spanish, same setting
    row("es", "Q1", ["Q29"], "Q29", "dish_name"),
    row("es", "Q4", ["Q142"], "Q29", "dish_name"),
    # English, neutral prompt
    row("en", "Q1", ["Q29"], None, "dish_name"),
    row("en", "Q5", ["Q17"], None, None, gscore=0),
    row("en", "Q6", ["Q17"], None, None, gscore=1),
    row("en", "Q7", [], None, "person_name"),
]


def test_metrics_by_hand():
    res = makieval.compute(ROWS)
    div = {(d["lang"], d["prompt_country"]): d["diversity"] for d in res["diversity"]}
    assert div == {("en", "Q29"): 3, ("es", "Q29"): 2, ("en", None): 4}
    gran = {(d["lang"], d["prompt_country"]): d["granularity"] for d in res["granularity"]}
    # en/Spain: Q1=1, Q2=0 (ingredient category), Q3=1 -> 2/3
    assert gran[("en", "Q29")] == pytest.approx(0.6667)
    # neutral: Q1=1 (type), Q5=0, Q6=1 (graph scores, no type), Q7 person: left out -> 2/3
    assert gran[("en", None)] == pytest.approx(0.6667)
    spec = {(d["lang"], d["prompt_type"], d["prompt_country"]): d for d in res["specificity"]}
    en = spec[("en", "explicit", "Q29")]
    assert en["specificity"] == pytest.approx(0.6667)  # Q1, Q3 of {Q1, Q2, Q3}
    assert en["neutral_specificity"] == pytest.approx(0.25)  # Q1 of {Q1, Q5, Q6, Q7}
    assert en["gain"] == pytest.approx(0.4167)
    es = spec[("es", "explicit", "Q29")]
    assert es["specificity"] == 0.5 and es["gain"] is None  # no neutral Spanish prompt
    cons = [c for c in res["consensus"] if c["prompt_country"] == "Q29"]
    assert len(cons) == 1 and cons[0]["lang_a"] == "en" and cons[0]["lang_b"] == "es"
    assert cons[0]["jaccard"] == 0.25  # {Q1,Q2,Q3} vs {Q1,Q4}: 1 / 4


def test_metrics_granularity_from_graph():
    res = makieval.compute(ROWS, granularity_from="graph")
    gran = {(d["lang"], d["prompt_country"]): d["granularity"] for d in res["granularity"]}
    assert gran[("en", "Q29")] is None  # no graph scores on those rows


def test_metrics_files(tmp_path):
    linked = tmp_path / "linked.jsonl"
    linked.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    out = tmp_path / "out"
    res = makieval.metrics_file(linked, out)
    for name in ("granularity.csv", "diversity.csv", "specificity.csv", "consensus.csv",
                 "metrics.json", "consensus.png"):
        assert (out / name).exists(), name
    assert (out / "consensus.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(out / "consensus.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["jaccard"] for r in rows} == {"0.25"}
    assert res["summary"]["linked"] == 10


def test_metrics_bad_input(tmp_path):
    linked = tmp_path / "linked.jsonl"
    linked.write_text('{"qid": "Q1", "lang": "en"}\n{"mention": "x"}\n')
    with pytest.raises(KgcultError, match=r"linked.jsonl:2"):
        makieval.metrics_file(linked, tmp_path / "o")
    res = makieval.metrics_file(linked, tmp_path / "o", on_error="skip")
    assert res["summary"]["rows"] == 1


def test_cli_metrics(tmp_path):
    from click.testing import CliRunner

    from kgcult.cli.main import main

    linked = tmp_path / "linked.jsonl"
    linked.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    r = CliRunner().invoke(main, ["makieval", "metrics", str(linked), "--out", str(tmp_path / "m")])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["prompts"] == 3
    assert (tmp_path / "m" / "consensus.png").exists()
