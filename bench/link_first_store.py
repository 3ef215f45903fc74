"""Benchmark: a researcher's first link on a freshly loaded stand-in store (issue 41).

Side by side in one run, each step a fresh process as a user runs it, on a store that was
just loaded (``kgcult load`` of the stand-in) and closed (``kgcult closure``), nothing
built beside it:

* ``load``: ``kgcult load ../shared/standin/wikidata-standin.nt.gz`` (the denominator);
* ``closure``: ``kgcult closure`` (reported, not in the ratios);
* ``first link``: ``kgcult link "sushi" --lang en --topic food`` on that store;
* ``link index``: ``kgcult link index`` on a copy of the same loaded and closed store;
* the rest of a first hour on the first store, for the README's table: a second link
  (another language), ``kgcult show``, ``kgcult build fmlama``.

Targets (issue 41): the first link <= 1.0x the load, ``link index`` <= 2.0x. Each step's
stderr is kept (its progress lines) to check that no step is silent for more than 10 s
(the longest gap between two lines is recorded). ``--rounds N`` (default 1) repeats the
whole sequence; the 1-minute load average is recorded with each step (a shared machine).
The USE model's converted copy in ``$KGCULT_CACHE`` is made once per machine, and is made
before the first round (a first link on a new machine pays it once, ~3 s).

    .venv/bin/python bench/link_first_store.py [--rounds 2]
Writes bench/results/link_first_store.{json,md}. Scratch: $KGCULT_BENCH_DIR/link-first-store.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import STANDIN, WORK, child_env, require, save

KGCULT = [sys.executable, "-m", "kgcult"]


def step(args: list[str], store: Path) -> dict:
    """Wall and CPU seconds of one kgcult command, its stderr lines with their arrival
    times (the longest silence between two of them), and its stdout."""
    env = child_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = os.times()
    t0 = time.perf_counter()
    proc = subprocess.Popen(KGCULT + ["--store", str(store), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    assert proc.stderr is not None and proc.stdout is not None
    lines = []
    for raw in proc.stderr:
        lines.append((round(time.perf_counter() - t0, 1), raw.decode(errors="replace").rstrip()))
    out = proc.stdout.read().decode()
    proc.wait()
    wall = time.perf_counter() - t0
    after = os.times()
    if proc.returncode:
        raise SystemExit(f"kgcult {' '.join(args)} failed:\n" + "\n".join(x for _, x in lines[-20:]))
    stamps = [0.0] + [t for t, _ in lines] + [wall]
    return {"wall_s": round(wall, 2),
            "cpu_s": round(after.children_user - before.children_user
                           + after.children_system - before.children_system, 2),
            "longest_silence_s": round(max(b - a for a, b in zip(stamps, stamps[1:])), 1),
            "load_avg": round(os.getloadavg()[0], 1), "stderr": lines, "stdout": out}


def copy_store(src: Path, dst: Path) -> None:
    """The store and what lives beside it (its closure state, facts), as ``cp -r`` would."""
    for p in src.parent.iterdir():
        if p.name == src.name or p.name.startswith((src.name + ".", "." + src.name + ".")):
            target = dst.parent / p.name.replace(src.name, dst.name, 1)
            if p.is_dir():
                shutil.copytree(p, target)
            else:
                shutil.copy2(p, target)


def one_round(work: Path) -> dict:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    a, b = work / "store", work / "copy"
    out = {"load": step(["load", str(require(STANDIN))], a)}
    out["closure"] = step(["closure"], a)
    copy_store(a, b)
    out["first_link"] = step(["link", "sushi", "--lang", "en", "--topic", "food"], a)
    out["second_link"] = step(["link", "paella", "--lang", "es", "--topic", "food"], a)
    out["link_index"] = step(["link", "index"], b)
    # the rest of a first hour, on the first store (README's table)
    out["show"] = step(["show", "Q46383"], a)
    out["build_fmlama"] = step(["build", "fmlama", "--out", str(work / "datasets")], a)
    out["qid"] = json.loads(out["first_link"]["stdout"])["qid"]
    out["index_mb"] = round(sum(p.stat().st_size for p in (work / "copy.link-index").rglob("*") if p.is_file()) / 1e6)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=1)
    opts = ap.parse_args()
    work = WORK / "link-first-store"
    # the model's converted copy (once per machine) made before the rounds
    subprocess.run([sys.executable, "-c", "from kgcult.link.semantic import search; search.prepare()"],
                   env=child_env(), check=False)
    rounds = []
    for _ in range(opts.rounds):
        res = one_round(work)
        rounds.append(res)
        print(json.dumps({k: (v["wall_s"] if isinstance(v, dict) else v) for k, v in res.items()}), flush=True)
    shutil.rmtree(work, ignore_errors=True)

    def med(key: str, field: str = "wall_s") -> float:
        xs = sorted(r[key][field] for r in rounds)
        return xs[len(xs) // 2]

    load = med("load")
    first, index = med("first_link") / load, med("link_index") / load
    table = ["| step | wall s | CPU s | vs load | longest silence s | load avg |", "|---|---|---|---|---|---|"]
    names = {"load": "`kgcult load` of the stand-in", "closure": "`kgcult closure`",
             "first_link": '`kgcult link "sushi" --lang en --topic food`, first',
             "second_link": '`kgcult link "paella" --lang es --topic food`, next',
             "link_index": "`kgcult link index` (a copy of the loaded store)",
             "show": "`kgcult show Q46383`", "build_fmlama": "`kgcult build fmlama` (content hash, queries)"}
    for key, name in names.items():
        table.append(f"| {name} | {med(key):.1f} | {med(key, 'cpu_s'):.1f} | {med(key) / load:.2f}x | "
                     f"{med(key, 'longest_silence_s'):.1f} | {rounds[0][key]['load_avg']} |")
    last = rounds[-1]
    said = [x for _, x in last["first_link"]["stderr"]][:3]
    data = {"rounds": [{k: ({f: v[f] for f in v if f != "stdout"} if isinstance(v, dict) else v)
                        for k, v in r.items()} for r in rounds],
            "first_link_ratio": round(first, 3), "link_index_ratio": round(index, 3)}
    md = "\n".join([
        "### First link and `link index` on a freshly loaded stand-in store, against its load\n",
        f"Each step a fresh process, as a user runs them; median of {len(rounds)} round(s); the first link "
        f"answered {last['qid']}. Longest silence: the most seconds between two lines on stderr (off a "
        "terminal: progress lines every 10 s).\n",
        *table,
        "",
        f"Targets (issue 41): first link <= 1.0x the load: **{first:.2f}x** ({'met' if first <= 1.0 else 'NOT met'}); "
        f"`link index` <= 2.0x: **{index:.2f}x** ({'met' if index <= 2.0 else 'NOT met'}). "
        f"Index beside the store after `link index`: {last['index_mb']} MB.",
        "",
        "The first link's opening lines: " + " / ".join(f"`{x}`" for x in said),
    ])
    save("link_first_store", data, md)
    print(f"first link {first:.2f}x load, link index {index:.2f}x load", file=sys.stderr)


if __name__ == "__main__":
    main()
