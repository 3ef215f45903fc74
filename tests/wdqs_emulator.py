"""A WDQS-faithful endpoint for tests and benchmarks: ``oxigraph serve`` behind a policy
layer that behaves as the public Wikidata Query Service does (profile ``wdqs``) or as
QLever's public Wikidata endpoint does (profile ``qlever``).

``Emulator(upstream_url, profile="wdqs", scale=60, ...)`` is a real HTTP proxy on
127.0.0.1 (it reuses the mirror tests' :class:`tests.test_mirror_proxy.FaultProxy` for the
server and the forwarding). Its clock runs ``scale`` times faster than the wall clock
(``emu.clock.now()`` / ``emu.clock.sleep()``; hand both to the client under test), and a
request's processing time is ``real seconds x scale x cost_factor + fixed_cost`` emulated
seconds, the answer held back until that time has passed, so a test of minutes of WDQS
time runs in seconds. Every number is WDQS's (docs/mirror.md cites the sources):

* wikimedia/wikidata-query-rdf ``ThrottlingFilter``/``ThrottlingFilterConfig``: per client
  (User-Agent + IP) a processing-time bucket (120 s, refilled by 60 s every minute) and an
  error bucket (60, refilled by 30 every minute), fixed-interval refills; a client with
  either empty gets 429 and ``Retry-After`` = the whole seconds to the next refill (0-59,
  ``Duration.getSeconds()``), body ``Too Many Requests - Please retry in N seconds.``;
  each 429 takes a token from a throttle bucket (200, refilled by 200 every 20 minutes)
  and a client that finds it empty is banned for 24 h: 403 ``You have been banned until
  <instant>, please respect throttling and retry-after headers.``; status < 400 charges
  the time bucket, >= 400 the error bucket and the time.
* the WDQS user manual: a 60 s deadline per query; at most 5 parallel queries per client
  (the 6th is answered 429 without Retry-After here; the manual gives no status).
* Blazegraph at its deadline (WDQS issue threads: osm-search/wikipedia-wikidata#4,
  INCATools/ubergraph#47): either HTTP 500, or HTTP 200 whose body, cut where the
  serializer was, goes on with ``SPARQL-QUERY: queryStr=<query>`` and a
  ``java.util.concurrent.TimeoutException`` stack trace (``timeout_mode`` "500", "cut200",
  or "mixed").
* Wikimedia's User-Agent policy: an empty or library-default agent is refused (403).

Profile ``qlever``: ``old_url`` answers every request with a 308 (``redirect_status``) to
``url`` (the public endpoint moved host); a CONSTRUCT is answered in Turtle whatever the
Accept header (ad-freiburg/qlever#2597, before mid-2026); a SELECT is cut at ``max_rows``
(1,000,000); a query past the deadline is answered 429 with a JSON error
(ad-freiburg/qlever#2957). No rate limit.

Timeouts happen when a request's processing time passes the deadline, and on a seeded
schedule (``timeout_rate``, at most ``max_consecutive`` times in a row for one request
body, so a client that retries gets through). ``stats`` and the counters below say what
happened; ``violations`` counts requests that arrived inside a ``Retry-After`` window the
same client had been given (later than ``grace`` real seconds after the 429 left, so a
request already in flight then is not counted).
"""
from __future__ import annotations

import http.client
import json
import random
import re
import socket
import threading
import time
import urllib.parse
from datetime import datetime, timedelta, timezone

from tests.test_mirror_proxy import FaultProxy

MINUTE = 60.0
DEADLINE = 60.0
BAN = 24 * 3600.0
TRACE = ("java.util.concurrent.TimeoutException\n"
         "\tat java.util.concurrent.FutureTask.get(FutureTask.java:205)\n"
         "\tat com.bigdata.rdf.sail.webapp.BigdataServlet.submitApiTask(BigdataServlet.java:292)\n"
         "\tat com.bigdata.rdf.sail.webapp.QueryServlet.doSparqlQuery(QueryServlet.java:678)\n"
         "\tat com.bigdata.rdf.sail.webapp.QueryServlet.doPost(QueryServlet.java:275)\n"
         "\tat com.bigdata.rdf.sail.webapp.RESTServlet.doPost(RESTServlet.java:269)\n"
         "\tat javax.servlet.http.HttpServlet.service(HttpServlet.java:707)\n")
AGENT_REFUSED = (b"Please set a user-agent and respect our robot policy "
                 b"https://meta.wikimedia.org/wiki/User-Agent_policy. Scripts should use an informative "
                 b"User-Agent string with contact information, or they may be blocked without notice.")
GENERIC = re.compile(r"(?i)^(?:$|python-requests|python-urllib|urllib3|curl|wget|java|okhttp|go-http-client|"
                     r"libwww-perl|lwp|node-fetch|axios)")
_CONSTRUCT = re.compile(r"(?im)^\s*CONSTRUCT\b")


class Clock:
    """Emulated seconds: the wall clock times ``scale``."""

    def __init__(self, scale: float = 1.0):
        self.scale, self.t0 = float(scale), time.monotonic()

    def now(self) -> float:
        return (time.monotonic() - self.t0) * self.scale

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds / self.scale)


class Bucket:
    """A token bucket with a fixed-interval refill (as bbeck's token-bucket, which WDQS uses)."""

    def __init__(self, capacity: float, amount: float, period: float, now: float):
        self.capacity, self.amount, self.period = capacity, amount, period
        self.tokens, self.next = float(capacity), now + period

    def _refill(self, now: float) -> None:
        if now >= self.next:
            n = int((now - self.next) // self.period) + 1
            self.tokens = min(self.capacity, self.tokens + n * self.amount)
            self.next += n * self.period

    def level(self, now: float) -> float:
        self._refill(now)
        return self.tokens

    def take(self, n: float, now: float) -> bool:
        """Take ``min(n, tokens)``; False when it was empty."""
        self._refill(now)
        if self.tokens <= 0:
            return False
        self.tokens = max(0.0, self.tokens - n)
        return True

    def until_refill(self, now: float) -> float:
        self._refill(now)
        return self.next - now


class Client:
    def __init__(self, now: float):
        self.time = Bucket(120.0, 60.0, MINUTE, now)       # seconds of processing
        self.errors = Bucket(60, 30, MINUTE, now)
        self.throttles = Bucket(200, 200, 20 * MINUTE, now)
        self.banned_until = float("-inf")
        self.window = (float("-inf"), float("-inf"))     # (real time the 429 left, emulated end)
        self.in_flight = 0

    def delay(self, now: float) -> float | None:
        """Seconds to wait when throttled, else None."""
        waits = [b.until_refill(now) for b in (self.time, self.errors) if b.level(now) <= 0]
        return max(waits) if waits else None


class Emulator(FaultProxy):
    def __init__(self, upstream: str, *, profile: str = "wdqs", scale: float = 60.0, cost_factor: float = 1.0,
                 fixed_cost: float = 0.0, deadline: float = DEADLINE, timeout_mode: str = "mixed",
                 timeout_rate: float = 0.0, max_consecutive: int = 2, seed: int = 0, max_parallel: int = 5,
                 max_rows: int = 1_000_000, redirect_status: int = 308, grace: float = 0.05,
                 hold: threading.Event | None = None):
        if profile not in ("wdqs", "qlever") or timeout_mode not in ("500", "cut200", "mixed"):
            raise ValueError("profile wdqs|qlever, timeout_mode 500|cut200|mixed")
        super().__init__(upstream, faults=(), rate=0.0)
        self.profile, self.clock = profile, Clock(scale)
        self.cost_factor, self.fixed_cost, self.deadline = cost_factor, fixed_cost, deadline
        self.timeout_mode, self.timeout_rate, self.max_consecutive = timeout_mode, timeout_rate, max_consecutive
        self.max_parallel, self.max_rows, self.redirect_status, self.grace = max_parallel, max_rows, redirect_status, grace
        self.rng = random.Random(seed)
        self.hold = hold  # when given, every admitted query is held until it is set (deterministic overlap)
        self.clients: dict[tuple, Client] = {}
        self.timeouts_in_a_row: dict[bytes, int] = {}
        self.old_url = self.url.replace(self.upstream_path, "/old" + self.upstream_path)
        self.server_seconds = 0.0
        self.violations = 0
        self.too_parallel = 0
        self.max_in_flight = 0
        self.cut_bodies: list[int] = []   # lengths of the answers sent cut (status 200)
        self.retry_afters: list[int] = []

    # -- bookkeeping ----------------------------------------------------------------------

    def _count(self, what: str) -> None:
        self.stats[what] = self.stats.get(what, 0) + 1

    @property
    def throttled(self) -> int:
        return self.stats.get("429", 0)

    def _client(self, key, now) -> Client:
        c = self.clients.get(key)
        if c is None:
            c = self.clients[key] = Client(now)
        return c

    # -- one request ----------------------------------------------------------------------

    def _handle(self, h, body: bytes):
        # headers and body leave in two writes: without this, Nagle + delayed ACK add ~40 ms
        h.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.lock:
            self.requests += 1
            self.headers.append(dict(h.headers.items()))
        try:
            if self.profile == "qlever" and h.path.startswith("/old/"):
                self._count(str(self.redirect_status))
                return self._send(h, self.redirect_status, "text/html", b"moved",
                                  [("Location", self.url)])
            if self.profile == "wdqs":
                return self._wdqs(h, body)
            return self._serve(h, body, None)
        except (BrokenPipeError, ConnectionResetError, OSError):
            h.close_connection = True

    def _wdqs(self, h, body: bytes):
        ua = h.headers.get("User-Agent", "")
        if GENERIC.match(ua.strip()):
            self._count("403-agent")
            return self._send(h, 403, "text/plain; charset=utf-8", AGENT_REFUSED)
        key = (ua, h.client_address[0])
        with self.lock:
            now = self.clock.now()
            c = self._client(key, now)
            issued, end = c.window
            if issued + self.grace < time.monotonic() and now < end:
                self.violations += 1
            if c.banned_until > now:
                self._count("403-ban")
                until = datetime.now(timezone.utc) + timedelta(seconds=(c.banned_until - now) / self.clock.scale)
                msg = (f"You have been banned until {until.strftime('%Y-%m-%dT%H:%M:%SZ')}, please respect "
                       "throttling and retry-after headers.")
                answer = (403, msg.encode(), ())
            elif (delay := c.delay(now)) is not None:
                seconds = int(delay)  # Duration.getSeconds(): whole seconds, 0 when under one
                self._count("429")
                self.retry_afters.append(seconds)
                if not c.throttles.take(1, now):
                    c.banned_until = now + BAN
                # a window still open keeps its start: requests sent after it opened are counted
                start = c.window[0] if now < c.window[1] else time.monotonic()
                c.window = (start, max(c.window[1], now + seconds))
                answer = (429, f"Too Many Requests - Please retry in {seconds} seconds.".encode(),
                          (("Retry-After", str(seconds)),))
            elif c.in_flight >= self.max_parallel:
                self.too_parallel += 1
                self._count("429-parallel")
                answer = (429, b"Too Many Requests - too many parallel queries", ())
            else:
                c.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, c.in_flight)
                answer = None
        if answer is not None:
            status, text, extra = answer
            return self._send(h, status, "text/plain; charset=utf-8", text, list(extra))
        try:
            self._serve(h, body, c)
        finally:
            with self.lock:
                c.in_flight -= 1

    def _serve(self, h, body: bytes, c: Client | None):
        form = urllib.parse.parse_qs(body.decode("utf-8", "replace"))
        query = (form.get("query") or [""])[0]
        construct = bool(_CONSTRUCT.search(re.sub(r"(?m)#.*$", "", query)))
        accept = "text/turtle" if self.profile == "qlever" and construct else h.headers.get("Accept", "")
        t0 = time.monotonic()
        status, ctype, data = self._upstream(h, body, accept)
        real = time.monotonic() - t0
        cost = real * self.clock.scale * self.cost_factor + self.fixed_cost
        with self.lock:
            streak = self.timeouts_in_a_row.get(body, 0)
            late = cost > self.deadline or (
                status == 200 and streak < self.max_consecutive and self.rng.random() < self.timeout_rate)
            self.timeouts_in_a_row[body] = streak + 1 if late else 0
            mode = self.timeout_mode if self.timeout_mode != "mixed" else self.rng.choice(("500", "cut200"))
            cut_at = int(len(data) * self.rng.uniform(0.1, 0.9))
        if late:
            cost = self.deadline
        if self.hold is not None:
            self.hold.wait(60)
        # hold the answer until its processing time has passed on the emulated clock
        time.sleep(max(0.0, cost / self.clock.scale - (time.monotonic() - t0)))
        if late:
            report = f"SPARQL-QUERY: queryStr={query}\n{TRACE}".encode()
            if self.profile == "qlever":
                status, ctype = 429, "application/json"
                data = json.dumps({"exception": f"Operation timed out after {self.deadline:g} s (query cancelled)",
                                   "query": query, "status": "ERROR", "resultsize": 0}).encode()
                self._count("timeout-429")
            elif mode == "500":
                status, ctype, data = 500, "text/plain; charset=utf-8", report
                self._count("timeout-500")
            else:
                data = data[:cut_at] + report
                with self.lock:
                    self.cut_bodies.append(cut_at)
                self._count("timeout-cut200")
        elif self.profile == "qlever" and status == 200 and "json" in ctype and not construct:
            data = self._cap(data)
        if c is not None:
            with self.lock:
                now = self.clock.now()
                self.server_seconds += cost
                c.time.take(cost, now)
                if status >= 400:
                    c.errors.take(1, now)
        else:
            with self.lock:
                self.server_seconds += cost
        self._count(f"{status}" if not late else "timeout")
        return self._send(h, status, ctype, data)

    def _upstream(self, h, body: bytes, accept: str):
        conn = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=120)
        try:
            conn.request("POST", self.upstream_path, body=body or None,
                         headers={"Content-Type": h.headers.get("Content-Type", "application/x-www-form-urlencoded"),
                                  "Accept": accept or "*/*"})
            r = conn.getresponse()
            return r.status, r.getheader("Content-Type", "application/octet-stream"), r.read()
        finally:
            conn.close()

    def _cap(self, data: bytes) -> bytes:
        try:
            doc = json.loads(data)
            rows = doc["results"]["bindings"]
        except (ValueError, KeyError, TypeError):
            return data
        if len(rows) <= self.max_rows:
            return data
        doc["results"]["bindings"] = rows[:self.max_rows]
        self._count("row-cap")
        return json.dumps(doc).encode()
