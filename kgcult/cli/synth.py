"""``kgcult taxonomy`` and ``kgcult synth``: the CultureSynth taxonomy, its keywords from the
graph, template QA synthesis, and scoring of answers (thin layer over :mod:`kgcult.synth`)."""
from __future__ import annotations

import json
import sys

import click

from kgcult import files
from kgcult import synth as synth_lib
from kgcult.cli.checks import label_lang
from kgcult.cli.main import info
from kgcult.synth import pipeline
from kgcult.synth import taxonomy as tax_lib


# -- taxonomy -------------------------------------------------------------------------

@click.group("taxonomy", invoke_without_command=True)
@click.option("--lang", default="en", show_default=True, help="Language of the labels printed.")
@click.option("--anchored", is_flag=True, help="Only topics anchored to Wikidata classes or entities.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--file", "path", type=click.Path(dir_okay=False, exists=True),
              help="Taxonomy file (default ontology/taxonomy.ttl).")
@click.pass_context
def taxonomy_cmd(ctx, lang, anchored, fmt, path):
    """The CultureSynth cultural taxonomy: 12 primary and 130 secondary topics (SKOS).

    \b
    Examples:
      kgcult taxonomy
      kgcult taxonomy --lang ja --anchored
      kgcult taxonomy keywords food --country Q17 --lang ja
    """
    if ctx.invoked_subcommand is not None:
        return
    tax = tax_lib.load(path)
    if fmt == "json":
        click.echo(json.dumps(pipeline.taxonomy_doc(tax, lang, anchored), ensure_ascii=False, indent=1))
    else:
        click.echo(tax_lib.tree(tax, lang, anchored_only=anchored), nl=False)


@taxonomy_cmd.command("keywords")
@click.argument("topic")
@click.option("--country", required=True, metavar="QID", help="The country, e.g. Q17 (Japan).")
@click.option("--lang", default="en", show_default=True, help="Language of the labels.")
@click.option("--limit", type=int, help="At most this many keywords.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "jsonl"]), default="text", show_default=True)
@click.pass_context
def taxonomy_keywords(ctx, topic, country, lang, limit, fmt):
    """Graph entities under TOPIC for a country: the tertiary level, read from the graph.

    TOPIC is a notation (SS.05), a label in any language, or a short name (food, language,
    currency, holiday, religion, clothing, music, sport, ...). A primary topic (SS) gives
    the union of its secondary topics.

    \b
    Example:
      kgcult taxonomy keywords food --country Q17 --lang ja
    """
    obj = ctx.find_root().obj
    store = obj.reader(closure=True)
    lang = label_lang(store, lang)
    t, kws = pipeline.keywords(store, topic, country, lang=lang, limit=limit)
    if fmt == "json":
        click.echo(json.dumps(kws, ensure_ascii=False, indent=1))
    elif fmt == "jsonl":
        for k in kws:
            click.echo(json.dumps(k, ensure_ascii=False))
    else:
        for k in kws:
            lab = k["label"] + (f" [{k['label_lang']}]" if k["label_lang"] not in (lang, "") else "")
            click.echo(f"{k['qid']}\t{lab}\t{','.join(k['topics'])}\t{','.join(k['via'])}")
    info(f"{len(kws)} keyword(s) for {t.notation} {t.label()} in {country}")


# -- synth ----------------------------------------------------------------------------

@click.group("synth", invoke_without_command=True)
@click.option("--topic", help="Topic: notation (SS.05), label or short name (food, language, ...).")
@click.option("--country", metavar="QID", help="Target country, e.g. Q17.")
@click.option("--lang", "langs", multiple=True, help="Language(s) of the questions; repeat or comma-separate "
              "(default: en). Templates: ontology/synth-templates/<lang>.json.")
@click.option("--setting", type=click.Choice(pipeline.SETTING_CHOICES), default="both", show_default=True,
              help="CultureSynth knowledge setting.")
@click.option("--versus", multiple=True, metavar="QID",
              help="Countries to contrast with in the 'different' setting (default: neighbours, P47).")
@click.option("--keyword", "keyword_texts", multiple=True, metavar="QID|TEXT",
              help="Ask about these keywords instead of the topic's keywords from the graph; free text is "
                   "linked with the entity linker (repeatable).")
@click.option("--keywords-file", type=click.File("r", encoding="utf-8"),
              help="A file of keywords, one per line (QIDs or free text), as --keyword.")
@click.option("--limit", type=int, help="At most this many questions per language.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for choosing contrast partners.")
@click.option("-o", "--out", "out_path", type=click.Path(dir_okay=False), help="Write JSONL here (default stdout).")
@click.option("--check/--no-check", default=True, show_default=True,
              help="Check that every fact and gold answer is in the graph before writing.")
@click.option("--generator", "generator_path", metavar="PATH",
              help="A causal LM (local directory) that rewrites template questions; rewrites are verified.")
@click.option("--gguf-file", help="GGUF file inside the --generator directory.")
@click.option("--max-new-tokens", type=int, default=64, show_default=True)
@click.option("--drop-rejected", is_flag=True, help="Drop questions whose rewrite failed verification.")
@click.pass_context
def synth_cmd(ctx, topic, country, langs, setting, versus, keyword_texts, keywords_file, limit, seed,
              out_path, check, generator_path, gguf_file, max_new_tokens, drop_rejected) -> None:
    """Synthesize questions with gold answers from graph facts (CultureSynth on the graph).

    Each JSONL line: id, setting (unique|different), template, lang, topic, country,
    keyword, question, answers (gold labels), gold_qids, distractor_qids, facts ([QID, PID,
    QID] triples the question rests on).

    \b
    Examples:
      kgcult synth --topic food --country Q17 --lang en,ja,zh,ko -o food-jp.jsonl
      kgcult synth --topic LAN --country Q142 --lang fr --setting different --versus Q183
      kgcult synth --topic food --country Q17 --lang ja --keyword ramen --keyword Q46383
      kgcult synth eval answers.jsonl --questions food-jp.jsonl
    """
    if ctx.invoked_subcommand is not None:
        return
    pipeline.require_request(topic, country)  # before opening the store
    texts = list(keyword_texts) + ([l for l in keywords_file.read().splitlines()] if keywords_file else [])
    qs = pipeline.run(ctx.find_root().obj.reader(closure=True), topic, country, langs, setting=setting,
                      versus=versus, keywords=texts, limit=limit, seed=seed, check=check,
                      generator=generator_path, gguf_file=gguf_file, max_new_tokens=max_new_tokens,
                      drop_rejected=drop_rejected)
    text = pipeline.jsonl(qs)
    if out_path:
        files.atomic_write(out_path, text)
    else:
        sys.stdout.write(text)
    info(pipeline.summary(qs))


@synth_cmd.command("eval")
@click.argument("answers", type=click.Path(dir_okay=False, exists=True))
@click.option("--questions", required=True, type=click.Path(dir_okay=False, exists=True),
              help="The questions file `kgcult synth` wrote.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--items/--no-items", default=False, help="Include per-question results in JSON output.")
@click.pass_context
def synth_eval(ctx, answers, questions, fmt, items):
    """Score a model's free-text answers (JSONL: id, answer) against the gold QIDs.

    Answers are linked with the entity linker; exact (label), alias (other surface form)
    and ancestor (a broader class or an enclosing place of a gold entity, from the closure
    graphs) matches are reported separately, overall and per topic, language and country.

    \b
    Example:
      kgcult synth eval answers.jsonl --questions food-jp.jsonl --format json
    """
    report = pipeline.evaluate(ctx.find_root().obj.reader(closure=True), answers, questions)
    if fmt == "json":
        if not items:
            report.pop("items", None)
        click.echo(json.dumps(report, ensure_ascii=False, indent=1, sort_keys=True))
    else:
        click.echo(synth_lib.format_report(report), nl=False)


@synth_cmd.command("knowledge")
@click.argument("keyword")
@click.option("--lang", default="en", show_default=True)
@click.option("--topic", "link_topic", help="Linker topic for a free-text keyword (food, beverage, ...).")
@click.option("--country", metavar="QID", help="Country hint for linking a free-text keyword.")
@click.option("--embeddings", is_flag=True, help="Let the linker fall back to nearest entities in the embedding index "
              "(needs --topic: the index is searched per topic).")
@click.pass_context
def synth_knowledge(ctx, keyword, lang, link_topic, country, embeddings):
    """The knowledge point of a keyword: a QID, or free text linked with the entity linker.

    \b
    Examples:
      kgcult synth knowledge Q46383 --lang ja
      kgcult synth knowledge sushi --lang en --topic food
      kgcult synth knowledge "fermented cabbage" --topic food --embeddings
    """
    obj = ctx.find_root().obj
    kp = pipeline.knowledge(obj.reader(closure=True), keyword, lang, topic=link_topic, country=country,
                            embeddings=embeddings)
    click.echo(json.dumps(kp, ensure_ascii=False, indent=1))
