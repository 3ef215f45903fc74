"""The HTTP transport: a Werkzeug WSGI application that routes each request to the
endpoint (:class:`~kgcult.serve.endpoint.SparqlApp`) or to a page, and :class:`Server`,
which runs it on cheroot's WSGI server (a thread pool, per-connection read timeouts, a
request body limit).

Paths: ``/query`` (also ``/sparql``; GET, POST form, POST ``application/sparql-query``),
``/update`` (POST, with ``writable`` and a bearer token only), ``/`` the query page
(YASGUI when vendored), ``/plain`` the plain page, ``/static/NAME`` and
``/static/vendor/NAME`` their files, ``/entity/Q123`` an entity page, ``/api/entity/Q123``
its card as JSON, ``/api/examples``, ``/api/prefixes``, ``/api/status``.
"""
from __future__ import annotations

import json
import logging
import signal
import threading
from typing import Callable

from cheroot import server as cheroot_server
from cheroot import wsgi
from werkzeug.exceptions import ClientDisconnected, HTTPException, MethodNotAllowed
from werkzeug.routing import Map, Rule
from werkzeug.wrappers import Request, Response

from kgcult import ids
from kgcult.errors import KgcultError
from kgcult.serve import hosts, pages, protocol
from kgcult.serve.config import ServeConfig, check_config
from kgcult.serve.conn_limits import AddressCounts, CappedConnections
from kgcult.serve.framing import StrictHeaderReader, length_problem
from kgcult.serve.endpoint import SparqlApp
from kgcult.serve.protocol import HttpError, Reply
from kgcult.serve.read_deadline import ReadDeadline
from kgcult.sparql import wdqs
from kgcult.store import sidefiles
from kgcult.version import __version__

log = logging.getLogger(__name__)

ALLOW = "GET, POST, HEAD, OPTIONS"
MAX_HEADER_BYTES = 64 << 10  # as http.server allowed for the request line
SPARE_THREADS = 8  # HTTP threads beyond workers + queue: pages and 503s are answered while queries wait
URLS = Map([
    Rule("/query", endpoint="query", methods=["GET", "POST"]),
    Rule("/sparql", endpoint="query", methods=["GET", "POST"]),
    Rule("/update", endpoint="update", methods=["POST"]),
    Rule("/", endpoint="page", methods=["GET"]),
    Rule("/index.html", endpoint="page", methods=["GET"]),
    Rule("/plain", endpoint="plain_page", methods=["GET"]),
    Rule("/static/<name>", endpoint="static", methods=["GET"]),
    Rule("/static/vendor/<name>", endpoint="vendor", methods=["GET"]),
    Rule("/entity/<qid>", endpoint="entity_page", methods=["GET"]),
    Rule("/api/entity/<qid>", endpoint="entity_json", methods=["GET"]),
    Rule("/api/examples", endpoint="examples", methods=["GET"]),
    Rule("/api/prefixes", endpoint="prefixes", methods=["GET"]),
    Rule("/api/status", endpoint="status", methods=["GET"]),
], merge_slashes=False)


# Every page and everything it fetches: scripts, styles, fetches from this server only; images
# from it and from Wikimedia Commons (the image grid: Special:FilePath answers with a redirect
# to upload.wikimedia.org); no plugin, no <base>, no form sent elsewhere, never in a frame of
# another site (clickjacking). YASGUI sets inline styles, hence 'unsafe-inline' for styles
# (no script runs from them).
CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'", "script-src 'self'", "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: https://commons.wikimedia.org https://upload.wikimedia.org",
    "connect-src 'self'", "font-src 'self' data:", "object-src 'none'", "base-uri 'none'",
    "form-action 'self'", "frame-ancestors 'none'",
])


class WsgiApp:
    """The WSGI application: Werkzeug requests in, the endpoint's replies out."""

    def __init__(self, sparql: SparqlApp, read_deadline: ReadDeadline):
        self.sparql, self.read_deadline = sparql, read_deadline
        self.cfg = sparql.cfg
        self.host_names = hosts.allowed_names(self.cfg)

    def __call__(self, environ, start_response):
        request = Request(environ)
        try:
            if request.method == "POST":
                request.get_data(cache=True)  # the whole request is in before the deadline watch ends
        except ClientDisconnected:
            return Response("the request was not received in time\n", 408, content_type="text/plain")(
                environ, start_response)
        finally:
            self.read_deadline.done()
        response = self.respond(request)
        if self.cfg.access_log:
            log.info('%s - "%s %s %s" %s %s', request.remote_addr, request.method,
                     environ.get("REQUEST_URI") or request.full_path, environ.get("SERVER_PROTOCOL", ""),
                     response.status_code, response.content_length)
        return response(environ, start_response)

    def respond(self, request: Request) -> Response:
        try:
            hosts.check(request.headers.get("Host"), self.host_names, request.environ.get("SERVER_PROTOCOL", ""))
            reply = self.dispatch(request)
        except HttpError as e:
            reply = self.error(e)
        except Exception as e:  # noqa: BLE001 - a bug: answer 500, keep serving
            reply = self.error(HttpError(500, f"internal error: {type(e).__name__}: {e}"))
        response = Response(reply.body, status=reply.status, content_type=reply.content_type)
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        response.headers["Referrer-Policy"] = "no-referrer"
        if self.cfg.cors:
            response.headers["Access-Control-Allow-Origin"] = "*"
        response.headers.update(reply.headers)
        return response

    def error(self, e: HttpError) -> Reply:
        if e.status >= 500 and e.status not in (503, 504, 507):
            self.sparql.count("errors")
        return Reply(e.status, "text/plain; charset=utf-8", (e.message + "\n").encode("utf-8"), e.headers)

    def dispatch(self, request: Request) -> Reply:
        if request.method == "OPTIONS":
            headers = {"Allow": ALLOW}
            if self.cfg.cors:
                headers.update({"Access-Control-Allow-Methods": "GET, POST, OPTIONS",
                                "Access-Control-Allow-Headers": "Content-Type, Accept, Authorization"})
            return Reply(204, "text/plain", b"", headers)
        if request.method not in ("GET", "HEAD", "POST"):
            raise HttpError(405, "method not allowed", {"Allow": ALLOW})
        try:
            endpoint, args = URLS.bind_to_environ(request.environ).match()
        except MethodNotAllowed as e:
            if e.valid_methods == ["POST"]:
                raise HttpError(405, "updates are sent with POST", {"Allow": "POST"}) from None
            raise HttpError(405, "POST goes to /query or /update", {"Allow": "GET, HEAD"}) from None
        except HTTPException:
            raise HttpError(404, f"no such page: {request.path}") from None
        return getattr(self, "on_" + endpoint)(request, **args)

    # -- views ---------------------------------------------------------------------------

    def on_query(self, request: Request) -> Reply:
        fields = protocol.params(request)
        if protocol.sends_update(request, fields):
            self.sparql.refuse_update()
        query = protocol.query_request(request, fields)
        if query is None:  # a browser opening /query: the page
            return pages.page()
        return self.sparql.query(query)

    def on_update(self, request: Request) -> Reply:
        return self.sparql.update(protocol.update_request(request, protocol.params(request)))

    def on_page(self, request: Request) -> Reply:
        return pages.page()

    def on_plain_page(self, request: Request) -> Reply:
        return pages.static("index.html")

    def on_static(self, request: Request, name: str) -> Reply:
        return pages.static(name)

    def on_vendor(self, request: Request, name: str) -> Reply:
        return pages.vendor(name)

    def on_entity_page(self, request: Request, qid: str) -> Reply:
        lang = self._lang(request)
        html = pages.render_card(self._card(request, qid, lang), lang)
        return Reply(200, "text/html; charset=utf-8", html.encode("utf-8"))

    def on_entity_json(self, request: Request, qid: str) -> Reply:
        card = self._card(request, qid, self._lang(request))
        return Reply(200, "application/json; charset=utf-8",
                     json.dumps(card, ensure_ascii=False, indent=2).encode("utf-8"))

    def on_examples(self, request: Request) -> Reply:
        return _json(pages.EXAMPLES)

    def on_prefixes(self, request: Request) -> Reply:
        return _json(wdqs.PREFIXES)

    def on_status(self, request: Request) -> Reply:
        return _json(self.sparql.status())

    @staticmethod
    def _lang(request: Request) -> str:
        return request.args.get("lang", "en")

    def _card(self, request: Request, qid: str, lang: str) -> dict:
        if not ids.is_id(qid):
            raise HttpError(404, f"no such page: {request.path}")
        return self.sparql.entity_card(qid, lang, request.remote_addr or "")


def _json(obj) -> Reply:
    return Reply(200, "application/json; charset=utf-8", json.dumps(obj, ensure_ascii=False).encode("utf-8"))


class _StrictLengthRequest(cheroot_server.HTTPRequest):
    """cheroot's request, refusing a body length it would otherwise misread: a
    ``Content-Length`` that is not a plain non-negative integer (``-1`` made cheroot read
    to the end of the stream, past every limit) gets 400, a POST with neither a length nor
    chunked encoding 411; a repeated Content-Length, Transfer-Encoding or Host, or a
    length and chunked encoding together, 400 (:mod:`kgcult.serve.framing`); either way
    the connection is closed."""

    header_reader = StrictHeaderReader()

    def parse_request(self):
        self.server.read_deadline.start(self.conn.socket)
        try:
            super().parse_request()
        finally:
            if not self.ready:
                self.server.read_deadline.done()

    def respond(self):
        try:
            super().respond()
        finally:
            self.server.read_deadline.done()  # in case the application did not read a body

    def read_request_headers(self):
        if not super().read_request_headers():
            return False
        problem = length_problem(self.inheaders)
        if problem:
            self.simple_response("400 Bad Request", problem)
            return False
        length = self.inheaders.get(b"Content-Length")
        if length is not None and not (length.isdigit() and length.isascii()):
            self.simple_response("400 Bad Request", "Content-Length must be a non-negative integer")
            return False
        if length is None and self.method == b"POST" and not self.chunked_read:
            self.simple_response("411 Length Required", "a POST needs a Content-Length")
            return False
        return True


class _Connection(cheroot_server.HTTPConnection):
    RequestHandlerClass = _StrictLengthRequest
    release_slot = None  # set by CappedConnections: frees this address's connection slot

    def close(self):
        try:
            super().close()
        finally:
            if self.release_slot is not None:
                self.release_slot()


class _Cheroot(wsgi.Server):
    """cheroot's WSGI server with strict body lengths and its messages on the kgcult log."""

    ConnectionClass = _Connection
    read_deadline: ReadDeadline  # set by Server; each connection starts and stops it
    connection_counts: AddressCounts | None = None

    def prepare(self):
        super().prepare()
        if self.connection_counts is not None:  # cheroot's manager, with a cap per address at accept
            plain = self._connections
            self._connections = CappedConnections(self, self.connection_counts)
            plain._selector.close()

    def error_log(self, msg="", level=logging.INFO, traceback=False):
        log.log(level if level >= logging.WARNING else logging.DEBUG, "%s", msg, exc_info=traceback)


def _interrupt(signum, frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _stop_on_signals() -> dict:
    """SIGTERM and SIGHUP end the server as Ctrl+C does (Python's default for them exits
    without running any clean-up); returns the handlers they had."""
    previous = {}
    for signum in (signal.SIGTERM, signal.SIGHUP):
        previous[signum] = signal.signal(signum, _interrupt)
    return previous


class Server:
    """``kgcult serve`` over ``store``: listening once made (the config is checked
    first), serving after :meth:`start` (a background thread) or :meth:`serve_forever`.

    ``with Server(store, ServeConfig(port=0)).start() as srv: ... srv.url + "/query"``
    """

    def __init__(self, store, config: ServeConfig | None = None):
        self.config = cfg = check_config(config or ServeConfig())
        self.app = SparqlApp(store, cfg)
        self._read_deadline = ReadDeadline(cfg.request_deadline)
        self._httpd = _Cheroot((cfg.bind.strip("[]"), cfg.port), WsgiApp(self.app, self._read_deadline),
                               numthreads=cfg.workers + cfg.queue + SPARE_THREADS,
                               server_name=f"kgcult/{__version__}", request_queue_size=128)
        self._httpd.timeout = cfg.read_timeout  # seconds, may be fractional (cheroot's __init__ hints int)
        self._httpd.read_deadline = self._read_deadline
        self._httpd.connection_counts = AddressCounts(cfg.per_client_connections)
        self._httpd.max_request_body_size = cfg.max_request_bytes
        self._httpd.max_request_header_size = MAX_HEADER_BYTES  # request line + headers (414/413 beyond)
        try:
            self._httpd.prepare()
        except OSError as e:
            self.app.close()
            self._read_deadline.close()
            raise KgcultError(f"cannot listen on {cfg.bind}:{cfg.port}: {e.strerror or e}") from None
        self._thread: threading.Thread | None = None
        # a writer opening this store warns that this server keeps answering from the old data
        self._marker = (sidefiles.register_reader(store.location, f"kgcult serve at {self.url}")
                        if getattr(store, "read_only", False) and not getattr(store, "remote", False) else None)

    @property
    def port(self) -> int:
        return self._httpd.bind_addr[1]

    @property
    def url(self) -> str:
        """The server's base URL (the SPARQL endpoint is ``url + "/query"``)."""
        host = self.config.bind
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        if host in ("0.0.0.0", "[::]"):
            host = "127.0.0.1"
        return f"http://{host}:{self.port}"

    @property
    def endpoint(self) -> str:
        """The SPARQL query endpoint, for any SPARQL client (SPARQLWrapper, ``--store sparql+...``)."""
        return self.url + "/query"

    def start(self) -> Server:
        """Serve in a background thread (for the Python API, tests and benchmarks)."""
        self._thread = threading.Thread(target=self._httpd.serve, name="kgcult-serve", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self, ready: Callable[[], None] | None = None) -> None:
        """Serve in this thread until interrupted (Ctrl+C, SIGTERM, SIGHUP), then stop: the
        spool folder and the workers go with the server however it is told to end.
        ``ready()`` runs once those signals are handled (the CLI prints its address there:
        a signal sent once it is printed cleans up)."""
        handled = _stop_on_signals() if threading.current_thread() is threading.main_thread() else {}
        try:
            if ready is not None:
                ready()
            self._httpd.serve()
        except KeyboardInterrupt:
            pass
        finally:
            for signum, previous in handled.items():
                signal.signal(signum, previous)
            self.stop()

    def stop(self) -> None:
        """Stop listening, finish the requests in progress, release the query pool."""
        self._httpd.stop()
        self.app.close()
        self._read_deadline.close()
        if self._thread is not None:
            self._thread.join(5)
        if self._marker is not None:
            sidefiles.unregister_reader(self._marker)
            self._marker = None

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
