"""What a client owes a public SPARQL endpoint: a User-Agent that names the tool and a
contact, and few parallel queries.

Wikimedia's User-Agent policy (https://meta.wikimedia.org/wiki/User-Agent_policy) asks
for ``<client name>/<version> (<contact information>) <library/framework name>/<version>``
and warns that agents beginning with a library's default (``python-requests/x``) may be
blocked; WDQS's maintainers ask for one query at a time (docs/mirror.md cites them).
"""
from __future__ import annotations

import re
import urllib.parse

from kgcult.errors import KgcultError
from kgcult.version import __version__

POLICY_URL = "https://meta.wikimedia.org/wiki/User-Agent_policy"
# hosts whose operators publish usage rules; one query at a time there unless told otherwise
PUBLIC_HOSTS = frozenset({
    "query.wikidata.org", "query-main.wikidata.org", "query-scholarly.wikidata.org",
    "query-legacy-full.wikidata.org", "commons-query.wikimedia.org",
    "qlever.cs.uni-freiburg.de", "qlever.dev",
})
WDQS_MAX_PARALLEL = 5  # WDQS user manual: five parallel queries per client
# library defaults that Wikimedia may block (case-insensitive prefixes)
GENERIC_AGENTS = ("python-requests", "python-urllib", "python-httpx", "urllib3", "aiohttp", "curl", "wget",
                  "java", "apache-httpclient", "okhttp", "go-http-client", "libwww-perl", "lwp", "node-fetch",
                  "axios", "mozilla/5.0 (compatible)", "sparqlwrapper")
_CONTACT = re.compile(r"\(([^()]*(?:@[\w.-]+\.\w+|https?://\S+)[^()]*)\)")
_PRODUCT = re.compile(r"^[A-Za-z0-9][\w.+-]*/[\w.+-]+")


class UserAgentError(KgcultError):
    """A User-Agent that a public endpoint's policy does not accept."""


def host_of(url: str) -> str:
    return (urllib.parse.urlsplit(url).hostname or "").lower()


def is_public(url: str) -> bool:
    """True for the public endpoints of Wikimedia and QLever (see PUBLIC_HOSTS)."""
    return host_of(url) in PUBLIC_HOSTS


def is_generic(user_agent: str) -> bool:
    ua = (user_agent or "").strip().lower()
    return not ua or any(ua.startswith(g) for g in GENERIC_AGENTS)


def has_contact(user_agent: str) -> bool:
    """``tool/version (... an e-mail address or a URL ...)``."""
    return bool(_PRODUCT.match(user_agent or "")) and bool(_CONTACT.search(user_agent or ""))


def user_agent_for(contact: str | None, library: str) -> str:
    """kgcult's User-Agent in the policy's form, with ``contact`` (e-mail or URL)."""
    contact = (contact or "").strip()
    if not contact:
        return f"kgcult/{__version__} (https://w3id.org/kgcult; research mirror client) {library}"
    return f"kgcult/{__version__} ({contact}; https://w3id.org/kgcult) {library}"


def check_user_agent(url: str, user_agent: str | None, contact: str | None) -> None:
    """Raise :class:`UserAgentError` where ``url`` is a public endpoint and neither a
    contact nor a User-Agent with one was given."""
    if not is_public(url):
        return
    host = host_of(url)
    how = ("pass --contact you@example.org (env KGCULT_CONTACT), or a whole --user-agent "
           "'my-tool/1.0 (you@example.org) kgcult/" + __version__ + "' (env KGCULT_USER_AGENT)")
    if user_agent:
        if is_generic(user_agent):
            raise UserAgentError(f"{host}: User-Agent {user_agent!r} is a library default, which Wikimedia's "
                                 f"User-Agent policy ({POLICY_URL}) may block; {how}")
        if not has_contact(user_agent):
            raise UserAgentError(f"{host}: User-Agent {user_agent!r} has no contact; Wikimedia's User-Agent "
                                 f"policy ({POLICY_URL}) asks for `tool/version (contact) lib/version`; {how}")
        return
    if contact:
        if not re.search(r"@[\w.-]+\.\w+|^https?://\S+$", contact.strip()):
            raise UserAgentError(f"--contact {contact!r} is neither an e-mail address nor a URL")
        return
    raise UserAgentError(f"{host} is a public endpoint: Wikimedia's User-Agent policy ({POLICY_URL}) asks for "
                         f"`tool/version (contact) lib/version`, and kgcult has no contact of yours; {how}")
