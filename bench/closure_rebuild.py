"""`kgcult closure` after a data change, on a generated hierarchy (``gen_hier.py``, 100k edges
by default): what a rebuild costs when the hierarchy did not change (a label loaded), when
one P279 edge changed (the four graphs that follow P279 are rewritten, the P131 and P361
ones kept), and when every graph is rewritten (``--force``), each against the first build
of the same store in the same run. Every step is a fresh ``kgcult`` process.

Edges: ``KGCULT_REBUILD_EDGES`` (default 100000).
"""
from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

from common import WORK, save
from closure import hierarchy_file, measured

VENV_BIN = Path(sys.executable).parent
WD = "http://www.wikidata.org/entity/"


def main() -> None:
    edges = int(os.environ.get("KGCULT_REBUILD_EDGES", "100000"))
    nt = hierarchy_file(edges)
    store = WORK / f"closure-rebuild-{edges}"
    shutil.rmtree(store, ignore_errors=True)
    kg = [str(VENV_BIN / "kgcult"), "--store", str(store)]
    label, edge = WORK / "rebuild-label.nt", WORK / "rebuild-edge.nt"
    label.write_text(f'<{WD}Q100000001> <http://www.w3.org/2000/01/rdf-schema#label> "a label"@en .\n')
    subject = nt.open().readline().split(" ", 1)[0]  # a node of the hierarchy
    edge.write_text(f"{subject} <http://www.wikidata.org/prop/direct/P279> <{WD}Q1> .\n")

    load_s, _ = measured(kg + ["load", str(nt), "--no-progress"])
    steps = {}
    steps["first build"] = measured(kg + ["closure"])
    measured(kg + ["load", str(label), "--no-progress"])
    steps["rebuild after a label load (hierarchy unchanged)"] = measured(kg + ["closure"])
    measured(kg + ["load", str(edge), "--no-progress"])
    steps["rebuild after one new P279 edge"] = measured(kg + ["closure"])
    steps["rebuild --force (every graph rewritten)"] = measured(kg + ["closure", "--force"])
    shutil.rmtree(store, ignore_errors=True)

    first = steps["first build"][0]
    rows = "\n".join(f"| {name} | {s:.1f} | {gb:.2f} | {s / first:.3f}x |" for name, (s, gb) in steps.items())
    load = os.getloadavg()[0]
    md = f"""### Closure rebuilds after a data change (`gen_hier.py`, {edges:,} edges; load {load_s:.1f} s)

| step | seconds | peak GB | vs the first build |
|---|---|---|---|
{rows}

A graph whose input (its spec and the edges it follows) is unchanged since it was last built
whole is kept. The others are read back and changed by their difference (pairs gone deleted,
new ones loaded): reading a graph back costs about what writing it did, and far less than
emptying it at Oxigraph's delete rate (about 30k quads/s) and writing it again, which is
what a rebuild did before (one new P279 edge: 3.2x the first build, 1.5 GB peak, measured on a busier machine the same day). Load
average when the run ended: {load:.1f} on {os.cpu_count()} cores.
"""
    save("closure_rebuild", {"edges": edges, "load_s": load_s,
                             "steps": {k: {"seconds": s, "peak_gb": gb} for k, (s, gb) in steps.items()}}, md)
    print(md)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
