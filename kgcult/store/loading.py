"""Bulk loads (``kgcult load``, :meth:`kgcult.store.embedded.Store.load`): all or nothing
across every file of one command, progress counted in triples, Ctrl-C answered at once.

- **All or nothing.** One journal entry per command (:mod:`kgcult.store.recovery`): a
  file into a graph that is empty before the command is bulk-loaded into it (rolled back
  by dropping the graph); a file into a graph that holds data is bulk-loaded into a
  staging graph beside it, copied in at commit. A bad file, a full disk or a kill
  anywhere leaves (or, on the next writable open, brings back) the store as it was.
- **Progress** counts the triples (N-Triples/N-Quads lines; Turtle/TriG lines) fed to
  Oxigraph's parser, in each pass over each file (the check of several or quad files, the
  named graph, the default graph), against a total that is exact for uncompressed input
  (its lines counted first) and estimated from the compressed bytes read otherwise.
- **Ctrl-C.** The bulk work runs in a worker thread while the main thread waits, so
  KeyboardInterrupt arrives at once; the input pipe is then cut (the parser stops with an
  error and Oxigraph commits no further batch). A small load is rolled back there and
  then; a big one is left to the journal (rolled back by the next writable open, its
  graphs shown as partial to readers until then) and :class:`LoadInterrupted` says so.
"""
from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import pyoxigraph as ox
from pyoxigraph import NamedNode, Quad, RdfFormat

from kgcult import vocab
from kgcult.errors import KgcultError
from kgcult.files import sha256_file
from kgcult.store import base, provenance, rdfio, recovery, setgraph

log = logging.getLogger(__name__)

GRACE = 3.0          # seconds the worker gets to stop after Ctrl-C before we stop waiting for it
SMALL = 20_000       # triples (lines fed to the store) a Ctrl-C rolls back at once (~1 s)


@dataclass
class LoadReport:
    path: str
    graph: str | None  # None: the file names its own graphs (N-Quads, TriG)
    triples: int       # triples added to the store (store size after - before)
    seconds: float
    sha256: str


class LoadInterrupted(KgcultError):
    """Ctrl-C during a load. ``rolled_back``: the store is as before; else the journal
    rolls the load back at the next writable open. ``worker_running``: Oxigraph was still
    finishing a batch: the Store object must not be used again in this process."""

    exit_code = 130

    def __init__(self, message: str, *, rolled_back: bool, worker_running: bool):
        super().__init__(message)
        self.rolled_back, self.worker_running = rolled_back, worker_running


@dataclass
class _Plan:
    path: str
    fmt: RdfFormat
    target: str | None                      # a triple file's graph; None for a quad file
    graphs: set[str]                        # the graphs it writes
    stages: dict[str, str] = field(default_factory=dict)  # target -> staging graph
    sha256: str | None = None               # the file's, from its first whole read

    def hashing(self):
        """A sha256 to update while the file is read, until one read gave the digest."""
        return None if self.sha256 is not None else hashlib.sha256()

    def hashed(self, digest) -> None:
        if digest is not None and self.sha256 is None:
            self.sha256 = digest.hexdigest()

    @property
    def quads(self) -> bool:
        return self.fmt in rdfio.QUAD_FORMATS


def load(store, paths: Sequence[str | os.PathLike], graph: str | None = None, *,
         progress=None) -> list[LoadReport]:
    """Load ``paths`` into ``store`` as one command (see the module doc and Store.load)."""
    plans = _plan(paths, graph)
    tally = _Tally(progress, plans)
    # Quad files are parsed first to refuse quads for kgcult's own graphs and in the
    # default graph (and to learn their graphs); with several files all are, so that a bad
    # last file fails before anything is written (the journal would undo it, at a cost).
    for plan in plans:
        if len(plans) > 1 or plan.quads:
            _validate(plan, tally)
    db: ox.Store = store.ox
    key = recovery.new_key()
    held = {g for plan in plans for g in plan.graphs if _holds_data(db, g)}
    creates = sorted({g for plan in plans for g in plan.graphs} - held)
    n = 0
    for plan in plans:
        for g in sorted(plan.graphs & held):
            plan.stages[g] = recovery.staging_graph(key, n)
            n += 1
        tally.set_passes(plan)
    tally.fed = 0  # from here, lines fed to the store
    what = ", ".join(_display_path(p.path) for p in plans)
    stages = [(s, t) for plan in plans for t, s in plan.stages.items()]
    reports: list[LoadReport] = []
    w = None
    try:  # Ctrl-C is not undone by the gateway: a small load is rolled back here, a big one left
        with store.writing("load", what, creates=creates, stages=stages, key=key,
                           keep=lambda e: isinstance(e, (_Interrupted, KeyboardInterrupt))) as w:
            for plan in plans:
                t0 = time.perf_counter()
                added = _load_file(store, plan, tally)
                digest = plan.sha256 or sha256_file(plan.path)  # read while it was loaded
                reports.append(LoadReport(plan.path, plan.target, added, time.perf_counter() - t0, digest))
                w.record(kind="load", source=_display_path(plan.path), sha256=digest, graph=plan.target,
                         triples=added)
    except (_Interrupted, KeyboardInterrupt) as stop:
        if w is None:
            raise
        raise _after_interrupt(store, w.entry, tally, getattr(stop, "running", False)) from None
    tally.finish()
    return reports


def _after_interrupt(store, cmd: recovery.Entry, tally: "_Tally", running: bool) -> LoadInterrupted:
    """Ctrl-C: roll a small load back now; leave a big one (or one whose worker has not
    stopped) to the journal. The error says which."""
    into = ", ".join(cmd.graphs()) or "the store"
    what = f"the load of {cmd.what} into {into}"
    if not running:
        status = recovery.status(store, cmd)
        if status is None:
            return LoadInterrupted(f"interrupted: {what} had completed", rolled_back=False, worker_running=False)
        if status != recovery.IN_PROGRESS:  # committed: finished, never undone
            return LoadInterrupted(
                f"interrupted while committing: {what} is completed at the next writable open of "
                f"{store.location}; until then readers see it as partial",
                rolled_back=False, worker_running=False)
    if not running and tally.fed <= SMALL:
        recovery.rollback(store, cmd)
        recovery.remove_bulk_leftovers(store.location)
        return LoadInterrupted(f"interrupted: {what} was rolled back; the store is as it was before",
                               rolled_back=True, worker_running=False)
    if not running:
        recovery.remove_bulk_leftovers(store.location)
    return LoadInterrupted(
        f"interrupted: {what} is rolled back at the next writable open of {store.location} "
        f"(e.g. the next `kgcult load` or `kgcult closure`); until then readers see it as partial",
        rolled_back=False, worker_running=running)


# -- planning ------------------------------------------------------------------------

def check_inputs(paths: Sequence[str | os.PathLike], graph: str | None = None) -> None:
    """What a load checks of its files before it opens the store (each one there, of a
    known format, and its graph one a user may write): a first load that cannot start
    leaves no store folder behind."""
    _plan(paths, graph)


def _plan(paths: Sequence[str | os.PathLike], graph: str | None) -> list[_Plan]:
    plans = []
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
            base.check_user_graph(target, f"--graph {graph!r}")
        else:
            target = vocab.graph_iri(stem(p))
            base.check_user_graph(target, f"{p}: the graph named after the file (give --graph)")
        plans.append(_Plan(p, fmt, target, {target} if target else set()))
    return plans


def _holds_data(db: ox.Store, graph: str) -> bool:
    g = NamedNode(graph)
    return db.contains_named_graph(g) and bool(db.query(f"ASK {{ GRAPH {g} {{ ?s ?p ?o }} }}"))


def _validate(plan: _Plan, tally: "_Tally") -> None:
    """Parse a file completely without touching the store (streamed); quads for kgcult's
    own graphs or for the default graph (kgcult's set of all graphs' triples) are refused.
    The graphs a quad file names are added to ``plan.graphs``."""
    path = plan.path

    def check(quad, n):
        g = quad.graph_name
        if not isinstance(g, NamedNode):
            raise KgcultError(f"{path}: quad {n} is in the default graph, which kgcult keeps as the "
                              "set of all named graphs' triples; put it in a named graph (or load a "
                              "triple file with --graph)")
        if base.is_reserved(g.value):
            raise KgcultError(f"{path}: quad {n} is in graph {g.value}, which is reserved "
                              "for kgcult's own data (metadata, closures, staging)")
        plan.graphs.add(g.value)

    digest = plan.hashing()
    rdfio.check_file(path, plan.fmt, check if plan.quads else None, lines=tally.counter(plan), digest=digest)
    plan.hashed(digest)


# -- one file ------------------------------------------------------------------------

def _load_file(store, plan: _Plan, tally: "_Tally") -> int:
    """Load one file into its graphs (or their staging graphs), then its directly loaded
    triples into the default graph. Returns the triples it adds to the store."""
    db: ox.Store = store.ox
    if plan.quads:
        before = len(db)
        if plan.stages:  # some of its graphs held data: those go to staging graphs
            _extend(db, plan, tally, lambda g: NamedNode(plan.stages.get(g.value, g.value)))
        else:
            _bulk_load(db, plan, tally, None)
        added = len(db) - before - sum(_overlap(db, s, t) for t, s in plan.stages.items())
        if set(plan.graphs) - set(plan.stages):
            _extend(db, plan, tally, lambda g: None if g.value in plan.stages else setgraph.DEFAULT)
        return added
    assert plan.target is not None
    if plan.target in plan.stages:
        stage = plan.stages[plan.target]
        _bulk_load(db, plan, tally, NamedNode(stage))
        return provenance.size(db, stage) - _overlap(db, stage, plan.target)
    before = provenance.size(db, plan.target)
    store_before = len(db) if _cheaper_to_count_store(store.location, plan.path) else None
    _bulk_load(db, plan, tally, NamedNode(plan.target))
    added = len(db) - store_before if store_before is not None else provenance.size(db, plan.target) - before
    if setgraph.visible(plan.target):
        _bulk_load(db, plan, tally, setgraph.DEFAULT)
    return added


def _overlap(db: ox.Store, stage: str, target: str) -> int:
    """Triples of a staging graph that its target already holds."""
    rows = db.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH {NamedNode(stage)} {{ ?s ?p ?o }} "
                    f"GRAPH {NamedNode(target)} {{ ?s ?p ?o }} }}")
    assert isinstance(rows, ox.QuerySolutions)
    return int(next(iter(rows))["n"].value)


def _bulk_load(db: ox.Store, plan: _Plan, tally: "_Tally", to_graph) -> None:
    """Oxigraph's bulk loader over the decompressing pipe (a triple file into ``to_graph``;
    a quad file, ``to_graph`` None, into its own graphs), in a worker thread."""
    kwargs = {"format": plan.fmt} | ({"to_graph": to_graph} if to_graph is not None else {})
    _in_worker(plan, tally, lambda stream: db.bulk_load(**rdfio.reader_source(stream), **kwargs))
    db.flush()


def _extend(db: ox.Store, plan: _Plan, tally: "_Tally", graph_of: Callable) -> None:
    """A quad file through the parser, each quad into ``graph_of(its graph)`` (None: skip)."""
    def quads(stream):
        for q in ox.parse(input=stream, format=plan.fmt):
            g = graph_of(q.graph_name)
            if g is not None:
                yield Quad(q.subject, q.predicate, q.object, g)

    _in_worker(plan, tally, lambda stream: db.bulk_extend(quads(stream)))
    db.flush()


class _Interrupted(Exception):
    def __init__(self, running: bool):
        self.running = running


def _in_worker(plan: _Plan, tally: "_Tally", work: Callable) -> None:
    """Run ``work(stream)`` over the file's decompressing pipe in a worker thread; the
    main thread waits, so Ctrl-C reaches it at once, cuts the pipe and raises
    :class:`_Interrupted` (running: the worker did not stop within GRACE seconds)."""
    box: dict = {}
    digest = plan.hashing()
    pipe = rdfio.decompressing_pipe(plan.path, lines=tally.counter(plan), digest=digest)
    done = threading.Event()  # not Thread.is_alive: a join that Ctrl-C interrupts can misreport it

    def run() -> None:
        try:
            with pipe as stream:
                try:
                    work(stream)
                except SyntaxError as e:
                    box["syntax"] = e  # the pipe's own error, if any, takes precedence on exit
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            box["error"] = e
        finally:
            done.set()

    worker = threading.Thread(target=run, name="kgcult-load", daemon=True)
    try:
        worker.start()  # in the try: a Ctrl-C here finds the worker started, or not yet
        while not done.wait(0.25):
            pass
    except KeyboardInterrupt:
        pipe.stop()
        stopped = done.wait(GRACE) or not worker.ident  # never started: nothing runs
        raise _Interrupted(not stopped) from None
    if pipe.stopped:
        raise _Interrupted(False)
    failure = _failure(plan.path, box.pop("error", None), box.pop("syntax", None))
    if failure is None:
        plan.hashed(digest)  # the parser read the whole file
    if failure is not None:
        # no reference from the error's frames to the store (through ``work``): an
        # in-process caller may reopen the store as soon as it has the error
        del work, run
        try:
            raise failure
        finally:
            del failure


def _failure(path: str, error: BaseException | None, syntax: SyntaxError | None) -> BaseException | None:
    """The error to raise for what the worker met (None: it succeeded)."""
    if error is not None:
        if isinstance(error, SyntaxError):
            return rdfio.syntax_error(path, error)
        if isinstance(error, KgcultError):
            return error.with_traceback(None)
        if isinstance(error, MemoryError):  # Oxigraph's parser: "Reached the buffer maximal size of 16777216"
            return KgcultError(f"{path}: a line or literal is larger than the parser's buffer ({error}); "
                               "nothing was loaded")
        if isinstance(error, OSError) and str(error).startswith("IO error"):  # RocksDB's: writing the store
            return KgcultError(f"{path}: the store could not be written ({error}); nothing was loaded")
        if isinstance(error, (EOFError, OSError, ValueError)):
            return KgcultError(f"{path}: cannot read: {error}")
        return error.with_traceback(None)
    if syntax is not None:
        return rdfio.syntax_error(path, syntax)
    return None


# -- progress --------------------------------------------------------------------------

class _Tally:
    """One progress bar (or nothing) for a whole command, in one unit: the input's triples
    (its lines: one triple a line in N-Triples and N-Quads). A file read in several passes
    (the check of several or quad files, the named graph, the default graph) advances the
    bar by its share per pass, so the bar goes once from 0 to the input's size. A file's
    size in triples is estimated from the bytes read (no pass is spent counting) until one
    pass has counted its lines, and the bar says "estimated" meanwhile."""

    def __init__(self, progress, plans: list[_Plan]):
        self.bar = progress
        self.fed = 0  # lines fed to the parser (after the checks: an upper bound of what landed)
        self._lock = threading.Lock()
        self._lines: dict[str, int] = {}       # exact line counts
        self._guess: dict[str, float] = {}     # estimates until a pass counted them
        self._passes: dict[str, int] = {}
        self._done, self._shown = 0.0, 0       # triples' worth of passes done; shown on the bar
        for plan in plans:
            self._passes[plan.path] = (1 if len(plans) > 1 or plan.quads else 0) + 2
            if self.bar is None:
                continue
            _, compression = rdfio.split_name(plan.path)
            # ~14 compressed bytes a triple (the stand-in), ~130 uncompressed
            self._guess[plan.path] = os.path.getsize(plan.path) / (14 if compression else 130)
        self._set_total()

    def _set_total(self) -> None:
        if self.bar is None:
            return
        self.bar.total = int(sum(self._lines.get(p, self._guess.get(p, 0)) for p in self._passes))
        if hasattr(self.bar, "set_description"):
            self.bar.set_description("load (total estimated)" if self._guess else "load", refresh=False)

    def set_passes(self, plan: _Plan) -> None:
        """Once the plan knows its staging graphs: a staged triple file is read once (its
        copy into the graph is not counted), a quad file a second time for the default
        graph only when some of its graphs are loaded directly."""
        checked = 1 if len(self._passes) > 1 or plan.quads else 0
        if plan.quads:
            passes = 1 + (1 if set(plan.graphs) - set(plan.stages) else 0)
        else:
            passes = 1 if plan.target in plan.stages or not setgraph.visible(plan.target or "") else 2
        with self._lock:
            self._passes[plan.path] = checked + passes

    def counter(self, plan: _Plan) -> Callable[[int, int | None], None]:
        path, size = plan.path, os.path.getsize(plan.path)
        seen = [0]

        def count(lines: int, raw: int | None) -> None:
            with self._lock:
                seen[0] += lines
                self.fed += lines
                if self.bar is None:
                    return
                if path in self._guess:
                    if raw is None:  # one whole pass: the exact count
                        del self._guess[path]
                        self._lines[path] = seen[0]
                    elif raw > 4 << 20 or raw >= size:  # bytes read run ahead of lines by a 1 MB buffer
                        self._guess[path] = seen[0] * size / raw
                    self._set_total()
                if lines:
                    self._done += lines / self._passes[path]
                    self._show(min(int(self._done), self.bar.total or int(self._done)))
        return count

    def _show(self, n: int) -> None:
        if n > self._shown:
            self.bar.update(n - self._shown)
            self._shown = n

    def finish(self) -> None:
        """The command is done: the bar at its (now exact) total."""
        if self.bar is not None:
            with self._lock:
                self._show(int(self.bar.total or 0))


def progress_unit(paths) -> str:
    """What a load's progress counts: triples (N-Triples and N-Quads: one a line), or lines
    when a Turtle or TriG file is among ``paths`` (lines stand in for its triples)."""
    for p in paths:
        try:
            fmt, _ = rdfio.split_name(p)
        except KgcultError:
            continue  # the load says what is wrong with it
        if fmt not in (RdfFormat.N_TRIPLES, RdfFormat.N_QUADS):
            return " lines"
    return " triples"


# -- helpers -------------------------------------------------------------------------

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


def stem(path: str) -> str:
    name = Path(path).name
    for suffix in rdfio.COMPRESSIONS:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return Path(name).stem


# -- a subgraph's new version (the mirror, the dump ingest) ------------------------------
# The metadata graph records, per target graph, the run that wrote it (``kgc:mirrorRun``,
# written by the commit of the run's ``Store.writing``). A graph with nothing to keep is
# written directly (a created graph: a rollback drops it); a graph with content is rebuilt
# in its staging graph, outside the default graph's set, which the commit makes it equal to.

RUN = vocab.kgc("mirrorRun")


def run_marker(store, graph: str) -> str | None:
    """The run that wrote ``graph`` (None: no run finished writing it)."""
    for q in store.quads_for_pattern(NamedNode(graph), RUN, None, NamedNode(vocab.META_GRAPH)):
        return q.object.value
    return None


def run_ops(graph: str, value: str) -> list[str]:
    """Update operations recording that run ``value`` wrote ``graph`` (for a commit)."""
    g, meta = NamedNode(graph), NamedNode(vocab.META_GRAPH)
    return [f"DELETE WHERE {{ GRAPH {meta} {{ {g} {RUN} ?r }} }}",
            f"INSERT DATA {{ GRAPH {meta} {{ {g} {RUN} {ox.Literal(value)} }} }}"]


def run_target(store, spec) -> str:
    """The empty graph to write a new version of ``spec`` (a subgraph spec: its ``graph``
    and ``staging_graph``) into: the graph itself when it holds nothing, else its staging
    graph (emptied of what a killed run left there)."""
    store.clear_graph(spec.staging_graph)
    return spec.staging_graph if store.triple_count(spec.graph) else spec.graph
