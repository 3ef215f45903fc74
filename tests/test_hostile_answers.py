"""Hostile endpoint answers: a gzip bomb, an RDF/XML entity bomb, JSON nested 200,000 deep.
Each is served by a real HTTP server on 127.0.0.1 to the remote store and to the mirror's
client (both use kgcult.sparql.client), which must refuse it with one clear error naming
the endpoint, without asking again. Also: an empty ``--endpoint`` is an error."""
from __future__ import annotations

import gzip
import subprocess
import sys
import http.server
import threading

import pytest

from kgcult.acquire.endpoint.client import WDQS, EndpointClient, MirrorConfig, MirrorError
from kgcult.sparql.client import MAX_ANSWER, RemoteError, SparqlClient
from kgcult.store.remote import RemoteStore
from tests.conftest import run_cli

SELECT = "SELECT ?s WHERE { ?s ?p ?o }"
# 8 MiB of a JSON results document, about 8 KB gzipped
BOMB = gzip.compress(b'{"head": {"vars": ["n"]}, "results": {"bindings": [' + b" " * (8 << 20) + b"]}}", 9)
# the "billion laughs" at three levels (1,000 copies: harmless; Oxigraph expands it)
LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE rdf:RDF [
 <!ENTITY a "ha">
 <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
 <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
 <!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
]>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="http://example.org/">
 <rdf:Description rdf:about="http://example.org/s"><ex:p>&d;</ex:p></rdf:Description>
</rdf:RDF>
"""
DEEP = b'{"head": {"vars": ["n"]}, "results": {"bindings": [{"n": ' + b"[" * 200_000 + b"]" * 200_000 + b"}]}}"


class Hostile:
    """An endpoint that answers every POST with one fixed body; counts the requests."""

    def __init__(self, body: bytes, ctype: str, encoding: str | None = None):
        self.requests = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                outer.requests += 1
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                if encoding:
                    self.send_header("Content-Encoding", encoding)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/sparql"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def __enter__(self) -> Hostile:
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def mirror_client(url: str, **kw) -> EndpointClient:
    return EndpointClient(MirrorConfig(endpoint=url, contact="test@example.org", max_attempts=3, backoff=0.0,
                                       sleep=lambda s: None, **kw))


def test_default_cap_is_512_mib():
    assert MAX_ANSWER == 512 << 20
    assert SparqlClient("http://127.0.0.1:1/sparql").max_answer == MAX_ANSWER
    assert mirror_client("http://127.0.0.1:1/sparql").http.max_answer == MAX_ANSWER


def test_remote_store_refuses_a_gzip_bomb():
    with Hostile(BOMB, "application/sparql-results+json", "gzip") as h:
        remote = RemoteStore(h.url, max_answer=1 << 20)
        with pytest.raises(RemoteError, match=r"larger than 1048576 bytes decoded") as e:
            remote.query(SELECT)
        assert h.url in str(e.value)
        assert h.requests == 1  # refused, not asked again


def test_remote_store_cap_from_the_environment(monkeypatch):
    monkeypatch.setenv("KGCULT_REMOTE_MAX_ANSWER", str(1 << 20))
    with Hostile(BOMB, "application/sparql-results+json", "gzip") as h:
        with pytest.raises(RemoteError, match=r"larger than 1048576"):
            RemoteStore(h.url).query(SELECT)


def test_mirror_refuses_a_gzip_bomb():
    with Hostile(BOMB, "application/sparql-results+json", "gzip") as h:
        client = mirror_client(h.url, max_answer=1 << 20)
        with pytest.raises(MirrorError, match=r"larger than 1048576 bytes decoded") as e:
            client.count("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "count")
        assert h.url in str(e.value)
        assert h.requests == 1


def test_remote_store_refuses_rdfxml_entities():
    with Hostile(LAUGHS, "application/rdf+xml") as h:
        with pytest.raises(RemoteError, match=r"declares an XML ENTITY") as e:
            RemoteStore(h.url).query("CONSTRUCT WHERE { ?s ?p ?o }")
        assert h.url in str(e.value)


def test_mirror_refuses_rdfxml_entities():
    with Hostile(LAUGHS, "application/rdf+xml") as h:
        client = mirror_client(h.url)
        assert client.config.construct_format == "rdfxml"  # the default the attack aims at
        with pytest.raises(MirrorError, match=r"declares an XML ENTITY"):
            client.construct("CONSTRUCT WHERE { ?s ?p ?o }", "batch")
        assert h.requests == 1


def test_mirror_refuses_deep_json():
    with Hostile(DEEP, "application/sparql-results+json") as h:
        client = mirror_client(h.url)
        with pytest.raises(MirrorError, match=r"nested deeper than \d+ levels") as e:
            client.count("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "count")
        assert h.url in str(e.value)
        with pytest.raises(MirrorError, match=r"nested deeper"):
            client.select_iris("SELECT ?c WHERE { ?c ?p ?o }", "c", "classes")


def test_mirror_never_parses_an_xml_doctype():
    """A DOCTYPE without entities (an HTML error page sent as RDF/XML) is a failed try."""
    body = LAUGHS.replace(b"<!ENTITY", b"<!ELEMENT")
    with Hostile(body, "application/rdf+xml") as h:
        with pytest.raises(MirrorError, match=r"failed 3 times.*DOCTYPE"):
            mirror_client(h.url).construct("CONSTRUCT WHERE { ?s ?p ?o }", "batch")
        assert h.requests == 3


@pytest.mark.parametrize("endpoint", ["", "   "])
def test_empty_endpoint_is_an_error(tmp_path, endpoint):
    with pytest.raises(MirrorError, match=r"--endpoint is empty"):
        MirrorConfig(endpoint=endpoint, contact="test@example.org").validate()
    r = run_cli(["mirror", "--endpoint", endpoint, "--no-progress"], tmp_path / "store")
    assert r.exit_code != 0
    assert "--endpoint is empty" in r.output
    assert WDQS not in r.output  # never the public endpoint by default


# -- a cut or malformed SELECT answer, met while the rows are read ---------------------

_ROWS = b'{"head": {"vars": ["s"]}, "results": {"bindings": [' + b", ".join(
    b'{"s": {"type": "uri", "value": "http://example.org/%d"}}' % i for i in range(3)) + b"]}}"
_ROWS_XML = (b'<?xml version="1.0"?><sparql xmlns="http://www.w3.org/2005/sparql-results#">'
             b'<head><variable name="s"/></head><results>' + b"".join(
                 b'<result><binding name="s"><uri>http://example.org/%d</uri></binding></result>' % i
                 for i in range(3)) + b"</results></sparql>")
CUT_OR_MALFORMED = {  # name -> (body, content type, the row the error names)
    "cut mid-row": (_ROWS[:-40], "application/sparql-results+json", 3),
    "cut after a row": (_ROWS[:_ROWS.index(b"}}, ") + 2], "application/sparql-results+json", 2),
    "bad IRI": (_ROWS.replace(b"http://example.org/1", b"http://exa mple.org/1"), "application/sparql-results+json", 2),
    "term without value": (_ROWS.replace(b', "value": "http://example.org/2"', b""), "application/sparql-results+json", 3),
    "control bytes": (_ROWS[:-40] + b"\x1b]0;owned\x07\r\n", "application/sparql-results+json", 3),
    "xml cut": (_ROWS_XML[:-60], "application/sparql-results+xml", 3),
    "nested 200,000 deep": (DEEP, "application/sparql-results+json", 1),
}


@pytest.mark.parametrize("name", sorted(CUT_OR_MALFORMED))
def test_a_cut_or_malformed_answer_is_one_error_naming_the_endpoint_and_row(name):
    """pyoxigraph parses a SELECT answer as its rows are read: the error came out of the
    caller's loop as a bare SyntaxError (a traceback in every command), after the rows
    before it were used."""
    body, ctype, row = CUT_OR_MALFORMED[name]
    with Hostile(body, ctype) as h:
        got = []
        with pytest.raises(RemoteError, match=rf"cut or malformed at row {row} ") as e:
            for r in RemoteStore(h.url).query(SELECT):
                got.append(r["s"].value)
        assert got == []  # no row of a broken answer is taken for data
        assert str(e.value).startswith(h.url + ": ") and "\n" not in str(e.value) and "\x1b" not in str(e.value)


@pytest.mark.parametrize("fmt", ["table", "jsonl", "json", "csv"])
def test_the_cli_reading_a_cut_answer_exits_with_one_line(fmt):
    body, ctype, _row = CUT_OR_MALFORMED["cut mid-row"]
    with Hostile(body, ctype) as h:
        r = subprocess.run([sys.executable, "-m", "kgcult", "--store", "sparql+" + h.url, "sparql", SELECT,
                            "--format", fmt], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"error: {h.url}: the endpoint's answer ({ctype}) is cut or malformed "
                               "at row 3 (2 rows before it; none used): "), r.stderr
    assert r.stdout == ""  # no row printed
    assert "Traceback" not in r.stderr
