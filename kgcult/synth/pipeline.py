"""The whole ``kgcult synth`` run as one call: keywords linked, questions synthesized,
checked against the graph, optionally rewritten by a generator; and the taxonomy and
knowledge-point look-ups of ``kgcult taxonomy`` and ``kgcult synth knowledge``. The CLI and
:class:`kgcult.KG` both call these."""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Iterable, Sequence

from kgcult import files, ids
from kgcult.errors import KgcultError
from kgcult.store import hierarchy
from kgcult.synth import taxonomy as tax_lib
from kgcult.synth.generate import check_questions, synthesize
from kgcult.synth.knowledge import knowledge_point, knowledge_point_for_text, link_keywords
from kgcult.synth.rewrite import CausalLMGenerator, rewrite
from kgcult.synth.score import score_answers

log = logging.getLogger(__name__)

SETTING_CHOICES = ("unique", "different", "both")


def split_langs(values: Iterable[str]) -> list[str]:
    """Languages given repeated and/or comma-separated (``["en,ja", "zh"]``)."""
    out: list[str] = []
    for v in values:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def require_request(topic: str | None, country: str | None) -> None:
    """A synthesis needs a topic and a country (checked before the store is opened)."""
    if not topic or not country:
        raise KgcultError("synth needs --topic and --country (or a subcommand: eval, knowledge)")


def run(store, topic: str, country: str, langs: Sequence[str] = ("en",), *, setting: str = "both",
        versus: Sequence[str] = (), keywords: Sequence[str] = (), limit: int | None = None, seed: int = 0,
        check: bool = True, generator: str | None = None, gguf_file: str | None = None,
        max_new_tokens: int = 64, drop_rejected: bool = False) -> list[dict]:
    """Synthesize questions with gold answers (``kgcult synth``): ``keywords`` (QIDs or free
    text, linked with the entity linker) replace the topic's keywords from the graph; with
    ``check`` every fact and gold answer must be in the graph; ``generator`` (a local causal
    LM directory) rewrites the template questions, verified. Returns the question records."""
    require_request(topic, country)
    if setting not in SETTING_CHOICES:
        raise KgcultError(f"synth: setting {setting!r}: expected one of {', '.join(SETTING_CHOICES)}")
    hierarchy.ensure_closure(store)
    tax = tax_lib.load()
    settings = ("unique", "different") if setting == "both" else (setting,)
    langs_ = split_langs(langs) or ["en"]
    given = None
    texts = list(keywords)
    if texts:
        given, missed = link_keywords(store, texts, lang=langs_[0], country=country)
        for m in missed:
            log.info("keyword %r not linked (%s): skipped", m["mention"], m["status"])
        if not given:
            raise KgcultError("none of the keywords given could be linked to an entity")
    qs = synthesize(store, tax, topic, country, langs_, settings=settings,
                    versus=list(versus), limit=limit, seed=seed, keywords=given)
    if check:
        problems = check_questions(store, qs)
        if problems:
            raise KgcultError("questions not grounded in the graph: " + "; ".join(problems[:5]))
    if generator:
        gen = CausalLMGenerator(generator, gguf_file=gguf_file, max_new_tokens=max_new_tokens)
        qs = rewrite(store, qs, gen, keep_rejected=not drop_rejected)
        acc = sum(1 for q in qs if q.get("rewrite", {}).get("status") == "accepted")
        log.info("generator: %d rewrite(s) accepted", acc)
    return qs


def jsonl(questions: Iterable[dict]) -> str:
    """The questions as ``kgcult synth`` writes them: one sorted-key JSON object a line."""
    return "".join(json.dumps(q, ensure_ascii=False, sort_keys=True) + "\n" for q in questions)


def summary(questions: Iterable[dict]) -> str:
    """``N question(s): en 4, ja 3``."""
    by_lang: dict[str, int] = {}
    n = 0
    for q in questions:
        n += 1
        by_lang[q["lang"]] = by_lang.get(q["lang"], 0) + 1
    return f"{n} question(s): " + ", ".join(f"{k} {v}" for k, v in by_lang.items())


def knowledge(store, keyword: str, lang: str = "en", *, topic: str | None = None,
              country: str | None = None, embeddings: bool = False) -> dict:
    """The knowledge point of a QID, or of free text linked with the entity linker
    (``kgcult synth knowledge``). The linker's embedding stage runs per topic, so
    ``embeddings`` needs a ``topic``."""
    keyword = keyword.strip()
    if ids.is_item(keyword):
        return knowledge_point(store, keyword, lang)
    if embeddings and not topic:
        raise KgcultError("synth knowledge --embeddings needs --topic (the linker's embedding stage "
                          "searches the names of one topic's entities)")
    return knowledge_point_for_text(store, keyword, lang, topic=topic, country=country, embeddings=embeddings)


def taxonomy_doc(tax: tax_lib.Taxonomy, lang: str = "en", anchored: bool = False) -> list[dict]:
    """The taxonomy as ``kgcult taxonomy --format json`` prints it: primaries with children."""
    doc = []
    for p in tax.primaries():
        d = p.as_dict(lang)
        d["children"] = [tax.topics[c].as_dict(lang) for c in p.children
                         if not anchored or tax.topics[c].anchored]
        if anchored and not d["children"]:
            continue
        doc.append(d)
    return doc


def keywords(store, topic: str, country: str, lang: str = "en", limit: int | None = None) -> tuple:
    """The graph's keywords under a topic for a country (``kgcult taxonomy keywords``):
    ``(topic, keywords)``; a secondary topic without a Wikidata anchor gives none (logged)."""
    tax = tax_lib.load()
    t = tax.resolve(topic)
    if not t.primary and not t.anchored:
        log.info("%s %s has no Wikidata anchor: no keywords from the graph", t.notation, t.label())
    hierarchy.ensure_closure(store)
    return t, tax_lib.keywords(store, tax, t, country, lang=lang, limit=limit)


def evaluate(store, answers: str | Path, questions: str | Path) -> dict:
    """Score a model's answers file (JSONL: id, answer) against the questions file ``kgcult
    synth`` wrote (``kgcult synth eval``); errors name file:line."""
    hierarchy.ensure_closure(store)

    def records(path):  # each with its line number, for errors naming file:line
        return [dict(rec, _line=n) for n, rec in files.iter_jsonl(path)]

    return score_answers(store, records(questions), records(answers), answers_path=str(answers))
