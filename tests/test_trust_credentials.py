"""Secrets never recorded and remote text never printed raw (issue 30, deliverable 1 and the
terminal finding): a mirror from ``https://user:pass@host/...?token=...`` keeps neither the
password nor the token in the metadata graph, its snapshot or what ``kgcult serve`` answers;
an endpoint's error body cannot put CR/LF or escape sequences on the user's terminal."""
from __future__ import annotations

import gzip
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kgcult.acquire.endpoint import mirror as m
from kgcult.safe_text import printable, strip_credentials
from kgcult.sparql.client import RemoteError, SparqlClient
from kgcult.store import Store, snapshot
from tests.conftest import run_cli
from tests.test_mirror import fast_config
from tests.test_mirror_faults import server  # noqa: F401 (fixture)

SECRETS = ("s3cretpass", "tok-8c1f", "key-77aa")


def _with_secrets(url: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"{scheme}://alice:{SECRETS[0]}@{rest}?token={SECRETS[1]}&api_key={SECRETS[2]}&lang=en"


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def test_mirror_records_no_credentials_anywhere(server, tmp_path):
    endpoint = _with_secrets(server.url)
    with Store(tmp_path / "s") as st:
        m.mirror(st, ["countries"], config=fast_config(endpoint))
        records = [a for a in st.provenance() if a.get("kind") == "mirror"]
        meta = "\n".join(str(q) for q in st.quads(None) if "meta" in str(q.graph_name))
        snapshot.export(st, tmp_path / "snap")
    assert records, "the mirror left no provenance record"
    source = records[0]["source"]
    assert not _leaks(source) and "alice" not in source, source
    assert source.startswith("http://127.0.0.1:") and "lang=en" in source and "token=REDACTED" in source
    assert not _leaks(meta), meta
    snap = (tmp_path / "snap" / "MANIFEST.json").read_text() + "".join(
        gzip.open(p, "rt").read() for p in (tmp_path / "snap" / "graphs").glob("*.nq.gz"))
    assert not _leaks(snap)


def test_old_records_are_stripped_when_read(tmp_path):
    """A record written before the fix (straight into the metadata graph) is reported and
    exported in the manifest without its credentials."""
    from pyoxigraph import Literal, NamedNode, Quad
    from kgcult import vocab
    with Store(tmp_path / "s") as st:
        node = NamedNode(vocab.GRAPH + "meta/activity/old")
        meta = NamedNode(vocab.META_GRAPH)
        st.ox.add(Quad(node, NamedNode(vocab.RDF + "type"), vocab.kgc("Load"), meta))
        st.ox.add(Quad(node, vocab.kgc("source"), Literal(_with_secrets("https://example.org/sparql")), meta))
        st.ox.add(Quad(node, vocab.kgc("kind"), Literal("mirror"), meta))
        (rec,) = st.provenance()
        manifest = snapshot.export(st, tmp_path / "snap")
    assert rec["source"] == "https://example.org/sparql?token=REDACTED&api_key=REDACTED&lang=en"
    assert not _leaks(json.dumps(manifest["provenance"]))
    meta = "".join(gzip.open(p, "rt").read() for p in (tmp_path / "snap" / "graphs").glob("*.nq.gz"))
    assert "token=REDACTED" in meta and not _leaks(meta)
    snapshot.verify(tmp_path / "snap")  # the scrubbed snapshot is still whole and consistent
    with Store(tmp_path / "imported") as st:
        snapshot.import_(st, tmp_path / "snap")
        assert not _leaks(json.dumps(st.provenance()))


@pytest.mark.parametrize("url,want", [
    ("https://u:p@h.example/q", "https://h.example/q"),
    ("https://h.example/q?keyword=food&access_token=x", "https://h.example/q?keyword=food&access_token=REDACTED"),
    ("/data/dump.json.gz", "/data/dump.json.gz"),
])
def test_strip_credentials(url, want):
    assert strip_credentials(url) == want


class _Hostile(BaseHTTPRequestHandler):
    BODY = b"bad\r\nerror: forged line\x1b]0;owned\x07\x1b[2J\x9b31m done"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(400, "Bad\x1b[31mRequest")
        self.send_header("Content-Length", str(len(self.BODY)))
        self.end_headers()
        self.wfile.write(self.BODY)

    def log_message(self, *a):
        pass


@pytest.fixture
def hostile():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/sparql"
    httpd.shutdown()
    httpd.server_close()


def _no_controls(text: str) -> None:
    assert not any(c in text for c in "\r\n\x1b\x07\x9b"), repr(text)


def test_endpoint_error_body_reaches_the_terminal_as_one_inert_line(hostile, tmp_path):
    client = SparqlClient(hostile, attempts=1)
    with pytest.raises(RemoteError) as e:
        client.query("SELECT * WHERE { ?s ?p ?o }", "application/sparql-results+json")
    _no_controls(str(e.value))
    assert "forged line" in str(e.value) and "\\x1b" in str(e.value)
    r = run_cli(["sparql", "SELECT * WHERE { ?s ?p ?o }"], f"sparql+{hostile}")
    assert r.exit_code != 0
    _no_controls(r.stderr.rstrip("\n"))
    assert "forged line" in r.stderr


def test_printable():
    assert printable("a\tb\r\nc\x1b[0m\u202e") == "a\tb\\r\\nc\\x1b[0m\\u202e"
