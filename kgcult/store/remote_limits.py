"""What a remote store knows about SPARQL engines (``ontology/engines.json``): the graphs an
engine keeps for itself, left out of kgcult's graph counts and content hash, and the
engine's own refusals, each turned into one line that names the limit and the setting to
change (instead of an HTTP 500 with the engine's whole error page)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

from kgcult import ontology
from kgcult.safe_text import printable


@dataclass(frozen=True)
class Refusal:
    engine: str
    pattern: re.Pattern
    limit: str
    setting: str


@dataclass(frozen=True)
class Engines:
    graphs: frozenset[str]
    prefixes: tuple[str, ...]
    refusals: tuple[Refusal, ...]


@lru_cache(maxsize=1)
def engines() -> Engines:
    data = json.loads(ontology.path_of("engines.json").read_text(encoding="utf-8"))
    graphs = frozenset(g["iri"] for g in data["system_graphs"] if "iri" in g)
    prefixes = tuple(g["prefix"] for g in data["system_graphs"] if "prefix" in g)
    refusals = tuple(Refusal(r["engine"], re.compile(r["pattern"]), r["limit"], r["setting"])
                     for r in data["refusals"])
    return Engines(graphs, prefixes, refusals)


def is_system_graph(iri: str) -> bool:
    """A graph an engine keeps for itself (Virtuoso's ``virtrdf#``, ...), not data."""
    e = engines()
    return iri in e.graphs or iri.startswith(e.prefixes)


def explain_refusal(endpoint: str, status: int | None, body: str) -> str | None:
    """One line for an engine's refusal of a query (HTTP 4xx/5xx with the engine's message),
    naming the engine's limit and the setting to change; None when it is none we know."""
    if status is None or status < 400:
        return None
    body = body.replace("\\n", "\n")  # the error's body, its newlines written as escapes
    for r in engines().refusals:
        m = r.pattern.search(body)
        if m:
            first = next((ln.strip() for ln in body.splitlines() if r.pattern.search(ln)), m.group(0))
            return printable(f"{endpoint}: {r.engine} refused the query: {first[:300]} -- its limit: {r.limit}; "
                             f"to change it: {r.setting}")
    return None


__all__ = ["is_system_graph", "explain_refusal", "engines"]
