"""Spectral macro-structure analysis (Measuring Meta-Cultural Competency, §3.1, §3.3).

For one question, H is the n × t matrix of country distributions over the t items
(row c = p^c, Σ p^c = 1). The country adjacency is the cosine-similarity matrix

    A = D⁻¹ H Hᵀ D⁻¹,   D = diag(‖p^{c_1}‖₂, …, ‖p^{c_n}‖₂)                      (eq. 1)

and with λ₁ ≥ … ≥ λ_n the eigenvalues of A (symmetric positive semi-definite),

    ER = exp(−Σ λ̃_i log λ̃_i),  λ̃_i = λ_i / Σ_j λ_j  over the λ_i > 0;   SR = λ₁ / λ₂   (eq. 2)

"λ_i > 0" is applied with a tolerance (λ_i > 1e-10 · λ₁) so that round-off negatives and
zeros do not enter. ER and SR are binarized high/low against their medians over all
questions (and models) analysed together (high = strictly above the median), and the
labels concatenated, ER first: LH, HL, HH, LL (§3.1.1, §3.3).

Model-derived H: for each question prompt and country, the item log-probabilities
(multi-token items summed, as in §3.3) softmaxed over the item list. Ground-truth H: the
graph's country → item facts, each country's row uniform over its items (countries
without any item in the domain are left out).
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

from kgcult.errors import KgcultError


def adjacency(H: np.ndarray) -> np.ndarray:
    H = np.asarray(H, dtype=np.float64)
    norms = np.linalg.norm(H, axis=1)
    if np.any(norms == 0):
        raise KgcultError(f"{int(np.sum(norms == 0))} row(s) of H are all zero: cosine undefined")
    Dinv = 1.0 / norms
    return (H * Dinv[:, None]) @ (H * Dinv[:, None]).T


def eigenvalues(A: np.ndarray) -> np.ndarray:
    """Eigenvalues of the symmetric A, descending."""
    return np.sort(np.linalg.eigvalsh((A + A.T) / 2.0))[::-1]


def effective_rank(lams: np.ndarray, rtol: float = 1e-10) -> float:
    lams = np.asarray(lams, dtype=np.float64)
    if lams.size == 0 or lams.max() <= 0:
        return float("nan")
    pos = lams[lams > rtol * lams.max()]
    p = pos / pos.sum()
    return float(np.exp(-np.sum(p * np.log(p))))


def spectral_ratio(lams: np.ndarray, rtol: float = 1e-10) -> float:
    lams = np.sort(np.asarray(lams, dtype=np.float64))[::-1]
    if lams.size < 2:
        return float("inf")
    if lams[1] <= rtol * max(lams[0], 1e-300):
        return float("inf")
    return float(lams[0] / lams[1])


def analyse(H: np.ndarray) -> dict:
    lams = eigenvalues(adjacency(H))
    return {"ER": effective_rank(lams), "SR": spectral_ratio(lams), "eigenvalues": lams.tolist(),
            "n_countries": int(H.shape[0]), "n_items": int(H.shape[1])}


def categorize(rows: list[dict]) -> list[dict]:
    """Add ER_level, SR_level and category (ER first) by median split over ``rows``."""
    er = np.array([r["ER"] for r in rows], dtype=float)
    sr = np.array([r["SR"] for r in rows], dtype=float)
    er_med = float(np.median(er[np.isfinite(er)])) if np.isfinite(er).any() else float("nan")
    sr_med = float(np.median(sr[~np.isnan(sr)])) if (~np.isnan(sr)).any() else float("nan")
    def high(v, med):
        # SR is infinite when λ₂ = 0; when the median itself is infinite, only the
        # infinite values are high
        return v > med if math.isfinite(med) else math.isinf(v) and v > 0

    for r in rows:
        e = "H" if high(r["ER"], er_med) else "L"
        s = "H" if high(r["SR"], sr_med) else "L"
        r.update(ER_level=e, SR_level=s, category=e + s, ER_median=er_med, SR_median=sr_med)
    return rows


def softmax_rows(logp: np.ndarray) -> np.ndarray:
    x = np.asarray(logp, dtype=np.float64)
    x = np.where(np.isfinite(x), x, -np.inf)
    m = np.max(x, axis=1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=1, keepdims=True)


def model_matrix(scorer, template, countries: list[str], items: list[str]) -> np.ndarray:
    """H from a model: per country, softmax over the items' summed log-probabilities."""
    queries = [template.split("", c) for c in countries]
    prepared = scorer.prepare(items)
    return softmax_rows(scorer.score(queries, prepared))


def ground_truth_matrix(pairs: list[tuple[str, str]], countries: list[str], items: list[str]):
    """(H, kept countries): uniform over each country's items; empty countries dropped."""
    ci = {c: i for i, c in enumerate(countries)}
    ii = {x: j for j, x in enumerate(items)}
    H = np.zeros((len(countries), len(items)))
    for c, x in pairs:
        if c in ci and x in ii:
            H[ci[c], ii[x]] = 1.0
    keep = H.sum(1) > 0
    H = H[keep]
    return H / H.sum(1, keepdims=True), [c for c, k in zip(countries, keep) if k]


# -- items ----------------------------------------------------------------------------

def items_from_view(rows: list[dict], countries: list[dict], lang: str = "en") -> list[dict]:
    """(domain, country, item) label rows from the spectral-items view's output
    (``{domain, item, label: {lang: ..}, countries: [QID]}`` + countries.jsonl)."""
    clabel = {}
    for c in countries:
        lab = c.get("label")
        clabel[c.get("country")] = (lab.get(lang) if isinstance(lab, dict) else lab) or c.get("country")
    out = []
    for r in rows:
        lab = r.get("label")
        item = (lab.get(lang) if isinstance(lab, dict) else lab) or r.get("item")
        for c in r.get("countries") or []:
            out.append({"domain": r["domain"], "country": clabel.get(c, c), "item": item})
    return out


def read_items(path) -> list[dict]:
    """The spectral-items rows: {domain, country, item} labels, or the spectral-items view's
    own output file (then countries.jsonl beside it gives the country labels)."""
    from kgcult.probe.datasets import read_jsonl

    rows = read_jsonl(path)
    if rows and isinstance(rows[0].get("countries"), list):
        side = Path(path).with_name("countries.jsonl")
        return items_from_view(rows, read_jsonl(side) if side.is_file() else [])
    out = []
    for r in rows:
        for f in ("domain", "country", "item"):
            if not isinstance(r.get(f), str) or not r[f].strip():
                raise KgcultError(f"{r['_where']}: spectral-items row needs a string {f!r}")
        out.append({"domain": r["domain"].strip(), "country": r["country"].strip(), "item": r["item"].strip()})
    if not out:
        raise KgcultError(f"{path}: no spectral items")
    return out


def run_spectral(items_rows: list[dict], out_dir, models=(), ground_truth: bool = True,
                 templates=None, device: str = "cpu", batch_size: int = 32, kind: str = "auto",
                 countries: list[str] | None = None, progress=None, plot: bool = True) -> dict:
    """ER/SR/category per (question, source); writes spectral.{json,csv,md} and heatmaps."""
    from kgcult.probe import templates as tpl

    domains = sorted({r["domain"] for r in items_rows})
    templates = templates or tpl.spectral_templates(domains=None)
    qs = [t for t in templates if t.domain in domains]
    if not qs:
        raise KgcultError(f"no spectral prompt for the items' domains ({', '.join(domains)}); "
                          f"prompt domains: {', '.join(sorted({t.domain for t in templates}))}")
    all_countries = countries or sorted({r["country"] for r in items_rows})
    rows = []
    if ground_truth:
        # one matrix per domain, repeated on each of its questions (so that the heatmaps
        # line up questions × sources)
        for dom in list(dict.fromkeys(t.domain for t in qs)):
            dr = [r for r in items_rows if r["domain"] == dom]
            items = sorted({r["item"] for r in dr})
            H, kept = ground_truth_matrix([(r["country"], r["item"]) for r in dr], all_countries, items)
            if len(kept) < 2:
                continue
            res = analyse(H)
            for t in (t for t in qs if t.domain == dom):
                rows.append({"source": "ground-truth", "question": t.id, "domain": dom,
                             "human_category": t.extra.get("human_category"), **res})
    for name in models:
        from kgcult.probe import models as mdl
        from kgcult.probe.run import make_scorer

        loaded = mdl.load(name, kind=kind, device=device)
        scorer = make_scorer(loaded, batch_size, "sum")
        for t in qs:
            items = sorted({r["item"] for r in items_rows if r["domain"] == t.domain})
            H = model_matrix(scorer, t, all_countries, items)
            rows.append({"source": name, "question": t.id, "domain": t.domain,
                         "human_category": t.extra.get("human_category"), **analyse(H)})
            if progress:
                progress(f"{name} {t.id}: ER {rows[-1]['ER']:.2f} SR {rows[-1]['SR']:.2f}")
    if not rows:
        raise KgcultError("nothing to analyse: give --model and/or keep --ground-truth, with items "
                          "for at least two countries")
    # median split among the model-derived rows (the paper: over all questions and models);
    # the ground-truth rows are split among themselves
    categorize([r for r in rows if r["source"] != "ground-truth"] or rows)
    gt = [r for r in rows if r["source"] == "ground-truth"]
    if gt and any(r["source"] != "ground-truth" for r in rows):
        categorize(gt)
    write(rows, out_dir, plot)
    return {"rows": rows}


def write(rows: list[dict], out_dir, plot: bool = True):
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    # NaN and infinity (SR when λ₂ = 0) are written as null: strict JSON
    clean = [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}
             for r in rows]
    (d / "spectral.json").write_text(json.dumps(clean, ensure_ascii=False, indent=2, allow_nan=False) + "\n",
                                     encoding="utf-8")
    cols = ["source", "question", "domain", "n_countries", "n_items", "ER", "SR", "category", "human_category"]
    with (d / "spectral.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow([r.get(c, "") if not isinstance(r.get(c), float) else f"{r[c]:.6f}" for c in cols])
    lines = ["| source | question | countries | items | ER | SR | category | human |",
             "|---|---|---:|---:|---:|---:|---|---|"]
    for r in rows:
        lines.append(f"| {r['source']} | {r['question']} | {r['n_countries']} | {r['n_items']} | "
                     f"{r['ER']:.3f} | {r['SR']:.3f} | {r.get('category', '')} | {r.get('human_category') or ''} |")
    (d / "spectral.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if plot:
        heatmaps(rows, d)


def heatmaps(rows: list[dict], d: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sources = list(dict.fromkeys(r["source"] for r in rows))
    questions = list(dict.fromkeys(r["question"] for r in rows))
    for metric, fname, note in (("ER", "er_heatmap.png", "Effective rank (higher = more plural)"),
                                ("SR", "sr_heatmap.png", "Spectral ratio λ1/λ2 (higher = more consensus)")):
        M = np.full((len(questions), len(sources)), np.nan)
        for r in rows:
            v = r[metric]
            M[questions.index(r["question"]), sources.index(r["source"])] = v if np.isfinite(v) else np.nan
        fig, ax = plt.subplots(figsize=(2 + 1.4 * len(sources), 1 + 0.35 * len(questions)))
        norm = None
        finite = M[np.isfinite(M)]
        if metric == "SR" and finite.size and finite.min() > 0 and finite.max() / finite.min() > 100:
            from matplotlib.colors import LogNorm

            norm = LogNorm(vmin=finite.min(), vmax=finite.max())  # SR spans orders of magnitude
        im = ax.imshow(M, aspect="auto", cmap="viridis", norm=norm)
        ax.set_xticks(range(len(sources)))
        ax.set_xticklabels([s.rsplit("/", 1)[-1] for s in sources], rotation=30, ha="right", fontsize=8)
        ax.set_yticks(range(len(questions)))
        ax.set_yticklabels(questions, fontsize=7)
        for i in range(len(questions)):
            for j in range(len(sources)):
                if not np.isnan(M[i, j]):
                    ax.text(j, i, f"{M[i, j]:.2f}", ha="center", va="center", fontsize=6, color="w")
        fig.colorbar(im, ax=ax)
        ax.set_title(note, fontsize=9)
        fig.tight_layout()
        fig.savefig(d / fname, dpi=120)
        plt.close(fig)
