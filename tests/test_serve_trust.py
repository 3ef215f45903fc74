"""`kgcult serve` against a hostile client (issue 30, deliverables 1 and 4): DNS rebinding
(the Host allow-list), request smuggling (strict framing), one address holding every HTTP
thread (a connection cap per address), one query taking the machine's memory (a memory cap
per worker), and a query nested deep enough to overflow the engine's stack (refused before
parsing, in the server and the CLI alike)."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.parse

import pytest

from kgcult.errors import KgcultError
from kgcult.serve.config import ServeConfig
from kgcult.serve.workers import MIN_WORKER_MEMORY, default_worker_memory, worker_memory
from kgcult.sparql import nesting
from kgcult.store import Store
from tests.conftest import build_store, running_server
from tests.test_serve import query_from


@pytest.fixture(scope="module")
def server(store_path):
    with running_server(store_path) as srv:
        yield srv


def exchange(port: int, request: bytes, source: str = "127.0.0.1", timeout: float = 10) -> bytes:
    """Send raw bytes; return all the server sends until it closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0)) as s:
        s.sendall(request)
        out = b""
        while data := s.recv(65536):
            out += data
        return out


def get(port: int, path: str, host: bytes | None, extra: bytes = b"") -> bytes:
    head = b"GET " + path.encode() + b" HTTP/1.1\r\n" + (b"Host: " + host + b"\r\n" if host is not None else b"")
    return exchange(port, head + extra + b"Connection: close\r\n\r\n")


ASK = "/query?query=" + urllib.parse.quote("ASK { wd:Q177 wdt:P495 wd:Q38 }")


# -- the Host allow-list -------------------------------------------------------------------------

def test_foreign_host_is_421_own_names_and_ips_are_served(server):
    """A rebinding page sends its own name as Host: refused. Before, the store was read."""
    port = server.port
    reply = get(port, ASK, b"attacker.example:%d" % port)
    assert reply.startswith(b"HTTP/1.1 421 "), reply[:200]
    assert b"--allow-host attacker.example" in reply and b"true" not in reply
    assert get(port, "/api/status", b"rebind.attacker.example").startswith(b"HTTP/1.1 421 ")
    for ok in (b"127.0.0.1:%d" % port, b"localhost:%d" % port, b"LOCALHOST", b"[::1]:%d" % port, b"127.0.0.1"):
        reply = get(port, ASK, ok)
        assert reply.startswith(b"HTTP/1.1 200 ") and b"true" in reply, (ok, reply[:200])
    assert get(port, ASK, None).startswith(b"HTTP/1.1 400 ")  # HTTP/1.1 without Host


def test_allow_host_names_more(make_server):
    srv = make_server(ServeConfig(port=0, allow_hosts=("kg.example.org",)))
    assert get(srv.port, ASK, b"kg.example.org:443").startswith(b"HTTP/1.1 200 ")
    assert get(srv.port, ASK, b"other.example.org").startswith(b"HTTP/1.1 421 ")
    anyhost = make_server(ServeConfig(port=0, allow_hosts=("*",)))
    assert get(anyhost.port, ASK, b"whatever.example").startswith(b"HTTP/1.1 200 ")


def test_allow_host_option_is_checked():
    from kgcult.serve.config import check_config
    with pytest.raises(KgcultError, match="--allow-host"):
        check_config(ServeConfig(allow_hosts=("http://x.example/",)))


# -- strict framing ----------------------------------------------------------------------------

SMUGGLED = b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def test_conflicting_content_lengths_are_one_400_never_a_second_request(server):
    """The last Content-Length used to win and the rest of the body was answered as a
    second request (/api/status here)."""
    body = b"ASK {}" + SMUGGLED
    req = (b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/sparql-query\r\n"
           b"Content-Length: %d\r\nContent-Length: 6\r\n\r\n" % len(body)) + body
    reply = exchange(server.port, req)
    assert reply.startswith(b"HTTP/1.1 400 ") and b"Content-Length sent more than once" in reply, reply[:300]
    assert reply.count(b"HTTP/1.1 ") == 1 and b"kgcult" not in reply.split(b"\r\n\r\n", 1)[1]
    same = req.replace(b"Content-Length: %d" % len(body), b"Content-Length: 6")
    assert exchange(server.port, same).count(b"HTTP/1.1 400 ") == 1


def test_length_with_chunked_is_400(server):
    req = (b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/sparql-query\r\n"
           b"Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nASK {}\r\n0\r\n\r\n")
    reply = exchange(server.port, req)
    assert reply.startswith(b"HTTP/1.1 400 ") and b"Transfer-Encoding" in reply, reply[:300]
    assert reply.count(b"HTTP/1.1 ") == 1


def test_two_host_headers_are_400(server):
    reply = get(server.port, ASK, b"127.0.0.1", b"Host: attacker.example\r\n")
    assert reply.startswith(b"HTTP/1.1 400 ") and b"Host sent more than once" in reply


# -- connections per address ---------------------------------------------------------------------

def test_one_address_cannot_hold_every_http_thread(make_server):
    """A slowloris from one address: past its cap, its connections get 429 at once (before,
    they took every HTTP thread and other clients waited for the read timeout); other
    addresses are served, and a closed connection frees its slot."""
    srv = make_server(ServeConfig(port=0, workers=1, queue=0, per_client_connections=3, read_timeout=20))
    held = []
    for _ in range(3):
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10, source_address=("127.0.0.7", 0))
        s.sendall(b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and nothing more
        held.append(s)
    time.sleep(0.3)
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10, source_address=("127.0.0.7", 0)) as s:
        reply = s.recv(65536)
    assert reply.startswith(b"HTTP/1.1 429 ") and b"too many connections from 127.0.0.7" in reply, reply
    assert query_from("127.0.0.8", srv.url, "ASK { wd:Q177 wdt:P495 wd:Q38 }", timeout=5)[0] == 200
    held.pop().close()
    for _ in range(50):  # the server notices the close when the thread reading it returns
        try:
            status = query_from("127.0.0.7", srv.url, "ASK {}", timeout=5)[0]
        except (BrokenPipeError, ConnectionResetError):  # a 429 closed it while the body was sent
            status = None
        if status == 200:
            break
        time.sleep(0.1)
    assert status == 200
    for s in held:
        s.close()


# -- memory per worker ---------------------------------------------------------------------------

def concat_bomb(levels: int) -> str:
    """A 600-byte query whose string doubles eightfold per level (100 * 8**levels bytes)."""
    q = 'SELECT (STRLEN(?s%d) AS ?n) WHERE { BIND("%s" AS ?s0) ' % (levels, "x" * 100)
    for i in range(1, levels + 1):
        q += "BIND(CONCAT(%s) AS ?s%d) " % (",".join([f"?s{i - 1}"] * 8), i)
    return q + "}"


@pytest.mark.slow  # a 1 GiB address-space cap is close to what a worker maps: flaky on a busy runner
def test_a_query_past_the_worker_memory_is_507_and_the_worker_replaced(make_server):
    """Before: one worker grew to 6.6 GB within its deadline (and one address could run 4)."""
    srv = make_server(ServeConfig(port=0, workers=1, timeout=60, worker_memory=MIN_WORKER_MEMORY))
    assert query_from("127.0.0.2", srv.url, "ASK {}")[0] == 200
    before = srv.app.pool.worker_pids()
    status, body = query_from("127.0.0.2", srv.url, concat_bomb(8))  # a 1.6 GB string
    assert status == 507 and b"more memory than a query worker may use (1024 MiB" in body, (status, body[:300])
    assert query_from("127.0.0.2", srv.url, "ASK { wd:Q177 wdt:P495 wd:Q38 }")[0] == 200
    assert srv.app.pool.worker_pids() != before
    status = json.loads(query_from_get(srv, "/api/status"))
    assert status["stats"]["memory"] == 1 and status["worker_memory"] == MIN_WORKER_MEMORY


def query_from_get(srv, path: str) -> bytes:
    return get(srv.port, path, b"127.0.0.1").split(b"\r\n\r\n", 1)[1]


def test_default_worker_memory_follows_the_machine():
    import os
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert default_worker_memory(8) == max(MIN_WORKER_MEMORY, total * 3 // 4 // 8)
    assert default_worker_memory(1) >= default_worker_memory(8)
    assert worker_memory(ServeConfig()) == default_worker_memory(8)
    assert worker_memory(ServeConfig(worker_memory=0)) == 0


# -- nesting refused before parsing ------------------------------------------------------------

DEEP_GROUPS = "SELECT * WHERE " + "{" * 5000 + " ?s ?p ?o " + "}" * 5000
WIDE_UNION = "SELECT * WHERE { " + " UNION ".join(["{ ?s ?p ?o }"] * 20000) + " }"
DEEP_PARENS = "SELECT * WHERE { ?s ?p ?o FILTER(" + "(" * 5000 + "1" + ")" * 5000 + ") }"


@pytest.mark.parametrize("query,limit", [(DEEP_GROUPS, "nested more than 128"),
                                         (WIDE_UNION, "more than 2000 UNION"),
                                         (DEEP_PARENS, "nested more than 128")], ids=["groups", "union", "parens"])
def test_cli_refuses_deep_queries_with_a_message(tmp_path, store_path, query, limit):
    """`kgcult sparql -f` died of SIGSEGV (exit 139, no message) on these."""
    f = tmp_path / "deep.rq"
    f.write_text(query)
    r = subprocess.run([sys.executable, "-m", "kgcult.cli", "--store", str(store_path), "sparql", "-f", str(f)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, (r.returncode, r.stderr[-500:])
    assert r.stderr.startswith("error: ") and limit in r.stderr and "Traceback" not in r.stderr


def test_server_refuses_deep_queries_and_updates_and_stays_up(make_server):
    srv = make_server(ServeConfig(port=0, workers=1))
    status, body = query_from("127.0.0.2", srv.url, DEEP_GROUPS)
    assert status == 400 and b"nested more than 128" in body
    assert query_from("127.0.0.2", srv.url, WIDE_UNION)[0] == 400
    assert query_from("127.0.0.2", srv.url, "ASK { wd:Q177 wdt:P495 wd:Q38 }")[0] == 200


def test_writable_server_refuses_a_deep_update_before_running_it(tmp_path):
    """An update runs in the server process: before, this one took the server down."""
    path = build_store(tmp_path / "w")
    with running_server(path, ServeConfig(port=0, writable=True, token="t" * 16), read_only=False) as srv:
        update = "INSERT { <x:a> <x:b> <x:c> } WHERE " + "{" * 5000 + "}" * 5000
        body = urllib.parse.urlencode({"update": update}).encode()
        req = (b"POST /update HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + b"t" * 16 +
               b"\r\nContent-Type: application/x-www-form-urlencoded\r\nConnection: close\r\n"
               b"Content-Length: %d\r\n\r\n" % len(body)) + body
        reply = exchange(srv.port, req)
        assert reply.startswith(b"HTTP/1.1 400 ") and b"nested more than 128" in reply
        assert query_from("127.0.0.2", srv.url, "ASK {}")[0] == 200


def test_store_api_refuses_deep_queries(store_path):
    with Store(store_path, read_only=True) as st:
        with pytest.raises(KgcultError, match="line 1, column"):
            st.query(DEEP_GROUPS)


def test_nesting_scan_ignores_strings_comments_and_iris():
    text = ('SELECT * WHERE { ?s ?p "' + "{(" * 400 + '" . ?s <http://x/{{{{> ?o # ' + "{" * 400 +
            "\n FILTER(?o != '''" + "UNION " * 3000 + "''') } VALUES ?v { " + " ".join(f"<x:{i}>" for i in range(5000)) + " }")
    nesting.check(text)
    nesting.check("SELECT * { " + "{ " * 100 + "}" * 100 + " " + " UNION ".join(["{}"] * 500) + " }")


# -- a free worker goes to the client with the fewest jobs on workers --------------------------------

@pytest.mark.slow  # over 10 s: make test-all
def test_an_ordinary_client_is_not_queued_behind_runaways(make_server):
    """One worker; one address has a runaway on it and two more waiting; another address
    then sends an ordinary query. When the worker frees, the ordinary query gets it before
    the queued runaways (on main: first come, first served, so it waited for all of them)."""
    import threading
    from tests.test_serve import RUNAWAY, wait_in_flight
    srv = make_server(ServeConfig(port=0, workers=1, per_client=3, timeout=2, queue_timeout=60))
    done: list[str] = []
    lock = threading.Lock()

    def send(source, query, name):
        status = query_from(source, srv.url, query)[0]
        with lock:
            done.append(f"{name}:{status}")

    threads = []
    for i, name in enumerate(["runaway1", "runaway2", "runaway3"]):
        threads.append(threading.Thread(target=send, args=("127.0.0.30", RUNAWAY, name)))
        threads[-1].start()
        wait_in_flight(srv, i + 1)
    threads.append(threading.Thread(target=send, args=("127.0.0.31", "ASK { wd:Q177 wdt:P495 wd:Q38 }", "ordinary")))
    threads[-1].start()
    wait_in_flight(srv, 4)
    for t in threads:
        t.join(60)
    assert "ordinary:200" in done, done
    assert done.index("ordinary:200") <= 1, done  # after at most the runaway that held the worker


# -- SERVICE refused as the engine reads the query ---------------------------------------------------

class _Listener:
    """A loopback HTTP server that counts the requests it gets (what a SERVICE would reach)."""

    def __init__(self):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        hits = self.hits = []

        class H(BaseHTTPRequestHandler):
            def do_POST(self):
                hits.append(self.path)
                body = b'{"head":{"vars":["s"]},"results":{"bindings":[{"s":{"type":"literal","value":"secret"}}]}}'
                self.send_response(200)
                self.send_header("Content-Type", "application/sparql-results+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            do_GET = do_POST

            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def listener():
    lst = _Listener()
    yield lst
    lst.close()


def service_queries(port: int) -> list[str]:
    return [
        # a \u escape in the IRI: an IRI to Oxigraph, not to the rewriting step's lexer
        "SELECT * WHERE { SERVICE <http://127.0.0.1:%d/x\\u0031> { ?s ?p ?o } }" % port,
        "SELECT * WHERE { SERVICE SILENT <http\\u003A//127.0.0.1:%d/> { ?s ?p ?o } }" % port,
        # an escaped # in a prefixed name inside VALUES: the rewriting step read a comment there
        "PREFIX ex: <http://example.org/>\nSELECT * WHERE { VALUES ?x { ex:a\\#b } "
        "SERVICE <http://127.0.0.1:%d/> { ?s ?p ?o }\n}" % port,
    ]


def test_service_with_escapes_is_refused_and_sends_nothing(server, listener):
    """Before: the worker POSTed to the listener and returned its answer, through a plain
    GET link (any web page could trigger it)."""
    for q in service_queries(listener.port):
        reply = get(server.port, "/query?query=" + urllib.parse.quote(q), b"127.0.0.1")
        assert reply.startswith(b"HTTP/1.1 400 ") and b"is refused" in reply, (q, reply[:300])
        assert b"secret" not in reply
    assert reply.find(b"SERVICE <http://127.0.0.1:%d/>" % listener.port) > 0  # the IRI named
    assert listener.hits == []


def test_service_with_escapes_is_refused_by_the_cli_and_the_api(store_path, listener, tmp_path):
    from tests.conftest import run_cli
    for q in service_queries(listener.port):
        with Store(store_path, read_only=True) as st, pytest.raises(KgcultError, match="is refused"):
            list(st.query(q))
        f = tmp_path / "q.rq"
        f.write_text(q)
        r = run_cli(["sparql", "-f", str(f)], store_path)
        assert r.exit_code == 1 and "is refused" in r.stderr
    assert listener.hits == []


def test_service_hidden_in_an_update_is_refused(tmp_path, listener):
    path = build_store(tmp_path / "w")
    update = ("PREFIX ex: <http://example.org/>\nINSERT { ?s ?p ?o } WHERE { VALUES ?x { ex:a\\#b } "
              "SERVICE <http://127.0.0.1:%d/> { ?s ?p ?o }\n}" % listener.port)
    with running_server(path, ServeConfig(port=0, writable=True, token="t" * 16), read_only=False) as srv:
        body = urllib.parse.urlencode({"update": update}).encode()
        req = (b"POST /update HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + b"t" * 16 +
               b"\r\nContent-Type: application/x-www-form-urlencoded\r\nConnection: close\r\n"
               b"Content-Length: %d\r\n\r\n" % len(body)) + body
        reply = exchange(srv.port, req)
    assert reply.startswith(b"HTTP/1.1 400 ") and b"refused in an update" in reply, reply[:300]
    assert listener.hits == []
