"""`kgcult serve` under attack (issue 12, items 7-10): lying request lengths, slow clients,
huge results and runaway queries, against a real server on 127.0.0.1 over a real store.
Clients of their own use their own loopback source addresses (127.0.0.x)."""
from __future__ import annotations

import json
import socket
import threading
import time
import urllib.parse
from http.client import HTTPConnection
from pathlib import Path

import pytest

from kgcult.serve.config import ServeConfig, exposure_warning
from kgcult.store import Store

from tests.conftest import build_store, running_server
from tests.test_serve import RUNAWAY, _start_cli, query_from

EX = "http://example.org/"


def raw(port: int, request: bytes, timeout: float = 5) -> bytes:
    """Send raw bytes, keep the connection open, return what the server sends until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(request)
        out = b""
        while True:
            data = s.recv(65536)  # raises socket.timeout if the server waits for more
            if not data:
                return out
            out += data


def headers(length: bytes | None, method: bytes = b"POST") -> bytes:
    lines = [method + b" /query HTTP/1.1", b"Host: 127.0.0.1", b"Content-Type: application/sparql-query"]
    if length is not None:
        lines.append(b"Content-Length: " + length)
    return b"\r\n".join(lines) + b"\r\n\r\n"


# -- item 8: request lengths and slow clients ----------------------------------------------------

@pytest.mark.parametrize("length", [b"-1", b"-200000000", b"1_0", b"+5", b"12abc", b"0x10", b"\xb2"])
def test_bad_content_length_is_400_at_once(make_server, length):
    """Before: `Content-Length: -1` made the server read to the end of the stream (a 200 MiB
    body was accepted, a held connection pinned a thread). Now it answers 400 before it
    reads any body, and closes the connection (recv would time out if it waited)."""
    srv = make_server(ServeConfig(port=0, read_timeout=30))
    reply = raw(srv.port, headers(length) + b"SELECT * WHERE { ?s ?p ?o } LIMIT 1")
    assert reply.startswith(b"HTTP/1.1 400 ") and b"Content-Length" in reply


def test_post_without_length_is_411_and_oversized_is_413(make_server):
    srv = make_server(ServeConfig(port=0, read_timeout=30, max_request_bytes=1000))
    assert raw(srv.port, headers(None)).startswith(b"HTTP/1.1 411 ")
    assert raw(srv.port, headers(b"2000") + b"x" * 10).startswith(b"HTTP/1.1 413 ")
    # a GET needs no length; a correct POST works
    ok = raw(srv.port, b"GET /query?query=ASK%7B%7D HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert ok.startswith(b"HTTP/1.1 200 ")
    body = b"ASK {}"
    ok = raw(srv.port, headers(str(len(body)).encode()).replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n") + body)
    assert ok.startswith(b"HTTP/1.1 200 ") and b"true" in ok


def test_slow_clients_are_dropped_and_free_their_threads(make_server):
    """More half-sent requests than the server has HTTP threads: each is dropped after the
    read timeout (408), and an ordinary query is answered once they are."""
    cfg = ServeConfig(port=0, workers=1, queue=0, read_timeout=1)
    srv = make_server(cfg)
    slow = []
    for _ in range(12):  # the server has workers + queue + 8 = 9 HTTP threads
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=20)
        s.sendall(headers(b"100") + b"SELECT")  # 6 of the 100 bytes promised, then silence
        slow.append(s)
    status, body = query_from("127.0.0.5", srv.url, "ASK { wd:Q177 wdt:P495 wd:Q38 }")
    assert status == 200 and json.loads(body)["boolean"] is True
    for s in slow:
        reply = s.recv(65536)
        assert reply == b"" or reply.startswith(b"HTTP/1.1 408 ")
        s.close()


@pytest.mark.parametrize("part", ["headers", "body"])
def test_trickling_client_is_dropped_at_the_request_deadline(make_server, part):
    """A client that never goes silent long enough for the read timeout (one byte every
    0.5 s) is still dropped once its request has taken longer than the request deadline."""
    srv = make_server(ServeConfig(port=0, read_timeout=5, request_deadline=2))
    start = headers(b"1000") if part == "body" else b"POST /query HTTP/1.1\r\n"
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
        s.sendall(start)
        s.settimeout(0.5)
        closed = False
        for _ in range(60):  # up to 30 s of trickling
            try:
                s.sendall(b"X-Slow: y\r\n" if part == "headers" else b"x")
                reply = s.recv(65536)
            except socket.timeout:
                continue  # still waiting for us
            except OSError:  # reset: dropped
                closed = True
                break
            assert reply == b"" or reply.startswith((b"HTTP/1.1 408 ", b"HTTP/1.1 400 "))
            closed = True
            break
        assert closed, "the server kept waiting for the trickling client"
    assert query_from("127.0.0.5", srv.url, "ASK {}")[0] == 200


# -- item 7 (the serve part): a warning for a non-loopback bind ---------------------------------

def test_non_loopback_bind_warns(tmp_path):
    assert exposure_warning(ServeConfig(bind="127.0.0.1")) is None
    assert "not a loopback address" in exposure_warning(ServeConfig(bind="0.0.0.0", port=7878))
    proc, url, err = _start_cli(["--bind", "0.0.0.0", "--quiet"], build_store(tmp_path / "store"))
    try:
        assert "warning: serving on 0.0.0.0, which is not a loopback address" in err
    finally:
        proc.terminate()
        proc.wait(20)


# -- item 9: memory per request is bounded -------------------------------------------------------

def _peak_rss_reset(pid: int | str = "self") -> int:
    """Reset the peak RSS of a process (Linux clear_refs) and return its current RSS, bytes."""
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")
    return _status(pid, "VmRSS")


def _status(pid, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def big_store(path: Path, bigs: int = 200, smalls: int = 100, size: int = 10_000) -> Path:
    s = Store(path)
    lines = [f'<{EX}big{i}> <{EX}text> "{i:05d}{"x" * size}" .' for i in range(bigs)]
    lines += [f'<{EX}n{i}> <{EX}n> "{i}" .' for i in range(smalls)]
    data = path.parent / "big.nt"
    data.write_text("\n".join(lines) + "\n")
    s.load([data])
    s.close()
    return path


@pytest.mark.slow  # 4-7 s: make test-all
def test_a_huge_result_is_streamed_with_bounded_memory(make_server, tmp_path):
    """200 x 100 rows of ~10 KB (~200 MB of CSV) under the limits: the answer is complete,
    while neither the server process nor its query worker grows by more than a small
    fraction of it (before: the whole result was held as rows and as one serialized body)."""
    srv = make_server(ServeConfig(port=0, workers=1, timeout=300, max_rows=10**6, max_bytes=1 << 30),
                      big_store(tmp_path / "big"))
    assert query_from("127.0.0.2", srv.url, "ASK {}")[0] == 200  # the worker is up
    (worker,) = srv.app.pool.worker_pids()
    base_server, base_worker = _peak_rss_reset(), _peak_rss_reset(worker)
    conn = HTTPConnection("127.0.0.1", srv.port, timeout=300)
    query = f"SELECT ?t ?n WHERE {{ ?b <{EX}text> ?t . ?m <{EX}n> ?n }}"
    conn.request("POST", "/query", urllib.parse.urlencode({"query": query}),
                 {"Content-Type": "application/x-www-form-urlencoded", "Accept": "text/csv"})
    r = conn.getresponse()
    assert r.status == 200 and r.headers["X-Kgcult-Rows"] == "20000"
    size = lines = 0
    while True:
        chunk = r.read(1 << 20)
        if not chunk:
            break
        size += len(chunk)
        lines += chunk.count(b"\r\n")
    conn.close()
    assert size == int(r.headers["Content-Length"]) > 200_000_000 and lines == 20_001
    grew_server = _status("self", "VmHWM") - base_server
    grew_worker = _status(worker, "VmHWM") - base_worker
    print(f"result {size / 1e6:.0f} MB; peak RSS growth: server {grew_server / 1e6:.1f} MB, "
          f"worker {grew_worker / 1e6:.1f} MB")
    assert grew_worker < size / 10, (grew_worker, size)
    assert grew_server < size / 10, (grew_server, size)


def test_byte_limit_is_enforced_while_writing(make_server, tmp_path):
    srv = make_server(ServeConfig(port=0, workers=1, max_rows=10**6, max_bytes=5_000_000),
                      big_store(tmp_path / "big"))
    assert query_from("127.0.0.2", srv.url, "ASK {}")[0] == 200  # the worker is up
    (worker,) = srv.app.pool.worker_pids()
    base = _peak_rss_reset(worker)
    status, body = query_from("127.0.0.2", srv.url, f"SELECT ?t ?n WHERE {{ ?b <{EX}text> ?t . ?m <{EX}n> ?n }}")
    assert status == 507 and b"larger than 5000000 bytes" in body
    assert _status(worker, "VmHWM") - base < 20_000_000  # it stopped at the limit, not after 200 MB


# -- item 10: runaway queries cannot take the endpoint down --------------------------------------

@pytest.mark.slow
def test_runaway_clients_do_not_starve_ordinary_ones(make_server):
    """The load test, small: 8 connections from one client send runaway queries (a 4-way
    cross product COUNT) for 8 s while 12 other clients send ordinary queries. The runaway
    client gets 504 (deadline) or 429 (its cap); every ordinary query gets 200."""
    srv = make_server(ServeConfig(port=0, workers=4, timeout=2, queue_timeout=10))
    end = time.monotonic() + 8
    runaway, ordinary, lock = [], [], threading.Lock()

    def loop(source: str, query: str, out: list):
        while time.monotonic() < end:
            status, _ = query_from(source, srv.url, query)
            with lock:
                out.append(status)

    threads = [threading.Thread(target=loop, args=("127.0.0.66", RUNAWAY, runaway)) for _ in range(8)]
    threads += [threading.Thread(target=loop, args=(f"127.0.0.{100 + i}", "SELECT ?l WHERE { wd:Q177 rdfs:label ?l }",
                                                    ordinary)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert ordinary and set(ordinary) == {200}, {s: ordinary.count(s) for s in set(ordinary)}
    assert set(runaway) <= {504, 429} and runaway.count(504) >= 2


# -- --writable: updates while queries run ---------------------------------------------------------

@pytest.mark.slow
def test_queries_never_fail_while_updates_rewrite_the_store(tmp_path):
    """Workers read checkpoints, not the store the server writes: before, a worker's
    read-only open of the live store failed ("Corruption ... No such file") once RocksDB
    compacted files away under it. Readers query without pause through 80 large updates."""
    import urllib.error
    import urllib.request

    token = "t0ken-for-the-test"
    path = build_store(tmp_path / "store")
    with running_server(path, ServeConfig(port=0, writable=True, token=token, workers=2), read_only=False) as srv:
        errors, stop = [], threading.Event()

        def reader(source):
            while not stop.is_set():
                status, body = query_from(source, srv.url, "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
                if status != 200:
                    errors.append((status, body[:300]))

        readers = [threading.Thread(target=reader, args=(f"127.0.0.{20 + i}",)) for i in range(2)]
        for t in readers:
            t.start()
        try:
            for i in range(30):
                data = " ".join(f'<{EX}{i}/{j}> <{EX}p> "{"v" * 200}{j}" .' for j in range(2000))
                req = urllib.request.Request(srv.url + "/update", data=f"INSERT DATA {{ GRAPH <{EX}g> {{ {data} }} }}".encode(),
                                             headers={"Content-Type": "application/sparql-update",
                                                      "Authorization": "Bearer " + token})
                with urllib.request.urlopen(req, timeout=300) as r:
                    assert r.status == 204
        finally:
            stop.set()
            for t in readers:
                t.join(60)
        assert errors == []
        status, body = query_from("127.0.0.9", srv.url, f"SELECT (COUNT(*) AS ?n) WHERE {{ ?s <{EX}p> ?o }}")
        assert json.loads(body)["results"]["bindings"][0]["n"]["value"] == "60000"
        views = srv.app.views.root
        assert len(list(views.iterdir())) <= 2  # old checkpoints are gone
    assert not views.exists()  # and all of them once the server stopped
