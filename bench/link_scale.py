"""Benchmark: the link index at 1x, 3x (and 10x) the stand-in's names (issue 15, item 2).

Per scale K (``../shared/scale/gen_scaled_nt.py K``, loaded into a store with its closure):

* index build, in a child process that only opens the store read-only and builds: wall
  time, peak RSS (ru_maxrss: counts the resident pages of memory-mapped files too), bytes
  per name, size on disk;
* ``kgcult link -i`` on 3,000 mixed mentions (``gen_mentions.py``: half verbatim, half
  with a typo; topic food / place / none), after one unmeasured run that leaves the
  on-disk caches (name vectors, converted USE model, morphology pools), each run a fresh process, end to end including
  start-up: mentions/s and peak RSS; side by side, the same command on one mention (the
  start-up alone: interpreter, imports, store, index opened);
* the exact path (stages exact + normalized) on the dev set, warm (second pass of one
  linker): mentions/s;
* a projection to 80 M names from the growth between the smallest and largest scale.

The store's content hash is computed once per store beforehand (a writable open caches it
in the store), so the linking figures do not include hashing a store nobody changed.

    .venv/bin/python bench/link_scale.py                     # scales 1 and 3
    .venv/bin/python bench/link_scale.py --scales 1,3,10
Writes bench/results/link_scale.json and .md. Scratch data: $KGCULT_BENCH_DIR/link-scale.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import RESULTS, ROOT, SHARED, WORK, child_env, load_in_child, require, save

SCALE = SHARED / "scale"
DEV = SHARED / "standin" / "link-dev.jsonl"
TARGET_NAMES = 80_000_000
RESULT = RESULTS / "link_scale.json"
KGCULT = [sys.executable, "-m", "kgcult"]

BUILD_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from kgcult.store import Store
from kgcult.link.index import reader as lx
s = Store(sys.argv[2], read_only=True)
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
ix = lx.load_or_build(s, rebuild=True)
secs = time.perf_counter() - t
rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
path = lx.index_path(s, ix.content_hash, ix.topics)
names = json.loads(ix.db.execute("SELECT value FROM meta WHERE key = 'meta'").fetchone()[0])["names"]
print(json.dumps({"build_seconds": round(secs, 1), "rss_before_mib": round(rss0 / 1024, 1),
                  "rss_peak_mib": round(rss1 / 1024, 1), "names": names, "entities": len(ix.qids),
                  "disk_mib": round(lx.disk_bytes(path) / 2**20, 1)}))
"""

WARM_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from kgcult.store import Store
from kgcult.link import Linker
rows = [json.loads(l) for l in open(sys.argv[3])]
rows = [{k: r.get(k) for k in ("mention", "lang", "topic")} for r in rows]
lk = Linker.open(Store(sys.argv[2], read_only=True)).with_stages(["exact", "normalized"])
t = time.perf_counter(); list(lk.link_many(rows)); cold = len(rows) / (time.perf_counter() - t)
t = time.perf_counter(); n = 0
for _ in range(3):
    n += len(list(lk.link_many(rows)))
warm = n / (time.perf_counter() - t)
print(json.dumps({"cold_per_s": round(cold), "warm_per_s": round(warm),
                  "rss_peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
"""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def measured(cmd: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB, stdout) of one child process; its CPU seconds (user +
    system, less sensitive to other load on a shared machine) in ``measured.cpu``."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(), text=True)
    out, err = "", ""
    _pid, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    out, err = p.stdout.read(), p.stderr.read()
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err}")
    measured.cpu = ru.ru_utime + ru.ru_stime
    return wall, ru.ru_maxrss / 1024, out


def prepare(k: int, work: Path) -> Path:
    """The K-times stand-in store, loaded by a child process (``common.load_in_child``:
    this process must stay small, or every child it measures would count its memory)."""
    store = work / f"store-{k}x"
    if (store / ".ready").exists():
        return store
    nt = work / f"standin-{k}x.nt"
    if not nt.exists():
        log(f"generating {nt} ...")
        subprocess.run([sys.executable, str(SCALE / "gen_scaled_nt.py"), str(k), str(nt)], check=True)
    log(f"loading {nt} into {store} ...")
    load_in_child(store, [nt], "standin")
    nt.unlink()
    (store / ".ready").write_text("ok\n")
    return store


def one_scale(k: int, work: Path, mentions: Path, runs: int) -> dict:
    store = prepare(k, work)
    log(f"[{k}x] building the index ...")
    _w, _r, out = measured([sys.executable, "-c", BUILD_CHILD, str(ROOT), str(store)])
    build = json.loads(out.strip().splitlines()[-1])
    names = build["names"]
    log(f"[{k}x] {build}")
    n_mentions = sum(1 for _ in open(mentions))
    # one unmeasured run first: it leaves the caches every later process reads on disk (the
    # semantic stage's name vectors and converted model, the morphology pools)
    log(f"[{k}x] warm-up run (writes the on-disk caches) ...")
    w, _r, _o = measured(KGCULT + ["--store", str(store), "link", "-i", str(mentions), "-o",
                                   str(work / f"linked-{k}x.jsonl")])
    log(f"[{k}x] warm-up {w:.1f} s")
    fresh, startup = [], []
    for _ in range(runs):
        out_file = work / f"linked-{k}x.jsonl"
        w, rss, _o = measured(KGCULT + ["--store", str(store), "link", "-i", str(mentions), "-o", str(out_file)])
        fresh.append((w, rss, measured.cpu))
        w, rss, _o = measured(KGCULT + ["--store", str(store), "link", "paella", "--topic", "food"])
        startup.append((w, rss, measured.cpu))
    fresh.sort()
    startup.sort()
    fw, frss, fcpu = fresh[len(fresh) // 2]
    sw, srss, scpu = startup[len(startup) // 2]
    _w, _r, out = measured([sys.executable, "-c", WARM_CHILD, str(ROOT), str(store), str(DEV)])
    warm = json.loads(out.strip().splitlines()[-1])
    log(f"[{k}x] fresh {fw:.2f} s {frss:.0f} MiB; start-up {sw:.2f} s {srss:.0f} MiB; exact path {warm}")
    return {
        "scale": k, "names": names, "entities": build["entities"],
        "build_seconds": build["build_seconds"], "build_rss_peak_mib": build["rss_peak_mib"],
        "build_rss_before_mib": build["rss_before_mib"],
        "build_bytes_per_name": round(build["rss_peak_mib"] * 2**20 / names, 1),
        "disk_mib": build["disk_mib"], "disk_bytes_per_name": round(build["disk_mib"] * 2**20 / names, 1),
        "fresh_mentions": n_mentions, "fresh_seconds": round(fw, 2),
        "fresh_per_s": round(n_mentions / fw), "fresh_rss_peak_mib": round(frss, 1),
        "link_bytes_per_name": round(frss * 2**20 / names, 1),
        "startup_seconds": round(sw, 2), "startup_rss_peak_mib": round(srss, 1),
        "fresh_per_s_after_startup": round(n_mentions / max(fw - sw, 1e-3)),
        "fresh_cpu_seconds": round(fcpu, 2), "startup_cpu_seconds": round(scpu, 2),
        "fresh_per_cpu_s": round(n_mentions / max(fcpu, 1e-3)),
        "exact_warm_per_s": warm["warm_per_s"], "exact_cold_per_s": warm["cold_per_s"],
        "loadavg_after": [round(x, 1) for x in os.getloadavg()],
        # a child's ru_maxrss is at least this (see prepare): must stay far below the figures
        "bench_process_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def with_earlier_rows(rows: list[dict]) -> list[dict]:
    """``rows`` and, for each scale this run did not measure, the row of the last run that
    did (its date in ``measured``): a 10x run takes about half an hour, so a run of 1x and
    3x keeps it rather than dropping it."""
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    for r in rows:
        r["measured"] = now
    done = {r["scale"] for r in rows}
    try:
        earlier = json.loads(RESULT.read_text())
    except (OSError, ValueError):
        return rows
    for r in earlier.get("scales", []):
        if r["scale"] not in done:
            r.setdefault("measured", earlier.get("machine", {}).get("date", "an earlier run"))
            rows.append(r)
    return sorted(rows, key=lambda r: r["scale"])


def projection(rows: list[dict]) -> dict:
    """Linear in names from the smallest to the largest scale measured."""
    a, b = rows[0], rows[-1]
    out = {"names": TARGET_NAMES}
    for key in ("build_rss_peak_mib", "fresh_rss_peak_mib", "disk_mib", "build_seconds"):
        if b["names"] == a["names"]:
            slope = b[key] / b["names"]
        else:
            slope = (b[key] - a[key]) / (b["names"] - a["names"])
        v = b[key] + slope * (TARGET_NAMES - b["names"])
        out[key] = round(v, 1)
        out[key + "_per_name_marginal"] = round(slope * (2**20 if key.endswith("mib") else 1), 3)
    out["build_bytes_per_name"] = round(out["build_rss_peak_mib"] * 2**20 / TARGET_NAMES, 1)
    out["link_bytes_per_name"] = round(out["fresh_rss_peak_mib"] * 2**20 / TARGET_NAMES, 1)
    return out


def markdown(r: dict) -> str:
    lines = [
        "## Link index at scale (`bench/link_scale.py`)",
        "",
        f"Stand-in scaled with `gen_scaled_nt.py` (K copies, distinct names); {r['mentions']} mixed mentions "
        f"from `gen_mentions.py` (half with a typo; topic food / place / none). Load average "
        f"{r['loadavg_start']} at start, {r['loadavg_end']} at end (2 shared cores). Peak RSS is ru_maxrss "
        "(resident memory-mapped pages included). Fresh = one `kgcult link -i` process, end to end including "
        "start-up (median of runs); start-up = the same command on one mention.",
        "",
        "Each row gives its date: a run may measure some scales and keep the others' last rows.",
        "",
        "| scale | measured | names | entities | build s | build peak RSS MiB | B/name | disk MiB | fresh s (3k) | "
        "fresh mentions/s | fresh CPU s | mentions per CPU s | fresh peak RSS MiB | B/name | start-up s "
        "(CPU s) | exact path warm /s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for x in r["scales"]:
        lines.append(
            f"| {x['scale']}x | {x.get('measured', '')} | {x['names']:,} | {x['entities']:,} | {x['build_seconds']} | "
            f"{x['build_rss_peak_mib']} | {x['build_bytes_per_name']} | {x['disk_mib']} | {x['fresh_seconds']} | "
            f"{x['fresh_per_s']:,} | {x.get('fresh_cpu_seconds', '')} | {x.get('fresh_per_cpu_s', '')} | "
            f"{x['fresh_rss_peak_mib']} | {x['link_bytes_per_name']} | "
            f"{x['startup_seconds']} ({x.get('startup_cpu_seconds', '')}) | {x['exact_warm_per_s']:,} |")
    p = r["projection"]
    lines += [
        "",
        f"Projection to {p['names']:,} names (linear from {r['scales'][0]['scale']}x to {r['scales'][-1]['scale']}x): "
        f"build peak RSS {p['build_rss_peak_mib']:,} MiB ({p['build_bytes_per_name']} B/name; marginal "
        f"{p['build_rss_peak_mib_per_name_marginal']} B/name), `link -i` peak RSS {p['fresh_rss_peak_mib']:,} MiB "
        f"({p['link_bytes_per_name']} B/name; marginal {p['fresh_rss_peak_mib_per_name_marginal']} B/name), "
        f"{p['disk_mib']:,} MiB on disk, build {p['build_seconds']:,} s.",
        "",
        "Before (issue 15, first landing): about 830 B/name to build, 2 KB/name to link, a fresh `link -i` "
        "66 mentions/s on 3,000 mixed mentions.",
        "",
        "Targets:",
        "",
    ]
    for t, ok in r["targets_met"].items():
        lines.append(f"- {t}: {'met' if ok else 'NOT met'}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scales", default="1,3")
    ap.add_argument("--mentions", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", default=str(WORK / "link-scale"))
    args = ap.parse_args()
    require(SCALE / "gen_scaled_nt.py")
    require(DEV)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    mentions = work / f"mentions-{args.mentions}.jsonl"
    if not mentions.exists():
        subprocess.run([sys.executable, str(SCALE / "gen_mentions.py"), str(args.mentions), str(mentions)], check=True)
    load0 = [round(x, 1) for x in os.getloadavg()]
    rows = [one_scale(int(k), work, mentions, args.runs) for k in args.scales.split(",")]
    rows = with_earlier_rows(rows)
    proj = projection(rows)
    targets = {
        "build peak RSS <= 150 B/name (every scale)": all(x["build_bytes_per_name"] <= 150 for x in rows),
        "`link -i` peak RSS <= 100 B/name (every scale)": all(x["link_bytes_per_name"] <= 100 for x in rows),
        "exact path >= 20k mentions/s warm (every scale)": all(x["exact_warm_per_s"] >= 20_000 for x in rows),
        "fresh process >= 2,000 mentions/s on 3,000 mixed mentions (every scale)":
            all(x["fresh_per_s"] >= 2000 for x in rows),
        "projection to 80 M names: build <= 150 B/name, link <= 100 B/name":
            proj["build_bytes_per_name"] <= 150 and proj["link_bytes_per_name"] <= 100,
    }
    result = {"mentions": args.mentions, "scales": rows, "projection": proj, "targets_met": targets,
              "loadavg_start": load0, "loadavg_end": [round(x, 1) for x in os.getloadavg()]}
    save("link_scale", result, markdown(result))


if __name__ == "__main__":
    main()
