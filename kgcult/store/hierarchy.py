"""Hierarchy closures (P279, P31/P279*, P361, P131, ...) computed over integer-coded edges
(``kgcult.store.intgraph``) and written back once, into the default graph, each spec's
under its own derived property (``kgc:subclassOf``, ...), so that no query on a hot path
needs ``+``/``*`` paths. A spec's ``kgc:graph`` IRI names the spec (its input record, its
cycle marks); no named graph holds closure triples (``kgcult.store.setgraph``).

The closures to build are data: ``ontology/closures.ttl`` (see the comments there).
Wikidata's hierarchies have cycles; each strongly connected component is collapsed,
its members reach each other (and themselves), and the cycle is reported.
"""
from __future__ import annotations

import gzip
import hashlib
import logging
import os
import shutil
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterator, TYPE_CHECKING, cast

from pyoxigraph import NamedNode, RdfFormat, Triple, serialize

from kgcult import ids, lazy, ontology, vocab
from kgcult import log as kglog
from kgcult.errors import KgcultError
from kgcult.store import closure_state, closure_write, intgraph, provenance, setgraph, sidefiles

if TYPE_CHECKING:  # (the embedded store's module is imported by whoever opens one)
    import numpy as np

    from kgcult.store.embedded import Store
else:
    np = lazy.module("numpy")

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
    graph: str                     # the spec's IRI (kgc:graph)
    edges_in: int
    triples_out: int
    cycles: list[list[str]] = field(default_factory=list)
    seconds: float = 0.0
    kept: bool = False             # input unchanged since the closure was built: not rewritten
    derived: str = ""

    def __str__(self) -> str:
        what = f"{self.triples_out} triples ({self.derived or self.graph})"
        if self.kept:
            return (f"{self.spec}: {self.edges_in} edges, unchanged since the last build: kept "
                    f"{what} ({self.seconds:.1f} s)")
        msg = f"{self.spec}: {self.edges_in} edges -> {what} ({self.seconds:.1f} s)"
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


def edges(store, prop: str) -> list[tuple[str, str]]:
    """Every (subject, object) IRI pair of ``prop`` in the data graphs (small graphs and
    remote stores; the closure itself reads integer-coded edges, see ``read_edges``)."""
    return [(s[1:-1].decode(), o[1:-1].decode()) for s, o in _data_edges(store, prop)]


def _data_edges(store, prop: str) -> Iterator[tuple[bytes, bytes]]:
    """``prop``'s (subject, object) pairs in the data graphs, as N-Triples terms ``b"<iri>"``."""
    p = NamedNode(prop)
    if not getattr(store, "remote", False):  # kgcult's store: the default graph, every data graph's edges once
        for q in store.ox.quads_for_pattern(None, p, None, setgraph.DEFAULT):
            if isinstance(q.subject, NamedNode) and isinstance(q.object, NamedNode):
                yield f"<{q.subject.value}>".encode(), f"<{q.object.value}>".encode()
        return
    for q in store.ox.quads_for_pattern(None, p, None, None):
        g = q.graph_name.value if isinstance(q.graph_name, NamedNode) else ""
        if vocab.is_derived_graph(g) or g.startswith(vocab.STAGING_GRAPH):
            continue  # closures are not input; a staging graph is a refresh in progress
        if isinstance(q.subject, NamedNode) and isinstance(q.object, NamedNode):
            yield f"<{q.subject.value}>".encode(), f"<{q.object.value}>".encode()


@dataclass
class EdgeTable:
    """The edges of the properties the specs follow, integer-coded over one node table,
    with a sha256 of each property's (subject, object) terms in the order the store yields
    them (its index order: the same content gives the same order; terms are ``<iri>``, so
    their concatenation is unambiguous), for ``closure_state.fingerprint``."""
    nodes: intgraph.NodeIds = field(default_factory=intgraph.NodeIds)
    by_property: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    digests: dict[str, "hashlib._Hash"] = field(default_factory=dict)

    def read(self, store, prop: str) -> tuple[np.ndarray, np.ndarray]:
        if prop not in self.by_property:
            src, dst = array("i"), array("i")  # compact while reading; no pair objects kept
            node = self.nodes.id
            digest = hashlib.sha256()
            for s, o in _data_edges(store, prop):
                src.append(node(s))
                dst.append(node(o))
                digest.update(s)
                digest.update(o)
            self.by_property[prop] = (np.frombuffer(src, dtype=intgraph.ID), np.frombuffer(dst, dtype=intgraph.ID))
            self.digests[prop] = digest
        return self.by_property[prop]

    def fingerprint(self, store, spec: ClosureSpec) -> tuple[str, int]:
        """The spec's input fingerprint and its number of input edges."""
        props = ([spec.first] if spec.first else []) + spec.steps
        for prop in props:
            self.read(store, prop)
        return closure_state.fingerprint(spec, self.digests), sum(len(self.by_property[p][0]) for p in props)

    def union(self, store, props: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
        parts = [self.read(store, p) for p in props]
        return (np.concatenate([s for s, _ in parts]), np.concatenate([d for _, d in parts]),
                sum(len(s) for s, _ in parts))


def _local(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, intgraph.Csr]:
    """Relabel a subgraph's nodes densely: (local -> global ids, CSR over local ids)."""
    nodes = np.unique(np.concatenate([src, dst]))
    g = intgraph.Csr.from_edges(np.searchsorted(nodes, src), np.searchsorted(nodes, dst), len(nodes))
    return nodes, g


class ScratchWriter:
    """Closure records on disk (int32): ``[m, members..., k, targets...]`` per group of
    subjects that share their targets, then ``[-1, cycle members...]`` runs. Compact (a
    component's targets are written once for all its members) and streamed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._f = open(path, "wb")
        self._buf: list[np.ndarray] = []
        self._size = 0
        self.pairs = 0

    def add(self, subjects: np.ndarray, targets: np.ndarray) -> None:
        if not len(targets) or not len(subjects):
            return
        self._buf.append(np.concatenate(([len(subjects)], subjects, [len(targets)], targets)).astype(intgraph.ID))
        self.pairs += len(subjects) * len(targets)
        self._size += len(subjects) + len(targets)
        if self._size > 4_000_000:
            self._spill()

    def _spill(self) -> None:
        if self._buf:
            np.concatenate(self._buf).tofile(self._f)
        self._buf, self._size = [], 0

    def close(self) -> None:
        self._spill()
        self._f.close()


def _records(path: Path) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    # memory-mapped: pages are read as the records are rendered, not all at once
    data = np.memmap(path, dtype=intgraph.ID, mode="r") if path.stat().st_size else np.zeros(0, intgraph.ID)
    i, n = 0, len(data)
    while i < n:
        m = int(data[i])
        subjects = data[i + 1:i + 1 + m]
        k = int(data[i + 1 + m])
        yield subjects, data[i + 2 + m:i + 2 + m + k]
        i += 2 + m + k


def compute(store, spec: ClosureSpec, table: EdgeTable, out: ScratchWriter) -> tuple[list[list[int]], int]:
    """Write the spec's closure records to ``out``; return its cycles (global node ids) and
    the number of input edges."""
    src, dst, n_edges = table.union(store, spec.steps)
    nodes, g = _local(src, dst)
    cycles: list[list[int]] = []
    if spec.first is None:
        for members, reach, cyclic in intgraph.Reach(g):
            out.add(nodes[members], nodes[reach])
            if cyclic:
                cycles.append(sorted(nodes[members].tolist()))
        return cycles, n_edges
    fsrc, fdst = table.read(store, spec.first)
    n_edges += len(fsrc)
    # x first/step* y: y is one of x's first targets, or what a first target reaches
    at = np.searchsorted(nodes, fdst)
    in_steps = at < len(nodes)
    in_steps[in_steps] = nodes[at[in_steps]] == fdst[in_steps]
    keep = np.zeros(len(nodes), dtype=bool)
    keep[at[in_steps]] = True
    walk = intgraph.Reach(g, keep)
    for members, _, cyclic in walk:
        if cyclic:
            cycles.append(sorted(nodes[members].tolist()))
    order = np.argsort(fsrc, kind="stable")
    xs, starts = np.unique(fsrc[order], return_index=True)
    bounds = np.append(starts, len(order)).tolist()
    for j, x in enumerate(xs.tolist()):
        sel = order[bounds[j]:bounds[j + 1]]
        parts = [fdst[sel]] + [nodes[walk.reach_of(int(a))] for a in at[sel][in_steps[sel]]]
        out.add(np.array([x], dtype=intgraph.ID), np.unique(np.concatenate(parts)))
    return cycles, n_edges


def _blocks(path: Path, terms: list[bytes], derived: bytes, cycles: list[list[int]],
            mark: bytes) -> Iterator[bytes]:
    """The closure records as N-Triples text, in blocks of about BLOCK_LINES triples."""
    end = b" .\n"
    buf: list[bytes] = []
    lines = 0
    for subjects, targets in _records(path):
        objs = [terms[y] for y in targets.tolist()]
        for x in subjects.tolist():
            head = terms[x] + derived
            buf.append(head + (end + head).join(objs) + end)
            lines += len(objs)
            if lines >= BLOCK_LINES:
                yield b"".join(buf)
                buf, lines = [], 0
    buf.extend(terms[x] + mark for cyc in cycles for x in cyc)
    if buf:
        yield b"".join(buf)


# N-Triples lines per block handed to the build's streamed bulk load (``closure_write.load_lines``).
BLOCK_LINES = closure_write.BLOCK_LINES


def _codes(out: ScratchWriter, cycles: list[list[int]]) -> np.ndarray:
    """Every pair of a spec's records (and its cycle marks) as codes (``closure_write``),
    in the records' order. The records are walked once for their bounds (plain ints); the
    pairs are then made by whole-array indexing, not one small array per record (at 1 M
    edges a spec has about a million records)."""
    data = np.fromfile(out.path, dtype=intgraph.ID) if out.path.stat().st_size else np.zeros(0, intgraph.ID)
    flat = data.tolist()
    starts, ms, ks = array("q"), array("q"), array("q")
    i, n = 0, len(flat)
    while i < n:
        m = flat[i]
        k = flat[i + 1 + m]
        starts.append(i + 1)
        ms.append(m)
        ks.append(k)
        i += 2 + m + k
    del flat
    start, m_, k_ = (np.frombuffer(a, dtype=np.int64) for a in (starts, ms, ks))
    per = m_ * k_
    first = np.concatenate(([0], np.cumsum(per)[:-1])) if len(per) else np.zeros(0, np.int64)
    rec = np.repeat(np.arange(len(per)), per)   # the record of each pair
    within = np.arange(int(per.sum())) - first[rec]
    k_rec = k_[rec]
    subject_at = start[rec] + within // k_rec
    target_at = start[rec] + m_[rec] + 1 + within % k_rec
    del rec, within, k_rec
    parts = [data[subject_at].astype(np.int64) << 32 | data[target_at].astype(np.int64)]
    parts += [np.array(cycle, dtype=np.int64) << 32 | closure_write.MARK for cycle in cycles]
    return np.concatenate(parts)


def _write_difference(store: Store, spec: ClosureSpec, out: ScratchWriter, cycles: list[list[int]],
                      nodes: intgraph.NodeIds, scratch: Path, derived: bytes, mark: bytes,
                      prev: np.ndarray | None) -> tuple[closure_write.Difference, np.ndarray]:
    """Start changing the spec's triples of an earlier build into the new ones by their
    difference (``closure_write``): the old side is ``prev`` (the state the last build kept)
    or, without one, read back from the store. The gone triples are deleted here; returns
    what to add (for the build's bulk load) and the new codes."""
    k = closure_write.partitions_for(out.pairs + sum(len(c) for c in cycles))
    new = closure_write.Partitions(scratch, spec.name + ".new", k)
    old = closure_write.Partitions(scratch, spec.name + ".old", k)
    try:
        new.add(_codes(out, cycles))  # the same expansion a spec written whole is saved from
        new.close()
        if prev is not None:
            old.add(prev)
        else:
            log.info("%s: reading the old closure back (no state kept by the last build)", spec.name)
            closure_write.old_codes(store.ox, spec.derived, vocab.KGC + spec.name, nodes.id, old)
        old.close()
        diff = closure_write.apply_difference(store, new, old, nodes.keys, derived, mark)
        return diff, np.concatenate([new.read(i) for i in range(new.k)])
    finally:
        new.close()
        old.close()
        new.remove()
        old.remove()


def _retire(store: Store, spec: ClosureSpec) -> None:
    """Before a spec's closure is written: drop the triples of a derived property the spec
    no longer uses (the new closure replaces the rest by its difference)."""
    setgraph.own(store.ox, spec.graph, spec.derived)  # first: its default triples are never orphans
    for prop in setgraph.own_properties(store.ox).get(spec.graph, set()) - {spec.derived}:
        setgraph.drop_property(store.ox, prop)
        setgraph.disown(store.ox, spec.graph, prop)


def scratch_dir(store: Store) -> Path:
    """Where a closure build keeps its records until it writes them (beside the store)."""
    return sidefiles.side_path(store.location, "closure-build")


def build(store: Store, specs: list[ClosureSpec] | None = None, *, force: bool = False) -> list[ClosureReport]:
    """(Re)build every spec's closure and mark the closure fresh; each spec is logged
    with its counts and the cycles it tolerated.

    A spec whose input (its spec and the edges it follows) is the same as when it was
    last built whole is kept as it is (see ``closure_state``); ``force`` rewrites it anyway.

    Each closure triple is written once, into the default graph. A spec with an earlier
    build is changed by its difference (its gone triples deleted); then the new triples of
    every spec, all of a spec with none yet and the additions of the others, go into the
    store in one streamed bulk load (``closure_write.load_lines``), committed every
    ``closure_write.COMMIT_LINES`` triples.

    Crash safety: the build is one journaled write (``Store.writing``), which marks the
    closure stale before anything changes; every spec is computed into compact records on
    disk first (the old triples stay whole meanwhile); then every spec's record is dropped
    and its triples are written; the commit marks the closure fresh and records each spec's
    input. A build killed part-way leaves the store stale (so the next command that needs
    the closure rebuilds it), and the next writable open removes its scratch records; a
    spec's input record is dropped before its triples are touched and written by the
    commit, so the next build keeps only closures written whole (and changes a partly
    written one by its difference)."""
    if store.remote:
        raise KgcultError("closures are built in the embedded store; a remote endpoint must provide its own")
    specs = specs if specs is not None else load_specs()
    with store.writing("closure", "ontology/closures.ttl") as w:  # the data graphs do not change
        reports = _build(store, specs, force, w)
    order = {spec.name: i for i, spec in enumerate(specs)}
    return sorted(reports, key=lambda r: order[r.spec])


def _build(store: Store, specs: list[ClosureSpec], force: bool, w) -> list[ClosureReport]:
    scratch = scratch_dir(store)
    shutil.rmtree(scratch, ignore_errors=True)  # a killed build's leftovers
    scratch.mkdir(parents=True)
    t_start = time.perf_counter()
    table = EdgeTable()
    before = closure_state.recorded(store.ox)
    planned, reports = [], []
    for spec in specs:
        t0 = time.perf_counter()
        fp, n_edges = table.fingerprint(store, spec)
        known = before.get(spec.graph)
        if not force and known and known[0] == fp and closure_state.still_there(store.ox, spec, known[1]):
            reports.append(ClosureReport(spec.name, spec.graph, n_edges, known[1],
                                         seconds=time.perf_counter() - t0, kept=True, derived=spec.derived))
            log.info("%s", reports[-1])
            continue
        log.info("%s: computing (%d of %d specs)", spec.name, specs.index(spec) + 1, len(specs))
        out = ScratchWriter(scratch / f"{spec.name}.i32")
        cycles, n_edges = compute(store, spec, table, out)
        out.close()
        planned.append((spec, fp, out, cycles, n_edges, time.perf_counter() - t0))
    terms = table.nodes.keys
    in_cycle = f" <{vocab.KGC}inCycle> ".encode()
    state, nonce = closure_state.state_dir(store.location), closure_state.new_nonce()
    compute_s = time.perf_counter() - t_start
    additions: list[Iterator[bytes]] = []
    seconds_of: dict[str, float] = {}
    for spec, _fp, out, cycles, _n_edges, seconds in planned:
        t0 = time.perf_counter()
        log.info("%s: writing %d pairs (%s)", spec.name, out.pairs, spec.derived)
        known = before.get(spec.graph)
        closure_state.forget_input(store.ox, spec.graph)  # no record while the closure is partial
        _retire(store, spec)
        derived = f" <{spec.derived}> ".encode()
        mark = in_cycle + f"<{vocab.KGC}{spec.name}> .\n".encode()
        if closure_write.holds(store.ox, spec.derived, vocab.KGC + spec.name):
            prev = closure_state.load(state, spec.name, spec.derived, known[2] if known else None, table.nodes.id)
            diff, codes = _write_difference(store, spec, out, cycles, table.nodes, scratch, derived, mark, prev)
            log.debug("%s: %d triples deleted, %d to add", spec.name, diff.deleted, diff.added)
            additions.append(diff.blocks())
        else:
            codes = _codes(out, cycles)
            additions.append(_blocks(out.path, terms, derived, cycles, mark))
        # the state before the triples: a build killed after it has no record naming it
        closure_state.save(state, spec.name, spec.derived, nonce, codes, terms)
        del codes
        seconds_of[spec.name] = seconds + time.perf_counter() - t0
    t_load = time.perf_counter()
    # the bulk load and the compaction run in Oxigraph without reporting: a line every 10 s
    # (a bar on a terminal) says which of the two is under way
    bar = kglog.progress(total=2, desc="closure", unit=" steps")
    bar.set_postfix_str(f"writing {sum(item[2].pairs for item in planned):,} pairs")
    with bar:
        closure_write.load_lines(store, (block for blocks in additions for block in blocks))
        per_pair = (time.perf_counter() - t_load) / max(1, sum(item[2].pairs for item in planned))
        write_s = time.perf_counter() - t_start - compute_s
        bar.update(1)
        bar.set_postfix_str("compacting the store")
        t_opt = time.perf_counter()
        if planned:
            # compacted right after the load, before any other write: the load leaves dozens of
            # files in RocksDB's level 0, and a write (the records below) waits while RocksDB
            # merges them in the background, work that a compaction after it did again (at
            # 1 M edges: a 39 s wait then 62 s of compaction, against 89 s compacted first)
            store.optimize()
        compact_s = time.perf_counter() - t_opt
        bar.update(1)
    for spec, fp, out, cycles, n_edges, _seconds in planned:
        out.path.unlink()
        named = sorted(sorted(terms[x][1:-1].decode() for x in cyc) for cyc in cycles)
        count = out.pairs + sum(len(c) for c in cycles)
        w.ops.append(closure_state.record_op(spec.graph, fp, count, nonce))
        reports.append(ClosureReport(spec.name, spec.graph, n_edges, count, named,
                                     seconds_of[spec.name] + per_pair * out.pairs, derived=spec.derived))
        log.info("%s", reports[-1])
    shutil.rmtree(scratch, ignore_errors=True)
    w.ops += provenance.state_ops("closureStale", False)
    w.record(kind="closure", source="ontology/closures.ttl", triples=sum(r.triples_out for r in reports))
    log.info("closure phases: compute %.1f s, write %.1f s, compact %.1f s", compute_s, write_s, compact_s)
    return reports


def ensure_closure(store: Store) -> None:
    """Rebuild the closure if data changed since it was built (embedded stores only)."""
    if store.remote or not store.closure_stale:
        return
    if store.read_only:
        raise KgcultError("the hierarchy closure is stale; run `kgcult closure` first")
    log.info("closure is stale (data changed since it was built): rebuilding it now")
    build(store)


def closure_sizes(store, specs: list[ClosureSpec] | None = None) -> dict[str, int]:
    """spec name -> its closure triples in the store (its derived property's triples and
    its cycle marks, as queries see them: each once), for ``kgcult stats`` and benchmarks."""
    out = {}
    for spec in specs if specs is not None else load_specs():
        # IRIs parsed as terms (str() of a NamedNode is a valid IRI reference)
        d, c, m = NamedNode(spec.derived), NamedNode(vocab.KGC + "inCycle"), NamedNode(vocab.KGC + spec.name)
        rows = store.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ {{ ?s {d} ?o }} UNION {{ ?s {c} {m} }} }}")
        out[spec.name] = int(next(iter(rows))["n"].value)
    return out


# -- the closure as a file, for an engine that holds the data but not the closure
# (``kgcult closure --export closure.nt.gz``; docs/serve.md, "The closure on a remote engine"):
# every spec's derived-property triples and cycle marks as N-Triples (gzip for ``.gz``), streamed
def closure_triples(store, specs: list[ClosureSpec] | None = None) -> Iterator[Triple]:
    """The closure's triples in the store's default graph, spec by spec."""
    cycle = setgraph.IN_CYCLE
    for spec in specs if specs is not None else load_specs():
        for q in store.ox.quads_for_pattern(None, NamedNode(spec.derived), None, setgraph.DEFAULT):
            yield q.triple
        for q in store.ox.quads_for_pattern(None, cycle, NamedNode(vocab.KGC + spec.name), setgraph.DEFAULT):
            yield q.triple


def export(store, path: str | os.PathLike, specs: list[ClosureSpec] | None = None) -> int:
    """Write the closure to ``path`` (N-Triples, gzip for ``.gz``), whole or not at all;
    returns the number of triples."""
    if getattr(store, "remote", False):
        raise KgcultError("the closure is exported from an embedded store (the endpoint holds no closure to export)")
    target = Path(path)
    tmp = target.with_name(f".{target.name}.part")
    n = 0

    def counted() -> Iterator[Triple]:
        nonlocal n
        for t in closure_triples(store, specs):
            n += 1
            yield t

    try:
        with open(tmp, "wb") as raw:
            out = cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0)
                       if target.suffix == ".gz" else raw)
            serialize(counted(), out, format=RdfFormat.N_TRIPLES)
            out.close()
        os.replace(tmp, target)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise KgcultError(f"{target}: cannot write the closure: {e.strerror or e}") from None
    return n


__all__ = ["ClosureSpec", "ClosureReport", "load_specs", "build", "compute", "ensure_closure", "edges",
           "closure_sizes", "export"]
