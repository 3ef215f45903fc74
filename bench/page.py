"""The query page of `kgcult serve` with a 100k-row result, in headless Chromium: the YASGUI
page of this branch (paging by request: the first block of 1000 rows, then a count) side by
side with the YASGUI page at the merge base with main (the whole result in one response, held
by the page), each served by its own `kgcult serve` (the package at the merge base unpacked
from git, as bench/serve.py does) over the same store.

For each page: a fresh Chromium (DevTools protocol) opens it, runs the same SELECT of 100 000
rows through the page, and records the time from Run to the first result rows in the DOM, the
time to the labelled rows, to the total row count (this branch), and then the page's JS heap,
renderer RSS and DOM node count (``Performance.getMetrics``); on this branch's page it then
clicks "all rows" (what sorting over the whole result takes) and records the time to all
rows. Needs /usr/bin/chromium and a vendored YASGUI (make vendor); the store: --store, else
$KGCULT_BENCH_STORE, else /tmp/kgb/store (the stand-in with its closure). Results:
bench/results/page.json and page.md.

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

import serve as serve_bench
from common import ROOT, save

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
        const total = setInterval(() => { if (document.body.dataset.total !== undefined) { __bench.total = performance.now() - t0; clearInterval(total); } }, 20);
        kgcult.run(%s); })()""",
    "plain": """(() => { const t0 = performance.now(); window.__bench = {};
        const obs = new MutationObserver(() => {
          if (!__bench.rows && document.querySelector('#result-table tr.row')) __bench.rows = performance.now() - t0; });
        obs.observe(document.body, {childList: true, subtree: true});
        document.getElementById('query').value = %s; document.getElementById('run').click(); })()""",
}
DONE = {"yasgui": "!!(window.__bench && __bench.rows && __bench.labelled && document.body.dataset.state === 'done')",
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
        if dt.eval("!!document.getElementById('pager-range')"):  # paged: the count comes second
            dt.wait_for("document.body.dataset.total !== undefined && __bench.total !== undefined", 300)
        time.sleep(1.0)  # let the page settle (garbage collection, late labels)
        dt.call("HeapProfiler.enable")
        dt.call("HeapProfiler.collectGarbage")
        metrics = {m["name"]: m["value"] for m in dt.call("Performance.getMetrics")["metrics"]}
        got = dt.eval("window.__bench")
        rows_on_page = dt.eval("document.querySelectorAll('#yasgui .yasr tbody tr, #result-table tr.row').length")
        held = dt.eval("(() => { const r = window.kgcult && kgcult.yasgui.getTab().getYasr().results; "
                       "return r && r.getBindings ? r.getBindings().length : null })()")
        out = {"first_rows_ms": round(got["rows"]), "response_ms": round(got["response"]) if "response" in got else None,
               "labelled_ms": round(got["labelled"]) if "labelled" in got else None,
               "total_known_ms": round(got["total"]) if "total" in got else None,
               "rows_in_dom": rows_on_page, "rows_held": held, "js_heap_mb": round(metrics["JSHeapUsedSize"] / 2**20, 1),
               "renderer_rss_mb": renderer_rss_mb(proc.pid),
               "dom_nodes": int(metrics["Nodes"]), "all_rows_ms": None}
        if dt.eval("!!document.getElementById('pager-all')"):
            t0 = time.perf_counter()
            dt.eval("document.getElementById('pager-all').click()")
            dt.wait_for("!document.body.classList.contains('kg-partial') && !!document.querySelector("
                        "'#yasgui .yasr thead th.dt-orderable-asc')", 300)
            out["all_rows_ms"] = round((time.perf_counter() - t0) * 1000)
        return out
    finally:
        dt.close()
        proc.terminate()
        proc.wait(20)


def server_time(url: str, query: str, params: dict | None = None) -> tuple[float, int, int]:
    body = urllib.parse.urlencode({"query": query, "limit-mode": "truncate", **(params or {})}).encode()
    req = urllib.request.Request(url + "/query", body, {"Accept": "application/sparql-results+json"})
    t0 = time.perf_counter()
    data = urllib.request.urlopen(req, timeout=300).read()
    dt = time.perf_counter() - t0
    return dt, len(json.loads(data)["results"]["bindings"]), len(data)


def start_server(root: Path, store: Path) -> tuple[subprocess.Popen, str]:
    port = serve_bench.free_port()
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen([sys.executable, "-m", "kgcult.cli", "--store", str(store), "serve", "--port", str(port),
                             "--quiet", "--timeout", "300"], cwd=root, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    serve_bench.wait_up(url + "/query", proc)
    return proc, url


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
    old_root, base = serve_bench.old_package()
    vendor = old_root / "kgcult" / "serve" / "web" / "vendor"
    if not vendor.exists():
        vendor.symlink_to(ROOT / "kgcult" / "serve" / "web" / "vendor")  # git-ignored: not in the archive
    query = QUERY.format(rows=args.rows)
    scratch = Path(tempfile.mkdtemp(prefix="kgcult-page-bench-"))
    before, after = f"YASGUI page, merge base {base} (whole result in one response)", "YASGUI page, this branch (paged by request)"
    servers = {before: start_server(old_root, Path(args.store)), after: start_server(ROOT, Path(args.store))}
    try:
        srv_s, n_rows, n_bytes = server_time(servers[before][1], query)
        block_s, block_rows, _ = server_time(servers[after][1], query, {"rows": "1000"})
        count_s = server_time(servers[after][1], query, {"rows": "0", "total": "true"})[0]
        runs: dict[str, list] = {p: [] for p in servers}
        for _ in range(args.repeat):
            for p in runs:  # side by side, alternating
                runs[p].append(one(servers[p][1], "yasgui", query, scratch))
                print(p, runs[p][-1], flush=True)
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(30)

    def med(p, k):
        vals = [r[k] for r in runs[p] if r[k] is not None]
        return statistics.median(vals) if vals else None

    summary = {p: {k: med(p, k) for k in runs[p][0]} for p in runs}
    ratio = {k: round(summary[after][k] / summary[before][k], 3)
             for k in ("first_rows_ms", "js_heap_mb", "renderer_rss_mb", "dom_nodes") if summary[before][k]}
    data = {"query": query, "rows": n_rows, "json_bytes": n_bytes, "server_s": round(srv_s, 3),
            "server_block_s": round(block_s, 3), "server_count_s": round(count_s, 3),
            "runs": runs, "median": summary, "ratio_after_over_before": ratio}
    met = summary[after]["first_rows_ms"] < 1000 and (summary[after]["rows_held"] or 0) <= 1000

    def ms(v):
        return "–" if v is None else f"{v:.0f} ms"

    table = "\n".join(
        f"| {p} | {ms(r['response_ms'])} | {ms(r['first_rows_ms'])} | {ms(r['labelled_ms'])} | {ms(r['total_known_ms'])} | "
        f"{r['rows_held']:.0f} | {r['rows_in_dom']:.0f} | {r['js_heap_mb']:.1f} MB | {r['renderer_rss_mb']:.0f} MB | "
        f"{r['dom_nodes']:.0f} | {ms(r['all_rows_ms'])} |" for p, r in summary.items())
    md = f"""## Query page: a {n_rows:,}-row result (bench/page.py)

`{query}` over the stand-in store ({n_bytes / 2**20:.1f} MiB of SPARQL JSON). The server alone
(urllib): the whole result {srv_s:.2f} s; this branch's first block of 1000 rows
{block_s * 1000:.0f} ms ({block_rows} rows), the count request {count_s:.2f} s. Headless Chromium
through the DevTools protocol, a fresh browser per run, the two servers side by side
(alternating), median of {args.repeat}; times from Run; memory after a forced garbage collection,
before "all rows" is clicked.

| page | Run -> response | Run -> first rows | Run -> labelled rows | Run -> total known | rows held | rows in the DOM | JS heap | renderer RSS | DOM nodes | "all rows" click -> all rows |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
{table}

Ratios this branch / merge base: first rows {ratio.get('first_rows_ms')}x, JS heap {ratio.get('js_heap_mb')}x,
renderer RSS {ratio.get('renderer_rss_mb')}x. The page holds one block of 1000 rows whatever the
result's size (memory bounded by the block, not by the result); sorting and filtering over all
rows load them all ("all rows", last column), downloads always hold every row. Target (first
rows in < 1 s, the page holding at most a block): **{'met' if met else 'NOT met'}**.
"""
    save("page", data, md)


if __name__ == "__main__":
    main()
