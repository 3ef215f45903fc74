"""A fault-injecting HTTP proxy for the mirror tests (and its own small tests).

``FaultProxy(upstream_url, faults=..., seed=..., rate=...)`` listens on 127.0.0.1 and
forwards every request to ``upstream_url`` (an ``oxigraph serve`` /query endpoint), but
on a deterministic, seeded schedule answers instead with one of:

  429       429 Too Many Requests with Retry-After
  500, 503  server errors (503 with Retry-After)
  delay     waits past the client's timeout before answering
  reset     closes the connection with a TCP reset, no response
  truncated forwards the status and Content-Length, then only half of the body
  short     a body cut in half whose Content-Length matches the cut (only the format can tell)
  html200   an HTML error page with status 200 (text/html)
  htmlxml   an HTML error page with status 200 that claims to be the requested type
  linecut   an N-Triples/Turtle body cut at a line end near its middle, Content-Length to match
  inject    a CONSTRUCT answer with triples added about subjects never asked for, a property
            and a language not asked for
  drip      the whole response (status line, headers, body) one byte every ``delay`` seconds

A request body is faulted at most ``max_consecutive`` times in a row, so a client with
enough attempts always gets through; ``always`` makes every request fail (for the tests
of exhausted retries); ``fail_after=N`` answers 500 to every request after the N-th
(an endpoint that goes down mid-run). Every request is counted in ``stats``.
"""
from __future__ import annotations

import http.client
import random
import socket
import struct
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ALL_FAULTS = ("429", "500", "503", "delay", "reset", "truncated", "short", "html200", "htmlxml")
# what a hostile or broken endpoint does; not part of the random schedule of ALL_FAULTS
EXTRA_FAULTS = ("linecut", "inject", "drip")
INJECTED_NT = (b"<http://www.wikidata.org/entity/Q999999> <http://www.wikidata.org/prop/direct/P31> "
               b"<http://evil.example/injected> .\n"
               b"<http://evil.example/page> <http://www.w3.org/2000/01/rdf-schema#label> \"evil\"@en .\n")
INJECTED_RDFXML = (
    b'<rdf:Description rdf:about="http://www.wikidata.org/entity/Q999999">'
    b'<P31 xmlns="http://www.wikidata.org/prop/direct/" rdf:resource="http://evil.example/injected"/>'
    b'</rdf:Description><rdf:Description rdf:about="http://evil.example/page">'
    b'<label xmlns="http://www.w3.org/2000/01/rdf-schema#" xml:lang="en">evil</label></rdf:Description>')
HTML = (b"<!DOCTYPE html><html><head><title>Error</title></head><body><h1>Service unavailable"
        b"</h1><p>try again later</p></body></html>")


class FaultProxy:
    def __init__(self, upstream: str, faults=ALL_FAULTS, seed: int = 0, rate: float = 0.5,
                 delay: float = 1.5, max_consecutive: int = 3, always: str | None = None,
                 retry_after: str = "0", latency: float = 0.0, fail_after: int | None = None):
        u = urllib.parse.urlsplit(upstream)
        self.upstream_host, self.upstream_port, self.upstream_path = u.hostname, u.port, u.path
        self.faults, self.rate, self.delay = tuple(faults), rate, delay
        self.max_consecutive, self.always, self.retry_after = max_consecutive, always, retry_after
        self.latency, self.fail_after = latency, fail_after
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.streak: dict[bytes, int] = {}
        self.stats: dict[str, int] = {}
        self.requests = 0
        self.headers: list[dict] = []  # the headers of every request received
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                proxy._handle(self, b"")

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                proxy._handle(self, self.rfile.read(n))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{self.upstream_path}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- decide and answer ----------------------------------------------------------------

    def _pick(self, key: bytes) -> str | None:
        with self.lock:
            self.requests += 1
            if self.always or (self.fail_after is not None and self.requests > self.fail_after):
                fault = self.always or "500"
            else:
                roll, choice = self.rng.random(), self.rng.choice(self.faults)
                fault = choice if roll < self.rate and self.streak.get(key, 0) < self.max_consecutive else None
            self.streak[key] = self.streak.get(key, 0) + 1 if fault else 0
            self.stats[fault or "ok"] = self.stats.get(fault or "ok", 0) + 1
            return fault

    def _forward(self, h, body: bytes):
        conn = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=60)
        headers = {k: v for k, v in h.headers.items() if k.lower() in ("content-type", "accept", "user-agent")}
        path = h.path if h.command == "GET" else self.upstream_path
        conn.request(h.command, path, body=body or None, headers=headers)
        r = conn.getresponse()
        data = r.read()
        ctype = r.getheader("Content-Type", "application/octet-stream")
        conn.close()
        return r.status, ctype, data

    def _send(self, h, status: int, ctype: str, data: bytes, extra=(), length: int | None = None):
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(data) if length is None else length))
        for k, v in extra:
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)
        h.wfile.flush()

    def _drip(self, h, status: int, ctype: str, data: bytes):
        head = (f"HTTP/1.1 {status} OK\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {len(data)}\r\n\r\n").encode()
        h.close_connection = True
        for i in range(len(head) + len(data)):
            h.wfile.write((head + data)[i:i + 1])
            h.wfile.flush()
            time.sleep(self.delay)

    def _handle(self, h, body: bytes):
        # headers and body leave in two writes: without this, Nagle + delayed ACK add ~40 ms
        h.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.lock:
            self.headers.append(dict(h.headers.items()))
        fault = self._pick(body + h.path.encode())
        if self.latency:
            time.sleep(self.latency)
        try:
            if fault == "429":
                return self._send(h, 429, "text/plain", b"Too Many Requests", [("Retry-After", self.retry_after)])
            if fault == "500":
                return self._send(h, 500, "text/plain", b"java.lang.RuntimeException: boom")
            if fault == "503":
                return self._send(h, 503, "text/html", HTML, [("Retry-After", self.retry_after)])
            if fault == "reset":
                h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                h.connection.close()
                h.close_connection = True
                return
            status, ctype, data = self._forward(h, body)
            if fault == "delay":
                time.sleep(self.delay)
            if fault == "truncated":
                self._send(h, status, ctype, data[: len(data) // 2], length=len(data))
                h.close_connection = True
                h.connection.shutdown(socket.SHUT_RDWR)
                return
            if fault == "short":
                return self._send(h, status, ctype, data[: max(1, len(data) // 2)])
            if fault == "html200":
                return self._send(h, 200, "text/html; charset=utf-8", HTML)
            if fault == "htmlxml":
                return self._send(h, 200, ctype, HTML)
            if fault == "linecut" and b"\n" in data[: len(data) // 2]:
                return self._send(h, status, ctype, data[: data.rindex(b"\n", 0, len(data) // 2) + 1])
            if fault == "inject" and status == 200 and "json" not in ctype:
                return self._send(h, status, ctype, inject(data, ctype))
            if fault == "drip":
                return self._drip(h, status, ctype, data)
            return self._send(h, status, ctype, data)
        except (BrokenPipeError, ConnectionResetError, OSError):
            h.close_connection = True


def inject(data: bytes, ctype: str) -> bytes:
    """``data`` (a CONSTRUCT answer) with triples an honest endpoint would not send."""
    if "rdf+xml" in ctype or "/xml" in ctype:
        end = data.rindex(b"</")
        return data[:end] + INJECTED_RDFXML + data[end:]
    return data + (b"" if data.endswith(b"\n") or not data else b"\n") + INJECTED_NT


# -- the proxy's own tests ----------------------------------------------------------------

def test_proxy_forwards_and_faults(oxigraph_server):
    from pathlib import Path

    import urllib.error
    import urllib.request

    srv = oxigraph_server([Path(__file__).parent / "fixtures" / "mirror" / "graph.ttl"])
    q = urllib.parse.urlencode({"query": "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"}).encode()
    with FaultProxy(srv.url, rate=0.0) as p:
        req = urllib.request.Request(p.url, data=q, headers={"Accept": "application/sparql-results+json",
                                                             "Content-Type": "application/x-www-form-urlencoded"})
        assert b'"162"' in urllib.request.urlopen(req, timeout=10).read()
    with FaultProxy(srv.url, always="429", retry_after="7") as p:
        req = urllib.request.Request(p.url, data=q, headers={"Content-Type": "application/x-www-form-urlencoded"})
        try:
            urllib.request.urlopen(req, timeout=10)
            raise AssertionError("expected HTTP 429")
        except urllib.error.HTTPError as e:
            assert e.code == 429 and e.headers["Retry-After"] == "7"
    with FaultProxy(srv.url, always="truncated") as p:
        req = urllib.request.Request(p.url, data=q, headers={"Content-Type": "application/x-www-form-urlencoded"})
        try:
            urllib.request.urlopen(req, timeout=10).read()
            raise AssertionError("expected a truncated body")
        except http.client.IncompleteRead:
            pass
