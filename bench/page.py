"""The query page of `kgcult serve` with a 100k-row result, in headless Chromium: the YASGUI page
(YASR's paged table, kgcult's labels on the rows on screen) side by side with the plain page
(every row drawn into one table) as the baseline.

For each page: a fresh Chromium (DevTools protocol) opens it, runs the same SELECT of 100 000
rows through the page, and records the time from Run to the first result rows in the DOM, the
time to the labelled rows (YASGUI page), and then the page's JS heap and DOM node count
(``Performance.getMetrics``). The server's own time for the query (fetched with urllib, the
same JSON) is recorded for reference. Needs /usr/bin/chromium and a vendored YASGUI (make
vendor); the store: --store, else $KGCULT_BENCH_STORE, else /tmp/kgb/store (the stand-in with
its closure). Results: bench/results/page.json and page.md.

    .venv/bin/python bench/page.py [--store PATH] [--rows 100000] [--repeat 2]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import save

from tests.test_serve_browser import CHROMIUM, DevTools  # the tests' CDP client

QUERY = "SELECT ?item ?label WHERE {{ ?item rdfs:label ?label }} LIMIT {rows}"

# In the page: note when the first result row appears, then run the query as the Run button does.
START = {
    "yasgui": """(() => { const t0 = performance.now(); window.__bench = {};
        const obs = new MutationObserver(() => {
          if (!__bench.rows && document.querySelector('#yasgui .yasr table.dataTable tbody tr td')) __bench.rows = performance.now() - t0;
          if (!__bench.labelled && document.querySelector('#yasgui .yasr a.entity .kg-label')) __bench.labelled = performance.now() - t0; });
        obs.observe(document.body, {childList: true, subtree: true});
        kgcult.yasgui.once('queryResponse', () => { __bench.response = performance.now() - t0; });
        kgcult.run(%s); })()""",
    "plain": """(() => { const t0 = performance.now(); window.__bench = {};
        const obs = new MutationObserver(() => {
          if (!__bench.rows && document.querySelector('#result-table tr.row')) __bench.rows = performance.now() - t0; });
        obs.observe(document.body, {childList: true, subtree: true});
        document.getElementById('query').value = %s; document.getElementById('run').click(); })()""",
}
DONE = {"yasgui": "!!(window.__bench && __bench.rows && __bench.labelled)",
        "plain": "document.body.dataset.state === 'done' && !!(window.__bench && __bench.rows)"}
PATH = {"yasgui": "/", "plain": "/plain"}


def chromium(profile: Path):
    proc = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
         f"--user-data-dir={profile}", "--remote-debugging-port=0", "--window-size=1280,900", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    while True:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            raise RuntimeError("chromium exited before DevTools listened")
        m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
        if m:
            break
    targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{m.group(1)}/json/list", timeout=10))
    dt = DevTools(next(t for t in targets if t["type"] == "page")["webSocketDebuggerUrl"])
    dt.sock.settimeout(600)  # a page busy with a big result answers late
    return proc, dt


def renderer_rss_mb(browser_pid: int) -> float:
    """Resident memory of the renderer processes under the Chromium at ``browser_pid`` (the
    page's JS heap and its DOM, which the JS heap figure leaves out)."""
    parent, cmd = {}, {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                cmd[int(d.name)] = (d / "cmdline").read_bytes()
            except (OSError, IndexError, ValueError):
                continue
    mine, grew = {browser_pid}, True
    while grew:
        more = {p for p, pp in parent.items() if pp in mine} - mine
        grew = bool(more)
        mine |= more
    total = 0
    for p in mine:
        if b"--type=renderer" in cmd.get(p, b""):
            try:
                total += next(int(line.split()[1]) for line in Path(f"/proc/{p}/status").read_text().splitlines()
                              if line.startswith("VmRSS:"))
            except (OSError, StopIteration):
                pass
    return round(total / 1024, 1)


def one(url: str, page: str, query: str, scratch: Path) -> dict:
    profile = Path(tempfile.mkdtemp(dir=scratch))
    proc, dt = chromium(profile)
    try:
        dt.call("Page.enable")
        dt.call("Performance.enable")
        dt.call("Page.navigate", url=url + PATH[page])
        ready = "document.body.dataset.ready === 'true'" if page == "yasgui" else "!!document.getElementById('run')"
        dt.wait_for(f"!!document.body && document.readyState === 'complete' && {ready}", 60)
        time.sleep(0.5)
        dt.eval(START[page] % json.dumps(query))
        dt.wait_for(DONE[page], 300)
        time.sleep(1.0)  # let the page settle (garbage collection, late labels)
        dt.call("HeapProfiler.enable")
        dt.call("HeapProfiler.collectGarbage")
        metrics = {m["name"]: m["value"] for m in dt.call("Performance.getMetrics")["metrics"]}
        got = dt.eval("window.__bench")
        rows_on_page = dt.eval("document.querySelectorAll('#yasgui .yasr tbody tr, #result-table tr.row').length")
        return {"first_rows_ms": round(got["rows"]), "response_ms": round(got["response"]) if "response" in got else None,
                "labelled_ms": round(got["labelled"]) if "labelled" in got else None,
                "rows_in_dom": rows_on_page, "js_heap_mb": round(metrics["JSHeapUsedSize"] / 2**20, 1),
                "renderer_rss_mb": renderer_rss_mb(proc.pid),
                "dom_nodes": int(metrics["Nodes"])}
    finally:
        dt.close()
        proc.terminate()
        proc.wait(20)


def server_time(url: str, query: str) -> tuple[float, int, int]:
    body = urllib.parse.urlencode({"query": query, "limit-mode": "truncate"}).encode()
    req = urllib.request.Request(url + "/query", body, {"Accept": "application/sparql-results+json"})
    t0 = time.perf_counter()
    data = urllib.request.urlopen(req, timeout=300).read()
    dt = time.perf_counter() - t0
    return dt, len(json.loads(data)["results"]["bindings"]), len(data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", default=os.environ.get("KGCULT_BENCH_STORE") or "/tmp/kgb/store")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    from kgcult.serve import pages

    if not Path(CHROMIUM).exists() or not pages.vendored():
        print(f"bench/page.py skipped: it needs {CHROMIUM} and a vendored YASGUI (make vendor)", file=sys.stderr)
        return
    from kgcult.serve import ServeConfig, Server
    from kgcult.store import Store

    query = QUERY.format(rows=args.rows)
    scratch = Path(tempfile.mkdtemp(prefix="kgcult-page-bench-"))
    st = Store(Path(args.store), read_only=True)
    srv = Server(st, ServeConfig(port=0)).start()
    try:
        srv_s, n_rows, n_bytes = server_time(srv.url, query)
        runs = {p: [] for p in ("yasgui", "plain")}
        for _ in range(args.repeat):
            for p in runs:  # side by side, alternating
                runs[p].append(one(srv.url, p, query, scratch))
                print(p, runs[p][-1], flush=True)
    finally:
        srv.stop()
        st.close()

    def med(p, k):
        vals = [r[k] for r in runs[p] if r[k] is not None]
        return statistics.median(vals) if vals else None

    summary = {p: {k: med(p, k) for k in runs[p][0]} for p in runs}
    ratio = {k: round(summary["yasgui"][k] / summary["plain"][k], 3)
             for k in ("first_rows_ms", "js_heap_mb", "renderer_rss_mb", "dom_nodes") if summary["plain"][k]}
    data = {"query": query, "rows": n_rows, "json_bytes": n_bytes, "server_s": round(srv_s, 3),
            "runs": runs, "median": summary, "ratio_yasgui_over_plain": ratio}
    y, b = summary["yasgui"], summary["plain"]
    md = f"""## Query page: a {n_rows:,}-row result (bench/page.py)

`{query}` over the stand-in store ({n_bytes / 2**20:.1f} MiB of SPARQL JSON; the server alone
answers it in {srv_s:.2f} s, fetched with urllib). Headless Chromium through the DevTools
protocol, a fresh browser per run, median of {args.repeat}; times from Run to the first result
rows in the DOM; heap after a forced garbage collection.

| page | Run -> response | Run -> first rows | Run -> labelled rows | rows in the DOM | JS heap | renderer RSS | DOM nodes |
|---|---:|---:|---:|---:|---:|---:|---:|
| YASGUI (paged table, labels of the rows on screen) | {y['response_ms'] or 0:.0f} ms | {y['first_rows_ms']:.0f} ms | {y['labelled_ms'] or 0:.0f} ms | {y['rows_in_dom']:.0f} | {y['js_heap_mb']} MB | {y['renderer_rss_mb']} MB | {y['dom_nodes']:.0f} |
| plain page (baseline: every row drawn) | – | {b['first_rows_ms']:.0f} ms | – | {b['rows_in_dom']:.0f} | {b['js_heap_mb']} MB | {b['renderer_rss_mb']} MB | {b['dom_nodes']:.0f} |

Ratios YASGUI / plain: first rows {ratio.get('first_rows_ms')}x, JS heap {ratio.get('js_heap_mb')}x,
renderer RSS {ratio.get('renderer_rss_mb')}x, DOM nodes {ratio.get('dom_nodes')}x. The YASGUI page
draws one page of the table (50 rows) whatever the result's size and holds the parsed response
once; the page asks `limit-mode=truncate`, so a result is cut at 100 000 rows (or `--max-rows`)
and the page's memory is bounded by that cap. "Run -> response" includes the server's time
and the transfer; the page's own work is the difference to "first rows".
"""
    save("page", data, md)


if __name__ == "__main__":
    main()
