"""`kgcult serve` keeps its workers for everyone when many addresses send runaway queries
(issue 30, deliverable 4): a client with nothing running pre-empts the heaviest client's
longest job instead of waiting for its deadline, and a client past its budget of worker
seconds gets 429 with Retry-After while the workers are busy (kgcult/serve/shares.py)."""
from __future__ import annotations

import json
import threading
import time
import urllib.parse
import urllib.request
from http.client import HTTPConnection


from kgcult.serve.config import ServeConfig
from kgcult.serve.shares import Usage
from tests.test_serve import RUNAWAY, wait_in_flight

ORDINARY = "ASK { wd:Q177 wdt:P495 wd:Q38 }"


def send(source: str, base: str, query: str, timeout: float = 90):
    """(status, headers, body) of a query sent from the loopback address ``source``."""
    parts = urllib.parse.urlsplit(base)
    conn = HTTPConnection(parts.hostname, parts.port, timeout=timeout, source_address=(source, 0))
    try:
        conn.request("POST", "/query", urllib.parse.urlencode({"query": query}),
                     {"Content-Type": "application/x-www-form-urlencoded"})
        r = conn.getresponse()
        return r.status, r.headers, r.read()
    except OSError as e:  # the server closed at the end of the test
        return f"error: {type(e).__name__}", {}, b""
    finally:
        conn.close()


def test_a_fresh_address_is_answered_while_many_addresses_run_runaways(make_server):
    """Two workers, each runaway allowed 120 s; four addresses keep two runaways each in
    flight (eight, four times the workers). An ordinary query from a fresh address is
    answered 200 within its 30 s queue timeout: it pre-empts a runaway of the heaviest
    address, which gets 429 with Retry-After. Before (a free worker only at a runaway's
    deadline), it waited the whole queue timeout and got 503. Pre-emption is judged on
    budget use (issue 40): the runaways pass their 1 worker second of budget at once."""
    srv = make_server(ServeConfig(port=0, workers=2, per_client=2, timeout=120, queue_timeout=30,
                                  client_budget=1.0))
    done: list[tuple] = []
    lock = threading.Lock()

    def runaway(source):
        out = send(source, srv.url, RUNAWAY)
        with lock:
            done.append((source, *out))

    for i in range(8):
        threading.Thread(target=runaway, args=(f"127.0.0.{40 + i % 4}",), daemon=True).start()
    wait_in_flight(srv, 8)
    status, _, body = send("127.0.0.60", srv.url, ORDINARY)
    assert status == 200, (status, body)
    assert b"true" in body
    assert srv.app.stats["preempted"] >= 1
    for _ in range(200):  # the pre-empted runaway's answer is on its way
        with lock:
            stopped = [d for d in done if d[1] == 429]
        if stopped:
            break
        time.sleep(0.05)
    source, _, headers, body = stopped[0]
    assert headers["X-Kgcult-Limit"] == "preempted" and int(headers["Retry-After"]) >= 1
    assert b"stopped to free its worker" in body and source.encode() in body
    assert all(d[1] in (429, 503) or str(d[1]).startswith("error") for d in done), done
    srv.app.pool.close()  # stop the runaways now rather than at their 120 s deadline


def test_a_client_over_its_budget_gets_429_while_the_workers_are_busy(make_server):
    """A client that used more than its budget (0.5 worker seconds here) in the last
    minute gets 429 with a Retry-After at once while another client holds the only worker,
    and does not pre-empt it; once the worker is free it is served again."""
    srv = make_server(ServeConfig(port=0, workers=1, timeout=2, queue_timeout=30, client_budget=0.5))
    assert send("127.0.0.50", srv.url, RUNAWAY)[0] == 504  # 2 worker seconds: over budget
    holder = threading.Thread(target=send, args=("127.0.0.51", srv.url, RUNAWAY), daemon=True)
    holder.start()
    wait_in_flight(srv, 1)
    status, headers, body = send("127.0.0.50", srv.url, ORDINARY)
    assert status == 429, (status, body)
    assert 1 <= int(headers["Retry-After"]) <= 60
    assert b"more than its share" in body
    assert srv.app.stats["preempted"] == 0
    shown = json.loads(urllib.request.urlopen(srv.url + "/api/status", timeout=30).read())
    assert shown["client_budget_s"] == 0.5 and shown["preempt_after_s"] == 0.5 and shown["stats"]["limited"] >= 1
    holder.join(30)
    assert send("127.0.0.50", srv.url, ORDINARY)[0] == 200  # nobody else waits: served


def test_usage_counts_worker_seconds_over_a_sliding_window():
    """Finished jobs count by their overlap with the last minute, running ones by their
    time so far; Retry-After is when the finished ones fall within the budget."""
    u = Usage(window=60, budget=10)
    u.start("a", "x", now=0)
    u.finish("a", now=30)      # 30 s of work, 0..30
    u.start("b", "x", now=100)
    assert u.used("x", 100) == 0  # the first job left the window at 90
    assert u.used("x", 105) == 5
    u.finish("b", 120)
    assert u.used("x", 120) == 20 and u.over_budget("x", 120)
    assert u.retry_after("x", 120) == 50  # at 170 the window (110..170) holds 10 s of it
    assert not u.over_budget("y", 120) and u.retry_after("y", 120) == 1
