"""The store: an embedded, on-disk pyoxigraph store holding Wikidata subgraphs in named
graphs, the derived closure (in the default graph), and a metadata graph with provenance.

Queries see one set of triples as their default graph, as on WDQS: Oxigraph's real
default graph, kept as the set of every data graph's triples plus the closure's
(:mod:`kgcult.store.setgraph`); ``graph=`` restricts them to one named graph.
"""
from __future__ import annotations

import hashlib
import logging
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import pyoxigraph as ox
from pyoxigraph import NamedNode

from kgcult import vocab
from kgcult.store import health, loading, provenance, recovery, setgraph, sidefiles, update_plan
from kgcult.store.loading import LoadInterrupted, LoadReport
from kgcult.errors import KgcultError, QuerySyntaxError
from kgcult.sparql import nesting, wdqs
from kgcult.sparql.query_text import bind_values
from kgcult.store.base import DEFAULT_LOCATION, StoreReads, resolve_location

log = logging.getLogger(__name__)

_STATE = NamedNode(vocab.KGC + "store")
_META = NamedNode(vocab.META_GRAPH)


now_iso = provenance.now_iso


class Store(StoreReads):
    """An embedded pyoxigraph store with kgcult's conventions."""

    remote = False

    def __init__(self, location: str | os.PathLike | None = None, *, read_only: bool = False):
        self.location = resolve_location(location)
        self.read_only = read_only
        self._notices_given: set[str] = set()  # each notice once per store on stderr
        self._partial_graphs: list[str] | None = None
        self._readers_told = False
        self._entry: recovery.Entry | None = None  # the write under way (:meth:`writing`)
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
            if not read_only and "lock" in str(e).lower():
                raise KgcultError(_held_by_another(self.location)) from None
            raise KgcultError(f"cannot open the store at {self.location}: {e}") from e
        older = setgraph.older_layout(self._ox)
        if older is not None:
            del self._ox
            raise KgcultError(
                f"{self.location}: written by an older kgcult ({older}); this one does not convert it: "
                "load its files again into a new store, or export a snapshot with the kgcult that wrote it "
                "(`kgcult snapshot export`) and import it (docs/store.md)")
        if not read_only:
            # Only one writer holds the store: an unfinished journal entry is a killed writer's.
            try:
                messages = recovery.recover(self)
            except recovery.JournalDamaged:
                del self._ox
                raise
            for message in messages:
                log.warning("%s: %s", self.location, message)
        else:
            try:
                recovery.read(self.location)
            except recovery.JournalDamaged as e:
                log.warning("%s", e)

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
        graph (each triple once) and the closure unless ``graph`` names one. ``bindings`` ({variable: term or str}) or ``rows``
        ((variables, rows)) bind values through a VALUES block (never format user text
        into the query string). Returns pyoxigraph's QuerySolutions, QueryBoolean or
        QueryTriples."""
        nesting.check(sparql)  # too deep for the engine: refused before it can crash the process
        if bindings or rows:
            sparql = bind_values(sparql, bindings, rows)
        kwargs: dict = {"prefixes": wdqs.PREFIXES}
        if graph:
            kwargs["default_graph"] = [NamedNode(graph)]
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
        """Triples per named graph."""
        counts: dict[str, int] = {}
        for row in _solutions(self._ox.query(
            "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g"
        )):
            counts[row["g"].value] = int(row["n"].value)
        return dict(sorted(counts.items()))

    def triple_count(self, graph: str | None = None) -> int:
        """Triples in ``graph``, or in the default graph (each triple once)."""
        if graph:
            rows = self._ox.query(bind_values(
                "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }", {"g": NamedNode(graph)}))
        else:
            rows = self._ox.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
        return int(next(iter(_solutions(rows)))["n"].value)

    def clear_graph(self, graph: str) -> None:
        """Remove a named graph; its triples leave the default graph unless another graph
        holds them (a batch per transaction: see ``setgraph.drop``)."""
        setgraph.drop(self._ox, graph)

    # -- loading ----------------------------------------------------------------------

    def load(self, paths: Sequence[str | os.PathLike], graph: str | None = None, *,
             progress=None) -> list[LoadReport]:
        """Bulk-load RDF files as one command, all or nothing (:func:`kgcult.store.loading.load`):
        triple formats (nt, ttl) into ``graph``, by default the graph named after the file
        stem (``dishes.ttl`` -> .../graph/dishes); quad formats into their own graphs.
        ``progress``: a tqdm-like bar counting the triples fed to the parser. Ctrl-C raises
        :class:`~kgcult.store.loading.LoadInterrupted`."""
        if self.read_only:
            raise KgcultError(f"{self.location}: the store is open read-only; cannot load into it")
        return loading.load(self, paths, graph, progress=progress)

    def evaluate(self, prepared: str, **dataset):
        """Run query text already prepared (``wdqs.prepare``: the server's workers) with
        pyoxigraph's dataset options (``default_graph``, ``named_graphs``, ...)."""
        return self._ox.query(prepared, **dataset)

    def backup(self, path: str | os.PathLike) -> None:
        """A consistent copy of the store at ``path`` (hard links to RocksDB's files)."""
        self._ox.backup(str(path))

    # -- the write gateway -------------------------------------------------------------

    def update(self, text: str, operations: list, *, source: str = "kgcult serve /update") -> None:
        """A client's SPARQL Update (``kgcult serve --writable``; ``operations``: its parse,
        checked by the caller), journaled: run in one transaction, then the default graph
        brought up to date with what it changed (:func:`kgcult.store.update_plan.update_plan`)
        in a second one, with its provenance record."""
        p = update_plan.update_plan(operations, self._ox)
        with self.writing("update", "a SPARQL Update", marks=p.pending) as w:
            w.applied = False  # an update that fails is one transaction that wrote nothing
            self._ox.update(" ;\n".join(p.before + [text]), prefixes=vocab.PREFIXES)
            w.applied = True
            if p.full:
                setgraph.sync(self._ox)
            w.ops += p.after
            w.record(kind="update", source=source, extra={"updateSha256": hashlib.sha256(text.encode()).hexdigest()})

    def _writing(self, what: str) -> None:
        if self._entry is None:
            raise KgcultError(f"{what}: a write outside Store.writing (not journaled)")

    def append(self, graph: str, data: bytes | None = None, stream=None) -> None:
        """N-Triples into ``graph`` and, when it is in the set, the default graph: ``data``
        in one transaction, or ``stream()`` (a context manager giving a binary stream, opened
        once per target) through the bulk loader; inside :meth:`writing`, whose entry undoes
        it."""
        self._writing("append")
        for target in [NamedNode(graph)] + ([setgraph.DEFAULT] if setgraph.visible(graph) else []):
            if data is not None:
                self._ox.load(input=data, format=ox.RdfFormat.N_TRIPLES, to_graph=target)
            else:
                with stream() as f:  # a fresh stream for each target
                    self._ox.bulk_load(input=f, format=ox.RdfFormat.N_TRIPLES, to_graph=target)

    def bulk_load_nquads(self, path: str) -> None:
        """Oxigraph's bulk loader over an N-Quads file or pipe (``kgcult ingest``'s loads,
        inside :meth:`writing`, whose journal entry undoes what a failed or killed load
        left). It commits batch by batch: a write outside a journaled one is not atomic."""
        self._writing("bulk_load_nquads")
        self._ox.bulk_load(path=path, format=ox.RdfFormat.N_QUADS)

    @contextmanager
    def writing(self, kind: str, what: str, *, creates: Iterable[str] = (), swaps: Iterable[tuple[str, str]] = (),
                stages: Iterable[tuple[str, str]] = (), marks: Iterable[str] = (), key: str | None = None,
                keep: Callable[[BaseException], bool] | None = None) -> Iterator["Writing"]:
        """One journaled write command, all or nothing (:mod:`kgcult.store.recovery`):
        ``creates`` (graphs empty before it, dropped by a rollback), ``swaps`` ((staging
        graph, target): the target replaced by the staging graph at the commit), ``stages``
        (the same, added to the target), ``marks``
        (graphs pending for the default graph's set until the commit: an update's). The
        block writes; what it adds to ``Writing.ops`` and records with ``Writing.record``
        commits with it. An exception settles it (:func:`recovery.undo`:
        rolled back, or for an update and a closure build, finished as far as they can be),
        unless ``keep(exception)``; a kill leaves it to the next writable open. One write at a time."""
        if self.read_only:
            raise KgcultError(f"{self.location}: the store is open read-only; cannot write to it")
        if self._entry is not None:
            raise KgcultError(f"{self.location}: a {kind} inside the {self._entry.title}: one write at a time")
        entry = self._entry = recovery.begin(self, kind=kind, what=what, creates=creates, swaps=swaps,
                                             stages=stages, marks=marks, key=key)
        w = Writing(entry)
        try:
            yield w
        except BaseException as e:
            if recovery.status(self, entry) == recovery.IN_PROGRESS and not (keep and keep(e)):
                recovery.undo(self, entry, applied=w.applied)
                recovery.remove_bulk_leftovers(self.location)
            raise
        finally:
            self._entry = None
        recovery.commit(self, entry, w.ops)
        self._ox.flush()

    # -- metadata: provenance and state ---------------------------------------------

    def get_state(self, name: str) -> str | None:
        for q in self._ox.quads_for_pattern(_STATE, vocab.kgc(name), None, _META):
            return vocab.value(q.object)
        return None

    def set_state(self, name: str, value: str | bool | int | None) -> None:
        """A store-state value kept in the metadata graph (a cache: a content hash, ...;
        None removes it), in one transaction."""
        provenance.run(self._ox, provenance.state_ops(name, value))

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

    def note_write(self) -> None:
        """A write begins: servers reading this store keep answering from the data they
        opened; the writer (only the writer, once) is told so."""
        if self._readers_told:
            return
        self._readers_told = True
        for reader in sidefiles.live_readers(self.location):
            log.warning("%s: %s (pid %s) reads this store and will not see what is written now; "
                        "restart it to serve the changes", self.location, reader.get("what", "a reader"),
                        reader["pid"])

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


@dataclass
class Writing:
    """What a write command (:meth:`Store.writing`) commits with its data."""
    entry: recovery.Entry
    ops: list[str] = field(default_factory=list)
    applied: bool = True  # False: nothing written yet, so an exception rolls back whatever the kind

    def record(self, *, kind: str, source: str, sha256: str | None = None, graph: str | None = None,
               triples: int | None = None, extra: dict[str, str] | None = None) -> None:
        """A provenance record (a kgc:Load), written by the commit."""
        _, quads = provenance.activity(kind=kind, source=source, sha256=sha256, graph=graph, triples=triples,
                                       extra=extra)
        self.ops.append(provenance.insert_data(quads))


def _held_by_another(location: str) -> str:
    """What to tell a writer that finds the store's RocksDB ``LOCK`` held: which process
    holds it (found by its open file, as ``fuser`` would) and what to do."""
    lock = os.path.join(os.path.abspath(location), "LOCK")
    holders = []
    for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int) if os.path.isdir("/proc") else []:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if not any(os.readlink(f"/proc/{pid}/fd/{fd}") == lock for fd in fds):
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        if int(pid) != os.getpid():
            holders.append(f"pid {pid}: `{_command(argv)}`")
    who = ("another process is writing it (" + "; ".join(holders) + ")") if holders else \
        "another process holds it open for writing (its LOCK file is taken)"
    return (f"{location}: {who}. Only one process may write a store at a time: wait for it to end (a load, "
            "import or ingest it leaves unfinished is rolled back by the next writable open, so stopping it is "
            "safe), then run this command again. Read commands (sparql, stats, show, build) work meanwhile.")


def _command(argv: list[str]) -> str:
    """A process's command line as a user would recognise it: ``kgcult load x.nt``."""
    for i, a in enumerate(argv):
        if a == "-m" and i + 1 < len(argv) and argv[i + 1] == "kgcult":
            return " ".join(["kgcult", *argv[i + 2:]])[:200]
        if os.path.basename(a) == "kgcult":
            return " ".join(["kgcult", *argv[i + 1:]])[:200]
    return " ".join(argv)[:200]


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


__all__ = ["Store", "LoadReport", "LoadInterrupted", "QuerySyntaxError", "DEFAULT_LOCATION", "resolve_location"]


def _solutions(result: ox.QuerySolutions | ox.QueryBoolean | ox.QueryTriples) -> ox.QuerySolutions:
    """A SELECT's result, narrowed from the three kinds pyoxigraph's ``query`` returns."""
    assert isinstance(result, ox.QuerySolutions)
    return result
