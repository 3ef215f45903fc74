"""`kgcult closure` on generated hierarchies (``../shared/scale/gen_hier.py``: 40 % P279,
40 % P131, 20 % P31 edges, with cycles) at several sizes, side by side in the same run with
Oxigraph's own CLI bulk load of the closure it wrote: wall time, peak RSS of each process,
closure triples, store size before and after, the load average during each step.

Per size: `kgcult load` of the file; the first `kgcult closure`; the closure's triples
exported (by a child: N-Quads with each spec's IRI as the graph, as the issue defines the
baseline, and the same triples as N-Triples); `oxigraph load --location FRESH --file
closure.nq` and `... closure.nt` (into the default graph) into fresh stores; then a data
change that changes every spec (a new superclass of one P279 root, a new territory above
one P131 root) and the rebuild `kgcult closure`. A linear fit of peak RSS over edges
projects Wikidata's ~4 M P279 + 15 M P131 edges.

Targets (issue 32): the first build and the rebuild each within 1.3x of the CLI's bulk load
of the closure quads (closure.nq), at 100k, 300k and 1 M edges; peak RSS <= 2 GB at 1 M.
Earlier (issue 15): projection <= 16 GB.

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
OXIGRAPH = VENV_BIN / "oxigraph"
GEN = SHARED / "scale" / "gen_hier.py"
WIKIDATA_EDGES = 4_000_000 + 15_000_000
RESULT = RESULTS / "closure.json"


LOADS: list[float] = []  # 1-minute load averages sampled after each measured step
CPU: list[float] = []  # CPU seconds (user + system) of each measured process, in order


def measured(cmd: list[str], log: Path | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (GiB) of one process (its stderr kept in ``log``); its CPU
    seconds go to ``CPU`` (less sensitive than wall time to other jobs on shared cores)."""
    t0 = time.perf_counter()
    err = open(log, "wb") if log else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=child_env())
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    LOADS.append(os.getloadavg()[0])
    CPU.append(usage.ru_utime + usage.ru_stime)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}" + (f" (see {log})" if log else ""))
    return seconds, usage.ru_maxrss / 1024 / 1024


def phases(log: Path) -> dict:
    """The build's own split (its last ``closure phases:`` line): compute, write, compact s."""
    line = [x for x in log.read_text().splitlines() if "closure phases:" in x][-1]
    parts = line.split("closure phases:")[1].replace(" s", "").split(",")
    return {k.strip().split()[0]: float(k.strip().split()[1]) for k in parts}


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
    """Wall seconds and peak RSS (GiB) of the compute phase alone."""
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", COMPUTE_ONLY, str(store)], env=child_env(), check=True,
                         capture_output=True, text=True).stdout
    return time.perf_counter() - t0, float(out.split()[-1])


COUNT_CHILD = """
import sys
from kgcult.store import Store, hierarchy
with Store(sys.argv[1], read_only=True) as s:
    print(sum(hierarchy.closure_sizes(s).values()))
"""

# The closure's triples as the CLI baseline loads them: rendered by the build's own code
# (the same records and N-Triples lines `kgcult closure` bulk-loads), as N-Triples and as
# N-Quads, each line in its spec's graph (kgc:graph). Reading them back out of the store
# instead would take as long as writing them (an id2str lookup per term).
EXPORT_CHILD = """
import sys, tempfile
from pathlib import Path
from kgcult import vocab
from kgcult.store import Store, hierarchy
with Store(sys.argv[1], read_only=True) as st, tempfile.TemporaryDirectory() as tmp, \\
        open(sys.argv[2], "wb") as nt, open(sys.argv[3], "wb") as nq:
    table = hierarchy.EdgeTable()
    for spec in hierarchy.load_specs():
        out = hierarchy.ScratchWriter(Path(tmp) / spec.name)
        cycles, _ = hierarchy.compute(st, spec, table, out)
        out.close()
        derived = f" <{spec.derived}> ".encode()
        mark = f" <{vocab.KGC}inCycle> <{vocab.KGC}{spec.name}> .\\n".encode()
        tail = f" <{spec.graph}> .\\n".encode()
        for block in hierarchy._blocks(out.path, table.nodes.keys, derived, cycles, mark):
            nt.write(block)
            nq.write(block.replace(b" .\\n", tail))
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
    shutil.rmtree(store.parent / f".{store.name}.closure-state", ignore_errors=True)  # closure_state
    return row


def cli_load(path: Path, name: str) -> tuple[float, float]:
    """Oxigraph's CLI bulk load of ``path`` into a fresh store: wall s, peak GiB."""
    fresh = WORK / name
    shutil.rmtree(fresh, ignore_errors=True)
    out = measured([str(OXIGRAPH), "load", "--location", str(fresh), "--file", str(path)])
    shutil.rmtree(fresh, ignore_errors=True)
    return out


def changed_edges(nt: Path) -> Path:
    """Two edges that change every spec: a new superclass above the first P279 root and a
    new territory above the first P131 root (the roots: objects never subjects of it)."""
    subjects: dict[str, set] = {"P279": set(), "P131": set()}
    objects: dict[str, list] = {"P279": [], "P131": []}
    with open(nt) as f:
        for line in f:
            s, p, o = line.split(" ", 3)[:3]
            pid = p.rsplit("/", 1)[-1].rstrip(">")
            if pid in subjects:
                subjects[pid].add(s)
                objects[pid].append(o)
    extra = nt.with_suffix(".extra.nt")
    lines = []
    for pid, new in (("P279", "Q1"), ("P131", "Q2")):
        root = next(o for o in objects[pid] if o not in subjects[pid])
        lines.append(f"{root} <http://www.wikidata.org/prop/direct/{pid}> <http://www.wikidata.org/entity/{new}> .\n")
    extra.write_text("".join(lines))
    return extra


def one_size(edges: int) -> dict:
    nt = hierarchy_file(edges)
    store = WORK / f"closure-{edges}"
    shutil.rmtree(store, ignore_errors=True)
    kg = [str(VENV_BIN / "kgcult"), "--store", str(store)]
    logs = WORK / f"closure-{edges}.log"
    LOADS.clear()
    load_s, load_gb = measured(kg + ["load", str(nt), "--no-progress"])
    size_before = du(store)
    closure_s, closure_gb = measured(kg + ["closure"], logs)
    closure_cpu = CPU[-1]
    row = {"edges": edges, "load_s": load_s, "load_peak_gb": load_gb, "closure_s": closure_s,
           "closure_peak_gb": closure_gb, "closure_phases": phases(logs),
           "closure_triples": closure_triples(store),
           "store_mb_before": size_before / 1e6, "store_mb_after": du(store) / 1e6}
    row["ratio"] = closure_s / load_s
    print("partial:", json.dumps(row), flush=True)  # a cut-short run keeps what it measured
    # the baseline: Oxigraph's CLI bulk load of the same closure, in the same run
    cnt, cnq = WORK / f"closure-{edges}.closure.nt", WORK / f"closure-{edges}.closure.nq"
    subprocess.run([sys.executable, "-c", EXPORT_CHILD, str(store), str(cnt), str(cnq)], env=child_env(), check=True)
    row["closure_cpu_s"] = closure_cpu
    row["cli_nq_s"], row["cli_nq_peak_gb"] = cli_load(cnq, f"cli-nq-{edges}")
    row["cli_nq_cpu_s"] = CPU[-1]
    cnq.unlink()
    print("partial:", json.dumps(row), flush=True)
    row["cli_nt_s"], row["cli_nt_peak_gb"] = cli_load(cnt, f"cli-nt-{edges}")
    row["cli_nt_cpu_s"] = CPU[-1]
    cnt.unlink()
    print("partial:", json.dumps(row), flush=True)
    # a rebuild after a data change that changes every spec
    measured(kg + ["load", str(changed_edges(nt)), "--graph", "extra", "--no-progress"])
    row["rebuild_s"], row["rebuild_peak_gb"] = measured(kg + ["closure"], logs)
    row["rebuild_cpu_s"] = CPU[-1]
    row["rebuild_phases"] = phases(logs)
    row["rebuild_triples"] = closure_triples(store)
    row["first_vs_cli"] = closure_s / row["cli_nq_s"]
    row["rebuild_vs_cli"] = row["rebuild_s"] / row["cli_nq_s"]
    row["loadavg"] = [min(LOADS), max(LOADS)]
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
    # rows of sizes not run now are kept from the last results (same layout only)
    before = json.loads(RESULT.read_text())["rows"] if RESULT.exists() else []
    rows = [r for r in before if "cli_nq_s" in r and r["edges"] not in sizes + compute_sizes]
    for n in sizes:  # results are saved after each size, so a cut-short run keeps what it measured
        rows.append(one_size(n))
        report(rows)
    for n in compute_sizes:
        rows.append(compute_only_size(n))
        report(rows)


def report(all_rows: list[dict]) -> None:
    rows = sorted((r for r in all_rows if not r.get("compute_only")), key=lambda r: r["edges"])
    whole = [r for r in rows if "rebuild_s" in r and "compute_peak_gb" in r]  # fits: complete rows only
    a, b = fit([r["edges"] for r in whole], [r["closure_peak_gb"] for r in whole]) if len(whole) > 1 else (0.0, 0.0)
    projected_gb = a + b * WIKIDATA_EDGES
    timed = [r for r in all_rows if "compute_peak_gb" in r]
    ca, cb = fit([r["edges"] for r in timed], [r["compute_peak_gb"] for r in timed]) if len(timed) > 1 else (0.0, 0.0)
    compute_projected_gb = ca + cb * WIKIDATA_EDGES
    at_1m = next((r for r in rows if r["edges"] == 1_000_000), None)
    def f(r: dict, key: str, fmt: str = ".1f", peak: str = "") -> str:
        """A figure of a row, or a dash where a cut-short run did not reach that step."""
        if key not in r:
            return "—"
        return f"{r[key]:{fmt}}" + (f" ({r[peak]:.2f})" if peak else "")

    def ratio(r: dict, a: str, b: str) -> str:
        return f"**{r[a] / r[b]:.2f}x**" if a in r and b in r else "—"

    table = "\n".join(
        f"| {r['edges']:,} | {r['closure_triples']:,} | {f(r, 'cli_nq_s', peak='cli_nq_peak_gb')} | "
        f"{f(r, 'cli_nt_s', peak='cli_nt_peak_gb')} | {f(r, 'closure_s', peak='closure_peak_gb')} | "
        f"{ratio(r, 'closure_s', 'cli_nq_s')} | {ratio(r, 'closure_s', 'cli_nt_s')} | "
        f"{f(r, 'rebuild_s', peak='rebuild_peak_gb')} | {ratio(r, 'rebuild_s', 'cli_nq_s')} | "
        f"{r['loadavg'][0]:.1f}–{r['loadavg'][1]:.1f} |" for r in rows)
    split = "\n".join(
        f"| {r['edges']:,} | {r['load_s']:.1f} | {r['closure_phases']['compute']:.1f} | {r['closure_phases']['write']:.1f} | "
        f"{r['closure_phases']['compact']:.1f} | {r.get('rebuild_phases', {}).get('compute', '—')} | "
        f"{r.get('rebuild_phases', {}).get('write', '—')} | {r.get('rebuild_phases', {}).get('compact', '—')} | "
        f"{f(r, 'compute_s', peak='compute_peak_gb')} | "
        f"{r['store_mb_before']:.0f} -> {r['store_mb_after']:.0f} |" for r in rows)
    cpu_rows = [r for r in rows if "closure_cpu_s" in r]
    cpu = "\n".join(
        f"| {r['edges']:,} | {r['cli_nq_cpu_s']:.1f} | {r['cli_nt_cpu_s']:.1f} | {r['closure_cpu_s']:.1f} | "
        f"**{r['closure_cpu_s'] / r['cli_nq_cpu_s']:.2f}x** | {r['rebuild_cpu_s']:.1f} | "
        f"**{r['rebuild_cpu_s'] / r['cli_nq_cpu_s']:.2f}x** |" for r in cpu_rows)
    cpu_md = ("\nCPU seconds (user + system, all threads) of the same steps: less sensitive than wall time to "
              "other jobs on the shared cores.\n\n| edges | CLI quads | CLI triples | `kgcult closure` | vs CLI quads | "
              "rebuild | rebuild vs CLI quads |\n|---|---|---|---|---|---|---|\n" + cpu + "\n") if cpu_rows else ""
    complete = [r for r in rows if "rebuild_vs_cli" in r]
    per_size = "; ".join(f"{r['edges']:,}: {'met' if r['first_vs_cli'] <= 1.3 and r['rebuild_vs_cli'] <= 1.3 else 'NOT met'}"
                         for r in complete)
    if at_1m:
        verdict = (f"At 1 M edges: first build {at_1m['first_vs_cli']:.2f}x, rebuild {at_1m['rebuild_vs_cli']:.2f}x the CLI's "
                   f"load of the closure quads; peak RSS {max(at_1m['closure_peak_gb'], at_1m['rebuild_peak_gb']):.2f} GiB "
                   f"(target <= 2 GB, 1.86 GiB: {'met' if max(at_1m['closure_peak_gb'], at_1m['rebuild_peak_gb']) <= 2e9 / 2**30 else 'NOT met'}).")
    else:
        verdict = "1 M edges not measured in this run (see sizes): the 1 M targets are not verified."
    fits = (f"Peak RSS fit: {a:.2f} GiB + {b * 1e6:.3f} GiB per million edges; projected for Wikidata's 4 M P279 + "
            f"15 M P131 edges: **{projected_gb:.1f} GiB** (target <= 16 GB, 14.9 GiB: {'met' if projected_gb <= 16e9 / 2**30 else 'NOT met'})."
            if len(whole) > 1 else "No memory projection: fewer than two sizes ran to the end in this run.")
    fits += ("\n" + compute_only_note(all_rows) + f"The compute phase's fit projects **{compute_projected_gb:.1f} GiB** "
             "at Wikidata's size." if len(timed) > 1 else "")
    md = f"""### Closure of generated hierarchies (`gen_hier.py`), side by side with Oxigraph's CLI bulk load of the same closure

Seconds (peak RSS GiB). *CLI quads*: `oxigraph load --location FRESH --file closure.nq`, the closure's triples
each in its spec's graph (the issue's baseline; 6 index entries per quad); *CLI triples*: the same triples as
N-Triples into the default graph (3 index entries, where kgcult now writes them). *Rebuild*: `kgcult closure`
after two new edges that change every spec (a superclass above a P279 root, a territory above a P131 root).
Load average: the 1-minute figure after each step (2 cores shared with other jobs).

| edges | closure triples | CLI quads s | CLI triples s | `kgcult closure` s | vs CLI quads | vs CLI triples | rebuild s | rebuild vs CLI quads | load avg |
|---|---|---|---|---|---|---|---|---|---|
{table}

{cpu_md}
Target (issue 32): first build and rebuild <= 1.3x the CLI's load of the closure quads (wall time): {per_size or 'no size ran to the end'}.
{verdict}

Where the time goes (the build's own log; compact = `optimize()` right after the load), and the compute phase alone in its own process:

| edges | `kgcult load` s | first: compute | write | compact | rebuild: compute | write (difference) | compact | compute alone s (GiB) | store MB before -> after |
|---|---|---|---|---|---|---|---|---|---|
{split}

{fits}
"""
    save("closure", {"rows": all_rows, "rss_fit_gb": {"intercept": a, "per_edge": b},
                     "projected_wikidata_gb": projected_gb, "compute_projected_wikidata_gb": compute_projected_gb}, md)


if __name__ == "__main__":
    main()
