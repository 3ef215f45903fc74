"""A long `kgcult link -i`: does the process stay flat in memory as the number of distinct
mentions grows (the linker's bounded memos, ``kgcult/link/memo.py``)?

On the 1x stand-in store of ``bench/link_scale.py`` (built there if missing), one fresh
`kgcult link -i` process per size links N mixed mentions from ``gen_mentions.py`` (3,000,
30,000 and 100,000 by default), side by side with the same process whose memo caps are
lifted (``UNBOUNDED``: what the linker kept before the caps, every answer it looked up):
wall time, CPU time and peak RSS of each (the median of 3 alternating runs up to 30,000
mentions, one run above), and the growth of the peak per added mention.
Both runs must write the same output (the memos never change an answer).

Sizes: ``KGCULT_LINK_LONG_SIZES`` (comma-separated). Writes bench/results/link_long.json
and .md. Scratch data: $KGCULT_BENCH_DIR/link-scale (shared with link_scale.py).
"""
from __future__ import annotations

import argparse
import filecmp
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import SHARED, WORK, require, save
from bench.link_scale import log, measured, prepare

GEN = SHARED / "scale" / "gen_mentions.py"
KGCULT = [sys.executable, "-m", "kgcult"]
RUNS = 3  # alternating runs of each side per size up to 30,000 mentions (one above)
# the same command with every memo cap lifted (the module's caps are read when a memo is
# made; the stem memo is made at import)
UNBOUNDED = [sys.executable, "-c", """
import sys
from kgcult.link import memo
from kgcult.link.stages import morphology
for cap in [name for name, v in vars(memo).items() if name.isupper() and isinstance(v, int)]:
    setattr(memo, cap, 10 ** 9)
morphology._stems.limit = 10 ** 9
from kgcult.cli import main
sys.argv[0] = "kgcult"
main()
"""]


def run(cmd: list[str], store: Path, mentions: Path, out: Path) -> dict:
    wall, rss, _ = measured(cmd + ["--store", str(store), "link", "-i", str(mentions), "-o", str(out)])
    return {"wall_s": round(wall, 2), "cpu_s": round(measured.cpu, 2), "rss_peak_mib": round(rss, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workdir", default=str(WORK / "link-scale"))
    args = ap.parse_args()
    require(GEN)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    sizes = [int(x) for x in os.environ.get("KGCULT_LINK_LONG_SIZES", "3000,30000,100000").split(",")]
    store = prepare(1, work)
    files = {}
    for n in sizes:
        files[n] = work / f"mentions-long-{n}.jsonl"
        if not files[n].exists():
            subprocess.run([sys.executable, str(GEN), str(n), str(files[n])], check=True,
                           stdout=subprocess.DEVNULL)
    # unmeasured: builds the index if needed and leaves on disk the caches every later process
    # reads (the name vectors of each part the largest run reaches, the morphology pools)
    log("warm-up run ...")
    run(KGCULT, store, files[max(sizes)], work / "linked-long-warmup.jsonl")
    rows = []
    for n in sizes:
        out_b, out_u = work / f"linked-long-{n}.jsonl", work / f"linked-long-{n}-unbounded.jsonl"
        # alternating runs, the median of each (these machines are shared and noisy)
        runs = {"bounded": [], "unbounded": []}
        for _ in range(RUNS if n <= 30_000 else 1):
            runs["bounded"].append(run(KGCULT, store, files[n], out_b))
            runs["unbounded"].append(run(UNBOUNDED, store, files[n], out_u))
        bounded, unbounded = (sorted(runs[k], key=lambda r: r["wall_s"])[len(runs[k]) // 2] for k in runs)
        same = filecmp.cmp(out_b, out_u, shallow=False)
        rows.append({"mentions": n, "bounded": bounded, "unbounded": unbounded, "same_output": same,
                     "rss_ratio": round(bounded["rss_peak_mib"] / unbounded["rss_peak_mib"], 3),
                     "time_ratio": round(bounded["wall_s"] / unbounded["wall_s"], 3)})
        log(json.dumps(rows[-1]))
        if not same:
            sys.exit(f"{out_b} and {out_u} differ: a memo changed an answer")
    lo = rows[0]

    def growth(r: dict, kind: str) -> float:  # peak bytes per added mention, from the smallest size
        return round((r[kind]["rss_peak_mib"] - lo[kind]["rss_peak_mib"]) * 2 ** 20 / (r["mentions"] - lo["mentions"]), 1)

    for r in rows[1:]:
        r["growth_b_per_mention"] = {k: growth(r, k) for k in ("bounded", "unbounded")}
    load = os.getloadavg()
    md = [
        "## A long `kgcult link -i` (`bench/link_long.py`)", "",
        "1x stand-in store, mixed mentions from `gen_mentions.py`. At each size, fresh processes "
        "with the linker's memo caps (`kgcult/link/memo.py`) and with them lifted (what the linker "
        f"kept before), alternating; the median of {RUNS} runs of each up to 30,000 mentions, one "
        "above. Both write the same output. Load average "
        f"{[round(x, 1) for x in load]} at the end (2 shared cores).", "",
        "| mentions | s | mentions/s | CPU s | peak RSS MiB | lifted: s | lifted: peak RSS MiB | RSS ratio | time ratio | peak growth B/mention (lifted) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        b, u = r["bounded"], r["unbounded"]
        g = r.get("growth_b_per_mention")
        md.append(f"| {r['mentions']:,} | {b['wall_s']} | {r['mentions'] / b['wall_s']:,.0f} | {b['cpu_s']} | "
                  f"{b['rss_peak_mib']} | {u['wall_s']} | {u['rss_peak_mib']} | {r['rss_ratio']} | {r['time_ratio']} | "
                  + (f"{g['bounded']:,} ({g['unbounded']:,})" if g else "") + " |")
    if len(rows) >= 2:
        a, b = rows[-2], rows[-1]
        tail = (b["bounded"]["rss_peak_mib"] - a["bounded"]["rss_peak_mib"]) * 2 ** 20 / (b["mentions"] - a["mentions"])
        md += ["", f"Between the two largest sizes the capped peak still grows by {tail:,.0f} B per added "
               "mention. What still grows is bounded by the model and the caps, not by the mentions: "
               "the encoder's embedding rows a run has read (at most its 65 MB table), its loaded "
               "vocabulary (`PIECES`), and up to `POOLS` open pools of each kind."]
    save("link_long", {"store": str(store), "rows": rows}, "\n".join(md) + "\n")


if __name__ == "__main__":
    main()
