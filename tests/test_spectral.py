"""Spectral metrics on matrices with known spectra, categories, and the CLI on a fixture."""
import json
import math

import numpy as np
import pytest

from kgcult import spectral as S


def run_cli(args):
    from click.testing import CliRunner

    from kgcult.cli.main import main

    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_adjacency_is_cosine():
    H = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
    A = S.adjacency(H)
    assert A[0, 1] == pytest.approx(1 / math.sqrt(2))
    assert A[1, 2] == pytest.approx(1 / math.sqrt(2))
    assert A[0, 2] == pytest.approx(0.0)
    assert np.allclose(np.diag(A), 1.0)


def test_disjoint_countries_uniform_spectrum():
    # every country its own item: A = I, eigenvalues all 1 -> ER = n, SR = 1
    r = S.analyse(np.eye(5))
    assert r["ER"] == pytest.approx(5.0)
    assert r["SR"] == pytest.approx(1.0)


def test_identical_countries_one_eigenvalue():
    # all rows equal: A = 11^T, eigenvalues (n, 0, ...) -> ER = 1, SR = inf
    r = S.analyse(np.tile([0.2, 0.3, 0.5], (4, 1)))
    assert r["ER"] == pytest.approx(1.0)
    assert math.isinf(r["SR"])


def test_two_blocks():
    # two clusters of 3 and 1 countries: eigenvalues (3, 1, 0, 0)
    H = np.array([[1, 0], [1, 0], [1, 0], [0, 1]], dtype=float)
    r = S.analyse(H)
    p = np.array([3, 1]) / 4
    assert r["ER"] == pytest.approx(math.exp(-(p * np.log(p)).sum()))
    assert r["SR"] == pytest.approx(3.0)


def test_two_countries_known_angle():
    # A = [[1, c], [c, 1]] has eigenvalues 1 ± c
    c = 0.6
    H = np.array([[1.0, 0.0], [c, math.sqrt(1 - c * c)]])
    r = S.analyse(H)
    lam = np.array([1 + c, 1 - c])
    p = lam / lam.sum()
    assert r["eigenvalues"] == pytest.approx(lam.tolist())
    assert r["ER"] == pytest.approx(math.exp(-(p * np.log(p)).sum()))
    assert r["SR"] == pytest.approx((1 + c) / (1 - c))


def test_zero_row_rejected():
    from kgcult.errors import KgcultError

    with pytest.raises(KgcultError, match="all zero"):
        S.adjacency(np.array([[1.0, 0.0], [0.0, 0.0]]))


def test_categorize_median_split():
    rows = [{"ER": 1.0, "SR": 9.0}, {"ER": 5.0, "SR": 1.0}, {"ER": 4.0, "SR": 8.0}, {"ER": 1.5, "SR": 1.2}]
    S.categorize(rows)
    # ER median 2.75, SR median 4.6
    assert [r["category"] for r in rows] == ["LH", "HL", "HH", "LL"]


def test_softmax_rows():
    P = S.softmax_rows(np.array([[0.0, math.log(3.0)], [-math.inf, 0.0]]))
    assert P[0] == pytest.approx([0.25, 0.75])
    assert P[1] == pytest.approx([0.0, 1.0])


def test_ground_truth_matrix_drops_empty_countries():
    H, kept = S.ground_truth_matrix([("A", "x"), ("A", "y"), ("B", "y")], ["A", "B", "C"], ["x", "y"])
    assert kept == ["A", "B"]
    assert H.tolist() == [[0.5, 0.5], [0.0, 1.0]]


def test_spectral_cli_ground_truth(tmp_path):
    items = tmp_path / "items.jsonl"
    rows = []
    for i, c in enumerate(["Aland", "Bland", "Cland", "Dland"]):
        rows.append({"domain": "currency", "country": c, "item": f"coin{i}"})       # all distinct
        rows.append({"domain": "religions", "country": c, "item": "Faith"})          # all shared
    items.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "out"
    res = run_cli(["spectral", "--items", str(items), "--out", str(out)])
    assert res.exit_code == 0, res.output
    data = {r["question"]: r for r in json.loads((out / "spectral.json").read_text())}
    assert {q for q in data} == {"currency_1", "currency_2", "currency_3", "religions_1", "religions_2",
                                 "religions_3"}
    assert data["currency_2"]["ER"] == pytest.approx(4.0)     # disjoint currencies: A = I
    assert data["religions_1"]["ER"] == pytest.approx(1.0)    # one shared religion: A = 11^T
    assert data["religions_1"]["SR"] is None                  # λ2 = 0: infinite, null in JSON
    assert data["currency_1"]["category"] == "HL" and data["religions_1"]["category"] == "LH"
    assert (out / "er_heatmap.png").stat().st_size > 0 and (out / "sr_heatmap.png").stat().st_size > 0


def test_spectral_cli_bad_items(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text('{"domain": "currency", "country": "A"}\n')
    from click.testing import CliRunner

    from kgcult.cli.main import main

    res = CliRunner().invoke(main, ["spectral", "--items", str(items), "--out", str(tmp_path / "o")])
    assert res.exit_code == 1
    assert "items.jsonl:1" in res.output and "'item'" in res.output
