"""The ``Host`` allow-list: a defence against DNS rebinding. A web page on
``attacker.example`` that makes its name resolve to 127.0.0.1 can send requests to a
server on the user's machine from the user's browser and read the answers (the browser
thinks they come from ``attacker.example``), but the request still says ``Host:
attacker.example``. So the server answers only requests whose Host names it:

- an IP address (``127.0.0.1:7878``, ``[::1]``, ``192.0.2.7``): a rebinding page never
  sends one (its own name is what the browser puts there);
- ``localhost`` names when the server listens on a loopback or wildcard address;
- the bound name itself (``--bind myhost``);
- every name given with ``--allow-host NAME`` (``*`` turns the check off, e.g. behind a
  proxy that sets the Host).

Any other Host gets 421 Misdirected Request; a request without one (HTTP/1.1 requires it)
gets 400. The port of a Host is not compared.
"""
from __future__ import annotations

import ipaddress

from kgcult.serve.config import ServeConfig, is_loopback
from kgcult.serve.protocol import HttpError

LOCAL_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")
_WILDCARD = ("0.0.0.0", "::", "")


def allowed_names(cfg: ServeConfig) -> frozenset[str] | None:
    """The host names the server answers to (lowercase); None when any Host is accepted."""
    extra = [h.strip().lower().rstrip(".") for h in cfg.allow_hosts]
    if "*" in extra:
        return None
    names = set(extra)
    bind = cfg.bind.strip("[]").lower()
    if bind in _WILDCARD or is_loopback(bind):
        names.update(LOCAL_NAMES)
    if not _is_ip(bind) and bind not in _WILDCARD:
        names.add(bind.rstrip("."))
    return frozenset(names)


def check(host: str | None, names: frozenset[str] | None, protocol: str) -> None:
    """Raise HttpError (421 or 400) unless the request's Host header is one of ``names``."""
    if names is None:
        return
    if not host:
        if protocol == "HTTP/1.0":
            return  # no Host in HTTP/1.0; browsers always send one
        raise HttpError(400, "a Host header is required (HTTP/1.1)")
    name = _hostname(host)
    if name is None:
        raise HttpError(400, f"malformed Host header: {host[:100]!r}")
    if _is_ip(name) or name in names:
        return
    raise HttpError(421, f"Host {name[:100]!r} is not a name of this server (kgcult serve refuses other names "
                         f"against DNS rebinding); to accept it, start it with --allow-host {name[:100]}")


def _hostname(host: str) -> str | None:
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        if end < 0 or (host[end + 1:] and not host[end + 1:].startswith(":")):
            return None
        return host[1:end]
    name, _, port = host.partition(":")
    if port and not port.isdigit():
        return None
    if not name or any(c in name for c in " /\\@?#"):
        return None
    return name.rstrip(".")


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.split("%")[0])
        return True
    except ValueError:
        return False


__all__ = ["allowed_names", "check", "LOCAL_NAMES"]
