"""One long mention: does `kgcult link` stay linear in the mention's length with the length
cap lifted (issue 30: `lemon ` x 100,000 reached 23.8 GB, a 1 MB one-word mention never
returned, `Apfelkuchen` x 20,000 raised RecursionError)?

On the hand-written test graph (tests/fixtures/link/graph.ttl, loaded into a scratch
store), one fresh `kgcult link -i` process per (kind, size), with ``--max-mention-chars 0
--max-mention-words 0``, the lexical and morphology stages for three kinds and the
semantic stage alone for the fourth (its encoder held ~15 KB per piece of a mention at
once: 100,000 words 3.4 GB; it now encodes a long mention in slices,
``kgcult/link/semantic/use_backend.py``), side by side with the same process linking a
one-word mention (the baseline: start-up, index and pools). Recorded per kind: wall and CPU seconds and peak RSS at N and 4N, and the ratio of
the costs above the baseline (4N over N: about 4 when linear, 16 when quadratic).

Writes bench/results/link_long_mention.{json,md}. Scratch: $KGCULT_BENCH_DIR/link-long-mention.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import ROOT, WORK, child_env, save
from bench.link_scale import log, measured

KGCULT = [sys.executable, "-m", "kgcult"]
STAGES = "exact,normalized,english,any,stem,compound,fuzzy,anyfuzzy,tokens"
KINDS = {  # kind -> (the mention at size n, language, sizes, stages)
    "repeated word": (lambda n: "lemon " * n, "en", (400_000, 1_600_000), STAGES),
    "one word": (lambda n: "a" * n, "en", (4_000_000, 16_000_000), STAGES),
    "compound": (lambda n: "Apfelkuchen" * n, "de", (80_000, 320_000), STAGES),
    "repeated word, semantic stage": (lambda n: "lemon " * n, "en", (25_000, 100_000), "exact,semantic"),
}


def store(work: Path) -> Path:
    path = work / "store"
    if not (path / ".ready").exists():
        shutil.rmtree(path, ignore_errors=True)
        code = ("import sys; from tests.test_link import make_store; "
                "make_store(sys.argv[1]).close()")
        subprocess.run([sys.executable, "-c", code, str(path)], check=True, cwd=ROOT, env=child_env())
        subprocess.run(KGCULT + ["--store", str(path), "link", "index"], check=True, env=child_env(),
                       capture_output=True)
        (path / ".ready").touch()
    return path


def run(st: Path, work: Path, mention: str, lang: str, stages: str = STAGES) -> dict:
    src = work / "in.jsonl"
    src.write_text(json.dumps({"mention": mention, "lang": lang, "topic": "food"}) + "\n")
    wall, rss, _ = measured(KGCULT + ["--store", str(st), "link", "-i", str(src), "-o", str(work / "out.jsonl"),
                                      "--max-mention-chars", "0", "--max-mention-words", "0",
                                      "--stages", stages])
    return {"chars": len(mention), "wall_s": round(wall, 2), "cpu_s": round(measured.cpu, 2),
            "rss_peak_mib": round(rss, 1)}


NOISE_CPU_S = 0.1  # CPU seconds over the baseline below which a ratio says nothing


def main() -> None:
    work = WORK / "link-long-mention"
    work.mkdir(parents=True, exist_ok=True)
    st = store(work)
    bases = {stages: run(st, work, "lemonade", "en", stages) for stages in sorted({k[3] for k in KINDS.values()})}
    log(f"baselines {bases}")
    rows = {}
    for kind, (make, lang, sizes, stages) in KINDS.items():
        base = bases[stages]
        got = [run(st, work, make(n), lang, stages) for n in sizes]
        log(f"{kind}: {got}")
        over = [max(g["cpu_s"] - base["cpu_s"], 0.01) for g in got]
        rss = [max(g["rss_peak_mib"] - base["rss_peak_mib"], 0.1) for g in got]
        rows[kind] = {"sizes": list(sizes), "stages": stages, "baseline": base, "runs": got,
                      "cpu_ratio_4x": round(over[1] / over[0], 2), "rss_ratio_4x": round(rss[1] / rss[0], 2)}
    md = ["One long mention, cap off; a fresh `kgcult link -i` per run; the lexical and morphology "
          "stages, and the semantic stage alone (with exact) for the last kind.",
          "Baselines (a one-word mention): " + "; ".join(
              f"{s}: {b['cpu_s']} s CPU, {b['rss_peak_mib']} MiB peak" for s, b in bases.items()) + ".", "",
          "| mention | N | 4N | chars at 4N | CPU s (N, 4N) | peak MiB (N, 4N) | CPU over baseline, 4N/N | RSS over baseline, 4N/N |",
          "|---|---|---|---|---|---|---|---|"]
    for kind, r in rows.items():
        a, b = r["runs"]
        md.append(f"| {kind} | {r['sizes'][0]:,} | {r['sizes'][1]:,} | {b['chars']:,} | {a['cpu_s']}, {b['cpu_s']} "
                  f"| {a['rss_peak_mib']}, {b['rss_peak_mib']} | {r['cpu_ratio_4x']} | {r['rss_ratio_4x']} |")
    md += ["", "Linear: 4N/N about 4 (or less, while fixed costs dominate); quadratic would be 16."]
    for kind, r in rows.items():
        over_n = r["runs"][0]["cpu_s"] - r["baseline"]["cpu_s"]
        if over_n < NOISE_CPU_S:
            md.append(f"{kind}: at N the mention costs {max(over_n, 0):.2f} s CPU over the baseline, under the "
                      f"{NOISE_CPU_S} s a fresh process varies by, so its CPU ratio is noise; 4N costs "
                      f"{r['runs'][1]['cpu_s'] - r['baseline']['cpu_s']:.2f} s over it.")
    sem = rows["repeated word, semantic stage"]
    md.append(f"The semantic stage: RSS over its baseline {sem['rss_ratio_4x']}x from N to 4N "
              + ("(the encoder works in bounded slices; the tokenizer's per-character lists remain linear)."
                 if sem["rss_ratio_4x"] < 3 else "(linear in the mention: no longer bounded by the encoder's slices)."))
    save("link_long_mention", {"baselines": bases, "kinds": rows}, "\n".join(md))


if __name__ == "__main__":
    main()
