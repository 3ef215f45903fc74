"""Hierarchy closures (P279, P31/P279*, P361, P131, ...) computed with networkx and written
back to derived named graphs, so that no query on a hot path needs ``+``/``*`` paths.

The closures to build are data: ``ontology/closures.ttl`` (see the comments there).
Wikidata's hierarchies have cycles; each strongly connected component is collapsed,
its members reach each other (and themselves), and the cycle is reported.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx
from pyoxigraph import NamedNode, Quad

from kgcult import ids, ontology, vocab
from kgcult.errors import KgcultError
from kgcult.store.embedded import Store

log = logging.getLogger(__name__)


@dataclass
class ClosureSpec:
    name: str                      # the spec's IRI local name, e.g. closure-subclass
    graph: str
    derived: str                   # derived property IRI
    steps: list[str]               # step property IRIs
    first: str | None = None       # first property IRI (P31 for instance typing)


@dataclass
class ClosureReport:
    spec: str
    graph: str
    edges_in: int
    triples_out: int
    cycles: list[list[str]] = field(default_factory=list)
    seconds: float = 0.0

    def __str__(self) -> str:
        msg = f"{self.spec}: {self.edges_in} edges -> {self.triples_out} triples in {self.graph} ({self.seconds:.1f} s)"
        if self.cycles:
            shown = "; ".join(" -> ".join(ids.shorten(n) for n in c[:6]) for c in self.cycles[:5])
            msg += f"\n  {len(self.cycles)} cycle(s) tolerated: {shown}"
        return msg


def load_specs(path: str | Path | None = None) -> list[ClosureSpec]:
    """Read closure specs from Turtle (default ``ontology/closures.ttl``)."""
    path = path or "closures.ttl"
    k = vocab.KGC
    specs = []
    for subject, p in sorted(ontology.of_type(path, k + "ClosureSpec").items(), key=lambda kv: kv[0].value):
        name = subject.value.rsplit("#", 1)[-1]
        for required in ("graph", "derivedProperty", "stepProperty"):
            if k + required not in p:
                raise KgcultError(f"{ontology.path_of(path)}: closure spec {name} lacks kgc:{required}")
        specs.append(
            ClosureSpec(
                name=name,
                graph=p[k + "graph"][0].value,
                derived=p[k + "derivedProperty"][0].value,
                steps=sorted(o.value for o in p[k + "stepProperty"]),
                first=p[k + "firstProperty"][0].value if k + "firstProperty" in p else None,
            )
        )
    return specs


def edges(store: Store, prop: str) -> list[tuple[str, str]]:
    """Every (subject, object) IRI pair of ``prop`` in the data graphs."""
    p = NamedNode(prop)
    out = []
    for q in store.ox.quads_for_pattern(None, p, None, None):
        g = q.graph_name.value if isinstance(q.graph_name, NamedNode) else ""
        if vocab.is_derived_graph(g) or g.startswith(vocab.STAGING_GRAPH):
            continue  # closures are not input; a staging graph is a refresh in progress
        if isinstance(q.subject, NamedNode) and isinstance(q.object, NamedNode):
            out.append((q.subject.value, q.object.value))
    return out


def transitive_reach(graph: nx.DiGraph) -> tuple[dict[str, frozenset[str]], list[list[str]]]:
    """For every node, the set of nodes reachable in one or more steps; and the cycles.

    Works on the condensation (strongly connected components collapsed), visiting it in
    reverse topological order so each component's reach is computed once from its
    successors'. Members of a cycle reach all members of it, themselves included."""
    cond = nx.condensation(graph)
    members = {c: frozenset(cond.nodes[c]["members"]) for c in cond.nodes}
    cyclic = {
        c for c in cond.nodes
        if len(members[c]) > 1 or any(graph.has_edge(n, n) for n in members[c])
    }
    reach_c: dict[int, frozenset[str]] = {}
    for c in reversed(list(nx.topological_sort(cond))):
        succ = list(cond.successors(c))
        if not succ:
            r: frozenset[str] = frozenset()
        elif len(succ) == 1:
            s = succ[0]
            r = members[s] | reach_c[s]
        else:
            acc: set[str] = set()
            for s in succ:
                acc |= members[s]
                acc |= reach_c[s]
            r = frozenset(acc)
        if c in cyclic:
            r = r | members[c]
        reach_c[c] = r
    reach = {}
    for c, ms in members.items():
        for n in ms:
            reach[n] = reach_c[c]
    cycles = sorted(sorted(members[c]) for c in cyclic)
    return reach, cycles


def compute(store: Store, spec: ClosureSpec) -> tuple[list[tuple[str, str]], list[list[str]], int]:
    """The closure's (x, y) pairs, the cycles found, and the number of input edges."""
    step_graph = nx.DiGraph()
    n_edges = 0
    for p in spec.steps:
        e = edges(store, p)
        n_edges += len(e)
        step_graph.add_edges_from(e)
    reach, cycles = transitive_reach(step_graph)
    pairs: list[tuple[str, str]] = []
    if spec.first is None:
        for x, ys in reach.items():
            pairs.extend((x, y) for y in ys)
    else:
        firsts = edges(store, spec.first)
        n_edges += len(firsts)
        seen: dict[str, set[str]] = {}
        for x, c in firsts:
            targets = seen.setdefault(x, set())
            targets.add(c)
            targets |= reach.get(c, frozenset())
        for x, ys in seen.items():
            pairs.extend((x, y) for y in ys)
    pairs.sort()
    return pairs, cycles, n_edges


def build(store: Store, specs: list[ClosureSpec] | None = None) -> list[ClosureReport]:
    """(Re)build every closure graph and mark the closure fresh; each graph is logged
    with its counts and the cycles it tolerated."""
    if store.remote:
        raise KgcultError("closures are built in the embedded store; a remote endpoint must provide its own")
    specs = specs if specs is not None else load_specs()
    reports = []
    spec_iri = {s.name: NamedNode(vocab.KGC + s.name) for s in specs}
    in_cycle = vocab.kgc("inCycle")
    for spec in specs:
        t0 = time.perf_counter()
        pairs, cycles, n_edges = compute(store, spec)
        d = NamedNode(spec.derived)
        triples = [(NamedNode(x), d, NamedNode(y)) for x, y in pairs]
        triples += [(NamedNode(n), in_cycle, spec_iri[spec.name]) for cyc in cycles for n in cyc]
        count = store.replace_graph(spec.graph, triples)
        reports.append(ClosureReport(spec.name, spec.graph, n_edges, count, cycles, time.perf_counter() - t0))
        log.info("%s", reports[-1])
    store.set_state("closureStale", False)
    store.record_activity(kind="closure", source="ontology/closures.ttl",
                          triples=sum(r.triples_out for r in reports))
    store.flush()
    store.optimize()  # the closure is the last bulk write before queries: compact now
    return reports


def ensure_closure(store: Store) -> None:
    """Rebuild the closure if data changed since it was built (embedded stores only)."""
    if store.remote or not store.closure_stale:
        return
    if store.read_only:
        raise KgcultError("the hierarchy closure is stale; run `kgcult closure` first")
    log.info("closure is stale (data changed since it was built): rebuilding it now")
    build(store)


def ancestors(store: Store, iri: str, derived: str = vocab.KGC + "typedAs") -> list[str]:
    """Read an entity's ancestors from a closure graph (no property paths)."""
    rows = store.query(
        "SELECT DISTINCT ?y WHERE { ?x ?d ?y } ORDER BY ?y",
        bindings={"x": NamedNode(iri), "d": NamedNode(derived)},
    )
    return [r["y"].value for r in rows]


__all__ = ["ClosureSpec", "ClosureReport", "load_specs", "build", "compute", "ensure_closure",
           "transitive_reach", "ancestors", "Quad"]
