"""WDQS drop-in (issue 13): the seed papers' WDQS queries sent unchanged by SPARQLWrapper,
to `kgcult serve` and to `oxigraph serve` over the same stand-in store, side by side.

1. FmLAMA's per-country dish query (``?dish (wdt:P31|wdt:P279)+ wd:Q746549`` joined with
   origin, ingredients and labels, as lizhou21/FmLAMA-master sends it). Target: >= 100x
   faster through `kgcult serve` than through `oxigraph serve`. Oxigraph takes tens of
   seconds per country, so its side is capped (OX_TIMEOUT) and run for a few countries;
   a capped run counts as the cap (the speed-up is then a lower bound).
2. The label service's cost: a query with ``SERVICE wikibase:label`` against the same query
   written with an explicit ``OPTIONAL { ?x rdfs:label ?l FILTER(LANG(?l) = "en") }``, both
   through `kgcult serve`. Target: within 1.5x.
3. The WDQS-example and paper shapes of the compatibility suite (issue 28,
   tests/test_wdqs_compat.py) on the stand-in: each query with ``SERVICE wikibase:label``
   (and named subqueries, hints) against the same query written with explicit OPTIONAL
   label joins, both through `kgcult serve`, sent by SPARQLWrapper. Every pair must give
   the same rows (0 wrong answers); target: each within 2x.

``python bench/wdqs.py labels`` runs part 3 only and keeps parts 1-2 from the last full
run. ``KGCULT_BENCH_STORE=DIR`` uses an existing store with the stand-in and its closure.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
from collections import Counter
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from common import RESULTS, STANDIN, WORK, require, save
from wdqs_shapes import SHAPES, fill

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kgcult.serve import ServeConfig, Server
from kgcult.store import Store, hierarchy

OX_TIMEOUT = 150   # seconds for one query on `oxigraph serve`
COUNTRIES = ["Q17", "Q38", "Q668"]   # Japan, Italy, India: many dishes in the stand-in
REPEAT = 3
SHAPE_REPEAT = 5

PAPERS = Path(__file__).resolve().parents[1] / "queries" / "wdqs" / "papers"
FMLAMA_COUNTRIES = (PAPERS / "fmlama-countries.rq").read_text()

# FmLAMA's per-country query as its script sends it (PREFIXes added for oxigraph serve,
# which predeclares none; kgcult serve needs none). GROUP BY ?labelLang, a SELECT alias,
# is left out: Oxigraph rejects it (kgcult accepts it as WDQS does).
PREFIXES = """PREFIX wd: <http://www.wikidata.org/entity/>
PREFIX wdt: <http://www.wikidata.org/prop/direct/>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX schema: <http://schema.org/>
"""
FMLAMA_DISHES = PREFIXES + (PAPERS / "fmlama-dishes.rq").read_text().replace(
    "GROUP BY ?dish ?dishLabel ?description ?labelLang", "GROUP BY ?dish ?dishLabel ?description")

LABEL_SERVICE = """SELECT ?dish ?dishLabel ?country WHERE {
  ?dish wdt:P495 ?country .
  SERVICE wikibase:label { bd:serviceParam wikibase:language "[AUTO_LANGUAGE]". }
}"""
LABEL_EXPLICIT = """SELECT ?dish ?dishLabel ?country WHERE {
  ?dish wdt:P495 ?country .
  OPTIONAL { ?dish rdfs:label ?dishLabel FILTER(LANG(?dishLabel) = "en") }
}"""


def sparqlwrapper(url: str, query: str, timeout: float) -> list[dict]:
    from SPARQLWrapper import JSON, SPARQLWrapper

    sw = SPARQLWrapper(url)
    sw.setQuery(query)
    sw.setReturnFormat(JSON)
    sw.setTimeout(timeout)
    return sw.query().convert()["results"]["bindings"]


def timed_query(url: str, query: str, timeout: float) -> tuple[float, int | None]:
    """(seconds, rows); rows None when the query ran past ``timeout``."""
    t0 = time.perf_counter()
    try:
        rows = len(sparqlwrapper(url, query, timeout))
    except (TimeoutError, socket.timeout, OSError) as e:
        if "timed out" not in str(e):
            raise
        return time.perf_counter() - t0, None
    return time.perf_counter() - t0, rows


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def store_path() -> Path:
    if os.environ.get("KGCULT_BENCH_STORE"):
        return Path(os.environ["KGCULT_BENCH_STORE"])
    loc = WORK / "wdqs-store"
    if loc.exists():
        with Store(loc, read_only=True) as s:
            if s.triple_count() > 1_000_000 and not s.closure_stale:
                return loc
        shutil.rmtree(loc)
    with Store(loc) as s:
        s.load([require(STANDIN)], graph="standin")
        hierarchy.build(s)
    return loc


def label_cost(kg_url: str) -> dict:
    """Part 2: the label service against one explicit OPTIONAL label join."""
    service, explicit = [], []
    for _ in range(5):  # alternating, so both see the same machine
        service.append(timed_query(kg_url, LABEL_SERVICE, 120))
        explicit.append(timed_query(kg_url, LABEL_EXPLICIT, 120))
    if service[0][1] != explicit[0][1]:
        raise SystemExit(f"label service gave {service[0][1]} rows, explicit joins {explicit[0][1]}")
    label = {"rows": service[0][1], "service_s": round(statistics.median(t for t, _ in service), 3),
             "explicit_s": round(statistics.median(t for t, _ in explicit), 3)}
    label["ratio"] = round(label["service_s"] / label["explicit_s"], 2)
    return label


def _norm_rows(bindings: list[dict]) -> Counter:
    """Rows as comparable tuples; values joined by ", " (aliases) in sorted order."""
    out = Counter()
    for b in bindings:
        row = []
        for k, v in b.items():
            value = v["value"]
            if k.endswith("AltLabel"):
                value = ", ".join(sorted(value.split(", ")))
            row.append((k, v["type"] == "uri", value, v.get("xml:lang", "")))
        out[tuple(sorted(row))] += 1
    return out


def label_shapes(kg_url: str, store: Store) -> list[dict]:
    """Part 3: each shape with the label service against its explicit twin, both through
    `kgcult serve`, alternating, median of SHAPE_REPEAT; the rows compared."""
    with_origin = [r["d"].value for r in store.query(
        "SELECT DISTINCT ?d WHERE { ?d wdt:P495 ?c } ORDER BY ?d LIMIT 150")]
    ingredients = [r["i"].value for r in store.query(
        "SELECT DISTINCT ?i WHERE { ?d wdt:P527 ?i FILTER NOT EXISTS { ?i wdt:P495 ?o } } ORDER BY ?i LIMIT 50")]
    entities = with_origin + ingredients
    out = []
    for name, (service_q, explicit_q) in SHAPES.items():
        service_q, explicit_q = fill(service_q, entities), fill(explicit_q, entities)
        s_rows = _norm_rows(sparqlwrapper(kg_url, service_q, 120))
        e_rows = _norm_rows(sparqlwrapper(kg_url, explicit_q, 120))
        s_times, e_times = [], []
        for _ in range(SHAPE_REPEAT):
            s_times.append(timed_query(kg_url, service_q, 120)[0])
            e_times.append(timed_query(kg_url, explicit_q, 120)[0])
        row = {"shape": name, "rows": sum(s_rows.values()), "wrong_rows": sum(((s_rows - e_rows) + (e_rows - s_rows)).values()),
               "service_s": round(statistics.median(s_times), 4), "explicit_s": round(statistics.median(e_times), 4)}
        row["ratio"] = round(row["service_s"] / row["explicit_s"], 2)
        print(row, flush=True)
        out.append(row)
    return out


def markdown(data: dict) -> str:
    per_country, label = data["fmlama_per_country"], data["label_service"]
    lines = ["### WDQS drop-in: the seed papers' queries through `kgcult serve` vs `oxigraph serve`", "",
             f"Stand-in store (1.13 M triples, closure built), both servers over the same directory; queries sent "
             f"unchanged by SPARQLWrapper. FmLAMA's country query: {data['fmlama_countries_rows']} rows"
             f"{' (this table measured ' + data['parts_1_2_measured'] + ')' if data.get('parts_1_2_measured') else ''}.",
             "",
             "| country | rows | `oxigraph serve`, s | `kgcult serve`, s (median of 3) | speed-up |",
             "|---|---|---|---|---|"]
    for r in per_country:
        ox_cell = f">= {r['oxigraph_s']} (capped)" if r["capped"] else f"{r['oxigraph_s']}"
        lines.append(f"| {r['country']} | {r['rows']} | {ox_cell} | {r['kgcult_s']} | "
                     f"{'>= ' if r['capped'] else ''}{r['speedup']}x |")
    worst = min(r["speedup"] for r in per_country)
    lines += ["", f"FmLAMA's per-country query: smallest speed-up **{worst}x** (target >= 100x: "
              f"{'met' if data['speedup_met'] else 'NOT met'}).", "",
              f"Label query measured {data.get('label_shapes_measured') or 'with the table above'}"
              f"{' on a store of ' + data['label_store'] + ' (the stand-in and the DLAMA supplement)' if data.get('label_store') else ''}:", "",
              "| label query (dishes with an origin) | rows | s (median of 5, alternating) |", "|---|---|---|",
              f"| `SERVICE wikibase:label` | {label['rows']} | {label['service_s']} |",
              f"| explicit `OPTIONAL` label join | {label['rows']} | {label['explicit_s']} |", "",
              f"Label service cost: **{label['ratio']}x** the explicit join (target <= 1.5x: "
              f"{'met' if data['label_met'] else 'NOT met'})."]
    shapes = data.get("label_shapes")
    if shapes:
        worst_shape = max(r["ratio"] for r in shapes)
        wrong = sum(r["wrong_rows"] for r in shapes)
        lines += ["", "#### The compatibility suite's shapes on the stand-in (issue 28)", "",
                  f"Measured {data.get('label_shapes_measured', '')}"
                  f"{' on a store of ' + data['label_store'] if data.get('label_store') else ''}. Each query with the label service (named "
                  "subqueries, hints) against the same query with explicit `OPTIONAL` label joins, both through "
                  f"`kgcult serve`, sent by SPARQLWrapper, alternating, median of {SHAPE_REPEAT}; rows compared.", "",
                  "| shape | rows | wrong rows | service, s | explicit joins, s | ratio |", "|---|---|---|---|---|---|"]
        for r in shapes:
            lines.append(f"| {r['shape']} | {r['rows']} | {r['wrong_rows']} | {r['service_s']} | "
                         f"{r['explicit_s']} | {r['ratio']}x |")
        lines += ["", f"Wrong answers: **{wrong}** rows (target 0: {'met' if wrong == 0 else 'NOT met'}). "
                  f"Largest ratio **{worst_shape}x** (target <= 2x: {'met' if worst_shape <= 2 else 'NOT met'})."]
    return "\n".join(lines)


def main() -> None:
    labels_only = sys.argv[1:] == ["labels"]
    loc = store_path()
    if labels_only:
        data = json.loads((RESULTS / "wdqs.json").read_text())
        data.setdefault("parts_1_2_measured", data["machine"]["date"])
        data.pop("machine", None)
        store = Store(loc, read_only=True)
        srv = Server(store, ServeConfig(port=0, timeout=OX_TIMEOUT)).start()
        try:
            data["label_service"] = label_cost(srv.url + "/query")
            data["label_met"] = data["label_service"]["ratio"] <= 1.5
            data["label_shapes"] = label_shapes(srv.url + "/query", store)
        finally:
            srv.stop()
            store.close()
        data["label_shapes_measured"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        with Store(loc, read_only=True) as s:
            data["label_store"] = f"{s.triple_count() / 1e6:.2f} M triples, load average {os.getloadavg()[0]:.1f}"
        save("wdqs", data, markdown(data))
        return
    port = free_port()
    oxigraph = str(Path(sys.executable).with_name("oxigraph"))
    # the store's default graph is the set of its graphs' triples (docs/store.md): served as
    # it is; --union-default-graph would add each named graph's copy to it
    ox = subprocess.Popen([oxigraph, "serve-read-only", "--location", str(loc), "--bind", f"127.0.0.1:{port}"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ox_url = f"http://127.0.0.1:{port}/query"
    store = Store(loc, read_only=True)
    srv = Server(store, ServeConfig(port=0, timeout=OX_TIMEOUT)).start()
    kg_url = srv.url + "/query"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        countries = sparqlwrapper(kg_url, FMLAMA_COUNTRIES, 60)
        country_rows = len(countries)
        per_country = []
        for qid in COUNTRIES:
            q = FMLAMA_DISHES.replace("COUNTRY", qid)
            kg_runs = [timed_query(kg_url, q, OX_TIMEOUT) for _ in range(REPEAT)]
            kg_s = statistics.median(t for t, _ in kg_runs)
            ox_s, ox_rows = timed_query(ox_url, q, OX_TIMEOUT)
            row = {"country": qid, "rows": kg_runs[0][1], "kgcult_s": round(kg_s, 3),
                   "oxigraph_s": round(ox_s, 1), "oxigraph_rows": ox_rows, "capped": ox_rows is None,
                   "speedup": round(ox_s / kg_s, 1)}
            if ox_rows is not None and ox_rows != row["rows"]:
                raise SystemExit(f"{qid}: kgcult serve gave {row['rows']} rows, oxigraph serve {ox_rows}")
            per_country.append(row)
            print(row, flush=True)
        label = label_cost(kg_url)
        shapes = label_shapes(kg_url, store)
    finally:
        srv.stop()
        store.close()
        ox.terminate()
        ox.wait(10)

    worst = min(r["speedup"] for r in per_country)
    data = {"fmlama_per_country": per_country, "fmlama_countries_rows": country_rows,
            "label_service": label, "target_speedup": 100, "speedup_met": worst >= 100,
            "target_label_ratio": 1.5, "label_met": label["ratio"] <= 1.5, "label_shapes": shapes,
            "label_shapes_measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    save("wdqs", data, markdown(data))


if __name__ == "__main__":
    main()
