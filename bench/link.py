"""Benchmark: `kgcult link` vs a MakiEval-style linker, on the stand-in graph and its dev set.

One run measures, side by side on the same machine:

* the label index: build time, peak memory (RSS of a child process that only builds it),
  size on disk, load time;
* kgcult's linker throughput on ../shared/standin/link-dev.jsonl, single process:
  the exact/normalized path (stages exact+normalized), the default pipeline (+ English
  fallback, any language, stem, compound, fuzzy, anyfuzzy, tokens, semantic; the semantic stage's
  name vectors built first and cached on disk), and with the embedding fallback on;
* the default pipeline per kind of mention (the dev set's ``source`` case), with the
  issue-17 targets: withheld-synonym recall, ambiguous-exact accuracy;
* a fresh process (`kgcult link -i ... -o ...`) on 3,000 mixed mentions from
  ../shared/scale/gen_mentions.py, after one run that leaves the on-disk caches behind;
* a MakiEval-style linker (MakiEval §3.3 as DESIGN.md describes it) against
  `oxigraph serve` on 127.0.0.1 holding the same graph, through SPARQLWrapper: per mention
  a label/altLabel SELECT in the prompt language (lower-case retry, then English), one
  ASK per candidate `?item (wdt:P31|wdt:P279)* ?root` over the topic's roots, a random
  pick (seeded) among the survivors, and a metadata SELECT (description, P495, P17);
* linking quality of all of them on the dev set (precision, recall, F1).

Writes bench/results/link.json and bench/results/link.md.

    .venv/bin/python bench/link.py                     # loads the stand-in into /tmp
    .venv/bin/python bench/link.py --store /tmp/kgcult-standin-store   # reuse a store
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.common import load_in_child  # noqa: E402
SHARED = ROOT.parent / "shared" / "standin"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def speed_gauge():
    """Seconds for a fixed pure-Python loop (2 M dict inserts): ~0.1 s on an idle core;
    higher when the shared CPUs are busy. Recorded with the figures."""
    import timeit

    return round(timeit.timeit("d = {}\nfor i in range(100): d[i] = i", number=20000), 3)


def loadavg():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


# -- the store --------------------------------------------------------------------------

def prepare_store(args):
    from kgcult.store import hierarchy
    from kgcult.store import Store

    if args.store:
        return Store(args.store, read_only=True)
    loc = Path(args.workdir) / "store"
    s = Store(loc)
    if s.triple_count() < 1_000_000:  # loaded by a child: this process measures children
        s.close()
        log(f"loading {args.standin} into {loc} ...")
        load_in_child(loc, [args.standin], "standin")
        s = Store(loc)
    hierarchy.ensure_closure(s)
    return s


# -- index build: time and memory, in a child process ------------------------------------

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from kgcult.store import Store
from kgcult.link.index import reader as lx
s = Store(sys.argv[2], read_only=True)
chash = lx.content_hash(s)
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
ix = lx.build(s, chash)
secs = time.perf_counter() - t
rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"build_seconds": round(secs, 2), "rss_before_mib": round(rss0 / 1024, 1),
                  "rss_peak_mib": round(rss1 / 1024, 1), "entities": len(ix.qids),
                  "languages": len(ix.langs), "names": sum(len(d) for d in ix.exact.values())}))
"""


def index_figures(store):
    from kgcult.link.index import reader as lx

    if not store.read_only:
        store.flush()
    loc = store.location
    # a child cannot open a store another process holds writable: close ours around it
    reopen = not store.read_only
    if reopen:
        store.close()
    out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT), loc], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(out.stderr)
    figs = json.loads(out.stdout.strip().splitlines()[-1])
    from kgcult.store import Store

    store = Store(loc, read_only=not reopen) if reopen else store
    ix = lx.load_or_build(store)  # persisted now (built here if absent)
    path = lx.index_path(store, ix.content_hash, ix.topics)
    t = time.perf_counter()
    lx.LabelIndex(path).close()  # opened memory-mapped: nothing is read up front
    figs["load_seconds"] = round(time.perf_counter() - t, 2)
    figs["file_mib"] = round(lx.disk_bytes(path) / 2**20, 1)
    return figs, store, ix


# -- kgcult throughput ---------------------------------------------------------------------

def throughput(linker, rows, passes):
    t = time.perf_counter()
    res = list(linker.link_many(rows))
    cold = len(rows) / (time.perf_counter() - t)
    t = time.perf_counter()
    n = 0
    for _ in range(passes):
        for _r in linker.link_many(rows):
            n += 1
    warm = n / (time.perf_counter() - t)
    return res, round(cold), round(warm)


def quality(gold, results):
    from kgcult.eval.linking import score

    rep, _ = score(gold, results)
    return rep["overall"]


def by_kind(gold, results):
    from kgcult.eval.linking import score

    rep, _ = score(gold, results)
    return {k: {x: v[x] for x in ("precision", "recall", "f1", "tp", "fp", "positives")}
            for k, v in rep.get("by_case", {}).items()}


def fresh_process(store_path, workdir, n=3000):
    """mentions/s of `kgcult link -i` in a new process (the second of two runs: the first
    leaves the label index, pools and name vectors on disk)."""
    gen = ROOT.parent / "shared" / "scale" / "gen_mentions.py"
    if not gen.exists() or not store_path:
        return None
    src = Path(workdir) / f"mixed-{n}.jsonl"
    subprocess.run([sys.executable, str(gen), str(n), str(src)], check=True, capture_output=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    exe = Path(sys.executable).parent / "kgcult"
    cmd = [str(exe) if exe.exists() else "kgcult", "--store", str(store_path), "link",
           "-i", str(src), "-o", str(Path(workdir) / "mixed-out.jsonl")]
    runs = []
    for _ in range(2):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env)
        runs.append(time.perf_counter() - t)
    return {"mentions": n, "first_run_seconds": round(runs[0], 1), "seconds": round(runs[1], 1),
            "per_s": round(n / runs[1], 1)}


# -- the MakiEval-style baseline -----------------------------------------------------------

Q_LABEL = """SELECT DISTINCT ?item WHERE { { ?item rdfs:label ?l } UNION { ?item skos:altLabel ?l } }"""
Q_ASK = """ASK { ?item (wdt:P31|wdt:P279)* ?root }"""
Q_META = """SELECT ?desc ?origin ?country WHERE {
  OPTIONAL { ?item schema:description ?desc FILTER(LANG(?desc) = ?lang) }
  OPTIONAL { ?item wdt:P495 ?origin } OPTIONAL { ?item wdt:P17 ?country } }"""
PREFIXES = ("PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"
            "PREFIX skos: <http://www.w3.org/2004/02/skos/core#>\n"
            "PREFIX schema: <http://schema.org/>\n"
            "PREFIX wdt: <http://www.wikidata.org/prop/direct/>\n")


class MakiEvalLinker:
    """MakiEval §3.3 as its code does it, one HTTP round trip per query."""

    def __init__(self, url, topics, seed=0):
        from SPARQLWrapper import JSON, SPARQLWrapper

        self.sw = SPARQLWrapper(url)
        self.sw.setReturnFormat(JSON)
        self.roots = {t.name: t.roots for t in topics}
        self.rng = random.Random(seed)
        self.queries = 0

    def _run(self, q, bindings=None, rows=None):
        from kgcult.sparql.query_text import bind_values

        self.sw.setQuery(PREFIXES + bind_values(q, bindings, rows))
        self.queries += 1
        return self.sw.query().convert()

    def candidates(self, text, lang):
        from pyoxigraph import Literal

        r = self._run(Q_LABEL, {"l": Literal(text, language=lang)})
        return sorted({b["item"]["value"] for b in r["results"]["bindings"]})

    def link(self, mention, lang, topic):
        from pyoxigraph import NamedNode

        cands = self.candidates(mention, lang)
        if not cands and mention.lower() != mention:
            cands = self.candidates(mention.lower(), lang)
        if not cands and lang != "en":
            cands = self.candidates(mention, "en") or self.candidates(mention.lower(), "en")
        roots = [NamedNode("http://www.wikidata.org/entity/" + q) for q in self.roots[topic or "food"]]
        valid = []
        for c in cands:
            ok = self._run(Q_ASK, rows=(["item", "root"], [[NamedNode(c), r] for r in roots]))["boolean"]
            if ok:
                valid.append(c)
        if not valid:
            return None
        pick = self.rng.choice(valid)
        self._run(Q_META, {"item": NamedNode(pick), "lang": lang})
        return pick.rsplit("/", 1)[-1]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_oxigraph(standin, workdir):
    exe = Path(sys.executable).with_name("oxigraph")
    exe = str(exe) if exe.exists() else shutil.which("oxigraph")
    loc = Path(workdir) / "oxserve"
    if not (loc / "CURRENT").exists():
        log("loading the stand-in into an `oxigraph serve` location ...")
        t = time.perf_counter()
        subprocess.run([exe, "load", "--location", str(loc), "--file", str(standin)], check=True,
                       capture_output=True)
        log(f"  {time.perf_counter() - t:.0f} s")
    port = free_port()
    proc = subprocess.Popen([exe, "serve", "--location", str(loc), "--bind", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)
            return proc, f"http://127.0.0.1:{port}/query"
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(proc.stderr.read().decode()) from None
            time.sleep(0.2)
    proc.terminate()
    raise SystemExit("oxigraph serve did not start")


# -- main ----------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", help="an existing store holding the stand-in (opened read-only)")
    ap.add_argument("--standin", default=str(SHARED / "wikidata-standin.nt.gz"))
    ap.add_argument("--dev", default=str(SHARED / "link-dev.jsonl"))
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "kgcult-bench-link"))
    ap.add_argument("--passes", type=int, default=5, help="warm passes over the dev set")
    ap.add_argument("--baseline-n", type=int, default=0, help="mentions for the baseline (0 = all)")
    ap.add_argument("--no-embeddings", action="store_true")
    ap.add_argument("--no-baseline", action="store_true", help="skip the MakiEval-style HTTP baseline")
    ap.add_argument("--no-fresh", action="store_true", help="skip the fresh-process run on mixed mentions")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "link"))
    args = ap.parse_args()
    for p in (args.standin, args.dev):
        if not Path(p).exists():
            raise SystemExit(f"{p} not found: ../shared (the stand-in data) is not beside this checkout")
    Path(args.workdir).mkdir(parents=True, exist_ok=True)
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # kgcult's messages on stderr

    from kgcult.link import Linker
    from kgcult.eval.linking import read_gold

    result = {"date": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
              "machine": {"platform": platform.platform(), "python": platform.python_version(),
                          "cpus": os.cpu_count(), "loadavg_start": loadavg(),
                          "gauge_start_s": speed_gauge()}}
    gold = read_gold(args.dev)
    rows = [{"mention": g["mention"], "lang": g.get("lang") or "en", "topic": g.get("topic")} for g in gold]
    result["dev"] = {"path": args.dev, "mentions": len(rows)}

    store = prepare_store(args)
    log("index build (child process) ...")
    figs, store, ix = index_figures(store)
    result["index"] = figs
    log(f"  {figs}")

    runs = {}
    exact = Linker(ix, store=store, stages=("exact", "normalized"))
    res, cold, warm = throughput(exact, rows, args.passes)
    runs["exact+normalized"] = {"cold_per_s": cold, "warm_per_s": warm, **quality(gold, res)}
    log(f"exact+normalized: {runs['exact+normalized']}")
    list(Linker(ix, store=store).link_many(rows))  # leaves the semantic name vectors on disk
    default = Linker(ix, store=store)
    res, cold, warm = throughput(default, rows, args.passes)
    runs["default"] = {"stages": list(default.stages), "cold_per_s": cold, "warm_per_s": warm,
                       **quality(gold, res)}
    result["default_by_kind"] = by_kind(gold, res)
    log(f"default: {runs['default']}")
    if not args.no_embeddings:
        prep_linker = Linker(ix, store=store, embeddings=True)
        t = time.perf_counter()
        list(prep_linker.link_many(rows))  # builds (or loads) the name vectors of every pool needed
        prep = time.perf_counter() - t
        # a fresh linker: its first pass loads the cached name vectors, builds the faiss
        # indexes and encodes the mentions (cold); later passes reuse them (warm)
        emb = Linker(ix, store=store, embeddings=True)
        emb.stage("embedding").encoder = prep_linker.stage("embedding").encoder  # loading the model is not linking
        res, cold, warm = throughput(emb, rows, max(1, args.passes // 2))
        runs["with-embedding"] = {"stages": list(emb.stages), "first_pass_seconds_incl_vectors": round(prep, 1),
                                  "cold_per_s": cold, "warm_per_s": warm, **quality(gold, res)}
        log(f"with embedding: {runs['with-embedding']}")
    result["kgcult"] = runs

    if not args.no_fresh:
        log("fresh process on mixed mentions ...")
        result["fresh_process"] = fresh_process(getattr(store, "location", None), args.workdir)
        log(f"  {result['fresh_process']}")
    if args.no_baseline:
        return finish(result, runs, args)
    proc, url = start_oxigraph(args.standin, args.workdir)
    try:
        base = MakiEvalLinker(url, ix.topics)
        sub = rows[: args.baseline_n] if args.baseline_n else rows
        base.link(sub[0]["mention"], sub[0]["lang"], sub[0]["topic"])  # warm the connection
        base.queries = 0
        t = time.perf_counter()
        preds = [base.link(r["mention"], r["lang"], r["topic"]) for r in sub]
        secs = time.perf_counter() - t
    finally:
        proc.terminate()
        proc.wait(10)
    bres = [{"qid": p, "status": "resolved" if p else "unresolved", "match": None, "candidates": []}
            for p in preds]
    result["makieval_style"] = {"endpoint": "oxigraph serve on 127.0.0.1", "mentions": len(sub),
                                "seconds": round(secs, 2), "per_s": round(len(sub) / secs, 1),
                                "queries": base.queries, **quality(gold[: len(sub)], bres)}
    log(f"makieval-style: {result['makieval_style']}")
    return finish(result, runs, args)


def finish(result, runs, args):
    b = result.get("makieval_style")
    if b:
        bps = b["per_s"]
        result["ratios"] = {k: round(v["warm_per_s"] / bps, 1) for k, v in runs.items()}
        result["ratios_cold"] = {k: round(v["cold_per_s"] / bps, 1) for k, v in runs.items()}
    result["machine"]["loadavg_end"] = loadavg()
    result["machine"]["gauge_end_s"] = speed_gauge()
    d = runs["default"]
    kinds = result.get("default_by_kind", {})
    targets = {
        "exact/normalized >= 20000 mentions/s (warm)": runs["exact+normalized"]["warm_per_s"] >= 20000,
        "F1 >= 0.90 with P >= 0.93 (default stages, dev set)": d["f1"] >= 0.9 and d["precision"] >= 0.93,
        "withheld-synonym recall >= 0.70": kinds.get("withheld-synonym", {}).get("recall", 0) >= 0.70,
        "ambiguous-exact accuracy >= 0.80": kinds.get("ambiguous-exact", {}).get("recall", 0) >= 0.80,
    }
    if b:
        targets[">= 100x the MakiEval-style linker"] = result["ratios"]["exact+normalized"] >= 100
    if result.get("fresh_process"):
        targets["fresh process >= 2000 mentions/s on 3,000 mixed mentions"] = result["fresh_process"]["per_s"] >= 2000
    if "with-embedding" in runs:
        targets["with embedding >= 1000 mentions/s"] = runs["with-embedding"]["warm_per_s"] >= 1000
    result["targets_met"] = targets

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    out.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))


def markdown(r):
    k = r["kgcult"]
    b = r.get("makieval_style")
    ix = r["index"]
    ratios = r.get("ratios", {})
    lines = [
        "## Entity linking (`kgcult link`) vs a MakiEval-style linker",
        "",
        f"Machine: {r['machine']['platform']}, {r['machine']['cpus']} CPUs (shared; load average "
        f"{r['machine']['loadavg_start']} at start, {r['machine']['loadavg_end']} at end; a fixed "
        f"pure-Python loop took {r['machine']['gauge_start_s']} s / {r['machine']['gauge_end_s']} s, "
        f"about 0.1 s on an idle core), Python {r['machine']['python']}. Date: {r['date']}. "
        f"Script: `bench/link.py`.",
        "",
        f"Data: the stand-in graph (../shared/standin, 1.13 M triples) and its dev set "
        f"({r['dev']['mentions']} mentions). Single process. `cold` = first pass over the dev set of a "
        f"fresh linker (label index loaded; fuzzy/token pools, faiss indexes and mention vectors "
        f"built in that pass; name vectors read from the disk cache), `warm` = later passes.",
        "",
        "| linker | mentions/s (warm) | mentions/s (cold) | P | R | F1 | × MakiEval-style (warm) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, v in k.items():
        lines.append(f"| kgcult {name} | {v['warm_per_s']:,} | {v['cold_per_s']:,} | {v['precision']:.3f} | "
                     f"{v['recall']:.3f} | {v['f1']:.3f} | {ratios.get(name, '')} |")
    if b:
        lines.append(f"| MakiEval-style (SPARQLWrapper → oxigraph serve, 127.0.0.1; {b['queries']} queries) | "
                     f"{b['per_s']:,} | | {b['precision']:.3f} | {b['recall']:.3f} | {b['f1']:.3f} | 1 |")
    if r.get("default_by_kind"):
        lines += ["", "Default pipeline per kind of mention (dev set):", "",
                  "| kind | P | R | F1 | tp | fp | positives |", "|---|---:|---:|---:|---:|---:|---:|"]
        for kind, v in r["default_by_kind"].items():
            lines.append(f"| {kind} | {v['precision']:.3f} | {v['recall']:.3f} | {v['f1']:.3f} | "
                         f"{v['tp']} | {v['fp']} | {v['positives']} |")
    fp = r.get("fresh_process")
    if fp:
        lines += ["", f"Fresh process (`kgcult link -i`, 3,000 mixed mentions of gen_mentions.py, caches on "
                      f"disk from a first run of {fp['first_run_seconds']} s): {fp['seconds']} s, "
                      f"{fp['per_s']:,} mentions/s end to end (process start, index load, pools, model)."]
    lines += [
        "",
        f"Label index: {ix['names']:,} distinct (language, name) pairs of {ix['entities']:,} entities "
        f"in {ix['languages']} languages; built in {ix['build_seconds']} s, peak RSS {ix['rss_peak_mib']} MiB "
        f"({ix['rss_before_mib']} MiB before the build); {ix['file_mib']} MiB on disk, loaded in "
        f"{ix['load_seconds']} s.",
    ]
    if "with-embedding" in k:
        lines.append(f"Embedding fallback: first pass incl. encoding the names of the pools it needs: "
                     f"{k['with-embedding']['first_pass_seconds_incl_vectors']} s (vectors cached on disk).")
    lines += ["", "Targets:", ""]
    for t, ok in r["targets_met"].items():
        lines.append(f"- {t}: {'met' if ok else 'NOT met'}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
