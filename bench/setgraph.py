"""The default graph as a set (issue 28): what it costs against the union of named graphs
that kgcult queried before, side by side on one machine.

Writes: the stand-in loaded into graph ``standin`` and its closure built, by this checkout
and by the last commit before the set (BASE, extracted with ``git archive`` and run in a
child process), each into a fresh store: load seconds, closure seconds, store size on disk.
Queries: the same prepared query text (the check query, FmLAMA's per-country query and
origins view query, a label-service query, two counts, an entity's claims) on the set
(Oxigraph's real default graph) and on the base store's union, median of REPEAT runs each,
interleaved.
"""
from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pyoxigraph as ox

from common import ROOT, STANDIN, WORK, child_env, require, save

sys.path.insert(0, str(ROOT))
from kgcult.sparql import wdqs

BASE = "e7dd7d631da70d0878ac5a569ea80e3ac7b0a34f"  # main before the set (issue 28)
REPEAT = 5

WRITE_CHILD = r"""
import json, sys, time
from kgcult.store import Store, hierarchy
s = Store(sys.argv[1])
t0 = time.perf_counter()
s.load([sys.argv[2]], graph="standin")
t1 = time.perf_counter()
hierarchy.build(s)
t2 = time.perf_counter()
s.close()
print(json.dumps({"load_s": t1 - t0, "closure_s": t2 - t1}))
"""

QUERIES = {
    "check: dishes per country": (ROOT / "queries" / "checks" / "dishes-per-country.rq").read_text(),
    "view: fmlama origins": (ROOT / "queries" / "views" / "fmlama-origins.rq").read_text()
    .replace("?dishClass", "wd:Q746549").replace("?countryClass", "wd:Q6256"),
    "FmLAMA per-country (Q17)": (ROOT / "queries" / "wdqs" / "papers" / "fmlama-dishes.rq").read_text()
    .replace("COUNTRY", "Q17"),
    "label service (dishes with an origin)": "SELECT ?dish ?dishLabel ?country WHERE { ?dish wdt:P495 ?country . "
    'SERVICE wikibase:label { bd:serviceParam wikibase:language "en". } }',
    "COUNT of all labels": "SELECT (COUNT(*) AS ?n) WHERE { ?x rdfs:label ?l }",
    "COUNT dishes with a label": "SELECT (COUNT(*) AS ?n) WHERE { ?x kgc:typedAs wd:Q746549 ; rdfs:label ?l }",
    "claims of 3 countries": "SELECT ?x ?p ?o WHERE { VALUES ?x { wd:Q17 wd:Q38 wd:Q668 } ?x ?p ?o }",
}


def base_checkout() -> Path:
    """The base commit's package, queries and ontology, extracted (no git work tree)."""
    dest = WORK / f"setgraph-base-{BASE[:8]}"
    if not (dest / "kgcult").exists():
        dest.mkdir(parents=True, exist_ok=True)
        tar = dest / "src.tar"
        subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(tar), BASE, "kgcult", "ontology", "queries",
                        "dumps"], check=True)
        with tarfile.open(tar) as t:
            t.extractall(dest)
        tar.unlink()
    return dest


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def write(code_root: Path, store: Path) -> dict:
    shutil.rmtree(store, ignore_errors=True)
    env = {**child_env(), "PYTHONPATH": str(code_root)}
    # run from the code's own folder: `python -c` puts the working directory first on
    # sys.path, so from this checkout the base's store would be written by this code
    out = subprocess.run([sys.executable, "-c", WRITE_CHILD, str(store), str(STANDIN)], env=env, check=True,
                         capture_output=True, text=True, cwd=code_root).stdout
    rec = json.loads(out.strip().splitlines()[-1])
    rec["disk_mb"] = round(du(store) / 1e6, 1)
    return rec


def query_times(union_store: Path, set_store: Path) -> list[dict]:
    u, s = ox.Store.read_only(str(union_store)), ox.Store.read_only(str(set_store))
    out = []
    for name, q in QUERIES.items():
        text = wdqs.prepare(q, closure_fresh=True).text
        runs = {"union": [], "set": []}
        rows = {}
        for _ in range(REPEAT):
            for kind, store, kw in (("union", u, {"use_default_graph_as_union": True}), ("set", s, {})):
                t0 = time.perf_counter()
                rows[kind] = sum(1 for _ in store.query(text, prefixes=wdqs.PREFIXES, **kw))
                runs[kind].append(time.perf_counter() - t0)
        if rows["union"] != rows["set"]:
            raise SystemExit(f"{name}: {rows['union']} rows on the union, {rows['set']} on the set")
        rec = {"query": name, "rows": rows["set"], "union_s": round(statistics.median(runs["union"]), 4),
               "set_s": round(statistics.median(runs["set"]), 4)}
        rec["ratio"] = round(rec["set_s"] / rec["union_s"], 2)
        out.append(rec)
        print(rec, flush=True)
    return out


def main() -> None:
    require(STANDIN)
    base = base_checkout()
    stores = {"union": WORK / "setgraph-union", "set": WORK / "setgraph-set"}
    writes = {"union": write(base, stores["union"]), "set": write(ROOT, stores["set"])}
    print(writes, flush=True)
    queries = query_times(stores["union"], stores["set"])
    w_u, w_s = writes["union"], writes["set"]
    ratios = {k: round(w_s[k] / w_u[k], 2) for k in ("load_s", "closure_s", "disk_mb")}
    worst = max(q["ratio"] for q in queries)
    geo = round(statistics.geometric_mean(q["ratio"] for q in queries), 2)
    lines = [
        "### The default graph as a set vs the union of named graphs",
        "",
        f"The stand-in (1,130,087 triples) loaded into graph `standin` and its closure built in a fresh store, "
        f"by this checkout (the set: Oxigraph's real default graph kept as the set of every data and closure "
        f"graph's triples) and by commit `{BASE[:8]}` (queries over the union), each in a child process; "
        "then the same prepared query text on both stores (median of "
        f"{REPEAT}, interleaved; same rows on both).",
        "",
        "| write | union (before) | set | set / union |",
        "|---|---|---|---|",
        f"| `kgcult load` of the stand-in, s | {w_u['load_s']:.1f} | {w_s['load_s']:.1f} | {ratios['load_s']}x |",
        f"| `kgcult closure`, s | {w_u['closure_s']:.1f} | {w_s['closure_s']:.1f} | {ratios['closure_s']}x |",
        f"| store on disk, MB | {w_u['disk_mb']} | {w_s['disk_mb']} | {ratios['disk_mb']}x |",
        "",
        "| query | rows | union, s | set, s | set / union |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {q['query']} | {q['rows']} | {q['union_s']} | {q['set_s']} | {q['ratio']}x |" for q in queries]
    lines += ["", f"Queries on the set: geometric mean **{geo}x** the union's time, worst {worst}x. Writes: "
              f"load {ratios['load_s']}x, closure {ratios['closure_s']}x, disk {ratios['disk_mb']}x (the default "
              "graph's three indexes hold each distinct triple once more)."]
    save("setgraph", {"base_commit": BASE, "writes": writes, "write_ratios": ratios, "queries": queries,
                      "query_ratio_geomean": geo, "query_ratio_worst": worst}, "\n".join(lines))


if __name__ == "__main__":
    main()
