"""The server's settings, the checks that refuse unsafe ones before anything listens,
and the store a configuration may serve."""
from __future__ import annotations

import ipaddress
import secrets
import socket
from dataclasses import dataclass, field

from kgcult.errors import KgcultError
from kgcult.store import Store


@dataclass
class ServeConfig:
    bind: str = "127.0.0.1"
    port: int = 7878
    writable: bool = False
    token: str | None = None
    timeout: float = 60.0          # seconds per query (and per entity page): WDQS's deadline
    max_rows: int | None = None    # rows of a SELECT, triples of a CONSTRUCT (None: no cap, as WDQS)
    max_bytes: int = 1 << 30       # serialized response size (spooled to disk past 1 MiB)
    workers: int = 8               # query worker processes (each opens the store read-only)
    queue: int = 64                # queries waiting for a worker before 503
    queue_timeout: float | None = None  # seconds a query may wait for a worker (default: timeout)
    per_client: int | None = None  # requests in flight per client address (default: workers // 2, at least 1)
    worker_memory: int | None = None  # bytes of address space per worker (None: from the machine; 0: no cap)
    client_budget: float = 60.0    # worker seconds per client address in the last minute while workers are busy
    preempt_after: float = 0.5     # s a client with nothing running waits before pre-empting a heavier one (0: never)
    per_client_connections: int = 16  # open connections per client address (429 at accept beyond)
    allow_hosts: tuple[str, ...] = ()  # Host names accepted besides IPs, localhost and the bind ("*": any)
    max_request_bytes: int = 1 << 20
    read_timeout: float = 10.0     # seconds a connection may stay silent (slow or idle clients)
    request_deadline: float = 30.0  # seconds to receive a whole request (line, headers, body)
    cors: bool = False
    access_log: bool = False       # one INFO line per request on the kgcult.serve.app logger
    generated_token: bool = field(default=False, repr=False)


def is_loopback(host: str) -> bool:
    """True if ``host`` (an address or a name) only ever means this machine."""
    host = host.strip("[]")
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    addrs = {i[4][0] for i in infos}
    return bool(addrs) and all(ipaddress.ip_address(str(a).split("%")[0]).is_loopback for a in addrs)


def check_config(cfg: ServeConfig) -> ServeConfig:
    """Refuse unsafe or impossible settings before anything listens; on a loopback bind,
    ``writable`` without a token gets a generated one."""
    if cfg.token is not None and len(cfg.token) < 8:
        raise KgcultError("--token: use at least 8 characters")
    if cfg.token is not None and not cfg.writable:
        raise KgcultError("--token only makes sense with --writable (the endpoint is read-only without it)")
    if cfg.writable and not cfg.token:
        if not is_loopback(cfg.bind):
            raise KgcultError(
                f"refusing --writable on {cfg.bind}, which is not a loopback address, without "
                "--token: anyone who can reach it could change the store"
            )
        cfg.token = secrets.token_urlsafe(24)
        cfg.generated_token = True
    if cfg.queue_timeout is not None and cfg.queue_timeout < 0:
        raise KgcultError("--queue-timeout must be 0 or more")
    if cfg.max_rows is not None and cfg.max_rows <= 0:
        raise KgcultError("--max-rows must be positive")
    for name in ("timeout", "max_bytes", "workers", "max_request_bytes", "read_timeout",
                 "request_deadline"):
        if getattr(cfg, name) <= 0:
            raise KgcultError(f"--{name.replace('_', '-')} must be positive")
    if cfg.per_client is not None and cfg.per_client <= 0:
        raise KgcultError("--per-client must be positive")
    if cfg.worker_memory is not None and (cfg.worker_memory < 0 or 0 < cfg.worker_memory < 256 << 20):
        raise KgcultError("--worker-memory: give at least 256 MiB (0: no limit)")
    if cfg.client_budget <= 0:
        raise KgcultError("--client-budget must be positive")
    if cfg.preempt_after < 0:
        raise KgcultError("--preempt-after must be 0 (never pre-empt) or more")
    if cfg.per_client_connections <= 0:
        raise KgcultError("--per-client-connections must be positive")
    for name in cfg.allow_hosts:
        if not name.strip() or any(c in name for c in " /\\@?#:[]"):
            raise KgcultError(f"--allow-host {name!r}: give a host name (no port, no scheme), or * for any")
    if cfg.queue < 0:
        raise KgcultError("--queue must be 0 or more")
    if not 0 <= cfg.port < 65536:
        raise KgcultError(f"--port {cfg.port}: not a TCP port")
    return cfg


def exposure_warning(cfg: ServeConfig) -> str | None:
    """What a user should know before a store is served beyond this machine (queries
    are anonymous, with or without --writable)."""
    if is_loopback(cfg.bind):
        return None
    return (f"warning: serving on {cfg.bind}, which is not a loopback address: anyone who can reach "
            f"port {cfg.port} can query the whole store and spend its query workers "
            "(bind 127.0.0.1 and put an authenticating proxy in front to share it safely)")


def open_for_serving(location: str, writable: bool) -> Store:
    """The embedded store at ``location``, read-only unless updates are allowed."""
    if location.startswith(("sparql+http://", "sparql+https://")):
        raise KgcultError("kgcult serve serves an embedded store, not a remote endpoint")
    return Store(location, read_only=not writable)
