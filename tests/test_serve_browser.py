"""The query page in headless Chromium: it loads, runs an example query against
`kgcult serve` and shows the expected rows with entity labels; a screenshot is saved.

Needs the Debian packages chromium and chromium-driver (/usr/bin/chromium); the test
installs nothing and skips with a message when they are absent.
"""
from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kgcult.serve.pages import EXAMPLES

from tests.conftest import build_store, running_server

CHROMIUM = "/usr/bin/chromium"

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(),
    reason=f"{CHROMIUM} not found: install the Debian packages chromium and chromium-driver "
           "(apt-get install -y chromium chromium-driver) to run the browser test",
)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(build_store(tmp_path_factory.mktemp("browser") / "store")) as srv:
        yield srv


def chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-dev-shm-usage", f"--user-data-dir={profile}",
           # wait (in virtual time) until the page's fetches are done
           "--virtual-time-budget=15000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_page_runs_an_example_query(server, tmp_path):
    url = server.url + "/plain#example=dishes-per-country"
    dom = chromium(["--dump-dom", url], tmp_path / "profile")
    assert dom.returncode == 0, dom.stderr[-2000:]
    page = dom.stdout
    # the example ran in the page: a results table with one row per country, labelled
    assert 'id="result-table"' in page, page[-3000:]
    rows = re.findall(r'<tr class="row">(.*?)</tr>', page)
    cells = {re.sub(r"<[^>]+>", "", r.split("</td>")[0]).strip(): re.sub(r"<[^>]+>", "", r.split("</td>")[1]).strip()
             for r in rows}
    assert cells == {"Japan Q17": "2", "Italy Q38": "2", "South Korea Q884": "2"}, cells
    assert '<a href="/entity/Q17?lang=en" class="entity">' in page
    assert "3 rows in" in page
    # the example buttons are there
    for ex in EXAMPLES:
        assert f'id="example-{ex["id"]}"' in page

    shot = tmp_path / "query-page.png"
    r = chromium(["--window-size=1280,900", f"--screenshot={shot}", url], tmp_path / "profile2")
    assert r.returncode == 0 and shot.exists() and shot.stat().st_size > 5000, r.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"screenshot: {shot}")


@pytest.mark.slow
def test_page_query_from_a_link_and_the_entity_page(server, tmp_path):
    # a query from the URL, as a link would carry it
    q = "SELECT ?dish WHERE { ?dish wdt:P495 wd:Q884 } ORDER BY ?dish"
    from urllib.parse import quote

    dom = chromium(["--dump-dom", server.url + "/plain#query=" + quote(q)], tmp_path / "p1")
    assert dom.returncode == 0
    assert "bibimbap" in dom.stdout and "kimchi jjigae" in dom.stdout
    card = chromium(["--dump-dom", server.url + "/entity/Q46383?lang=ja"], tmp_path / "p2")
    text = html.unescape(card.stdout)
    assert "寿司" in text and "日本 (Q17)" in text and "typedAs" in text  # labels in Japanese
    shot = tmp_path / "entity-page.png"
    chromium(["--window-size=1000,800", f"--screenshot={shot}", server.url + "/entity/Q46383"], tmp_path / "p3")
    assert shot.exists()


def test_chromium_driver_is_installed_too():
    """chromium-driver comes with chromium in .ci/run; the DevTools-free tests above do not
    need it, but a WebDriver-based test would."""
    if not shutil.which("chromedriver"):
        pytest.skip("chromedriver not installed (Debian package chromium-driver)")
    out = subprocess.run(["chromedriver", "--version"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and "ChromeDriver" in out.stdout


# -- driving the page through the DevTools protocol: click an example, type a query ------------

class DevTools:
    """A minimal Chrome DevTools Protocol client over a stdlib WebSocket (RFC 6455)."""

    def __init__(self, ws_url: str):
        import base64
        import os
        import socket
        from urllib.parse import urlsplit

        u = urlsplit(ws_url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise RuntimeError("DevTools closed the connection during the handshake")
            head += chunk
        assert b" 101 " in head.split(b"\r\n")[0], head[:200]
        self.buf = head.split(b"\r\n\r\n", 1)[1]
        self.next_id = 0

    def _recv_exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise RuntimeError("DevTools connection closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _send(self, text: str) -> None:
        import os
        import struct

        data = text.encode()
        head = bytes([0x81])
        n = len(data)
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _recv(self) -> str:
        import struct

        parts = []
        while True:
            b0, b1 = self._recv_exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._recv_exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._recv_exact(8))[0]
            payload = self._recv_exact(n)
            if b0 & 0x0F in (0x9, 0xA):  # ping/pong: ignore
                continue
            parts.append(payload)
            if b0 & 0x80:
                return b"".join(parts).decode()

    def call(self, method: str, **params):
        import json as _json

        self.next_id += 1
        my = self.next_id
        self._send(_json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = _json.loads(self._recv())
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def eval(self, expr: str):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait_for(self, expr: str, seconds: float = 30):
        import time as _time

        end = _time.time() + seconds
        while _time.time() < end:
            v = self.eval(expr)
            if v:
                return v
            _time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {expr}")

    def close(self):
        self.sock.close()


@pytest.fixture
def devtools(tmp_path):
    import json as _json
    import time as _time
    import urllib.request

    proc = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
         f"--user-data-dir={tmp_path / 'cdp-profile'}", "--remote-debugging-port=0", "--window-size=1280,900",
         "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        port = None
        end = _time.time() + 60
        while port is None and _time.time() < end:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                raise RuntimeError("chromium exited before DevTools listened")
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if m:
                port = int(m.group(1))
        assert port, "chromium did not print its DevTools address"
        targets = _json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        page = next(t for t in targets if t["type"] == "page")
        dt = DevTools(page["webSocketDebuggerUrl"])
        yield dt
        dt.close()
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.slow
def test_click_an_example_and_type_a_query(server, devtools, tmp_path):
    import base64

    dt = devtools
    dt.call("Page.enable")
    dt.call("Page.navigate", url=server.url + "/plain")
    dt.wait_for(f"document.querySelectorAll('#examples button').length === {len(EXAMPLES)}")
    # click the example's button, as a user does
    dt.eval("document.getElementById('example-dishes-per-country').click()")
    dt.wait_for("document.body.dataset.state === 'done' && document.querySelectorAll('#result-table tr.row').length > 0")
    rows = dt.eval("[...document.querySelectorAll('#result-table tr.row')].map(tr => [...tr.cells].map(td => td.innerText.trim()))")
    assert sorted(map(tuple, rows)) == [("Italy Q38", "2"), ("Japan Q17", "2"), ("South Korea Q884", "2")]
    assert "kgc:typedAs" in dt.eval("document.getElementById('query').value")
    shot = tmp_path / "query-page-devtools.png"
    shot.write_bytes(base64.b64decode(dt.call("Page.captureScreenshot", format="png")["data"]))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"screenshot: {shot}")

    # type a query, ask for Korean labels, press the Run button
    dt.eval("document.body.dataset.state = ''")
    dt.eval("""document.getElementById('query').value =
               'SELECT ?dish WHERE { ?dish wdt:P495 wd:Q884 } ORDER BY ?dish';
               document.getElementById('lang').value = 'ko';
               document.getElementById('run').click()""")
    dt.wait_for("document.body.dataset.state === 'done'")
    cells = dt.eval("[...document.querySelectorAll('#result-table tr.row td')].map(td => td.innerText.trim())")
    assert cells == ["비빔밥 Q9100021", "김치찌개 Q9100022"]
    # a syntax error is shown, not swallowed
    dt.eval("document.getElementById('query').value = 'SELECT ?x WHERE { ?x }'; document.getElementById('run').click()")
    msg = dt.wait_for("document.getElementById('message').className === 'error' && document.getElementById('message').innerText")
    assert "HTTP 400" in msg and "syntax error" in msg.lower()
    # an entity link leads to the entity page
    dt.eval("document.getElementById('example-dishes-per-country').click()")
    dt.wait_for("document.querySelectorAll('#result-table a.entity').length > 0")
    dt.eval("document.querySelector('#result-table a.entity[href^=\"/entity/Q17\"]').click()")
    dt.wait_for("location.pathname === '/entity/Q17' && document.readyState === 'complete'")
    assert "Japan" in dt.eval("document.querySelector('h1').innerText")


# -- the YASGUI page (YASGUI from npm at build time: make vendor) ----------------------------------

def _yasgui_or_skip():
    from kgcult.serve import pages

    if not pages.vendored():
        pytest.skip("YASGUI is not vendored (make vendor needs npm): `kgcult serve` shows the plain page")


@pytest.fixture(scope="module")
def geo_server(tmp_path_factory):
    with running_server(build_store(tmp_path_factory.mktemp("yasgui") / "store")) as srv:
        yield srv


def _open(dt, url: str) -> None:
    dt.call("Page.enable")
    dt.call("Page.navigate", url=url)
    dt.wait_for("!!document.body && document.body.dataset.ready === 'true'")


def _run_example(dt, ex_id: str) -> None:
    dt.eval("document.body.dataset.state = ''")
    dt.eval(f"document.getElementById('example-{ex_id}').click()")
    dt.wait_for("document.body.dataset.state === 'done'")


def test_yasgui_page_editor_table_labels_downloads_url(geo_server, devtools, tmp_path):
    import base64
    import json as _json
    import urllib.parse

    _yasgui_or_skip()
    dt = devtools
    _open(dt, geo_server.url + "/#example=dishes-per-country")
    # the editor (YASQE on CodeMirror) holds the example, every example has a button
    dt.wait_for("document.body.dataset.state === 'done'")
    assert dt.eval("!!document.querySelector('#yasgui .yasqe .CodeMirror')")
    assert "kgc:typedAs" in dt.eval("kgcult.yasgui.getTab().getYasqe().getValue()")
    assert dt.eval("document.querySelectorAll('#examples button').length") == len(EXAMPLES) >= 10
    # the predeclared prefixes are known to the editor's syntax check
    assert dt.eval("kgcult.yasgui.getTab().getYasqe().queryValid") is True
    # rows in YASR's table, entity cells labelled by kgcult and linked to the entity page
    dt.wait_for("document.querySelectorAll('#yasgui .yasr a.entity .kg-label').length === 3")
    rows = dt.eval("[...document.querySelectorAll('#yasgui .yasr table.dataTable tbody tr')]"
                   ".map(tr => [...tr.cells].slice(1).map(td => td.innerText.trim()))")
    assert sorted(map(tuple, rows)) == [("Italy Q38", '"2"^^xsd:integer'), ("Japan Q17", '"2"^^xsd:integer'),
                                        ("South Korea Q884", '"2"^^xsd:integer')], rows
    assert dt.eval("document.querySelector('#yasgui a.entity[href=\"/entity/Q17?lang=en\"]').innerText") == "Japan Q17"
    # paged and sortable (YASR's table on DataTables)
    assert "Showing 1 to 3 of 3 entries" in dt.eval("document.querySelector('#yasgui .yasr').innerText")
    assert dt.eval("document.querySelectorAll('#yasgui .yasr table.dataTable thead th.sorting, "
                   "#yasgui .yasr table.dataTable thead th[aria-sort], #yasgui .yasr thead th.dt-orderable-asc').length") >= 2
    # the URL follows the query; the share link and the downloads carry it
    query = dt.eval("kgcult.yasgui.getTab().getYasqe().getValue()")
    assert urllib.parse.unquote(dt.eval("location.hash")) == "#query=" + query
    assert dt.eval("document.getElementById('share').getAttribute('href')") == dt.eval("location.pathname + location.hash")
    for fmt, head in (("csv", "country,dishes"), ("tsv", "?country\t?dishes"), ("json", '"vars"')):
        href = dt.eval(f"document.getElementById('download-{fmt}').getAttribute('href')")
        assert href.startswith("/query?") and f"format={fmt}" in href
        body = dt.eval(f"fetch(document.getElementById('download-{fmt}').href).then(r => r.text())")
        assert head in body and "http://www.wikidata.org/entity/Q17" in body, (fmt, body[:300])
    shot = tmp_path / "yasgui-page.png"
    shot.write_bytes(base64.b64decode(dt.call("Page.captureScreenshot", format="png")["data"]))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20000
    print(f"screenshot: {shot}")

    # a query typed into the editor and run with YASQE's button: the URL follows it
    q = "SELECT ?dish WHERE { ?dish wdt:P495 wd:Q884 } ORDER BY ?dish"
    dt.eval("document.body.dataset.state = ''")
    dt.eval(f"kgcult.yasgui.getTab().getYasqe().setValue({_json.dumps(q)}); "
            "document.querySelector('#yasgui .yasqe_queryButton').click()")
    dt.wait_for("document.body.dataset.state === 'done'")
    assert urllib.parse.unquote(dt.eval("location.hash")) == "#query=" + q
    dt.wait_for("document.querySelectorAll('#yasgui .yasr a.entity .kg-label').length === 2")
    assert dt.eval("[...document.querySelectorAll('#yasgui .yasr a.entity')].map(a => a.innerText)") == [
        "bibimbap Q9100021", "kimchi jjigae Q9100022"]
    # the history lists it; nothing was fetched from another origin (the page works offline)
    assert "wdt:P495 wd:Q884" in dt.eval("document.getElementById('history').innerText")
    assert dt.eval("performance.getEntriesByType('resource').filter(e => !e.name.startsWith(location.origin))"
                   ".map(e => e.name)") == []


def test_yasgui_page_map_chart_and_link(geo_server, devtools, tmp_path):
    import base64
    from urllib.parse import quote

    _yasgui_or_skip()
    dt = devtools
    _open(dt, geo_server.url + "/")
    # #defaultView:Map: the capitals as points (P625 WKT literals), named by their labels
    _run_example(dt, "map-of-capitals")
    dt.wait_for("document.querySelectorAll('#yasgui svg.kg-map circle.kg-point').length === 3")
    names = dt.eval("[...document.querySelectorAll('#yasgui .kg-point title')].map(t => t.textContent)")
    assert sorted(n.split(" (")[0] for n in names) == ["Rome", "Seoul", "Tokyo"]
    # Tokyo at (139.69 E, 35.69 N) on the 960x480 plate carree
    tokyo = dt.eval("(() => { const c = [...document.querySelectorAll('#yasgui .kg-point')]"
                    ".find(c => c.textContent.startsWith('Tokyo')); return [+c.getAttribute('cx'), +c.getAttribute('cy')] })()")
    assert abs(tokyo[0] - (139.69171 + 180) / 360 * 960) < 0.1 and abs(tokyo[1] - (90 - 35.6895) / 180 * 480) < 0.1
    shot = tmp_path / "yasgui-map.png"
    shot.write_bytes(base64.b64decode(dt.call("Page.captureScreenshot", format="png")["data"]))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"screenshot: {shot}")
    # #defaultView:BarChart: one bar per ingredient, rice and nori and mozzarella once each
    _run_example(dt, "most-used-ingredients")
    dt.wait_for("document.querySelectorAll('#yasgui svg.kg-chart rect.kg-bar').length > 0")
    labels = dt.eval("[...document.querySelectorAll('#yasgui .kg-bar-label')].map(t => t.textContent)")
    assert {"rice", "nori", "mozzarella"} <= set(labels), labels
    # #defaultView:ImageGrid: P18 files as a grid (the images themselves need Commons)
    _run_example(dt, "dish-images")
    dt.wait_for("document.querySelectorAll('#yasgui .kg-images figure').length === 2")
    assert sorted(dt.eval("[...document.querySelectorAll('#yasgui .kg-images figcaption')].map(f => f.textContent)")) == [
        "bibimbap", "ramen"]
    # a WDQS-style link (/#<query>) runs its query
    q = "SELECT ?capital WHERE { wd:Q38 wdt:P36 ?capital }"
    dt.eval("document.body.dataset.state = ''")
    dt.call("Page.navigate", url=geo_server.url + "/#" + quote(q))  # same page: a hash change
    dt.wait_for("document.body.dataset.state === 'done' && "
                "document.querySelectorAll('#yasgui .yasr a.entity .kg-label').length === 1")
    assert dt.eval("document.querySelector('#yasgui .yasr a.entity').innerText") == "Rome Q220"
    # another label language relabels the rows on screen: no French label, so mul before English
    dt.eval("const l = document.getElementById('lang'); l.value = 'fr'; l.dispatchEvent(new Event('change'))")
    dt.wait_for("document.querySelector('#yasgui .yasr a.entity').innerText === 'Roma Q220'")
    assert dt.eval("document.querySelector('#yasgui .yasr a.entity').getAttribute('href')") == "/entity/Q220?lang=fr"


def test_yasgui_page_pages_a_large_result_by_request(geo_server, devtools):
    """A result larger than a block (?rows=5 here, 1000 by default): the page shows the first
    block, knows the total from a count request, and holds only that block (no sorting or
    filtering of a part); next loads the following block from the server, "all rows" loads
    them all (sorting on again); the download links still hold every row."""
    import json as _json
    import urllib.parse
    import urllib.request

    _yasgui_or_skip()
    q = "SELECT ?x ?l WHERE { ?x rdfs:label ?l } ORDER BY ?l ?x"
    data = urllib.parse.urlencode({"query": q}).encode()
    req = urllib.request.Request(geo_server.url + "/query", data, {"Accept": "application/sparql-results+json"})
    everything = [b["l"]["value"] for b in _json.load(urllib.request.urlopen(req, timeout=30))["results"]["bindings"]]
    n = len(everything)
    assert n > 12
    dt = devtools
    _open(dt, geo_server.url + "/?rows=5#query=" + urllib.parse.quote(q))
    dt.wait_for("document.body.dataset.state === 'done' && document.body.dataset.total !== undefined")
    labels_in_table = ("[...document.querySelectorAll('#yasgui .yasr table.dataTable tbody tr')]"
                       ".map(tr => tr.cells[2].innerText.trim().replace(/^\"|\"(@[a-z-]+)?$/g, ''))")
    assert dt.eval("document.body.dataset.total") == str(n)
    assert dt.eval("document.getElementById('pager-range').innerText") == f"rows 1–5 of {n}"
    assert dt.eval(labels_in_table) == everything[:5]
    # the page holds the block, not the result; a part is not sortable or filterable
    assert dt.eval("kgcult.yasgui.getTab().getYasr().results.getBindings().length") == 5
    assert dt.eval("document.body.classList.contains('kg-partial')") is True
    assert dt.eval("document.querySelectorAll('#yasgui .yasr thead th.dt-orderable-asc, "
                   "#yasgui .yasr thead th.sorting').length") == 0
    assert dt.eval("getComputedStyle(document.querySelector('#yasgui .yasr .tableFilter')).display") == "none"
    assert dt.eval("document.getElementById('pager-previous').disabled") is True
    # the next block comes from the server
    dt.eval("document.getElementById('pager-next').click()")
    dt.wait_for("document.getElementById('pager-range') && "
                f"document.getElementById('pager-range').innerText === 'rows 6–10 of {n}'")
    assert dt.eval(labels_in_table) == everything[5:10]
    # every row: sortable and filterable again
    dt.eval("document.getElementById('pager-all').click()")
    dt.wait_for(f"kgcult.yasgui.getTab().getYasr().results.getBindings().length === {n}")
    dt.wait_for("!document.body.classList.contains('kg-partial') && !document.getElementById('pager-range')")
    assert dt.eval("document.querySelectorAll('#yasgui .yasr thead th.dt-orderable-asc, "
                   "#yasgui .yasr thead th.sorting').length") >= 2
    # the download holds every row, whatever the page loaded
    body = dt.eval("fetch(document.getElementById('download-csv').href).then(r => r.text())")
    assert len(body.strip().splitlines()) == n + 1
    # a block restored from the browser's storage (a reload without the query in the URL) is
    # shown as a block again: pager, count, no sorting of the part
    dt.eval("document.body.dataset.state = ''")
    dt.eval(f"kgcult.run({_json.dumps(q)})")
    dt.wait_for(f"document.body.dataset.state === 'done' && document.body.dataset.total === '{n}'")
    dt.eval("window.__before_reload = true")
    dt.call("Page.navigate", url=geo_server.url + "/?rows=5")
    dt.wait_for("!window.__before_reload && !!document.body && document.body.dataset.ready === 'true'")
    dt.wait_for(f"document.body.dataset.total === '{n}' && !!document.getElementById('pager-range')")
    assert dt.eval("document.getElementById('pager-range').innerText") == f"rows 1–5 of {n}"
    assert dt.eval("document.querySelectorAll('#yasgui .yasr thead th.dt-orderable-asc, "
                   "#yasgui .yasr thead th.sorting').length") == 0
