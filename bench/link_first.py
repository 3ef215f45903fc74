"""Benchmark: the first ``kgcult link -i`` right after ``kgcult link index --rebuild``,
side by side with a warm (hundredth) run, at 1x and 3x the stand-in (issue 32, item 2).

The two figures of the issue, each beside its warm baseline:

* **speed**: mentions/s of the first ``link -i`` at 1x, end to end as the user sees it
  (process start to exit: interpreter, imports, index and model opened, output written);
  target >= 2,000/s on 3,000 mixed mentions;
* **memory slope**: (peak RSS 3x - peak RSS 1x) / (names 3x - names 1x) of the first
  ``link -i`` (ru_maxrss of the process: resident memory-mapped pages count);
  target <= 100 B/name.

Stores: ``../shared/scale/gen_scaled_nt.py K`` loaded with its closure (as
``bench/link_scale.py`` prepares them; reused from ``--workdir`` when ready); mentions:
``gen_mentions.py 3000``. A round at scale K, as a new user meets it: the store's
``.link-index`` directory and the model cache (``$KGCULT_CACHE``) removed, then, each a
fresh process, ``kgcult link index --rebuild`` (wall, peak RSS), the first
``kgcult link -i`` and ``--warm`` more runs (the warm baseline: every cache on disk, the
OS page cache warm, as for the hundredth run; their median). Beside them, the import time
of ``kgcult.cli.link`` alone (a fresh interpreter; median of 3). Each tree's bytecode is
compiled first and the children read it, as for an installed package.

``--main PATH``: a checkout of the code before the change, run at 1x in the same session
(one round, after the first round of this checkout), so ratios are side by side. Every
run's output at a scale must be byte-identical (first and warm runs, both trees). The
machine is shared: the 1-minute load average is recorded with each run; CPU seconds
(user + system) are recorded beside wall time.

    .venv/bin/python bench/link_first.py --main /path/to/old/checkout
Writes bench/results/link_first.json and .md. Scratch data: $KGCULT_BENCH_DIR/link-first.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, SHARED, WORK, require, save
from bench.link_scale import prepare

RESULT_NAME = "link_first"  # bench/results/link_first.{json,md}
SCALE = SHARED / "scale"
TARGET_PER_S = 2000
TARGET_SLOPE = 100  # bytes per name


def compiled(tree: Path) -> None:
    """The bytecode of ``tree``'s package written beforehand, as ``pip install`` does: the
    children then read it rather than compile every module at each start (they run without
    ``PYTHONDONTWRITEBYTECODE``, which would otherwise have them compile each time)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "kgcult")], check=True,
                   stdout=subprocess.DEVNULL)


def child(tree: Path, env_extra: dict, args: list[str]) -> dict:
    """One command in a fresh process (``python ARGS`` with ``tree`` first on its path):
    wall and CPU seconds, peak RSS (MiB), the 1-minute load average before it."""
    env = dict(os.environ, PYTHONPATH=str(tree), **env_extra)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    load = os.getloadavg()[0]
    t = time.perf_counter()
    p = subprocess.Popen([sys.executable, *args], env=env, cwd=tree,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.stdout.read(), p.stderr.read()  # type: ignore[union-attr]
    _pid, status, usage = os.wait4(p.pid, 0)
    secs = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{args} failed:\n{err.decode()[-3000:]}")
    return {"seconds": round(secs, 3), "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
            "rss_peak_mib": round(usage.ru_maxrss / 1024, 1), "load1": round(load, 1),
            "stdout": out.decode(), "stderr": err.decode()}


KEYS = ("seconds", "cpu_seconds", "rss_peak_mib", "load1")


def import_seconds(tree: Path) -> dict:
    """Median wall and CPU seconds of a fresh interpreter importing ``kgcult.cli.link``
    (what every ``kgcult link`` imports before it reads a mention)."""
    runs = [child(tree, {}, ["-c", "import kgcult.cli.link"]) for _ in range(3)]
    return {"seconds": statistics.median(r["seconds"] for r in runs),
            "cpu_seconds": statistics.median(r["cpu_seconds"] for r in runs)}


def one_round(tree: Path, label: str, scale: int, store: Path, mentions: Path, scratch: Path,
              warm_runs: int) -> dict:
    cache = scratch / f"model-cache-{label}"
    for d in (Path(f"{store}.link-index"), cache):
        shutil.rmtree(d, ignore_errors=True)
    env = {"KGCULT_CACHE": str(cache)}
    n = sum(1 for line in mentions.open(encoding="utf-8") if line.strip())
    out: dict = {"tree": label, "scale": scale, "mentions": n}
    # since issue 41 `link index` leaves the semantic vectors to first use; --all-caches
    # builds them ahead, as `link index` alone did before (a tree without the change)
    ahead = ["--all-caches"] if (tree / "bench" / "link_first_store.py").exists() else []
    r = child(tree, env, ["-m", "kgcult", "--store", str(store), "link", "index", "--rebuild", *ahead])
    out["index"] = {k: r[k] for k in KEYS}
    out["names"] = json.loads(r["stdout"])["distinct_names"]
    link = ["-m", "kgcult", "--store", str(store), "link", "-i", str(mentions)]
    for step in ["first"] + [f"warm{i}" for i in range(1, warm_runs + 1)]:
        dest = scratch / f"{label}-{scale}x-{step}.jsonl"
        r = child(tree, env, link + ["-o", str(dest)])
        out[step] = {k: r[k] for k in KEYS}
        out[step]["mentions_per_s"] = round(n / r["seconds"], 1)
        out[step]["output"] = str(dest)
    warm = [out[f"warm{i}"] for i in range(1, warm_runs + 1)]
    out["warm"] = {k: statistics.median(w[k] for w in warm) for k in KEYS + ("mentions_per_s",)}
    out["imports"] = import_seconds(tree)
    return out


def identical(paths: list[str]) -> bool:
    first = Path(paths[0]).read_bytes()
    return all(Path(p).read_bytes() == first for p in paths[1:])


def summarize(rounds: list[dict]) -> dict:
    """Per (tree, scale): medians over its rounds; then the issue's two figures."""
    s: dict = {}
    for r in rounds:
        s.setdefault(f"{r['tree']} {r['scale']}x", []).append(r)
    out: dict = {}
    for key, rs in sorted(s.items()):
        med = {"names": rs[0]["names"], "rounds": len(rs)}
        for step in ("index", "first", "warm", "imports"):
            for k in ("seconds", "cpu_seconds", "rss_peak_mib", "mentions_per_s"):
                vals = [r[step][k] for r in rs if k in r[step]]
                if vals:
                    med[f"{step}_{k}"] = statistics.median(vals)
        med["first_over_warm_speed"] = round(med["first_mentions_per_s"] / med["warm_mentions_per_s"], 3)
        med["first_over_warm_rss"] = round(med["first_rss_peak_mib"] / med["warm_rss_peak_mib"], 3)
        out[key] = med
    for tree in sorted({r["tree"] for r in rounds}):
        a, b = out.get(f"{tree} 1x"), out.get(f"{tree} 3x")
        if a and b and b["names"] != a["names"]:
            for step in ("first", "warm"):
                out[f"{tree} {step}_slope_bytes_per_name"] = round(
                    (b[f"{step}_rss_peak_mib"] - a[f"{step}_rss_peak_mib"]) * 2**20 / (b["names"] - a["names"]), 1)
    by_scale: dict = {}
    for r in rounds:
        by_scale.setdefault(r["scale"], []).extend(
            [r["first"]["output"]] + [r[k]["output"] for k in r if k.startswith("warm") and k != "warm"])
    out["byte_identical"] = {f"{k}x": identical(v) for k, v in sorted(by_scale.items())}
    this1 = out.get("this 1x")
    out["targets"] = {
        f"first link >= {TARGET_PER_S:,} mentions/s end to end at 1x":
            None if this1 is None else this1["first_mentions_per_s"] >= TARGET_PER_S,
        f"first link memory slope <= {TARGET_SLOPE} B/name from 1x to 3x":
            None if "this first_slope_bytes_per_name" not in out
            else out["this first_slope_bytes_per_name"] <= TARGET_SLOPE,
    }
    return out


def markdown(res: dict) -> str:
    s = res["summary"]
    lines = ["# First `kgcult link -i` after `kgcult link index --rebuild` (issue 32)", "",
             f"{res['when']}; {res['mentions']} mixed mentions (`gen_mentions.py`); stand-in stores at "
             f"{', '.join(f'{k}x' for k in res['scales'])} (`gen_scaled_nt.py`, with closure); "
             f"{res['cores']} cores, shared (1-minute load average per run below).", "",
             "| round | tree | scale | names | index s | index MiB | first s (CPU s) | first /s | first MiB "
             "| warm s (CPU s) | warm /s | warm MiB | import s (CPU s) | load (index/first/warm1) |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for i, r in enumerate(res["rounds"], 1):
        f, w, ix, im = r["first"], r["warm"], r["index"], r["imports"]
        lines.append(f"| {i} | {r['tree']} | {r['scale']}x | {r['names']:,} | {ix['seconds']:.1f} | "
                     f"{ix['rss_peak_mib']} | {f['seconds']:.2f} ({f['cpu_seconds']:.2f}) | "
                     f"{f['mentions_per_s']:,.0f} | {f['rss_peak_mib']} | {w['seconds']:.2f} ({w['cpu_seconds']:.2f}) | "
                     f"{w['mentions_per_s']:,.0f} | {w['rss_peak_mib']} | {im['seconds']:.2f} ({im['cpu_seconds']:.2f}) | "
                     f"{ix['load1']}/{f['load1']}/{r['warm1']['load1']} |")
    lines += ["", "A round, as a new user meets it: the store's `.link-index` directory and the model cache "
              "(`$KGCULT_CACHE`) removed, then, each a fresh process, `kgcult link index --rebuild`, the first "
              "`kgcult link -i` and 3 warm runs (every cache on disk: the hundredth run; their median). "
              "Seconds are wall time from process start to exit; CPU seconds (user + system, both threads: "
              "the semantic stage encodes ahead in a worker) beside them. Import = a fresh interpreter "
              "importing `kgcult.cli.link`. "
              + ("`main` is the code before this change, run at 1x in the same session. "
                 if any(r["tree"] == "main" for r in res["rounds"]) else "")
              + "Peak MiB is ru_maxrss (resident memory-mapped pages count).", ""]
    for tree in sorted({r["tree"] for r in res["rounds"]}):
        for step in ("first", "warm"):
            v = s.get(f"{tree} {step}_slope_bytes_per_name")
            if v is not None:
                lines.append(f"- {tree}, {step} link: memory slope {v} B/name from 1x to 3x")
    for key, m in s.items():
        if isinstance(m, dict) and "first_mentions_per_s" in m:
            lines.append(f"- {key}: first {m['first_mentions_per_s']:,.0f} mentions/s ({m['first_cpu_seconds']} CPU s), "
                         f"warm {m['warm_mentions_per_s']:,.0f}/s ({m['warm_cpu_seconds']} CPU s): first/warm speed "
                         f"{m['first_over_warm_speed']}, peak RSS {m['first_rss_peak_mib']} / {m['warm_rss_peak_mib']} MiB")
    lines.append(f"- output byte-identical across the runs of each scale (both trees): {s['byte_identical']}")
    for note in res.get("notes", []):
        lines.append(f"- {note}")
    lines += ["", "Targets (issue 32):", ""]
    for k, v in s["targets"].items():
        lines.append(f"- {k}: {'not measured' if v is None else ('met' if v else 'NOT met')}")
    lines += ["", "Medians:", "", "```", json.dumps(s, indent=2), "```", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scales", default="1,3")
    ap.add_argument("--mentions", type=int, default=3000)
    ap.add_argument("--main", type=Path, default=None, help="checkout of the code before the change (run at 1x)")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of this checkout per scale")
    ap.add_argument("--warm", type=int, default=3, help="warm runs after each first run (median)")
    ap.add_argument("--append", action="store_true", help="keep the rounds of the last results file")
    ap.add_argument("--workdir", type=Path, default=WORK / "link-first")
    ap.add_argument("--render", action="store_true", help="only write the .md again from the last .json")
    ap.add_argument("--note", action="append", default=[], help="a line for the .md (kept with --render)")
    a = ap.parse_args()
    last = ROOT / "bench" / "results" / f"{RESULT_NAME}.json"
    if a.render:
        res = json.loads(last.read_text(encoding="utf-8"))
        res["notes"] = res.get("notes", []) + a.note
        res["summary"] = summarize(res["rounds"])
        save(RESULT_NAME, res, markdown(res))
        return
    require(SCALE / "gen_scaled_nt.py")
    a.workdir.mkdir(parents=True, exist_ok=True)
    scales = [int(k) for k in a.scales.split(",")]
    mentions = a.workdir / f"mentions-{a.mentions}.jsonl"
    if not mentions.exists():
        subprocess.run([sys.executable, str(SCALE / "gen_mentions.py"), str(a.mentions), str(mentions)], check=True)
    stores = {k: prepare(k, a.workdir) for k in scales}
    plan = [("this", k) for k in scales for _ in range(a.rounds)]
    if a.main is not None:
        plan.insert(1, ("main", min(scales)))
    rounds: list[dict] = []
    if a.append and last.exists():
        rounds = json.loads(last.read_text(encoding="utf-8"))["rounds"]
    for tree in [ROOT] + ([a.main] if a.main is not None else []):
        compiled(tree)
    for label, k in plan:  # the results are saved after each round
        tree = ROOT if label == "this" else a.main
        print(f"[{label} {k}x] ...", file=sys.stderr, flush=True)
        rounds.append(one_round(tree, label, k, stores[k], mentions, a.workdir, a.warm))
        res = {"when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "mentions": a.mentions,
               "scales": sorted({r["scale"] for r in rounds}), "cores": os.cpu_count(), "rounds": rounds,
               "summary": summarize(rounds)}
        save(RESULT_NAME, res, markdown(res))


if __name__ == "__main__":
    main()
