"""A cap on open connections per client address. cheroot gives each connection whose
request is being read an HTTP thread; without a cap, one address that opens as many slow
connections as there are threads (a slowloris) makes every other client wait for the
read timeout. Past ``per_client_connections`` open connections, a new connection from the
same address is answered ``429`` at once and closed, before it takes a thread.

:class:`CappedConnections` replaces cheroot's connection manager (it accepts the
connections); connections are counted from accept to close.
"""
from __future__ import annotations

import logging
import threading
import weakref

from cheroot.connections import ConnectionManager

log = logging.getLogger(__name__)


class AddressCounts:
    """Open connections by client address, at most ``cap`` each."""

    def __init__(self, cap: int):
        self.cap = cap
        self._open: dict[str, int] = {}
        self._lock = threading.Lock()
        self.refused = 0

    def acquire(self, address: str) -> bool:
        with self._lock:
            n = self._open.get(address, 0)
            if n >= self.cap:
                self.refused += 1
                return False
            self._open[address] = n + 1
            return True

    def release(self, address: str) -> None:
        with self._lock:
            n = self._open.get(address, 0) - 1
            if n > 0:
                self._open[address] = n
            else:
                self._open.pop(address, None)

    def open(self, address: str) -> int:
        with self._lock:
            return self._open.get(address, 0)


class CappedConnections(ConnectionManager):
    """cheroot's connection manager with a per-address cap at accept."""

    def __init__(self, server, counts: AddressCounts):
        super().__init__(server)
        self.counts = counts

    def _from_server_socket(self, server_socket):
        conn = super()._from_server_socket(server_socket)
        if conn is None:
            return None
        address = getattr(conn, "remote_addr", None) or ""
        if not self.counts.acquire(address):
            _refuse(conn, address, self.counts.cap)
            return None
        # released when the connection is closed (or, failing that, collected)
        conn.release_slot = weakref.finalize(conn, self.counts.release, address)
        return conn


def _refuse(conn, address: str, cap: int) -> None:
    msg = (f"too many connections from {address}: at most {cap} at once "
           "(kgcult serve --per-client-connections)\n").encode()
    head = (b"HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain; charset=utf-8\r\n"
            b"Retry-After: 1\r\nConnection: close\r\nContent-Length: " + str(len(msg)).encode() + b"\r\n\r\n")
    log.debug("refused a connection from %s: %d open", address, cap)
    try:
        conn.socket.settimeout(0.5)
        conn.socket.sendall(head + msg)
        conn.socket.setblocking(False)
        conn.socket.recv(1 << 16)  # what already came: closing with unread bytes resets the connection
    except OSError:
        pass
    try:
        conn.close()
    except OSError:
        pass


__all__ = ["AddressCounts", "CappedConnections"]
