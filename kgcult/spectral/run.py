"""Spectral analysis of (domain, country, item) rows: the graph's own country × item
matrices and those of language models, measured (ER, SR, category) and written out."""
from __future__ import annotations

import csv
import json
import logging
import math
from pathlib import Path

from kgcult import files
from kgcult.errors import KgcultError
from kgcult.probe import models as mdl
from kgcult.probe.datasets import from_store
from kgcult.probe import templates as tpl
from kgcult.probe.run import make_scorer
from kgcult.spectral.items import items_from_view, read_items
from kgcult.spectral.matrices import ground_truth_matrix, model_matrix
from kgcult.spectral.measures import analyse, categorize
from kgcult.spectral.plots import heatmaps
from kgcult.safe_text import csv_row

log = logging.getLogger(__name__)


def run_spectral(items_rows: list[dict], out_dir, models=(), ground_truth: bool = True,
                 templates=None, device: str = "cpu", batch_size: int = 32, kind: str = "auto",
                 countries: list[str] | None = None, plot: bool = True) -> dict:
    """ER/SR/category per (question, source); writes spectral.{json,csv,md} and heatmaps."""
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
        loaded = mdl.load(name, kind=kind, device=device)
        scorer = make_scorer(loaded, batch_size, "sum")
        for t in qs:
            items = sorted({r["item"] for r in items_rows if r["domain"] == t.domain})
            H = model_matrix(scorer, t, all_countries, items)
            rows.append({"source": name, "question": t.id, "domain": t.domain,
                         "human_category": t.extra.get("human_category"), **analyse(H)})
            log.info("%s %s: ER %.2f SR %.2f", name, t.id, rows[-1]["ER"], rows[-1]["SR"])
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


def write(rows: list[dict], out_dir, plot: bool = True) -> None:
    """spectral.json (strict JSON), spectral.csv, spectral.md and, with ``plot``, the heatmaps."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    # NaN and infinity (SR when λ₂ = 0) are written as null: strict JSON
    clean = [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}
             for r in rows]
    files.atomic_write(d / "spectral.json", json.dumps(clean, ensure_ascii=False, indent=2, allow_nan=False) + "\n")
    cols = ["source", "question", "domain", "n_countries", "n_items", "ER", "SR", "category", "human_category"]
    with files.atomic_open(d / "spectral.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow(csv_row([r.get(c, "") if not isinstance(r.get(c), float) else f"{r[c]:.6f}" for c in cols]))
    lines = ["| source | question | countries | items | ER | SR | category | human |",
             "|---|---|---:|---:|---:|---:|---|---|"]
    for r in rows:
        lines.append(f"| {r['source']} | {r['question']} | {r['n_countries']} | {r['n_items']} | "
                     f"{r['ER']:.3f} | {r['SR']:.3f} | {r.get('category', '')} | {r.get('human_category') or ''} |")
    files.atomic_write(d / "spectral.md", "\n".join(lines) + "\n")
    if plot:
        heatmaps(rows, d)


def items_rows(items_file=None, *, open_store=None, domains=()) -> list[dict]:
    """The (domain, country, item) rows ``kgcult spectral`` analyses: an items file, or the
    spectral-items view built from the store (``open_store()`` gives it), kept to
    ``domains`` when given."""
    if items_file:
        rows = read_items(items_file)
    else:
        built = from_store(open_store(), "spectral-items", {"languages": "en"}, extra=("countries.jsonl",))
        assert isinstance(built, tuple)  # (rows, {name: rows}) when extra outputs are named
        raw, extra = built
        rows = items_from_view(raw, extra["countries.jsonl"], "en")
        if not rows:
            raise KgcultError("the spectral-items view gave no (domain, country, item) rows")
    if domains:
        rows = [r for r in rows if r["domain"] in set(domains)]
        if not rows:
            raise KgcultError(f"no items for domain(s) {', '.join(domains)}")
    return rows


def spectral(out_dir, *, items_file=None, open_store=None, domains=(), models=(), templates_path=None,
             **options) -> dict:
    """The whole ``kgcult spectral`` run: the items (:func:`items_rows`), the prompt file
    (default queries/templates/spectral.jsonl), then :func:`run_spectral` (``options``:
    ``ground_truth``, ``device``, ``batch_size``, ``kind``, ``plot``)."""
    rows = items_rows(items_file, open_store=open_store, domains=domains)
    tpls = tpl.spectral_templates(templates_path) if templates_path else None
    return run_spectral(rows, out_dir, models=models, templates=tpls, **options)
