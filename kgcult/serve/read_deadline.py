"""A total deadline for receiving a request. cheroot's read timeout is per read, so a
client that sends one byte every few seconds would keep an HTTP thread for as long as it
likes; here each HTTP thread registers the connection whose request it is reading, and a
watchdog shuts down a connection still being read past the deadline (the blocked read
returns, the thread is freed)."""
from __future__ import annotations

import logging
import socket
import threading
import time

log = logging.getLogger(__name__)


class ReadDeadline:
    """Connections whose request (line, headers, body) is being read, by HTTP thread."""

    def __init__(self, seconds: float, check_every: float = 0.5):
        self.seconds, self.check_every = seconds, check_every
        self._reading: dict[int, tuple[socket.socket, float]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="kgcult-read-deadline", daemon=True)
        self._thread.start()

    def start(self, sock: socket.socket) -> None:
        """This thread starts reading a request from ``sock``."""
        with self._lock:
            self._reading[threading.get_ident()] = (sock, time.monotonic())

    def done(self) -> None:
        """This thread has read its request (or given up on it)."""
        with self._lock:
            self._reading.pop(threading.get_ident(), None)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _watch(self) -> None:
        while not self._stop.wait(self.check_every):
            now = time.monotonic()
            with self._lock:
                late = [k for k, (_, t0) in self._reading.items() if now - t0 > self.seconds]
                socks = [self._reading.pop(k)[0] for k in late]
            for sock in socks:
                log.debug("dropping a connection that sent no complete request within %g s", self.seconds)
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
