"""`kgcult closure` on generated hierarchies (``../shared/scale/gen_hier.py``: 40 % P279,
40 % P131, 20 % P31 edges, with cycles) at several sizes, side by side with `kgcult load` of
the same file in the same run: wall time, peak RSS of each process, closure triples, store
size before and after. A linear fit of peak RSS over edges projects Wikidata's ~4 M P279 +
15 M P131 edges.

Targets (issue 15): at 1 M edges every spec done, peak RSS <= 2 GB, closure wall time <= 5x
`kgcult load` of the same file; linear growth with size; projection <= 16 GB.

Sizes: ``KGCULT_CLOSURE_SIZES`` (comma-separated edge counts; default 100000,300000,1000000).
``KGCULT_CLOSURE_COMPUTE_SIZES`` (e.g. 3000000) adds sizes where only the load and the compute
phase run (no closure written: at 3 M edges the full build writes ~140 M triples, ~18 GB of
store); a run with only these keeps the full-build rows already in bench/results/closure.json.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import RESULTS, SHARED, WORK, child_env, require, save

VENV_BIN = Path(sys.executable).parent
GEN = SHARED / "scale" / "gen_hier.py"
WIKIDATA_EDGES = 4_000_000 + 15_000_000
RESULT = RESULTS / "closure.json"


def measured(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (GB) of one process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}")
    return seconds, usage.ru_maxrss / 1024 / 1024


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


# The compute phase alone (edges read, reach computed, records spilled; nothing written to
# the store), in its own process: separates kgcult's own memory from Oxigraph's bulk loader.
COMPUTE_ONLY = """
import resource, sys, tempfile
from pathlib import Path
from kgcult.store import Store, hierarchy
with Store(sys.argv[1], read_only=True) as st, tempfile.TemporaryDirectory() as tmp:
    table = hierarchy.EdgeTable()
    for spec in hierarchy.load_specs():
        out = hierarchy.ScratchWriter(Path(tmp) / spec.name)
        hierarchy.compute(st, spec, table, out)
        out.close()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024)
"""


def compute_phase(store: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (GB) of the compute phase alone."""
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", COMPUTE_ONLY, str(store)], env=child_env(), check=True,
                         capture_output=True, text=True).stdout
    return time.perf_counter() - t0, float(out.split()[-1])


COUNT_CHILD = """
import sys
from kgcult.store import Store, hierarchy
with Store(sys.argv[1], read_only=True) as s:
    print(sum(s.triple_count(spec.graph) for spec in hierarchy.load_specs()))
"""


def closure_triples(store: Path) -> int:
    """The closure graphs' triples, counted by a child process: this process stays small
    (a child's ru_maxrss starts at its parent's RSS, so the store opened here would count
    in every process measured after it)."""
    out = subprocess.run([sys.executable, "-c", COUNT_CHILD, str(store)], env=child_env(), check=True,
                         capture_output=True, text=True).stdout
    return int(out.split()[-1])


def hierarchy_file(edges: int) -> Path:
    WORK.mkdir(parents=True, exist_ok=True)
    nt = WORK / f"hier-{edges}.nt"
    if not nt.exists():
        subprocess.run([sys.executable, str(require(GEN)), str(edges), str(nt)], check=True,
                       stdout=subprocess.DEVNULL)
    return nt


def compute_only_size(edges: int) -> dict:
    """Load, then the compute phase alone: kgcult's own memory and time at a size whose
    full closure would not fit this machine's disk."""
    nt = hierarchy_file(edges)
    store = WORK / f"closure-{edges}"
    shutil.rmtree(store, ignore_errors=True)
    kg = [str(VENV_BIN / "kgcult"), "--store", str(store)]
    load_s, load_gb = measured(kg + ["load", str(nt), "--no-progress"])
    row = {"edges": edges, "load_s": load_s, "load_peak_gb": load_gb, "compute_only": True}
    row["compute_s"], row["compute_peak_gb"] = compute_phase(store)
    print(row, flush=True)
    shutil.rmtree(store, ignore_errors=True)
    return row


def one_size(edges: int) -> dict:
    nt = hierarchy_file(edges)
    store = WORK / f"closure-{edges}"
    shutil.rmtree(store, ignore_errors=True)
    kg = [str(VENV_BIN / "kgcult"), "--store", str(store)]
    load_s, load_gb = measured(kg + ["load", str(nt), "--no-progress"])
    size_before = du(store)
    closure_s, closure_gb = measured(kg + ["closure"])
    row = {"edges": edges, "load_s": load_s, "load_peak_gb": load_gb, "closure_s": closure_s,
           "closure_peak_gb": closure_gb, "closure_triples": closure_triples(store),
           "store_mb_before": size_before / 1e6, "store_mb_after": du(store) / 1e6}
    row["ratio"] = closure_s / load_s
    row["compute_s"], row["compute_peak_gb"] = compute_phase(store)
    print(row, flush=True)
    shutil.rmtree(store, ignore_errors=True)
    return row


def compute_only_note(rows: list[dict]) -> str:
    only = [r for r in rows if r.get("compute_only")]
    if not only:
        return ""
    sizes = ", ".join(f"{r['edges']:,}" for r in only)
    loads = ", ".join(f"{r['load_s']:.0f} s" for r in only)
    return (f"at {sizes} edges only the load ({loads}) and the compute phase ran: the full build's "
            "store would not fit this machine's free disk (about 6 GB per million edges); ")


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares line y = a + b x."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs) or 1.0
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


def main() -> None:
    sizes = [int(s) for s in os.environ.get("KGCULT_CLOSURE_SIZES", "100000,300000,1000000").split(",") if s]
    compute_sizes = [int(s) for s in os.environ.get("KGCULT_CLOSURE_COMPUTE_SIZES", "").split(",") if s]
    rows = []
    if not sizes:  # compute-only sizes added to the full builds measured before
        rows = [r for r in json.loads(RESULT.read_text())["rows"] if not r.get("compute_only")]
    for n in sizes:  # results are saved after each size, so a cut-short run keeps what it measured
        rows.append(one_size(n))
        report(rows)
    for n in compute_sizes:
        rows.append(compute_only_size(n))
        report(rows)


def report(all_rows: list[dict]) -> None:
    rows = [r for r in all_rows if not r.get("compute_only")]
    a, b = fit([r["edges"] for r in rows], [r["closure_peak_gb"] for r in rows])
    projected_gb = a + b * WIKIDATA_EDGES
    ca, cb = fit([r["edges"] for r in all_rows], [r.get("compute_peak_gb", 0.0) for r in all_rows])
    compute_projected_gb = ca + cb * WIKIDATA_EDGES
    at_1m = next((r for r in rows if r["edges"] == 1_000_000), None)
    table = "\n".join(
        f"| {r['edges']:,} | {r['load_s']:.1f} | {r['load_peak_gb']:.2f} | {r['closure_s']:.1f} | "
        f"{r['closure_peak_gb']:.2f} | {r['closure_triples']:,} | {r['ratio']:.1f}x | "
        f"{r['store_mb_before']:.0f} -> {r['store_mb_after']:.0f} |" for r in rows)
    per_edge = [r["closure_s"] / r["edges"] * 1e6 for r in rows]
    if at_1m:
        verdict = (f"At 1 M edges: peak RSS {at_1m['closure_peak_gb']:.2f} GB (target <= 2 GB: "
                   f"{'met' if at_1m['closure_peak_gb'] <= 2 else 'NOT met'}), {at_1m['ratio']:.1f}x `kgcult load` "
                   f"(target <= 5x: {'met' if at_1m['ratio'] <= 5 else 'NOT met'}).")
    else:
        verdict = "1 M edges not measured in this run (see sizes): the 1 M targets are not verified."
    md = f"""### Closure of generated hierarchies (`gen_hier.py`), side by side with `kgcult load`

| edges | load s | load peak GB | closure s | closure peak GB | closure triples | closure / load time | store MB before -> after |
|---|---|---|---|---|---|---|---|
{table}

{verdict}
Closure time per input edge: {', '.join(f'{p:.0f} µs' for p in per_edge)} (linear growth means a flat row).
Peak RSS fit: {a:.2f} GB + {b * 1e6:.3f} GB per million edges; projected for Wikidata's 4 M P279 + 15 M P131
edges: **{projected_gb:.1f} GB** (target <= 16 GB: {'met' if projected_gb <= 16 else 'NOT met'}).
Compute phase alone (edges read, reach computed, records spilled; no store writes):
{', '.join(f"{r['edges']:,}: {r.get('compute_s', 0):.0f} s, {r.get('compute_peak_gb', 0):.2f} GB" for r in all_rows)}
(compute seconds per edge: {', '.join(f"{r['compute_s'] / r['edges'] * 1e6:.0f} µs" for r in all_rows if r.get('compute_s'))});
{compute_only_note(all_rows)}its fit projects **{compute_projected_gb:.1f} GB** at Wikidata's size: the rest of the closure's peak is Oxigraph's
bulk loader and compaction, which this fit treats as growing with the edges.
Each input edge yields about {rows[-1]['closure_triples'] / rows[-1]['edges']:.0f} closure triples over the six
specs here, so the closure writes that many times the triples the load wrote: the time ratio is bounded below by
Oxigraph's bulk-load rate on the closure's own triples.
"""
    save("closure", {"rows": all_rows, "rss_fit_gb": {"intercept": a, "per_edge": b},
                     "projected_wikidata_gb": projected_gb, "compute_projected_wikidata_gb": compute_projected_gb}, md)


if __name__ == "__main__":
    main()
