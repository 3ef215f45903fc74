"""The emission: which kept N-Triples lines belong to a subgraph (its members' subjects,
its predicates, its languages), where they come from after the crawl (the local engine's
intermediate, or Spark's output partitions), and how they reach the store."""
from __future__ import annotations

import os
import tempfile
import zlib

import pyoxigraph as ox
from pyoxigraph import NamedNode

from kgcult import vocab
from kgcult.acquire import dumpscan, subgraphs
from kgcult.acquire.dumpio import IngestError
from kgcult.acquire.subgraphs import SubgraphSpec


def member_filter(spec: SubgraphSpec, members: set[str]):
    """(subject IRIs as bytes, predicates, language tags or None, sitelink predicate or None)
    that decide which kept lines belong to ``spec``."""
    mem = {b"<" + vocab.WD.encode() + m.encode() + b">" for m in members}
    if spec.is_labels:
        preds = {b"<" + p.encode() + b">" for p in spec.label_properties}
        site = b"<" + subgraphs.SITELINKS.encode() + b">" if spec.sitelinks else None
        langs = {x.lower().encode() for x in spec.languages}
    else:
        preds, site, langs = {b"<" + vocab.WDT.encode() + p.encode() + b">" for p in spec.properties}, None, None
    return mem, preds, langs, site


def _belongs(p: bytes, o: bytes, preds, langs, site) -> bool:
    if p in preds:
        if langs is None:
            return True
        at = o.rfind(b'"@')
        return at >= 0 and o[at + 2:].rstrip(b" .").lower() in langs
    return site is not None and p == site


class Router:
    """Routes kept lines to the subgraphs they belong to, in one pass: a line whose
    subject is no subgraph's member (most of them) costs one dict lookup."""

    def __init__(self, filters: list[tuple[str, tuple]]):
        self.names = [name for name, _ in filters]
        self.by_subject: dict[bytes, list] = {}
        for k, (_, (mem, preds, langs, site)) in enumerate(filters):
            for m in mem:
                self.by_subject.setdefault(m, []).append((k, preds, langs, site))

    def route(self, data: bytes) -> list[tuple[str, bytes]]:
        """(subgraph name, its lines of ``data``) for each subgraph with any."""
        out: list[list[bytes]] = [[] for _ in self.names]
        get = self.by_subject.get
        for line in data.split(b"\n"):
            targets = get(line[:line.find(b" ")])
            if targets is None:
                continue
            _, p, o = line.split(b" ", 2)
            for k, preds, langs, site in targets:
                if _belongs(p, o, preds, langs, site):
                    out[k].append(line)
        return [(self.names[k], b"\n".join(lines) + b"\n") for k, lines in enumerate(out) if lines]


_ROUTER: Router | None = None  # set before the workers fork; they inherit it


def _filter_frame(frame: bytes) -> list[tuple[str, bytes]]:
    return _ROUTER.route(zlib.decompress(frame))


class FrameSource:
    """The members' lines, read back from the local engine's intermediate; the frames are
    filtered by ``jobs`` forked workers, which inherit the member sets."""

    def __init__(self, inter: dumpscan.Intermediate, members: dict[str, set[str]], jobs: int = 1):
        self.inter, self.members, self.jobs = inter, members, jobs

    def emit(self, todo: list[SubgraphSpec]):
        """(subgraph name, N-Triples bytes) of every spec's members, one read of the frames."""
        global _ROUTER
        _ROUTER = Router([(s.name, member_filter(s, self.members[s.name])) for s in todo])
        pool = dumpscan.fork_pool(self.jobs)
        try:
            for kept in dumpscan.in_order(pool, _filter_frame, self.inter.frames(), self.jobs):
                yield from kept
        finally:
            if pool is not None:
                pool.terminate()
                pool.join()
            _ROUTER = None

    def remove(self) -> None:
        self.inter.remove()


class Writer:
    """The selected lines into the store: spooled per graph to a scratch file (in ``tmpdir``),
    then each graph bulk-loaded once by Oxigraph's own parser and bulk loader, which is
    several times faster than Python quads through a transaction. The graphs written are
    staging graphs or graphs marked partial (:mod:`kgcult.acquire.staging`), so a bulk load
    that does not commit as one transaction changes nothing readers see."""

    def __init__(self, store, tmpdir: str | None = None):
        self.store, self.tmpdir = store, tmpdir
        self.files: dict[str, tuple] = {}  # graph IRI -> (open file, path)

    def add_ntriples(self, data: bytes, graph: NamedNode, where: str) -> None:
        entry = self.files.get(graph.value)
        if entry is None:
            fd, path = tempfile.mkstemp(prefix="ingest-", suffix=".nt", dir=self.tmpdir)
            entry = self.files[graph.value] = (os.fdopen(fd, "wb"), path, where)
        entry[0].write(data)

    def flush(self) -> None:
        """Load every spooled graph and remove its file."""
        try:
            for graph, (f, path, where) in self.files.items():
                f.close()
                try:
                    self.store.ox.bulk_load(path=path, format=ox.RdfFormat.N_TRIPLES, to_graph=NamedNode(graph))
                except SyntaxError as e:
                    raise IngestError(f"{where}: a selected line is not valid N-Triples: {e}") from None
        finally:
            self.remove()

    def remove(self) -> None:
        for f, path, _ in self.files.values():
            f.close()
            try:
                os.unlink(path)
            except OSError:
                pass
        self.files = {}
