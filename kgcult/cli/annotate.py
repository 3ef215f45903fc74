"""``kgcult annotate``: entity spans and QIDs in raw texts (model answers), offline; with
``--metrics``, MakiEval's four metrics from them. Thin layer over :mod:`kgcult.annotate`."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from kgcult.annotate import Annotator, parallel, rows
from kgcult.annotate import metrics as ametrics
from kgcult.cli.main import info
from kgcult.eval import makieval
from kgcult.files import atomic_open


@click.command("annotate")
@click.option("-i", "--input", "input_path", type=click.Path(dir_okay=False, allow_dash=True), required=True,
              help="JSONL rows {\"id\", \"text\", \"lang\", \"topic\", \"country\"?} (- for stdin); "
                   "optional model and prompt_type are kept for --metrics.")
@click.option("-o", "--output", "output_path", type=click.Path(dir_okay=False, allow_dash=True), default="-",
              show_default=True, help="JSONL rows {\"id\", \"spans\"}, in input order (- for stdout).")
@click.option("--on-error", type=click.Choice(["skip", "fail"]), default="fail", show_default=True,
              help="A bad row: stop with its FILE:LINE (fail), or report it and go on (skip).")
@click.option("--max-text-chars", type=click.IntRange(min=0), default=rows.MAX_TEXT_CHARS, show_default=True,
              help="The longest text annotated, in characters (0: no cap).")
@click.option("--metrics", "metrics_dir", type=click.Path(file_okay=False), default=None,
              help="Also compute MakiEval's four metrics from the spans (no LLM) into this directory, "
                   "as `kgcult makieval metrics` writes them (granularity from the graph).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Worker processes, each taking whole languages [default: the cores, at most "
                   f"{parallel.MAX_JOBS}]; the output is the same for any number.")
@click.pass_obj
def annotate_command(obj, input_path, output_path, on_error, max_text_chars, metrics_dir, jobs):
    """Find the topic's entities in raw texts and link them: per input row, its spans
    (start, end in code points, end exclusive; text, qid, label, match, evidence,
    granularity, country), never overlapping, every occurrence listed.

    \b
    Example:
      kgcult annotate -i answers.jsonl -o spans.jsonl
      kgcult annotate -i answers.jsonl -o spans.jsonl --metrics makieval/
    """
    ann = Annotator.open(obj.location, opener=lambda: obj.reader(closure=True), max_chars=max_text_chars)
    src = sys.stdin if input_path == "-" else input_path
    t0 = time.perf_counter()
    n = spans = 0
    linked: list[dict] = []
    reader = rows.read(src, topics=ann.topics, langs=ann.langs, on_error=on_error,
                       max_chars=max_text_chars, where="<stdin>" if input_path == "-" else None)
    with atomic_open(output_path) as out:
        for row, res in parallel.annotate_rows(ann, reader, jobs or parallel.default_jobs()):
            n += 1
            spans += len(res["spans"])
            out.write(json.dumps(res, ensure_ascii=False) + "\n")
            if metrics_dir:
                linked += ametrics.linked_rows(ann, row.as_dict(), res["spans"])
    info(f"annotated {n} texts in {time.perf_counter() - t0:.2f} s: {spans} spans")
    if metrics_dir:
        d = Path(metrics_dir)
        d.mkdir(parents=True, exist_ok=True)
        with atomic_open(d / "linked.jsonl") as f:
            for r in linked:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        if not linked:
            info("no linked spans: no metrics")
            return
        res = makieval.metrics_file(d / "linked.jsonl", d, granularity_from="graph")
        for name in res["files"]:
            info(f"wrote {name}")
        click.echo(json.dumps(res["summary"], ensure_ascii=False, indent=2), err=output_path == "-")
