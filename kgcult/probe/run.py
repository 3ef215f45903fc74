"""The probers: FmLAMA and DLAMA over a masked or causal scorer, with resumable output.

An output directory holds ``run.json`` (what was probed, how) and ``predictions.jsonl``
(one line per subject and template: the gold labels, their ranks among the candidates and
the top predictions). A re-run into the same directory skips the subjects already there;
a re-run with different settings is refused. Metrics are computed from predictions.jsonl
by :mod:`kgcult.probe.report`.

Ranking: candidates are sorted by label first, then by score with a stable sort, so ties
rank alphabetically.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
from pathlib import Path

import numpy as np

from kgcult import files
from kgcult.errors import KgcultError
from kgcult.log import progress as progress_bar
from kgcult.probe import datasets as ds
from kgcult.probe import templates as tpl
from kgcult.probe.causal import CausalScorer
from kgcult.probe.masked import MAX_CANDIDATE_TOKENS, MaskedScorer
from kgcult.probe.seq2seq import Seq2SeqScorer

log = logging.getLogger(__name__)

TOP_K = 10
PRED_FILE = "predictions.jsonl"
RUN_FILE = "run.json"


def make_scorer(loaded, batch_size: int = 32, scoring: str | None = None, span: str = "object",
                max_tokens: int | None = MAX_CANDIDATE_TOKENS):
    """The scorer for a loaded model: masked (default scoring ``mean``), encoder-decoder
    (T5/mT5 sentinel scoring, ``mean``) or causal (``sum``). ``max_tokens``: candidates
    longer than this many subtokens are left out (masked and T5; FmLAMA: 10; 0/None: no cap)."""
    if loaded.kind == "masked":
        return MaskedScorer(loaded.model, loaded.tokenizer, loaded.device, batch_size, scoring or "mean",
                            max_tokens=max_tokens)
    if loaded.kind == "seq2seq":
        return Seq2SeqScorer(loaded.model, loaded.tokenizer, loaded.device, batch_size, scoring or "mean",
                             max_tokens=max_tokens)
    return CausalScorer(loaded.model, loaded.tokenizer, loaded.device, batch_size, scoring or "sum", span)


def _sha(obj) -> str:
    return hashlib.sha256(json.dumps(obj, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


def _finite(x: float):
    return round(float(x), 6) if math.isfinite(float(x)) else None


class Output:
    """predictions.jsonl + run.json, resumable."""

    def __init__(self, out_dir: str | Path, run: dict, overwrite: bool = False):
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.pred = self.dir / PRED_FILE
        runf = self.dir / RUN_FILE
        self.done: set[tuple[str, str]] = set()
        if overwrite:
            self.pred.unlink(missing_ok=True)
            runf.unlink(missing_ok=True)
        if runf.exists():
            old = json.loads(runf.read_text(encoding="utf-8"))
            keys = ("task", "model", "kind", "scoring", "lang", "subject_lang", "templates_sha256",
                    "max_candidate_tokens",
                    "candidates_sha256", "span")
            diff = [k for k in keys if old.get(k) != run.get(k)]
            if diff:
                raise KgcultError(f"{self.dir} holds results of a different run (differs in "
                                  f"{', '.join(diff)}); use another --out or --overwrite")
        if self.pred.exists():
            good, data = 0, self.pred.read_bytes()
            for line in data.splitlines(keepends=True):
                if not line.endswith(b"\n"):
                    break  # a torn last line from an interrupted run
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    break
                self.done.add((row["key"], row["template"]))
                good += len(line)
            if good < len(data):
                with self.pred.open("r+b") as f:
                    f.truncate(good)
        files.atomic_write(runf, json.dumps(run, ensure_ascii=False, indent=2) + "\n")
        self._fh = self.pred.open("a", encoding="utf-8")

    def write(self, rows: list[dict]):
        for r in rows:
            self._fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        self._fh.flush()

    def close(self):
        self._fh.close()


def _rank_rows(scores: np.ndarray, labels: list[str], items: list[dict], k: int = TOP_K) -> list[dict]:
    """One output row per query: gold ranks and the top predictions."""
    pos = {c: i for i, c in enumerate(labels)}
    out = []
    for s, item in zip(scores, items):
        order = np.argsort(-s, kind="stable")
        order = order[np.isfinite(s[order])]        # unscored candidates (over the length cap) are not ranked
        rank = np.zeros(len(s), dtype=np.int64)
        rank[order] = np.arange(1, len(order) + 1)
        gold = item["gold"]
        kk = max(k, len(gold))
        row = {k2: v for k2, v in item.items() if k2 not in ("before", "after")}
        row["gold_ranks"] = [int(rank[pos[g]]) if g in pos and rank[pos[g]] > 0 else None for g in gold]
        row["n_candidates"] = len(labels)
        row["top"] = [labels[i] for i in order[:kk]]
        row["top_scores"] = [_finite(s[i]) for i in order[:kk]]
        out.append(row)
    return out


def _probe(items_by_group: dict[str, list[dict]], cands_by_group: dict[str, list[str]], scorer,
           out: Output, chunk: int, progress: bool | None, desc: str) -> dict:
    todo = {g: [it for it in items if (it["key"], it["template"]) not in out.done]
            for g, items in items_by_group.items()}
    total = sum(len(v) for v in todo.values())
    skipped = sum(len(v) for v in items_by_group.values()) - total
    bar = progress_bar(total=total, desc=desc, unit="query", leave=True,
                       disable=None if progress is None else not progress)
    written = 0
    try:
        for g, items in todo.items():
            if not items:
                continue
            labels = cands_by_group[g]
            prepared = scorer.prepare(labels)
            for s in range(0, len(items), chunk):
                part = items[s:s + chunk]
                scores = scorer.score([(it["before"], it["after"]) for it in part], prepared)
                out.write(_rank_rows(scores, labels, part))
                written += len(part)
                bar.update(len(part))
    finally:
        bar.close()
        out.close()
    return {"queries_scored": written, "queries_skipped": skipped}


# -- FmLAMA ---------------------------------------------------------------------------

def fmlama_items(rows: list[dict], lang: str, templates: list[tpl.Template],
                 subject_lang: str | None = None, limit: int | None = None) -> tuple[list[dict], list[str]]:
    """Queries (dish × template) and the candidate set (every ingredient of the sub-dataset).

    Code-switching (``subject_lang`` != ``lang``): template, ingredients and [C] in ``lang``,
    the dish label in ``subject_lang``; only dishes with rows in both languages are kept."""
    rows = ds.fmlama_rows(rows)
    langs = {r["lang"] for r in rows}
    main = [r for r in rows if r["lang"] in (lang, "")] if lang in langs or "" in langs else []
    if not main:
        raise KgcultError(f"the dataset has no FmLAMA rows in language {lang!r} "
                          f"(languages there: {', '.join(sorted(langs)) or 'none'})")
    subj_of = {}
    if subject_lang and subject_lang != lang:
        subj_of = {r["url"]: r["sub_label"] for r in rows if r["lang"] == subject_lang}
        if not subj_of:
            raise KgcultError(f"code-switching: the dataset has no rows in the subject language "
                              f"{subject_lang!r}; pass both languages' files with --dataset")
        main = [r for r in main if r["url"] in subj_of]
    seen, dishes = set(), []
    for r in main:
        if r["url"] in seen:
            continue
        seen.add(r["url"])
        dishes.append(r)
    if not dishes:
        raise KgcultError("no dish to probe (after the language filter)")
    # the candidate set is every ingredient of the (sub)dataset, also when --limit samples it
    cands = sorted({g for r in dishes for g in r["obj_label"]})
    if limit:
        dishes = dishes[:limit]
    items = []
    for r in dishes:
        subject = subj_of.get(r["url"], r["sub_label"])
        for t in templates:
            before, after = t.split(subject, r["origin_name"])
            item = {"key": r["url"], "template": t.id, "origin": r["origin"],
                    "sub_label": subject, "gold": r["obj_label"], "before": before, "after": after}
            if r["origin_uri"]:
                item["origin_uri"] = r["origin_uri"]
            if r["continent"]:
                item["continent"] = r["continent"]
            items.append(item)
    return items, cands


def probe_fmlama(loaded, rows: list[dict], lang: str = "en", out_dir: str | Path = "probe-out",
                 subject_lang: str | None = None, context: str = "plain", templates_path=None,
                 scoring: str | None = None, batch_size: int = 32, span: str = "object",
                 limit: int | None = None, progress: bool | None = None, overwrite: bool = False,
                 source: dict | None = None, max_tokens: int | None = MAX_CANDIDATE_TOKENS) -> dict:
    templates = tpl.fmlama_templates(lang, context, templates_path)
    items, cands = fmlama_items(rows, lang, templates, subject_lang, limit)
    scorer = make_scorer(loaded, batch_size, scoring, span, max_tokens)
    run = {
        "task": "fmlama", "model": loaded.name, "kind": loaded.kind, "scoring": scorer.scoring,
        "span": span if loaded.kind == "causal" else None,
        "max_candidate_tokens": None if loaded.kind == "causal" else (max_tokens or None),
        "lang": lang, "subject_lang": subject_lang or lang, "context": context,
        "templates": {t.id: t.text for t in templates},
        "templates_sha256": _sha([(t.id, t.text) for t in templates]),
        "n_candidates": len(cands), "candidates_sha256": _sha(cands),
        "n_subjects": len({it["key"] for it in items}), "source": source or {},
    }
    out = Output(out_dir, run, overwrite)
    chunk = max(1, batch_size)
    stats = _probe({"all": items}, {"all": cands}, scorer, out, chunk, progress, f"fmlama {lang}")
    stats.update(forward_passes=scorer.forward_passes, n_candidates=len(cands), n_queries=len(items))
    return stats


# -- DLAMA ----------------------------------------------------------------------------

def candidate_group(pair: str, predicate: str) -> str:
    """The key of a DLAMA candidate set: the predicate, within its pair when there is one."""
    return f"{pair}/{predicate}" if pair else predicate


def dlama_items(rows: list[dict], lang: str, templates: dict[str, tpl.Template],
                limit: int | None = None, predicates=None) -> tuple[dict, dict]:
    rows = [r for r in ds.dlama_rows(rows, lang) if r["lang"] in (lang, "")]
    if not rows:
        raise KgcultError(f"the dataset has no DLAMA rows in language {lang!r}")
    if predicates:
        rows = [r for r in rows if r["predicate"] in set(predicates)]
        if not rows:
            raise KgcultError(f"the dataset has no rows for predicate(s) {', '.join(predicates)}")
    missing = sorted({r["predicate"] for r in rows} - set(templates))
    if missing:
        first = next(r['_where'] for r in rows if r['predicate'] in missing)
        msg = f"no {lang!r} template for predicate(s) {', '.join(missing)} (first at {first})"
        rows = [r for r in rows if r["predicate"] not in missing]
        if not rows:
            raise KgcultError(msg)
        log.info("%s: skipped", msg)
    by_group: dict[str, list[dict]] = {}
    for r in rows:
        by_group.setdefault(candidate_group(r["pair"], r["predicate"]), []).append(r)
    items: dict[str, list[dict]] = {}
    cands: dict[str, list[str]] = {}
    for g, prow in sorted(by_group.items()):
        # candidate set: the unique objects of the predicate's triples in the pair (DLAMA §5.1;
        # DLAMA-v1 builds each pair separately)
        cands[g] = sorted({o for r in prow for o in r["objects"]})
        if limit:
            prow = prow[:limit]
        p = prow[0]["predicate"]
        t = templates[p]
        items[g] = []
        for r in prow:
            before, after = t.split(r["subject"], r["country"])
            item = {"key": r["key"], "template": t.id, "predicate": p, "culture": r["culture"],
                    "subject": r["subject"], "gold": r["objects"], "before": before, "after": after}
            for extra in ("pair", "group"):
                if r[extra]:
                    item[extra] = r[extra]
            if r["object_ids"]:
                item["gold_ids"] = r["object_ids"]
            items[g].append(item)
    return items, cands


def probe_dlama(loaded, rows: list[dict], lang: str = "en", out_dir: str | Path = "probe-out",
                templates_path=None, scoring: str | None = None, batch_size: int = 32,
                span: str = "object", limit: int | None = None, progress: bool | None = None,
                overwrite: bool = False, source: dict | None = None, predicates=None,
                max_tokens: int | None = MAX_CANDIDATE_TOKENS) -> dict:
    templates = tpl.dlama_templates(lang, templates_path)
    items, cands = dlama_items(rows, lang, templates, limit, predicates)
    scorer = make_scorer(loaded, batch_size, scoring, span, max_tokens)
    used = sorted({it["predicate"] for its in items.values() for it in its})
    run = {
        "task": "dlama", "model": loaded.name, "kind": loaded.kind, "scoring": scorer.scoring,
        "span": span if loaded.kind == "causal" else None, "lang": lang, "subject_lang": lang,
        "max_candidate_tokens": None if loaded.kind == "causal" else (max_tokens or None),
        "templates": {templates[p].id: templates[p].text for p in used},
        "templates_sha256": _sha([(templates[p].id, templates[p].text) for p in used]),
        "n_candidates": {g: len(cands[g]) for g in sorted(items)}, "candidates_sha256": _sha(cands),
        "source": source or {},
    }
    out = Output(out_dir, run, overwrite)
    stats = _probe(items, cands, scorer, out, max(1, batch_size), progress, f"dlama {lang}")
    stats.update(forward_passes=scorer.forward_passes,
                 n_queries=sum(len(v) for v in items.values()))
    return stats


def read_predictions(out_dir: str | Path) -> tuple[dict, list[dict]]:
    """run.json and the rows of predictions.jsonl of a probe output directory."""
    d = Path(out_dir)
    runf, pred = d / RUN_FILE, d / PRED_FILE
    if not runf.is_file() or not pred.is_file():
        raise KgcultError(f"{d}: no {RUN_FILE}/{PRED_FILE} (run `kgcult probe` into it first)")
    run = json.loads(runf.read_text(encoding="utf-8"))
    return run, files.read_jsonl(pred)
