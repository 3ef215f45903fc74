"""The probe reports as the originals compute them, from hand-written predictions (no model):
entropy over object QIDs, the aggregate over DLAMA-v1's predicates only, per-pair columns,
and causal-LM runs labelled as kgcult's own protocol."""
from __future__ import annotations

import json

import pytest

from kgcult.probe import report, run


def _write(d, run_info: dict, rows: list[dict]):
    d.mkdir(parents=True, exist_ok=True)
    (d / run.RUN_FILE).write_text(json.dumps(run_info))
    (d / run.PRED_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))


def _row(pair, culture, pred, top, gold, gold_ids=None, group=None):
    r = {"key": f"{pair}|{pred}|{top}{gold}", "template": f"{pred}_en", "predicate": pred, "culture": culture,
         "pair": pair, "subject": "s", "gold": gold, "top": [top], "gold_ranks": [1], "n_candidates": 3}
    if gold_ids:
        r["gold_ids"] = gold_ids
    if group:
        r["group"] = group
    return r


def test_entropy_from_qids_and_aggregate_over_v1_only(tmp_path):
    rows = [
        # Two objects share the label "Georgia" (the country and the US state): by labels the
        # entropy would be 0, by QIDs it is 1 bit.
        _row("arab-west", "west", "P27", "Georgia", ["Georgia"], ["Q230"], "v1"),
        _row("arab-west", "west", "P27", "x", ["Georgia"], ["Q1428"], "v1"),
        _row("arab-west", "west", "P527", "salt", ["salt"], ["Q11254"], "kgcult"),
        _row("arab-west", "west", "P527", "salt", ["salt"], ["Q11254"], "kgcult"),
        _row("arab-west", "west", "P527", "salt", ["salt"], ["Q11254"], "kgcult"),
        _row("asia-west", "west", "P27", "x", ["France"], ["Q142"], "v1"),
    ]
    d = tmp_path / "r"
    _write(d, {"task": "dlama", "model": "m", "kind": "masked", "scoring": "mean", "lang": "en"}, rows)
    res = report.dlama_report(d, plot=False)
    cell = next(c for c in res["predicates"] if (c["pair"], c["predicate"]) == ("arab-west", "P27"))
    assert cell["entropy"] == pytest.approx(1.0) and cell["entropy_from"] == "qid"
    ent = [json.loads(x) for x in (d / "entropy.jsonl").read_text().splitlines()]
    assert {(e["pair"], e["predicate"], e["entropy"]) for e in ent} >= {("arab-west", "P27", 1.0)}
    agg = {(c["pair"], c["culture"], c["scope"]): c for c in res["cultures"]}
    # P527 (a kgcult extra, all correct) stays out of the DLAMA-v1 aggregate: 1 of 2 correct.
    assert agg[("arab-west", "west", "v1")]["facts"] == 2
    assert agg[("arab-west", "west", "v1")]["P@1"] == pytest.approx(0.5)
    assert agg[("arab-west", "west", "extras")]["facts"] == 3
    # The West of each pair is its own column (DLAMA-v1's pairs are built separately).
    assert agg[("asia-west", "west", "v1")]["facts"] == 1
    md = (d / "results.md").read_text()
    assert "| Aggregated (DLAMA-v1) |" in md and "| P527 (not v1) |" in md
    assert md.index("Aggregated (DLAMA-v1)") < md.index("P527 (not v1)")
    assert res["protocol"] is None


def test_label_entropy_without_qids_and_groups_from_the_view(tmp_path):
    rows = [_row("", "Arab", "P131", "a", ["a"]), _row("", "Arab", "P17", "b", ["b"])]
    d = tmp_path / "r"
    _write(d, {"task": "dlama", "model": "m", "kind": "masked", "lang": "en"}, rows)
    res = report.dlama_report(d, plot=False)
    groups = {c["predicate"]: (c["group"], c["entropy_from"]) for c in res["predicates"]}
    assert groups == {"P131": ("kgcult", "label"), "P17": ("v1", "label")}


def test_causal_runs_are_labelled_as_kgcults_own_protocol(tmp_path):
    d = tmp_path / "c"
    _write(d, {"task": "dlama", "model": "gpt", "kind": "causal", "scoring": "sum", "span": "object",
               "lang": "en"}, [_row("", "Arab", "P17", "b", ["b"])])
    res = report.dlama_report(d, plot=False)
    assert "kgcult's own protocol" in res["protocol"]
    assert "kgcult's own protocol" in (d / "results.md").read_text()


def test_fmlama_causal_report_is_labelled_too(tmp_path):
    d = tmp_path / "f"
    row = {"key": "u", "template": "t1", "origin": "Italy", "sub_label": "pizza", "gold": ["cheese"],
           "top": ["cheese"], "gold_ranks": [1], "n_candidates": 2}
    _write(d, {"task": "fmlama", "model": "gpt", "kind": "causal", "scoring": "sum", "lang": "en"}, [row])
    res = report.fmlama_report(d, embeddings="none", plot=False)
    assert "kgcult's own protocol" in res["protocol"]
    assert "kgcult's own protocol" in (d / "results.md").read_text()


def _fm_row(key, template, origin, uri, continent, top, gold):
    rank = [1 if top == g else 2 for g in gold]
    return {"key": key, "template": template, "origin": origin, "origin_uri": uri, "continent": continent,
            "sub_label": key, "gold": gold, "top": [top, "z"], "gold_ranks": rank, "n_candidates": 3}


def test_fmlama_report_groups_others_and_continents(tmp_path):
    d = tmp_path / "g"
    rows = []
    for t in ("t1", "t2"):
        rows += [
            _fm_row("pizza", t, "Italy", "Q38", ["Europe"], "cheese", ["cheese"]),
            _fm_row("koshari", t, "Egypt", "Q79", ["Africa", "Asia"], "rice" if t == "t1" else "x", ["rice"]),
            _fm_row("kimchi", t, "South Korea", "Q884", ["Asia"], "x", ["cabbage"]),
        ]
    _write(d, {"task": "fmlama", "model": "m", "kind": "masked", "scoring": "mean", "lang": "en"}, rows)
    res = report.fmlama_report(d, embeddings="none", plot=False)
    others = {c["origin"]: c for c in res["groupings"]["release_and_others"]}
    # Egypt and South Korea are not among the 14 release countries: one "Others" group.
    assert set(others) == {"All", "Italy", "Others"} and others["Others"]["dishes"] == 2
    cont = {c["origin"]: c for c in res["groupings"]["continent"]}
    assert cont["Asia"]["dishes"] == 2 and cont["Africa"]["dishes"] == 1 and cont["Europe"]["dishes"] == 1
    # Africa: template t1 AP 1.0, t2 AP 0.5 -> mean 0.75, sample std 0.3536 (ddof=1).
    assert cont["Africa"]["mAP"] == pytest.approx(0.75)
    assert cont["Africa"]["mAP_std"] == pytest.approx(0.35355339)
    md = (d / "results.md").read_text()
    assert "| Others | 2 |" in md and "By continent" in md
