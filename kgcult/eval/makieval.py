"""MakiEval's four metrics (§4) over linked entities (the output of ``kgcult link``).

A *prompt* is (model, language, topic, prompt country, prompt type); rows without a
prompt country are neutral prompts. For each prompt, E is the set of QIDs linked from
all its responses (unresolved mentions are left out, as MakiEval drops mentions without
a QID; an ambiguous result counts with its deterministic pick).

* Granularity (§4.1, App. B.2): G = (1/|E|) * sum over e in E of g(e), g in {0, 1}: 1 for a
  specific reference (dish, specific ingredient, drink, book title, song, clothing type,
  vehicle type), 0 for a category. g comes from the extraction type, as in the paper
  (the LLM labels granularity); when a row has no type (or ``granularity_from="graph"``)
  the linker's hierarchy-based ``granularity_score`` is used. A QID met with several
  types gets the mean of their scores. Entities with neither (persons, places) are left
  out of G.
* Diversity (§4.2): |E|, the number of distinct QIDs.
* Culture specificity (§4.3): the share of E associated with the prompt's country (its
  ``country`` facts: origin P495, else country P17, else nationality P27, or the entity
  is the country). Gain: specificity of the explicit prompt minus the specificity, for
  the same country, of the neutral prompt with the same model, language and topic (when
  both are present).
* Culture consensus (§4.4): Jaccard |E_a ∩ E_b| / |E_a ∪ E_b| between the QID sets of two
  languages for the same model, topic, prompt country and prompt type; the heatmap shows
  the mean over those settings per language pair.
"""
from __future__ import annotations

import csv
import json
import logging
from collections import defaultdict
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING

from kgcult import extras, lazy
from kgcult.errors import KgcultError
from kgcult.files import atomic_open, atomic_write, iter_jsonl, reject
from kgcult.safe_text import csv_cell

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy.module("numpy")

log = logging.getLogger(__name__)

SPECIFIC = {"dish_name", "dish", "specific_ingredient", "drink_name", "book_title", "song_name",
            "clothing_type", "vehicle_type"}
GENERAL = {"dish_category", "ingredient_category", "beverage_category", "book_genre", "music_genre",
           "fashion_style", "mode_of_transport"}


def type_score(t) -> int | None:
    """g of an extraction type: 1 specific, 0 category, None for any other type."""
    if not isinstance(t, str):
        return None
    t = t.strip().lower().replace(" ", "_").replace("-", "_")
    if t in SPECIFIC:
        return 1
    if t in GENERAL:
        return 0
    return None


def prompt_key(r: dict) -> tuple:
    """(model, language, topic, prompt country, prompt type) of a linked row."""
    pc = r.get("prompt_country")
    ptype = r.get("prompt_type") or ("explicit" if pc else "neutral")
    return (str(r.get("model") or "-"), r.get("lang") or "en", r.get("topic") or "-", pc or "", ptype)


def compute(rows: list[dict], granularity_from: str = "type") -> dict:
    """The four metrics of linked rows, as lists of table rows by metric name."""
    ents: dict[tuple, dict[str, dict]] = defaultdict(dict)   # prompt -> qid -> info
    for r in rows:
        q = r.get("qid")
        if not q or r.get("status") == "unresolved":
            continue
        k = prompt_key(r)
        e = ents[k].setdefault(q, {"scores": [], "country": set()})
        s = type_score(r.get("type")) if granularity_from == "type" else None
        if s is None:
            s = r.get("granularity_score")
        if s is not None:
            e["scores"].append(int(s))
        e["country"].update(r.get("country") or [])
    prompts = sorted(ents)

    gran, div, spec = [], [], []
    for k in prompts:
        model, lang, topic, pc, ptype = k
        E = ents[k]
        gs = [sum(v["scores"]) / len(v["scores"]) for v in E.values() if v["scores"]]
        base = {"model": model, "lang": lang, "topic": topic, "prompt_country": pc or None,
                "prompt_type": ptype}
        gran.append({**base, "granularity": round(sum(gs) / len(gs), 4) if gs else None,
                     "entities_scored": len(gs)})
        div.append({**base, "diversity": len(E)})

    countries = sorted({k[3] for k in prompts if k[3]})
    for k in prompts:
        model, lang, topic, pc, ptype = k
        if not pc:
            continue
        E = ents[k]
        share = sum(1 for v in E.values() if pc in v["country"]) / len(E) if E else None
        neutral = ents.get((model, lang, topic, "", "neutral"))
        sn = (sum(1 for v in neutral.values() if pc in v["country"]) / len(neutral)) if neutral else None
        spec.append({"model": model, "lang": lang, "topic": topic, "prompt_country": pc,
                     "prompt_type": ptype, "specificity": _r(share), "neutral_specificity": _r(sn),
                     "gain": _r(share - sn) if share is not None and sn is not None else None,
                     "entities": len(E)})
    # neutral prompts: specificity towards every country that some prompt names
    for k in prompts:
        model, lang, topic, pc, ptype = k
        if pc:
            continue
        E = ents[k]
        for c in countries:
            share = sum(1 for v in E.values() if c in v["country"]) / len(E) if E else None
            spec.append({"model": model, "lang": lang, "topic": topic, "prompt_country": c,
                         "prompt_type": "neutral", "specificity": _r(share), "neutral_specificity": _r(share),
                         "gain": None, "entities": len(E)})

    cons = []
    settings: dict[tuple, dict[str, set]] = defaultdict(dict)
    for k in prompts:
        model, lang, topic, pc, ptype = k
        settings[(model, topic, pc, ptype)][lang] = set(ents[k])
    for (model, topic, pc, ptype), by_lang in sorted(settings.items()):
        for a, b in combinations(sorted(by_lang), 2):
            A, B = by_lang[a], by_lang[b]
            j = len(A & B) / len(A | B) if A | B else None
            cons.append({"model": model, "topic": topic, "prompt_country": pc or None,
                         "prompt_type": ptype, "lang_a": a, "lang_b": b, "jaccard": _r(j),
                         "size_a": len(A), "size_b": len(B), "shared": len(A & B)})
    return {"granularity": gran, "diversity": div, "specificity": spec, "consensus": cons}


def _r(x):
    return None if x is None else round(x, 4)


def consensus_matrix(cons: list[dict], model: str):
    """(languages, matrix of mean Jaccard per language pair) of one model."""
    langs = sorted({c["lang_a"] for c in cons if c["model"] == model} |
                   {c["lang_b"] for c in cons if c["model"] == model})
    acc: dict = defaultdict(list)
    for c in cons:
        if c["model"] == model and c["jaccard"] is not None:
            acc[(c["lang_a"], c["lang_b"])].append(c["jaccard"])
    m = np.full((len(langs), len(langs)), np.nan)
    for i, a in enumerate(langs):
        m[i, i] = 1.0
        for j, b in enumerate(langs):
            vals = acc.get((a, b)) or acc.get((b, a))
            if vals:
                m[i, j] = sum(vals) / len(vals)
    return langs, m


def heatmap(cons: list[dict], path: Path) -> list[str]:
    """Draw the consensus matrix of each model (matplotlib); the paths written."""
    plt = extras.pyplot("link", "the culture consensus heatmap")

    models = sorted({c["model"] for c in cons})
    written = []
    for model in models:
        langs, m = consensus_matrix(cons, model)
        side = max(4.0, 1.2 + 0.6 * len(langs))
        fig, ax = plt.subplots(figsize=(side, side - 0.5), dpi=100)
        im = ax.imshow(m, vmin=0, vmax=1, cmap="viridis")
        ax.set_xticks(range(len(langs)), langs)
        ax.set_yticks(range(len(langs)), langs)
        for i in range(len(langs)):
            for j in range(len(langs)):
                if m[i, j] == m[i, j]:
                    ax.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", fontsize=7,
                            color="white" if m[i, j] < 0.5 else "black")
        ax.set_title(f"culture consensus (Jaccard), model {model}", fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.046)
        fig.tight_layout()
        p = path if len(models) == 1 else path.with_name(f"{path.stem}-{_slug(model)}{path.suffix}")
        fig.savefig(p, metadata={"Software": None})
        plt.close(fig)
        written.append(str(p))
    return written


def _slug(s: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in s)[:60]


def _write_csv(path: Path, rows: list[dict]) -> None:
    with atomic_open(path, "w", newline="") as f:
        if rows:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            for r in rows:
                w.writerow({k: "" if v is None else csv_cell(v) for k, v in r.items()})


def metrics_file(linked, out_dir, on_error: str = "fail", granularity_from: str = "type") -> dict:
    """Compute the metrics of a linked JSONL file and write their tables (CSV, JSON) and
    the consensus heatmap (when matplotlib is installed) to ``out_dir``."""
    rows = []
    for lineno, obj in iter_jsonl(linked, on_error=on_error):
        if "qid" not in obj or "lang" not in obj:
            reject(f"{linked}:{lineno}: not a linked row (needs qid and lang; produce it with `kgcult link -i`)", on_error)
            continue
        rows.append(obj)
    if not rows:
        raise KgcultError(f"{linked}: no linked rows")
    res = compute(rows, granularity_from=granularity_from)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for name in ("granularity", "diversity", "specificity", "consensus"):
        p = out / f"{name}.csv"
        _write_csv(p, res[name])
        files.append(str(p))
    p = out / "metrics.json"
    atomic_write(p, json.dumps(res, ensure_ascii=False, indent=1) + "\n")
    files.append(str(p))
    if res["consensus"] and extras.available("matplotlib"):
        files += heatmap(res["consensus"], out / "consensus.png")
    elif res["consensus"]:
        log.info("consensus.png not drawn: matplotlib is not installed (pip install 'kgcult[link]')")
    linked_n = sum(1 for r in rows if r.get("qid") and r.get("status") != "unresolved")
    summary = {"rows": len(rows), "linked": linked_n, "prompts": len(res["diversity"]),
               "mean_diversity": _r(sum(d["diversity"] for d in res["diversity"]) / len(res["diversity"]))
               if res["diversity"] else None,
               "mean_consensus": _r(sum(c["jaccard"] for c in res["consensus"] if c["jaccard"] is not None)
                                    / max(1, sum(1 for c in res["consensus"] if c["jaccard"] is not None)))
               if res["consensus"] else None}
    return {"files": files, "summary": summary, "metrics": res}
