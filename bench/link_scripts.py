"""Benchmark: names across scripts and attached grammar (issue 37, part 2), side by side
with the code before the change, on the same 1x stand-in store and label index.

* **quality**: the gold spans of ``../shared/annotation/annotation-dev.jsonl`` given as
  mentions (one per span: its text, the text's lang, topic, country, and its id as the
  group), linked by a fresh ``kgcult link -i`` of each tree; P/R/F1 overall and per
  language, strict (the gold QID) and with the gold's ``alt`` QIDs counted as right; and
  ``../shared/standin/link-dev.jsonl`` the same way (must not get worse);
* **speed**: a fresh ``kgcult link -i`` on 3,000 mixed mentions
  (``../shared/scale/gen_mentions.py 3000``), end to end (process start to exit), the two
  trees alternating, ``--rounds`` each; median wall and CPU seconds, peak RSS; each tree's
  output byte-identical across its rounds. The machine is shared: the 1-minute load
  average is recorded with each run.

The store must be loaded with its closure and its label index built by this checkout
(``kgcult link index``: the cross-script pools and pykakasi's converted dictionary too).

    .venv/bin/python bench/link_scripts.py --store /tmp/xscript/store --before ed0d28b
Writes bench/results/link_scripts.json and .md.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, ROOT, SHARED, WORK, machine, require, tree_at

GOLD = SHARED / "annotation" / "annotation-dev.jsonl"
LINK_DEV = SHARED / "standin" / "link-dev.jsonl"
GEN = SHARED / "scale" / "gen_mentions.py"
# the default stages before the change (issue 37's gazetteer, affix, xscript and xfuzzy came in after)
OLD_STAGES = ("exact", "normalized", "english", "any", "stem", "compound", "fuzzy", "anyfuzzy", "tokens",
              "semantic")
NEW_STAGES = ("gazetteer", "affix", "xscript", "xvowel", "reorder", "xfuzzy", "xheard", "cognate")  # the defaults OLD_STAGES lacks


def span_rows(path: Path) -> list[dict]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        t = json.loads(line)
        for sp in t["spans"]:
            r = {"mention": sp["text"], "lang": t["lang"], "topic": t["topic"], "group": t["id"],
                 "gold_qid": sp["qid"], "alt": sp.get("alt", [])}
            if t.get("country"):
                r["country"] = t["country"]
            rows.append(r)
    return rows


def score(gold: list[dict], out: list[dict], alt: bool) -> dict:
    acc: dict = defaultdict(lambda: [0, 0, 0])
    for g, r in zip(gold, out):
        pred, gq = r["qid"], g["gold_qid"]
        ok = pred is not None and gq is not None and (pred == gq or (alt and pred in g.get("alt", ())))
        for k in ("all", g.get("lang") or "en"):
            acc[k][0] += ok
            acc[k][1] += pred is not None and not ok
            acc[k][2] += gq is not None

    def prf(tp, fp, pos):
        p = tp / (tp + fp) if tp + fp else 0.0
        rc = tp / pos if pos else 0.0
        return {"p": round(p, 4), "r": round(rc, 4), "f1": round(2 * p * rc / (p + rc), 4) if p + rc else 0.0,
                "tp": tp, "fp": fp, "positives": pos}
    return {k: prf(*v) for k, v in sorted(acc.items())}


def link(tree: Path, store: Path, rows_path: Path, out: Path, extra: tuple = ()) -> dict:
    """A fresh ``kgcult link -i`` of ``tree`` (run from it, so its package is the one
    imported): wall, CPU and peak RSS of that process alone (``os.wait4``)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "kgcult", "--store", str(store.resolve()), "link", "-i",
                             str(rows_path.resolve()), "-o", str(out.resolve()), *extra], env=env, cwd=tree,
                            stderr=subprocess.DEVNULL)
    _pid, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        sys.exit(f"{tree}: kgcult link -i failed ({proc.returncode})")
    return {"wall": round(wall, 3), "cpu": round(ru.ru_utime + ru.ru_stime, 3),
            "peak_rss_mib": round(ru.ru_maxrss / 1024, 1), "load": round(os.getloadavg()[0], 2)}


def read(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--before", default="ed0d28b", help="commit of the code before the change")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    for p in (GOLD, LINK_DEV, GEN):
        require(p)
    work = WORK / "link-scripts"
    work.mkdir(parents=True, exist_ok=True)
    before = tree_at(a.before, work / f"tree-{a.before}")
    trees = {"before": before, "after": ROOT}
    commits = {"before": subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", a.before],
                                        capture_output=True, text=True).stdout.strip(),
               "after": subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                       capture_output=True, text=True).stdout.strip()}
    for t in trees.values():
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(t / "kgcult")], check=True,
                       stdout=subprocess.DEVNULL)

    data: dict = {"machine": machine(), "commits": commits, "quality": {}, "speed": {}}
    sets = {"annotation-dev": span_rows(GOLD), "link-dev": read(LINK_DEV)}
    for name, gold in sets.items():
        rows_path = work / f"{name}.jsonl"
        with open(rows_path, "w", encoding="utf-8") as f:
            for g in gold:
                f.write(json.dumps({k: g[k] for k in ("mention", "lang", "topic", "country", "group")
                                    if g.get(k) is not None}, ensure_ascii=False) + "\n")
        for tag, tree in trees.items():
            out = work / f"{name}-{tag}.out.jsonl"
            link(tree, a.store, rows_path, out)
            res = read(out)
            data["quality"].setdefault(name, {})[tag] = {"strict": score(gold, res, alt=False),
                                                         "alt": score(gold, res, alt=True)}

    mixed = work / "mixed-3000.jsonl"
    if not mixed.exists():
        subprocess.run([sys.executable, str(GEN), "3000", str(mixed)], check=True, stdout=subprocess.DEVNULL)
    sys.path.insert(0, str(ROOT))
    from kgcult.link import pipeline
    if tuple(s for s in pipeline.default_stages() if s not in OLD_STAGES) != NEW_STAGES:
        sys.exit("bench/link_scripts.py: NEW_STAGES no longer names the default stages OLD_STAGES lacks")
    # the control: this checkout without the new stages (what else changed since the
    # commit before is then not counted against them)
    variants = {"before": (before, ()), "after": (ROOT, ()),
                "after-without": (ROOT, ("--stages", ",".join(s for s in OLD_STAGES)))}
    runs: dict = {k: [] for k in variants}
    outputs: dict = {k: set() for k in variants}
    for _r in range(a.rounds):
        for tag, (tree, extra) in variants.items():
            out = work / f"mixed-{tag}.out.jsonl"
            runs[tag].append(link(tree, a.store, mixed, out, extra))
            outputs[tag].add(out.read_bytes())
    for tag in variants:
        walls = [r["wall"] for r in runs[tag]]
        data["speed"][tag] = {"runs": runs[tag], "median_wall": round(statistics.median(walls), 3),
                              "median_cpu": round(statistics.median(r["cpu"] for r in runs[tag]), 3),
                              "mentions_per_s": round(3000 / statistics.median(walls)),
                              "identical_output": len(outputs[tag]) == 1}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "link_scripts.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    (RESULTS / "link_scripts.md").write_text(report(data))
    print(report(data))


def report(d: dict) -> str:
    m, c = d["machine"], d["commits"]
    q = d["quality"]["annotation-dev"]
    langs = [k for k in q["after"]["alt"] if k != "all"]
    langs.sort(key=lambda k: q["before"]["strict"][k]["f1"])
    lines = [f"_Measured {m['date']} on {m['cpus']} CPUs ({m['cpu']}), {m['memory']} RAM._", "",
             "## Names across scripts and attached grammar (`bench/link_scripts.py`)", "",
             f"The gold spans of `annotation-dev.jsonl` given as mentions (1,262; the text's country, its id as "
             f"the group), a fresh `kgcult link -i` of the code before (`{c['before']}`) and after (`{c['after']}`) "
             "on the same 1x stand-in store and index. F1, strict (the gold QID) and with the gold's `alt` QIDs "
             "(the graph's near-duplicates) counted as right:", "",
             "| | all | " + " | ".join(langs) + " |", "|---|" + "---:|" * (len(langs) + 1)]
    for tag in ("before", "after"):
        for kind in ("strict", "alt"):
            s = q[tag][kind]
            lines.append(f"| {tag} ({c[tag]}), {kind} | {s['all']['f1']:.3f} | "
                         + " | ".join(f"{s[k]['f1']:.3f}" for k in langs) + " |")
    ld = d["quality"]["link-dev"]
    lines += ["", "`link-dev.jsonl` (1,700 mentions), strict: F1 "
              f"{ld['before']['strict']['all']['f1']:.4f} before, {ld['after']['strict']['all']['f1']:.4f} after "
              f"(P {ld['after']['strict']['all']['p']:.4f}, R {ld['after']['strict']['all']['r']:.4f}).", ""]
    sp = d["speed"]
    lines += ["A fresh `kgcult link -i` on 3,000 mixed mentions (`gen_mentions.py`), the two trees alternating, "
              f"{len(sp['after']['runs'])} rounds; median wall and CPU seconds (shared machine: 1-minute load "
              "average per run):", "",
              "| code | median s | mentions/s | median CPU s | peak RSS MiB | load | same output each run |",
              "|---|---:|---:|---:|---:|---|---|"]
    for tag in ("before", "after", "after-without"):
        s = sp[tag]
        name = f"{tag} ({c[tag]})" if tag in c else f"after ({c['after']}) without {', '.join(NEW_STAGES)}"
        lines.append(f"| {name} | {s['median_wall']} | {s['mentions_per_s']:,} | {s['median_cpu']} | "
                     f"{max(r['peak_rss_mib'] for r in s['runs'])} | "
                     f"{', '.join(str(r['load']) for r in s['runs'])} | {s['identical_output']} |")
    ratio = sp["after"]["median_wall"] / sp["before"]["median_wall"]
    lines += ["", f"Time ratio after/before: {ratio:.3f} (wall), "
              f"{sp['after']['median_cpu'] / sp['before']['median_cpu']:.3f} (CPU); after/without the new "
              f"stages: {sp['after']['median_wall'] / sp['after-without']['median_wall']:.3f} (wall), "
              f"{sp['after']['median_cpu'] / sp['after-without']['median_cpu']:.3f} (CPU).", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
