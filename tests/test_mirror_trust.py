"""The mirror against a hostile or broken endpoint (issue 12, items 4, 5, 13, 14): triples it
adds are dropped and counted, a body cut at a line end is noticed, a server that trickles
its answer cannot hold a request past its deadline, and a malformed IRI is an error."""
from __future__ import annotations

import json
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import threading

import pytest

from kgcult.acquire.endpoint import mirror as m
from kgcult.acquire.endpoint.client import EndpointClient
from kgcult.acquire.endpoint.queries import count_query
from kgcult.store import Store
from tests.conftest import run_cli
from tests.test_mirror import data_quads, fast_config
from tests.test_mirror_faults import clean, server  # noqa: F401 (fixtures)
from tests.test_mirror_proxy import FaultProxy

WD = "http://www.wikidata.org/entity/"


@pytest.mark.parametrize("fmt", [pytest.param("rdfxml", marks=pytest.mark.slow), "ntriples",
                                 pytest.param("turtle", marks=pytest.mark.slow)])  # one format quick
def test_triples_an_endpoint_adds_are_dropped_and_counted(server, clean, tmp_path, fmt):
    with FaultProxy(server.url, always="inject") as p, Store(tmp_path / "s") as st:
        reports = m.mirror(st, config=fast_config(p.url, construct_format=fmt))
        quads = data_quads(st)
    assert not [q for q in quads if "Q999999" in q or "evil.example" in q]
    assert quads == clean
    # two injected triples per CONSTRUCT answer, none of them kept, all of them counted
    assert all(r.dropped >= 2 for r in reports if not r.skipped), [(r.name, r.dropped) for r in reports]
    assert any("dropped" in w for r in reports for w in r.warnings)


def test_dropped_triples_are_recorded_in_provenance(server, tmp_path):
    with FaultProxy(server.url, always="inject") as p, Store(tmp_path / "s") as st:
        m.mirror(st, ["countries"], config=fast_config(p.url))
        recorded = [a for a in st.provenance() if a.get("kind") == "mirror"]
    assert recorded and int(recorded[0]["droppedTriples"]) >= 2, recorded


@pytest.mark.parametrize("fmt", ["ntriples", pytest.param("turtle", marks=pytest.mark.slow)])  # one format quick
def test_body_cut_at_a_line_end_is_asked_again(server, clean, tmp_path, fmt):
    with FaultProxy(server.url, faults=["linecut"], rate=0.6, seed=5) as p, Store(tmp_path / "s") as st:
        m.mirror(st, config=fast_config(p.url, construct_format=fmt))
        assert data_quads(st) == clean
    assert p.stats.get("linecut", 0) > 0


def test_body_always_cut_at_a_line_end_fails_and_loads_nothing(server, tmp_path):
    with FaultProxy(server.url, faults=["linecut"], rate=1.0, max_consecutive=10**6) as p:
        r = run_cli(["mirror", "--endpoint", p.url, "--no-progress", "--format", "ntriples",
                     "--max-attempts", "2", "--backoff", "0", "countries"], tmp_path / "s")
    assert r.exit_code == 1, r.stdout
    assert "cut short" in r.stderr and "Traceback" not in r.stderr
    with Store(tmp_path / "s") as st:
        assert not data_quads(st)


def test_count_query_counts_distinct_triples_of_the_batch(server):
    q = ("# a template comment\nCONSTRUCT { ?s ?p ?o } WHERE {\n  ?s ?p ?o .\n}\n"
         f"VALUES ?s {{ <{WD}Q100> }}")
    client = EndpointClient(fast_config(server.url))
    n = client.count(count_query(q), "count")
    assert n == len(client.construct(q, "construct")) > 0


def test_trickling_server_cannot_hold_a_request_past_its_deadline(server):
    """One byte every 0.2 s (headers included): without a total deadline the answer would
    take minutes; the request fails with a timeout within a few seconds of --timeout."""
    with FaultProxy(server.url, always="drip", delay=0.2) as p:
        client = EndpointClient(fast_config(p.url, timeout=1.0, max_attempts=1))
        t0 = time.monotonic()
        with pytest.raises(m.MirrorError, match="timeout"):
            client.select_iris("SELECT ?x WHERE { ?x ?p ?o }", "x", "probe")
        assert time.monotonic() - t0 < 10


def test_trickling_server_mirror_fails_with_one_line(server, tmp_path):
    with FaultProxy(server.url, always="drip", delay=0.2) as p:
        r = run_cli(["mirror", "--endpoint", p.url, "--no-progress", "--timeout", "1",
                     "--max-attempts", "1", "countries"], tmp_path / "s")
    assert r.exit_code == 1
    assert "timeout" in r.stderr and "Traceback" not in r.stderr


class _BadIriEndpoint:
    """Answers every count with 1, every other SELECT with one binding whose IRI is malformed,
    every CONSTRUCT empty."""

    def __init__(self, iri: str):
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
                if "CONSTRUCT" in form["query"][0]:
                    body, ctype = b"", "application/n-triples"
                elif "COUNT(" in form["query"][0]:  # the plan's counts: one member per class
                    body = json.dumps({"head": {"vars": ["n"]}, "results": {"bindings": [
                        {"n": {"type": "literal", "value": "1"}}]}}).encode()
                    ctype = "application/sparql-results+json"
                else:
                    body = json.dumps({"head": {"vars": ["x"]}, "results": {"bindings": [
                        {"x": {"type": "uri", "value": iri}}]}}).encode()
                    ctype = "application/sparql-results+json"
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/sparql"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("iri", [f"{WD}Q1 x>", "not an iri", f'{WD}Q1"'])
def test_malformed_iri_in_a_select_result_is_a_clear_error(tmp_path, iri):
    with _BadIriEndpoint(iri) as ep:
        r = run_cli(["mirror", "--endpoint", ep.url, "--no-progress", "--max-attempts", "2",
                     "--backoff", "0", "--format", "ntriples", "dishes"], tmp_path / "s")
    assert r.exit_code == 1
    assert "not a valid IRI" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
