"""One HTTP client for SPARQL 1.1 endpoints, used by the mirror and by the remote store.

A query goes out as a POST of form fields (the endpoint's parameters, then ``query=``) with
a User-Agent and an Accept header, over a urllib3 connection pool. Every attempt has one
deadline, ``timeout``, for connecting, the response and the whole body. A
:class:`urllib3.util.Retry` policy decides what is tried again and when: HTTP 408, 429
and 5xx (``retry_status``), connection errors, timeouts and broken bodies, and any answer the
caller's ``check`` rejects with :class:`BadResponse` (an HTML page served with status 200,
a body cut short). The deadline is a total one: a watchdog closes the connection when it
passes, so a server that trickles its headers or body a byte at a time cannot hold a
request past ``timeout``. A server's ``Retry-After`` is obeyed (up to ``max_retry_after``);
otherwise the wait grows exponentially with jitter. A request gets at most ``attempts``
tries, the client at most ``retry_budget`` retries in all. What cannot be had raises
:class:`RemoteError`, naming the endpoint, the status or problem, and the tries.

HTTP 429 is the endpoint's rate limit, not a failure of the query: it goes to the client's
one :class:`~kgcult.sparql.throttle.Throttle`, which holds every worker back for
``max(Retry-After, floor)`` and stops the client before a ban, and spends neither the
request's tries nor the retry budget (QLever's 429 for a query past its deadline, whose
body says so, is a timeout and does count). An answer cut by the endpoint's deadline and
sent with status 200 (Blazegraph appends ``SPARQL-QUERY: queryStr=...`` and a
``java.util.concurrent.TimeoutException`` stack trace to the part already written) is a
failed try, as is a 5xx. Redirects (301, 302, 303, 307, 308) are followed, at most
``MAX_REDIRECTS``, by sending the same POST to the new address (never from https to
http; headers other than the protocol's own are dropped on a change of host); a permanent
one (301, 308) is remembered for the client's later requests.

Answers are bounded: the body is decoded (gzip) in chunks of at most 64 KiB and the client
stops at ``max_answer`` decoded bytes (:data:`MAX_ANSWER`, 512 MiB, by default), so a small
compressed bomb cannot fill the memory; an XML answer that declares an ENTITY (the "billion
laughs" expansion, which Oxigraph's RDF/XML parser performs) is refused before any parser
sees it, and one with any other DOCTYPE is a failed try (:class:`BadResponse`: most often
an HTML error page), never parsed; :func:`json_answer` turns a JSON answer nested too deep for Python's
parser into a :class:`RemoteError`. The refused answers are not asked for again.
"""
from __future__ import annotations

import base64
import json
import logging
import random
import re
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Callable

import socket

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import HTTPError, InvalidHeader, MaxRetryError, ReadTimeoutError
from urllib3.util import Retry, Timeout

from kgcult.errors import KgcultError
from kgcult.safe_text import printable
from kgcult.sparql.throttle import Throttle, ThrottledTooOften
from kgcult.version import __version__

log = logging.getLogger(__name__)

USER_AGENT = f"kgcult/{__version__} (https://w3id.org/kgcult; research mirror client)"
RETRY_STATUS = frozenset({408, 429, *range(500, 600)})  # busy, throttled, or a server-side failure
_CHUNK = 1 << 16
MAX_ANSWER = 512 << 20  # decoded bytes of one answer
_POOL_PREFIX = re.compile(r"^HTTPS?Connection(?:Pool)?\([^)]*\): ")
_TIMEOUT_NOTE = re.compile(r"\s*\((?:read|connect) timeout=[^)]*\)")
MAX_REDIRECTS = 5
REDIRECTS = frozenset({301, 302, 303, 307, 308})
_PROTOCOL_HEADERS = frozenset({"user-agent", "accept", "accept-encoding", "content-type"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of ``url``, the default port filled in: credentials are sent
    to this origin only (RFC 6454; a redirect to another port of the same host is another
    origin)."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port if port is not None else _DEFAULT_PORTS.get(scheme)


def redact(url: str) -> str:
    """``url`` with the password of its user information replaced by ``***``: what a
    message or a log may show of it."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return urllib.parse.urlunsplit((parts.scheme, f"{user}:***@{hostport}" if user else f"***@{hostport}",
                                    parts.path, parts.query, parts.fragment))


def split_credentials(url: str) -> tuple[str, str | None]:
    """(``url`` without its user information, the ``Authorization: Basic`` value made of
    it, or None when it has none): credentials in an endpoint URL are used, as curl and
    requests use them, never silently dropped."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}".encode()).decode()
    return urllib.parse.urlunsplit((parts.scheme, hostport, parts.path, parts.query, parts.fragment)), f"Basic {token}"
# what Blazegraph writes after an answer its deadline cut (WDQS): the query, then the trace
_QUERY_MARK = b"SPARQL-QUERY: queryStr="
_TIMEOUT_MARK = b"java.util.concurrent.TimeoutException"
# QLever answers a query cancelled at its deadline with 429 and a JSON error saying so
_QLEVER_TIMEOUT = re.compile(rb"(?i)timed?[ -]?out|time limit|deadline|cancel")


def deadline_cut(body: bytes) -> int | None:
    """Where the endpoint's timeout report starts in ``body`` (an answer cut by its
    deadline and sent with status 200), or None."""
    i = body.rfind(_TIMEOUT_MARK)
    if i < 0:
        return None
    j = body.rfind(_QUERY_MARK, 0, i)
    if j >= 0:
        return j
    return i if b"\tat " in body[i:i + 400] else None


class RemoteError(KgcultError):
    """An endpoint that answered with an error, or not at all."""

    def __init__(self, endpoint: str, problem: str, *, status: int | None = None, attempts: int = 1):
        self.endpoint, self.problem, self.status, self.attempts = endpoint, problem, status, attempts
        tries = f"failed {attempts} times, last: " if attempts > 1 else ""
        super().__init__(f"{endpoint}: {tries}{problem}")


class RetriesExhausted(RemoteError):
    """Every attempt a request was allowed failed."""


class RetryBudgetExhausted(RemoteError):
    """The client's retries are spent (``retry_budget``)."""

    def __init__(self, endpoint: str, last: str, budget: int):
        super().__init__(endpoint, f"retry budget of {budget} exhausted (last error: {last})")
        self.last, self.budget = last, budget


class AnswerRefused(RemoteError):
    """An answer too large, or shaped to exhaust the parser; never asked for again."""


def json_answer(body: bytes, endpoint: str):
    """``body`` parsed as JSON; :class:`AnswerRefused` where it nests too deep for Python's
    parser (a hostile answer nested 200,000 deep), ValueError where it is not JSON."""
    try:
        return json.loads(body.decode("utf-8"))
    except RecursionError:
        raise AnswerRefused(endpoint, f"JSON answer nested deeper than {sys.getrecursionlimit()} levels "
                                      "refused") from None


class BadResponse(Exception):
    """Raised by a ``check``: the answer arrived but cannot be used, so it is asked again."""


@dataclass(frozen=True)
class Reply:
    status: int
    content_type: str  # the media type, lower-case, without parameters
    headers: urllib3.HTTPHeaderDict  # case-insensitive
    body: bytes


class Backoff(Retry):
    """urllib3's Retry with kgcult's wait between tries: ``backoff_factor * 2**(n-1)``
    before the n-th retry, scaled by a factor drawn from ``[1 - backoff_jitter, 1 +
    backoff_jitter]`` and capped at ``backoff_max`` (urllib3's own formula waits nothing
    before the first retry and adds its jitter instead)."""

    def __init__(self, *args, rng: random.Random | None = None, **kw):
        super().__init__(*args, **kw)
        self.rng = rng or random.Random()

    def parse_retry_after(self, retry_after: str) -> float:
        """Seconds as any number (``1.5``; urllib3 takes whole seconds only) or an HTTP date."""
        try:
            return max(0.0, float(retry_after))
        except ValueError:
            return super().parse_retry_after(retry_after)

    def new(self, **kw) -> Backoff:
        retry = super().new(**kw)
        retry.rng = self.rng
        return retry

    def get_backoff_time(self) -> float:
        if not self.history:
            return 0.0
        base = self.backoff_factor * 2 ** (len(self.history) - 1)
        return min(self.backoff_max, base * self.rng.uniform(1 - self.backoff_jitter, 1 + self.backoff_jitter))


# -- a total deadline per request ---------------------------------------------------------
# urllib3's timeouts bound each socket read, not the whole exchange. The connections below
# tell the request's watchdog which socket they use, so that it can shut that socket down
# when the deadline passes; the blocked read then fails at once.
_watch = threading.local()


class _WatchedMixin:
    def request(self, *args, **kwargs):
        watchdog = getattr(_watch, "current", None)
        if watchdog is not None:
            watchdog.attach(self)
        return super().request(*args, **kwargs)


class _WatchedHTTPConnection(_WatchedMixin, HTTPConnection):
    pass


class _WatchedHTTPSConnection(_WatchedMixin, HTTPSConnection):
    pass


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


class _Watchdog:
    """Shuts the attached connection's socket down ``seconds`` after it starts."""

    def __init__(self, seconds: float):
        self.fired = False
        self._conn = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def attach(self, conn) -> None:
        with self._lock:
            self._conn = conn
            fired = self.fired
        if fired:
            self._shutdown(conn)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            conn = self._conn
        if conn is not None:
            self._shutdown(conn)

    @staticmethod
    def _shutdown(conn) -> None:
        sock = getattr(conn, "sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> _Watchdog:
        _watch.current = self
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()
        _watch.current = None


class _Failed(Exception):
    """One failed attempt: what to report, and what the Retry policy counts."""

    def __init__(self, problem: str, *, error: Exception | None = None, response=None, timeout: bool = False):
        super().__init__(problem)
        self.problem, self.error, self.response, self.timeout = problem, error, response, timeout


class SparqlClient:
    """Queries to one SPARQL endpoint; thread-safe (the mirror shares one among its
    workers). ``requests``, ``retries``, ``bytes``, ``throttled`` (429s),
    ``deadline_cuts`` (answers cut by the endpoint's deadline) and ``redirects`` count what
    it has done; ``url`` is where it sends queries now (``endpoint`` after a permanent
    redirect). ``throttle``: shared by every worker, it takes the 429s (without one, a
    429 is a failed try as any other, and at most ``parallel`` requests go at a time)."""

    def __init__(self, endpoint: str, *, user_agent: str = USER_AGENT, headers: dict | None = None,
                 timeout: float = 60.0, attempts: int = 3, backoff: float = 0.5, max_backoff: float = 120.0,
                 max_retry_after: float = 600.0, retry_reads: bool = True, retry_budget: int | None = None,
                 retry_status: frozenset[int] = RETRY_STATUS,
                 sleep: Callable[[float], None] = time.sleep, seed: int | None = None, pool_size: int = 4,
                 throttle: Throttle | None = None, parallel: int | None = None,
                 clock: Callable[[], float] = time.monotonic, max_answer: int = MAX_ANSWER):
        self.max_answer = max_answer
        endpoint, basic = split_credentials(endpoint)
        headers = dict(headers or {})
        if basic is not None:
            if any(k.lower() == "authorization" for k in headers):
                raise KgcultError(f"{endpoint}: credentials in the endpoint URL and an Authorization header "
                                  "(KGCULT_REMOTE_TOKEN) at once: give one of them")
            headers["Authorization"] = basic
        self.endpoint, self.timeout, self.retry_budget, self._sleep = endpoint, timeout, retry_budget, sleep
        self.url = endpoint
        self._origin = origin(endpoint)  # the one origin credentials go to
        # retry_reads=False: a request whose answer had started (or timed out) is not sent again
        self.policy = Backoff(total=attempts - 1, read=None if retry_reads else 0, allowed_methods={"POST"},
                              status_forcelist=retry_status, backoff_factor=backoff, backoff_max=max_backoff,
                              backoff_jitter=0.5, rng=random.Random(seed))
        self.max_retry_after = max_retry_after
        self._rate_limited = throttle is not None
        self.throttle = throttle or Throttle(parallel=parallel or 1 << 16, clock=clock, sleep=sleep)
        # sent with every request (urllib3 replaces a pool's headers by a request's own)
        self._headers = {"User-Agent": user_agent, "Accept-Encoding": "gzip", **(headers or {})}
        self._pool = urllib3.PoolManager(maxsize=pool_size)
        self._pool.pool_classes_by_scheme = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}
        self._lock = threading.Lock()
        self.requests = self.retries = self.bytes = 0
        self.deadline_cuts = self.redirects = 0

    @property
    def throttled(self) -> int:
        return self.throttle.throttled

    def query(self, text: str, accept: str, *, params=(), check: Callable[[Reply], object] | None = None):
        """POST ``text`` as the ``query`` field after ``params`` (name, value pairs); return
        ``check(reply)``, or the :class:`Reply` without a check, once an attempt succeeds."""
        body = urllib.parse.urlencode([*params, ("query", text)]).encode("utf-8")
        headers = {**self._headers, "Accept": accept, "Content-Type": "application/x-www-form-urlencoded"}
        retry = self.policy
        while True:
            try:
                reply = self._attempt(body, headers, retry)
                return check(reply) if check else reply
            except BadResponse as e:
                failed = _Failed(str(e), error=e)
            except _Failed as e:
                failed = e
            if (self._rate_limited and failed.response is not None and failed.response.status == 429
                    and not failed.timeout):
                # the endpoint's rate limit: every worker waits; no try, no retry is spent
                try:
                    self.throttle.throttled_by(self._retry_after(retry, failed.response))
                except ThrottledTooOften as e:
                    raise RemoteError(self.endpoint, f"{failed.problem}; {e}", status=429) from None
                continue
            try:
                retry = retry.increment("POST", self.endpoint, response=failed.response, error=failed.error)
            except MaxRetryError:
                status = failed.response.status if failed.response is not None else None
                raise RetriesExhausted(self.endpoint, failed.problem, status=status,
                                       attempts=len(retry.history) + 1) from None
            with self._lock:
                if self.retry_budget is not None and self.retries >= self.retry_budget:
                    raise RetryBudgetExhausted(self.endpoint, failed.problem, self.retry_budget)
                self.retries += 1
            self._sleep(self._wait(retry, failed.response))

    def close(self) -> None:
        """Close the pooled connections (a later query opens new ones)."""
        self._pool.clear()

    def _attempt(self, body: bytes, headers: dict, retry: Retry) -> Reply:
        url, hops = self.url, 0
        while True:
            with self.throttle:
                resp, data = self._send(url, body, headers if origin(url) == self._origin else _protocol_only(headers))
            if resp.status not in REDIRECTS or not resp.headers.get("Location"):
                break
            url, headers, hops = self._redirect(url, resp, headers, hops)
        if resp.status >= 300:
            text = data[:600].decode("utf-8", "replace").strip()
            problem = printable(f"HTTP {resp.status} {resp.reason}: {text or '(empty body)'}")
            timeout = deadline_cut(data) is not None or (
                resp.status == 429 and not resp.headers.get("Retry-After") and bool(_QLEVER_TIMEOUT.search(data[:2000])))
            if timeout:
                with self._lock:
                    self.deadline_cuts += 1
                problem = f"the query ran past the endpoint's deadline (HTTP {resp.status})"
            if retry.is_retry("POST", resp.status, bool(resp.headers.get("Retry-After"))):
                raise _Failed(problem, response=resp, timeout=timeout)
            raise RemoteError(self.endpoint, problem, status=resp.status)
        cut = deadline_cut(data)
        if cut is not None:
            with self._lock:
                self.deadline_cuts += 1
            raise _Failed(f"the query ran past the endpoint's deadline: HTTP {resp.status} with the answer cut "
                          f"after {cut} bytes and a TimeoutException appended",
                          error=ReadTimeoutError(None, self.endpoint, "deadline"))  # type: ignore[arg-type]
        ctype = resp.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if "xml" in ctype and b"<!ENTITY" in data:
            raise AnswerRefused(self.endpoint, f"{ctype} answer declares an XML ENTITY; "
                                               "entity expansion is refused")
        if "xml" in ctype and b"<!DOCTYPE" in data:
            # never parsed; most often an HTML error page that claims the asked-for type
            raise BadResponse(f"{ctype} answer with a DOCTYPE (an HTML error page?); not parsed")
        return Reply(resp.status, ctype, resp.headers, data)

    def _send(self, url: str, body: bytes, headers: dict):
        deadline = time.monotonic() + self.timeout
        late = f"timeout: no complete answer within {self.timeout:g} s"
        with _Watchdog(self.timeout) as watchdog:
            try:
                resp = self._pool.request("POST", url, body=body, headers=headers, retries=False,
                                          redirect=False, preload_content=False, timeout=Timeout(total=self.timeout))
            except HTTPError as e:
                if watchdog.fired:
                    raise _Failed(f"no answer (timed out; timeout {self.timeout:g} s)",
                                  error=self._deadline_error()) from None
                raise _Failed(f"no answer ({_reason(e)}; timeout {self.timeout:g} s)", error=e) from None
            try:
                data = self._read(resp, deadline)
            except AnswerRefused:
                resp.close()
                raise
            except (ReadTimeoutError, HTTPError, OSError) as e:
                resp.close()
                if watchdog.fired or isinstance(e, ReadTimeoutError):
                    raise _Failed(late, error=self._deadline_error()) from None
                raise _Failed(f"truncated response ({_reason(e)})", error=e) from None
            finally:
                resp.release_conn()
        with self._lock:
            self.requests += 1
            self.bytes += len(data)
        return resp, data

    def _redirect(self, url: str, resp, headers: dict, hops: int):
        """The next address of a redirect, with the headers to send there."""
        target, _ = split_credentials(urllib.parse.urljoin(url, resp.headers["Location"]))  # never used, never shown
        old, new = urllib.parse.urlsplit(url), urllib.parse.urlsplit(target)
        if hops >= MAX_REDIRECTS:
            raise RemoteError(self.endpoint, f"more than {MAX_REDIRECTS} redirects (last to {target})",
                              status=resp.status)
        if new.scheme not in ("http", "https") or (old.scheme == "https" and new.scheme == "http"):
            raise RemoteError(self.endpoint, f"HTTP {resp.status} redirect to {target} refused "
                                             "(not http(s), or from https to http)", status=resp.status)
        if origin(target) != origin(url):  # scheme, host and port: another origin gets no credentials
            headers = _protocol_only(headers)
        with self._lock:
            self.redirects += 1
            if resp.status in (301, 308) and self.url != target:
                log.warning("%s has moved permanently to %s (HTTP %d); following it (pass --endpoint %s)",
                            self.url, target, resp.status, target)
                self.url = target
        return target, headers, hops + 1

    def _retry_after(self, retry: Retry, response) -> float | None:
        try:
            after = retry.get_retry_after(response)
        except InvalidHeader:
            return None
        return None if after is None else min(after, self.max_retry_after)

    def _deadline_error(self) -> ReadTimeoutError:
        """The error a missed deadline hands to urllib3's Retry, which counts it as a read error."""
        return ReadTimeoutError(self._pool.connection_from_url(self.endpoint), self.endpoint, "deadline")

    def _wait(self, retry: Retry, response) -> float:
        """Seconds before the next try: the server's Retry-After (capped), else the backoff."""
        if response is not None:
            after = self._retry_after(retry, response)
            if after is not None:
                return after
        return retry.get_backoff_time()

    def _read(self, resp, deadline: float) -> bytes:
        parts, size = [], 0
        while chunk := resp.read1(_CHUNK):  # at most _CHUNK decoded bytes (urllib3 >= 2.6)
            size += len(chunk)
            if size > self.max_answer:
                raise AnswerRefused(self.endpoint, f"answer larger than {self.max_answer} bytes decoded "
                                                   "refused (the cap on one answer)")
            parts.append(chunk)
            if time.monotonic() > deadline:
                raise self._deadline_error()
        return b"".join(parts)


def _protocol_only(headers: dict) -> dict:
    """The headers any origin may see (no Authorization, cookies or custom headers)."""
    return {k: v for k, v in headers.items() if k.lower() in _PROTOCOL_HEADERS}


def _reason(error: Exception) -> str:
    """urllib3's message without the connection pool's repr and its timeout note."""
    return _TIMEOUT_NOTE.sub("", _POOL_PREFIX.sub("", str(error)))
