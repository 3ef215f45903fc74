"""The emission: which kept N-Triples lines belong to a subgraph (its members' subjects,
its predicates, its languages), where they come from after the crawl (the local engine's
intermediate, or Spark's output partitions), and how they reach the store."""
from __future__ import annotations

import errno
import io
import os
import shutil
import tempfile
import threading
import time
from array import array
from typing import BinaryIO

import numpy as np
from pyoxigraph import NamedNode

from kgcult import vocab
from kgcult.acquire import subgraphs
from kgcult.acquire.dump import reader as dumpio
from kgcult.acquire.dump import json_entity
from kgcult.acquire.dump import scan
from kgcult.acquire.dump import truthy
from kgcult.acquire.dump.selection import code, contains
from kgcult.acquire.dump.reader import IngestError
from kgcult.acquire.subgraphs import SubgraphSpec
from kgcult.store import base


def member_filter(spec: SubgraphSpec):
    """(predicates, language tags or None, sitelink predicate or None): which of a member's
    kept lines belong to ``spec``."""
    if spec.is_labels:
        preds = {b"<" + p.encode() + b">" for p in spec.label_properties}
        site = b"<" + subgraphs.SITELINKS.encode() + b">" if spec.sitelinks else None
        langs = {x.lower().encode() for x in spec.languages}
        return preds, langs, site
    return {b"<" + vocab.WDT.encode() + p.encode() + b">" for p in spec.properties}, None, None


def _tagged(o: bytes, langs) -> bool:
    """Whether the object of a line (``o``: the rest of the line) has a tag in ``langs``."""
    at = o.rfind(b'"@')
    return at >= 0 and o[at + 2:].rstrip(b" .").lower() in langs


class Router:
    """Routes kept lines to the subgraphs they belong to, in one pass over groups of lines
    of one subject each: the groups' subject codes are looked up in the member sets
    (sorted integer arrays) all at once, and only members' lines are split and checked,
    and only members of a labels subgraph have their terms record turned into lines."""

    def __init__(self, todo: list[SubgraphSpec], backend):
        self.names = [s.name for s in todo]
        self.filters = [member_filter(s) for s in todo]
        # what a labels subgraph takes from a terms record: (languages, label properties, sitelinks)
        self.terms = [(frozenset(x.lower() for x in s.languages), frozenset(s.label_properties), s.sitelinks)
                      if s.is_labels else None for s in todo]
        self.members = [backend.members[s.name].codes for s in todo]
        self._by_row: dict[bytes, list[int]] = {}
        # members that are not Q/P/L ids (a lexeme's form or sense): by subject IRI
        self.other: dict[bytes, list[int]] = {}
        for k, codes in enumerate(self.members):
            for c in codes[(codes & 3) == 3].tolist():
                iri = b"<" + vocab.WD.encode() + backend.index.ids.dec(c).encode() + b">"
                self.other.setdefault(iri, []).append(k)

    def route_groups(self, frame: scan.Frame) -> list[tuple[str, bytes]]:
        """(subgraph name, its lines) for each subgraph with any, of the frame's groups, one
        subject each (its code, or -1: look at each line's subject)."""
        codes = np.asarray(frame.codes, dtype=np.int64)
        hits = np.array([contains(m, codes) for m in self.members]).reshape(len(self.members), len(codes))
        wanted = np.flatnonzero(hits.any(axis=0) | (codes < 0))
        out: list[list[bytes]] = [[] for _ in self.names]
        data, ends, terms, tends, filters = frame.lines, frame.ends, frame.terms, frame.tends, self.filters
        for g, c, row in zip(wanted.tolist(), codes[wanted].tolist(), self._rows(hits, wanted)):
            chunk = data[ends[g - 1] if g else 0:ends[g]]
            record = terms[tends[g - 1] if g else 0:tends[g]]
            targets = None if c < 0 else self._targets(row)
            for line in chunk.split(b"\n"):
                if not line:
                    continue
                s, p, o = line.split(b" ", 2)
                for k in (targets if targets is not None else self.other.get(s, ())):
                    preds, langs, site = filters[k]
                    if (p in preds and (langs is None or _tagged(o, langs))) or p == site:
                        out[k].append(line)
            if record:
                self._terms(json_entity.terms(record), targets, out)
        return [(self.names[k], b"\n".join(lines) + b"\n") for k, lines in enumerate(out) if lines]

    @staticmethod
    def _rows(hits, wanted):
        """Each wanted group's subgraphs as a hashable key: its column of ``hits`` as bytes."""
        cols = np.ascontiguousarray(hits[:, wanted].T)
        return [cols[i].tobytes() for i in range(len(wanted))]

    def _targets(self, row: bytes) -> list[int]:
        """The subgraph indexes of a row of :meth:`_rows` (a few distinct rows: cached)."""
        targets = self._by_row.get(row)
        if targets is None:
            targets = self._by_row[row] = [k for k, hit in enumerate(row) if hit]
        return targets

    def _terms(self, rec: dict, targets, out) -> None:
        """The lines of a terms record for each labels subgraph it is a member of."""
        subject = f"<{vocab.WD}{rec['id']}>"
        if targets is None:
            targets = self.other.get(subject.encode(), ())
        for k in targets:
            if self.terms[k] is not None:
                langs, props, sitelinks = self.terms[k]
                count = rec.get("sitelinks") if sitelinks else None
                lines = truthy.term_lines(rec, count, subject, langs, props)
                if lines:
                    out[k].append("\n".join(lines).encode())

    def route(self, data: bytes) -> list[tuple[str, bytes]]:
        """:meth:`route_groups` for lines in any order (each its own group)."""
        lines = [x for x in data.split(b"\n") if x]
        codes, ends, pos = array("q"), array("q"), 0
        for line in lines:
            local = scan.nt_entity(line[:line.find(b" ")])
            c = code(local) if local is not None else None
            codes.append(-1 if c is None else c)
            pos += len(line) + 1
            ends.append(pos)
        frame = scan.Frame(codes, ends, b"".join(x + b"\n" for x in lines), array("q", bytes(8 * len(lines))))
        return self.route_groups(frame)


_ROUTER: Router | None = None  # set before the workers fork; they inherit it


def _filter_frame(frame: bytes) -> list[tuple[str, bytes]]:
    assert _ROUTER is not None  # set before the workers fork
    return _ROUTER.route_groups(scan.unpack_frame(frame))


class FrameSource:
    """The members' lines, read back from the local engine's intermediate; the frames are
    filtered by ``jobs`` forked workers, which inherit the member sets."""

    def __init__(self, inter: scan.Intermediate, backend, jobs: int = 1):
        self.inter, self.backend, self.jobs = inter, backend, jobs

    def emit(self, todo: list[SubgraphSpec]):
        """(subgraph name, N-Triples bytes) of every spec's members, one read of the frames."""
        global _ROUTER
        _ROUTER = Router(todo, self.backend)
        pool = scan.fork_pool(self.jobs)
        try:
            for kept in scan.in_order(pool, _filter_frame, self.inter.frames(), self.jobs):
                yield from kept
        finally:
            if pool is not None:
                pool.terminate()
                pool.join()
            _ROUTER = None

    def remove(self) -> None:
        self.inter.remove()


class _PipeLoad:
    """One Oxigraph bulk load in a thread (it releases the GIL), reading N-Quads from a
    named pipe that :meth:`write` fills."""

    def __init__(self, store, directory: str, name: str):
        self.store, self.path = store, os.path.join(directory, name)
        self.error: BaseException | None = None
        self.bytes = self.quads = 0
        os.mkfifo(self.path, 0o600)
        self.thread = threading.Thread(target=self._run, name="kgcult-bulk-load", daemon=True)
        self.thread.start()
        while True:  # the writer's end opens once the loader has opened the reader's
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError as e:
                if e.errno != errno.ENXIO or not self.thread.is_alive():
                    self.thread.join()
                    raise self.error or e from None
                time.sleep(0.001)
        os.set_blocking(fd, True)
        dumpio.widen_pipe(fd)
        self.file: BinaryIO | None = os.fdopen(fd, "wb", buffering=1 << 20)

    def _run(self) -> None:
        try:
            self.store.bulk_load_nquads(self.path)
        except BaseException as e:  # noqa: BLE001 - raised by the Writer
            self.error = e

    def write(self, quads: bytes, count: int | None = None) -> bool:
        """False when the loader has stopped reading (it failed). ``count``: the quads the
        budget counts (the named graph's; its default-graph copies ride along)."""
        assert self.file is not None  # not finished
        try:
            self.file.write(quads)
        except BrokenPipeError:
            return False
        self.bytes += len(quads)
        self.quads += quads.count(b"\n") if count is None else count
        return True

    def finish(self, abort: bool = False) -> BaseException | None:
        """End the input and wait for the load; ``abort``: a bad line first, so that the
        loader stops without committing what it has not committed yet. Its error, if any."""
        if self.file is not None:
            try:
                if abort:
                    self.file.write(b"\n<> not N-Quads\n")
                self.file.close()
            except BrokenPipeError:
                pass
            self.file = None
        self.thread.join()
        return self.error


# quads per bulk load: one batch of Oxigraph's loader (which sorts up to 1 M quads a batch,
# each batch on one thread), so that ``loaders`` loads hold no more than one loader would
LOADER_QUADS = 500_000


class Writer:
    """The selected lines into the store as N-Quads (each line with its graph), loaded by
    Oxigraph bulk loads, its own parser and bulk loader: several times faster than Python
    quads through transactions. Where the system has named pipes, ``loaders`` bulk loads
    run in threads and read the quads from pipes in ``tmpdir`` while the emission writes
    them, so the load overlaps the emission, and two loads share the sorting that one
    would do on one thread; each takes up to LOADER_QUADS quads, then commits and another
    takes its place. Elsewhere the quads are spooled to a scratch file and loaded at
    :meth:`flush`. The graphs written are staging graphs or graphs the run creates, inside
    the run's journaled write (``Store.writing``), so a bulk load that does not commit as
    one transaction is rolled back. Lines for a created graph go to the default graph too
    (kgcult's set of all graphs' triples: the same line without a graph is an N-Quads line
    of the default graph)."""

    def __init__(self, store, tmpdir: str | None = None, loaders: int = 1):
        self.store, self.tmpdir, self.loaders = store, tmpdir, max(1, loaders)
        self.where = ""
        self.dir: str | None = None  # of the named pipes
        self.spool: io.BufferedWriter | None = None  # the scratch file, without named pipes
        self.path: str | None = None  # its path
        self.pipes: list[_PipeLoad] = []
        self.broken = False
        self.opened = 0

    def _open(self) -> None:
        if not hasattr(os, "mkfifo"):  # pragma: no cover - not POSIX
            fd, self.path = tempfile.mkstemp(prefix="ingest-", suffix=".nq", dir=self.tmpdir)
            self.spool = os.fdopen(fd, "wb")
            return
        self.dir = tempfile.mkdtemp(prefix="ingest-", dir=self.tmpdir)
        for _ in range(self.loaders):
            self._new_pipe()

    def _new_pipe(self) -> _PipeLoad:
        self.opened += 1
        assert self.dir is not None  # made by _open
        pipe = _PipeLoad(self.store, self.dir, f"quads-{self.opened}.nq")
        self.pipes.append(pipe)
        return pipe

    def _pipe(self) -> _PipeLoad:
        """The load to write to: the one with the fewest quads; when every load has its
        LOADER_QUADS, the oldest commits (its error is raised) and a new one takes its place."""
        pipe = min(self.pipes, key=lambda p: p.quads)
        if pipe.quads < LOADER_QUADS:
            return pipe
        failure = self._failure(self.pipes.pop(0).finish())
        if failure is not None:
            raise failure
        return self._new_pipe()

    def _failure(self, e: BaseException | None) -> BaseException | None:
        return self._bad_line(e) if isinstance(e, SyntaxError) else e

    def _bad_line(self, e: SyntaxError) -> IngestError:
        return IngestError(f"{self.where}: a selected line is not valid N-Triples: {e}")

    def add_ntriples(self, data: bytes, graph: NamedNode, where: str) -> None:
        if self.spool is None and not self.pipes:
            self._open()
        self.where = where
        if self.broken:
            return  # a loader stopped (flush says why)
        g = b" <" + graph.value.encode() + b"> .\n"
        # every kept line ends with its "." (a line's last byte; N-Triples has no trailing
        # comments): the graph goes in before it. A line holds no raw newline, so when every
        # line ends with " ." and a newline (the lines kgcult writes), one replace does it
        if data.endswith(b"\n") and data.count(b"\n") == data.count(b" .\n") and b"\n\n" not in data:
            quads = data.replace(b" .\n", g)
        else:
            quads = b"".join(x[:-1].rstrip() + g for x in data.split(b"\n") if x)
        named = quads.count(b"\n")
        if base.in_set(graph.value):
            quads += data if data.endswith(b"\n") else data + b"\n"
        if self.spool is not None:
            self.spool.write(quads)
        elif not self._pipe().write(quads, named):
            self.broken = True

    def flush(self) -> None:
        """Finish the loads (or load the spooled quads) and remove the scratch files. When a
        loader fails, the ones not finished yet are stopped before they commit."""
        try:
            if self.spool is not None:
                self.spool.close()
                self.spool = None
                try:
                    self.store.bulk_load_nquads(self.path)
                except SyntaxError as e:
                    raise self._bad_line(e) from None
            failure = None
            for pipe in self.pipes:
                failure = failure or self._failure(pipe.finish(abort=failure is not None))
            self.pipes = []
            if failure is not None:
                raise failure
        finally:
            self.remove()

    def remove(self) -> None:
        """Stop (unfinished loads are abandoned) and remove the scratch files."""
        for pipe in self.pipes:
            pipe.finish(abort=True)
        self.pipes = []
        if self.spool is not None:
            self.spool.close()
            self.spool = None
        if self.path is not None:
            try:
                os.unlink(self.path)
            except OSError:
                pass
            self.path = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
