"""The store: an embedded, on-disk pyoxigraph store holding Wikidata subgraphs in named
graphs, derived closure graphs, and a metadata graph with provenance.

Queries see one set of triples as their default graph, as on WDQS: Oxigraph's real
default graph, kept as the set of every data and closure graph's triples
(:mod:`kgcult.store.setgraph`); ``graph=`` restricts them to one named graph.
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import pyoxigraph as ox
from pyoxigraph import Literal, NamedNode, Quad, RdfFormat

from kgcult import vocab
from kgcult.store import graphnames, health, journal, rdfio, readers, setgraph
from kgcult.errors import KgcultError, QuerySyntaxError
from kgcult.files import sha256_file
from kgcult.sparql import nesting, wdqs
from kgcult.sparql.query_text import bind_values
from kgcult.store.base import DEFAULT_LOCATION, StoreReads, resolve_location

log = logging.getLogger(__name__)

_XSD_BOOL = NamedNode(vocab.XSD + "boolean")
_XSD_INT = NamedNode(vocab.XSD + "integer")
_XSD_DT = NamedNode(vocab.XSD + "dateTime")
_STATE = NamedNode(vocab.KGC + "store")
_META = NamedNode(vocab.META_GRAPH)
log = logging.getLogger(__name__)


now_iso = journal.now_iso


@dataclass
class LoadReport:
    path: str
    graph: str | None  # None: the file names its own graphs (N-Quads, TriG)
    triples: int       # triples added to the store (store size after - before)
    seconds: float
    sha256: str


class Store(StoreReads):
    """An embedded pyoxigraph store with kgcult's conventions."""

    remote = False

    def __init__(self, location: str | os.PathLike | None = None, *, read_only: bool = False):
        self.location = resolve_location(location)
        self.read_only = read_only
        self._notices_given: set[str] = set()  # each notice once per store on stderr
        self._partial_graphs: list[str] | None = None
        _refuse_foreign_directory(self.location)
        try:
            if read_only:
                if not Path(self.location).exists():
                    raise KgcultError(
                        f"no store at {self.location}: create one with `kgcult load` or "
                        "`kgcult snapshot import`"
                    )
                self._ox = ox.Store.read_only(self.location)
            else:
                Path(self.location).mkdir(parents=True, exist_ok=True)
                self._ox = ox.Store(self.location)
        except OSError as e:
            raise KgcultError(f"cannot open the store at {self.location}: {e}") from e
        if not read_only:
            # Only one writer holds the store: an unfinished journal entry is a killed writer's.
            for message in setgraph.migrate(self._ox) + journal.repair(self._ox) + setgraph.repair(self._ox):
                log.warning("%s: %s", self.location, message)
            _remove_bulk_leftovers(self.location)
            for reader in readers.live(self.location):
                log.warning("%s: %s (pid %s) reads this store and will not see what is written now; "
                            "restart it to serve the changes", self.location, reader.get("what", "a reader"),
                            reader["pid"])
        self.is_set = setgraph.is_set(self._ox)
        if not self.is_set:  # an older store opened read-only: the union, as it was written
            log.warning("%s: this store was written by an older kgcult: queries see the union of its "
                        "graphs (a triple once per graph that holds it) until it is opened for writing "
                        "once (e.g. `kgcult closure`), which builds its default graph as a set", self.location)

    # -- querying ---------------------------------------------------------------------

    @property
    def ox(self) -> ox.Store:
        """The underlying pyoxigraph store, for code that needs its full API."""
        return self._ox

    def query(
        self,
        sparql: str,
        *,
        graph: str | None = None,
        bindings: dict | None = None,
        rows: tuple | None = None,
    ):
        """Run a SPARQL query. The default graph is the set of the triples of every data
        and closure graph (each triple once) unless ``graph`` names one. ``bindings`` ({variable: term or str}) or ``rows``
        ((variables, rows)) bind values through a VALUES block (never format user text
        into the query string). Returns pyoxigraph's QuerySolutions, QueryBoolean or
        QueryTriples."""
        nesting.check(sparql)  # too deep for the engine: refused before it can crash the process
        if bindings or rows:
            sparql = bind_values(sparql, bindings, rows)
        kwargs: dict = {"prefixes": wdqs.PREFIXES}
        if graph:
            kwargs["default_graph"] = [NamedNode(graph)]
        elif not self.is_set:
            kwargs["use_default_graph_as_union"] = True
        # WDQS drop-in: label service, SERVICE refused, paths from the closure (docs/wdqs.md)
        prepared = wdqs.prepare(sparql, closure_fresh=None if graph else not self.closure_stale)
        extra = health.notices(self, sparql, partial=self.partial_graphs()) if self.read_only else []
        for notice in prepared.notices + extra:
            if notice not in self._notices_given:
                self._notices_given.add(notice)
                log.warning("%s", notice)
        try:
            return self._ox.query(prepared.text, **kwargs)
        except SyntaxError as e:
            raise wdqs.syntax_error(sparql, prepared.text, e) from None

    # -- graphs -----------------------------------------------------------------------

    def graph_counts(self) -> dict[str, int]:
        """Triples per named graph (and ``""`` for the default graph if it has any while it
        is not the set: an older store's)."""
        counts: dict[str, int] = {}
        for row in _solutions(self._ox.query(
            "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g"
        )):
            counts[row["g"].value] = int(row["n"].value)
        if not self.is_set:
            default = next(iter(_solutions(self._ox.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"))), None)
            if default is not None and int(default["n"].value):
                counts[""] = int(default["n"].value)
        return dict(sorted(counts.items()))

    def triple_count(self, graph: str | None = None) -> int:
        """Triples in ``graph``, or in the default graph (each triple once)."""
        if graph:
            rows = self._ox.query(bind_values(
                "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }", {"g": NamedNode(graph)}))
        else:
            rows = self._ox.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }",
                                  use_default_graph_as_union=not self.is_set)
        return int(next(iter(_solutions(rows)))["n"].value)

    def clear_graph(self, graph: str) -> None:
        """Remove a named graph; its triples leave the default graph unless another graph
        holds them (a batch per transaction: see ``setgraph.drop``)."""
        setgraph.drop(self._ox, graph)

    def replace_graph(self, graph: str, triples: Iterable) -> int:
        """Replace a (derived) graph's content with ``triples`` (Triple or 3-tuples of terms)."""
        g = NamedNode(graph)
        self.clear_graph(graph)
        setgraph.mark_pending(self._ox, [graph])
        quads = [
            Quad(t[0], t[1], t[2], g) if isinstance(t, tuple) else Quad(t.subject, t.predicate, t.object, g)
            for t in triples
        ]
        self._ox.bulk_extend(quads)
        self._ox.flush()
        if setgraph.visible(graph):
            self._ox.bulk_extend(Quad(q.subject, q.predicate, q.object, setgraph.DEFAULT) for q in quads)
            self._ox.flush()
        setgraph.unmark_pending(self._ox, [graph])
        return self.triple_count(graph)

    # -- loading ----------------------------------------------------------------------

    def load(
        self,
        paths: Sequence[str | os.PathLike],
        graph: str | None = None,
        *,
        progress=None,
        kind: str = "load",
        threads: int | None = None,
    ) -> list[LoadReport]:
        """Bulk-load RDF files. All or nothing: a malformed file raises RdfSyntaxError (with
        file, line and column) and the store keeps exactly what it had before.

        Triple formats (nt, ttl) go to ``graph``, by default the graph named after the file
        stem (``dishes.ttl`` -> .../graph/dishes); quad formats keep their own graphs unless
        ``graph`` is given, which then rejects them (a quad file names its graphs). Graph
        names must be valid IRIs and not kgcult's own (metadata, closure, staging graphs).

        Compressed files are decompressed in a thread and streamed into one Oxigraph bulk
        load (no scratch copy on disk). Each file's load is journaled (see
        :mod:`kgcult.store.journal`), so a process killed mid-load is repaired on the next
        writable open. ``threads`` is accepted for compatibility and ignored: one bulk
        loader keeps peak memory at the Oxigraph CLI's."""
        del threads
        if self.read_only:
            raise KgcultError(f"{self.location}: the store is open read-only; cannot load into it")
        plans: list[tuple[str, RdfFormat, str | None, set[str]]] = []
        for path in paths:
            p = str(path)
            if not os.path.isfile(p):
                raise KgcultError(f"{p}: no such file")
            fmt, _ = rdfio.split_name(p)
            if fmt in rdfio.QUAD_FORMATS:
                if graph:
                    raise KgcultError(
                        f"{p}: --graph cannot be used with N-Quads/TriG files, which name their own graphs"
                    )
                target = None  # the file's graphs: collected while it is validated
            elif graph:
                target = vocab.graph_iri(graph)
                graphnames.check_user_graph(target, f"--graph {graph!r}")
            else:
                target = vocab.graph_iri(_stem(p))
                graphnames.check_user_graph(target, f"{p}: the graph named after the file (give --graph)")
            plans.append((p, fmt, target, {target} if target else set()))

        # A single triple file is loaded atomically by Oxigraph's bulk loader. Quad files are
        # parsed first to refuse quads for kgcult's own graphs and in the default graph (and
        # to know which graphs they write); with several files, all are parsed first so that
        # a bad last file cannot leave the first ones in.
        for p, fmt, _, graphs in plans:
            if len(plans) > 1 or fmt in rdfio.QUAD_FORMATS:
                self._validate(p, fmt, graphs)

        reports = []
        for p, fmt, target, graphs in plans:
            reports.append(self._load_one(p, fmt, target, sorted(graphs), kind, progress))
        return reports

    def _load_one(self, path: str, fmt, target: str | None, graphs: list[str], kind: str,
                  progress) -> LoadReport:
        """Load one file into its graph(s), then the same triples into the default graph
        (the set; a second bulk load of the file). The graphs are journaled pending until
        the second load is done (``setgraph``)."""
        t0 = time.perf_counter()
        before = journal.size(self._ox, target)
        empty = target is not None and before == 0
        digest = sha256_file(path)
        state = journal.saved_state(self._ox)
        node = journal.begin_load(self._ox, kind=kind, source=_display_path(path), sha256=digest,
                                  graph=target, before=before, target_empty=empty, pending=graphs)
        # counted after the journal record is written, so that its quads are not counted as loaded
        store_before = (len(self._ox) if target is None or _cheaper_to_count_store(self.location, path)
                        else None)
        try:
            self._bulk_load(path, fmt, target, progress)
        except BaseException:
            if empty and target is not None:
                setgraph.drop(self._ox, target)
            journal.abort_load(self._ox, node, state, pending=graphs)
            _remove_bulk_leftovers(self.location)  # a failed (e.g. disk-full) load's files
            raise
        if store_before is not None:  # nothing but the bulk load wrote in between
            added = len(self._ox) - store_before
        else:
            added = journal.size(self._ox, target) - before
        try:
            self._load_default(path, fmt)
        except BaseException:
            # the file's triples are in their graph(s): record the load, bring the set up to date
            journal.finish_load(self._ox, node, added)
            setgraph.repair(self._ox)
            raise
        journal.finish_load(self._ox, node, added, pending=graphs)
        self._ox.flush()
        return LoadReport(path, target, added, time.perf_counter() - t0, digest)

    def _load_default(self, path: str, fmt) -> None:
        """The file's triples into the default graph: a triple file by Oxigraph's bulk loader
        again; a quad file (whose quads are in data graphs, checked) through the parser."""
        if fmt in rdfio.QUAD_FORMATS:
            with rdfio.decompressing_pipe(path) as stream:
                self._ox.bulk_extend(Quad(q.subject, q.predicate, q.object, setgraph.DEFAULT)
                                     for q in ox.parse(input=stream, format=fmt))
            self._ox.flush()
            return
        self._bulk_load(path, fmt, setgraph.DEFAULT, None)

    def _size(self, graph: str | None) -> int:
        """Triples in ``graph`` (a scan of that graph only), or in the whole store."""
        return journal.size(self._ox, graph)

    def _bulk_load(self, path: str, fmt, target, progress) -> None:
        """Bulk-load one file into ``target`` (an IRI, the DefaultGraph, or None: a quad
        file's own graphs)."""
        kwargs = {"format": fmt}
        if target:
            kwargs["to_graph"] = target if isinstance(target, ox.DefaultGraph) else NamedNode(target)
        _, compression = rdfio.split_name(path)
        try:
            if compression is None and progress is None and not rdfio.starts_with_bom(path):
                self._ox.bulk_load(path=path, **kwargs)
            else:
                # Decompress in a thread into a pipe, so decompression and Oxigraph's
                # parser run on two cores; progress counts compressed bytes.
                err: SyntaxError | None
                with rdfio.decompressing_pipe(path, progress) as stream:
                    try:
                        self._ox.bulk_load(**rdfio.reader_source(stream), **kwargs)
                    except SyntaxError as e:
                        err = e  # the pipe's own error, if any, takes precedence on exit
                    else:
                        err = None
                if err is not None:
                    raise rdfio.syntax_error(path, err) from None
        except SyntaxError as e:
            raise rdfio.syntax_error(path, e) from None
        except (EOFError, OSError, ValueError) as e:
            raise KgcultError(f"{path}: cannot read: {e}") from None
        except MemoryError as e:  # Oxigraph's parser: "Reached the buffer maximal size of 16777216"
            raise KgcultError(f"{path}: a line or literal is larger than the parser's buffer ({e}); "
                              "nothing was loaded") from None
        self._ox.flush()

    def _validate(self, path: str, fmt, graphs: set) -> None:
        """Parse a file completely without touching the store (streamed); quads for
        kgcult's own graphs or for the default graph (kgcult's set of all graphs' triples)
        are refused. The graphs a quad file names are added to ``graphs``."""
        def check(quad, n):
            g = quad.graph_name
            if not isinstance(g, NamedNode):
                raise KgcultError(f"{path}: quad {n} is in the default graph, which kgcult keeps as the "
                                  "set of all named graphs' triples; put it in a named graph (or load a "
                                  "triple file with --graph)")
            if graphnames.is_reserved(g.value):
                raise KgcultError(f"{path}: quad {n} is in graph {g.value}, which is reserved "
                                  "for kgcult's own data (metadata, closures, staging)")
            graphs.add(g.value)

        rdfio.check_file(path, fmt, check if fmt in rdfio.QUAD_FORMATS else None)

    # -- metadata: provenance and state ---------------------------------------------

    def record_activity(
        self,
        *,
        kind: str,
        source: str,
        sha256: str | None = None,
        graph: str | None = None,
        triples: int | None = None,
        extra: dict[str, str] | None = None,
    ) -> NamedNode:
        """Write one provenance record (a kgc:Load) to the metadata graph."""
        node, quads = journal.activity(kind=kind, source=source, sha256=sha256, graph=graph,
                                       triples=triples, extra=extra)
        self._ox.extend(quads)
        return node

    def get_state(self, name: str) -> str | None:
        for q in self._ox.quads_for_pattern(_STATE, vocab.kgc(name), None, _META):
            return vocab.value(q.object)
        return None

    def set_state(self, name: str, value: str | bool | int) -> None:
        pred = vocab.kgc(name)
        self.remove_state(name)
        if isinstance(value, bool):
            lit = Literal("true" if value else "false", datatype=_XSD_BOOL)
        elif isinstance(value, int):
            lit = Literal(str(value), datatype=_XSD_INT)
        else:
            lit = Literal(value)
        self._ox.add(Quad(_STATE, pred, lit, _META))

    def partial_graphs(self) -> list[str]:
        """Graphs an interrupted mirror or ingest left partial (:mod:`kgcult.store.health`);
        read once per read-only open, whose view of the store does not change."""
        if not self.read_only:
            return health.partial_graphs(self)
        if self._partial_graphs is None:
            self._partial_graphs = health.partial_graphs(self)
        return self._partial_graphs

    @property
    def closure_stale(self) -> bool:
        """True when data changed since the last ``kgcult closure`` (or none was built)."""
        return self.get_state("closureStale") != "false"

    def mark_closure_stale(self) -> None:
        """Data changed: derived closures and the cached hashes are out of date, and the data
        has a new version (:mod:`kgcult.store.facts`)."""
        journal.run(self._ox, journal.stale_ops())

    def remove_state(self, name: str) -> None:
        for q in list(self._ox.quads_for_pattern(_STATE, vocab.kgc(name), None, _META)):
            self._ox.remove(q)

    def flush(self) -> None:
        self._ox.flush()

    def optimize(self) -> None:
        """Compact the on-disk indexes (RocksDB) after bulk writes; reads get ~3x faster
        on the stand-in. `kgcult closure` calls it once the derived graphs are written."""
        self._ox.optimize()

    def close(self) -> None:
        if not self.read_only:
            try:
                self._ox.flush()
            except OSError:
                pass
        del self._ox

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _remove_bulk_leftovers(location: str) -> None:
    """Delete the ``bulk-*.sst`` files Oxigraph's bulk loader writes into the store directory
    and ingests at its end: a killed or failed load leaves them behind (hundreds of MB, for
    ever). Called only by the process that holds the store for writing, so no load of
    another process can be using them."""
    freed, n = 0, 0
    for f in Path(location).glob("bulk-*.sst"):
        try:
            size = f.stat().st_size
            f.unlink()
        except OSError:
            continue
        freed, n = freed + size, n + 1
    if n:
        log.info("%s: removed %d file(s) (%.1f MB) left by an interrupted bulk load", location, n, freed / 1e6)


def _refuse_foreign_directory(location: str) -> None:
    """A directory that holds files but no RocksDB ``CURRENT`` file is someone's own
    directory, not a store: reading it would fail with RocksDB's "IO error ... CURRENT", and
    creating a store there would mix RocksDB's files into the user's."""
    p = Path(location)
    if p.is_file():
        raise KgcultError(f"{location}: is a file, not a store directory (check --store / $KGCULT_STORE)")
    if p.is_dir() and not (p / "CURRENT").exists():
        try:
            foreign = next(iter(p.iterdir()), None)
        except OSError as e:
            raise KgcultError(f"cannot open the store at {location}: {e.strerror or e}") from None
        if foreign is not None:
            raise KgcultError(f"{location}: not a kgcult store (a directory holding {foreign.name!r} and no "
                              "store files); give --store an empty or new directory")


def _display_path(path: str) -> str:
    """A path relative to the working directory when under it, else absolute."""
    full = os.path.abspath(path)
    rel = os.path.relpath(full)
    return full if rel.startswith("..") else rel


def _cheaper_to_count_store(location: str, path: str) -> bool:
    """Whether counting the whole store before and after a load (``len``: about 150 ns per
    quad here) is cheaper than counting the target graph after it (a SPARQL COUNT: about
    850 ns per quad). True when the store is small next to the input, as when a large file
    goes into a fresh store. Both give the exact count; only the time differs. Sizes are
    estimates: about 250 B per quad on disk, and 130 B per triple of uncompressed input
    (14 B compressed)."""
    on_disk = 0
    with os.scandir(location) as entries:
        for entry in entries:
            try:
                on_disk += entry.stat().st_size if entry.is_file() else 0
            except FileNotFoundError:  # RocksDB removed it (a compaction) while we looked
                continue
    _, compression = rdfio.split_name(path)
    triples_in = os.path.getsize(path) / (14 if compression else 130)
    return on_disk / 250 <= triples_in


def _stem(path: str) -> str:
    name = Path(path).name
    for suffix in rdfio.COMPRESSIONS:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return Path(name).stem


__all__ = ["Store", "LoadReport", "QuerySyntaxError", "DEFAULT_LOCATION", "resolve_location"]


def _solutions(result: ox.QuerySolutions | ox.QueryBoolean | ox.QueryTriples) -> ox.QuerySolutions:
    """A SELECT's result, narrowed from the three kinds pyoxigraph's ``query`` returns."""
    assert isinstance(result, ox.QuerySolutions)
    return result
