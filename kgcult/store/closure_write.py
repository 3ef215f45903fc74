"""Writing one spec's closure from its records (``hierarchy.ScratchWriter``) into the
default graph, where its triples live once (``kgcult.store.setgraph``): a spec's closure
is every default-graph triple with its derived property, plus its cycle marks.

A build writes every new triple, of every spec, in one streamed bulk load
(:func:`load_lines`). A spec with no triples yet adds all of its own; one that holds an
earlier build is changed by its difference only: the old triples are read back (by
predicate) as integer-coded pairs, both sides are split into partitions by subject (bounded
memory) and sorted, the pairs that are gone are deleted, and the new ones wait on disk for
the load (:class:`Difference`). Oxigraph deletes about 30k quads/s, so deleting a closure to
write it again costs several times what reading it does, and after a typical data change most of a
closure stays as it was.

A pair is coded ``subject << 32 | object`` over the build's node ids; a cycle mark
(``x kgc:inCycle <spec>``) is ``x << 32 | MARK``. An old triple whose subject or object is
not an IRI (not written by kgcult) is deleted.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from pyoxigraph import NamedNode, RdfFormat

from kgcult import lazy
from kgcult.store import rdfio, setgraph

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy.module("numpy")

MARK = 0xFFFFFFFF
# Pairs per partition of the difference: each side's partition is sorted in memory as int64
# codes, so a partition costs at most about 4 x 8 B x PART_PAIRS (256 MB) at its peak.
PART_PAIRS = 8_000_000
DELETE_LINES = 20_000  # triples per DELETE DATA update


class Partitions:
    """int64 codes spread over ``k`` scratch files by subject."""

    def __init__(self, directory: Path, name: str, k: int) -> None:
        self.k = k
        self.paths = [directory / f"{name}.{i}.i64" for i in range(k)]
        self._files = [open(p, "wb") for p in self.paths]

    def add(self, codes: np.ndarray) -> None:
        if self.k == 1:
            codes.tofile(self._files[0])
            return
        part = (codes >> 32) % self.k
        for i in range(self.k):
            codes[part == i].tofile(self._files[i])

    def close(self) -> None:
        for f in self._files:
            f.close()

    def read(self, i: int) -> np.ndarray:
        return np.fromfile(self.paths[i], dtype=np.int64)

    def remove(self) -> None:
        for p in self.paths:
            p.unlink(missing_ok=True)


def holds(ox, derived: str, mark_object: str) -> bool:
    """Whether the default graph holds any triple of this spec's closure."""
    return any(True for _ in ox.quads_for_pattern(None, NamedNode(derived), None, setgraph.DEFAULT)) \
        or any(True for _ in ox.quads_for_pattern(None, setgraph.IN_CYCLE, NamedNode(mark_object), setgraph.DEFAULT))


def old_codes(ox, derived: str, mark_object: str, node_id, out: Partitions) -> None:
    """Code the spec's closure triples in the default graph (its ``derived`` pairs and its
    cycle marks) into ``out``; a triple that cannot be coded is removed."""
    buf: list[int] = []
    foreign = []
    d, mark = NamedNode(derived), NamedNode(mark_object)
    for pattern in ((None, d, None), (None, setgraph.IN_CYCLE, mark)):
        for q in ox.quads_for_pattern(*pattern, setgraph.DEFAULT):
            s, o = q.subject, q.object
            if not isinstance(s, NamedNode) or not isinstance(o, NamedNode):
                foreign.append(q)
                continue
            sid = node_id(f"<{s.value}>".encode())
            buf.append(sid << 32 | (MARK if pattern[2] is not None else node_id(f"<{o.value}>".encode())))
            if len(buf) >= 1_000_000:
                out.add(np.array(buf, dtype=np.int64))
                buf = []
    if buf:
        out.add(np.array(buf, dtype=np.int64))
    for q in foreign:
        ox.remove(q)


def lines(codes: np.ndarray, terms: list[bytes], derived: bytes, mark: bytes) -> Iterator[bytes]:
    """N-Triples lines of coded pairs."""
    end = b" .\n"
    for code in codes.tolist():
        s, o = code >> 32, code & MARK
        yield terms[s] + (mark if o == MARK else derived + terms[o] + end)


def chunks(it: Iterator[bytes], n: int) -> Iterator[bytes]:
    buf: list[bytes] = []
    for line in it:
        buf.append(line)
        if len(buf) >= n:
            yield b"".join(buf)
            buf = []
    if buf:
        yield b"".join(buf)


# Triples per commit of the build's bulk load. Oxigraph's loader parses its input into
# batches of 1 M triples and writes each batch's index files (one per column family) on a
# thread of its own; a commit hands the store all its files at once, into RocksDB's level 0.
# Commits of 2 M triples (the earlier way) had RocksDB merge each commit's files into those
# before them, in the background, on the same two cores: at 300k edges that merging took
# 55-67 CPU s of a 107-121 s build, against 23 CPU s and 83-89 s with one commit. One commit
# of the 46.6 M triples of 1 M edges put 47 files per column family in level 0, past
# RocksDB's level0_stop_writes_trigger (36, Oxigraph's setting): writes stopped and the
# compaction at the end of the build did not run, leaving a store twice its size. A commit
# of at most 24 M triples stays under that trigger (BENCHMARKS.md, "Closure at Oxigraph's
# write rate").
COMMIT_LINES = 24_000_000


def load_lines(store, blocks: Iterator[bytes]) -> None:
    """Streamed bulk loads of N-Triples blocks into the default graph: a whole build's new
    triples, every spec's, in commits of about COMMIT_LINES triples (a commit ends at the
    block that reaches it). The loader holds at most three batches whatever a commit's size.
    Each commit goes through an OS pipe (:class:`rdfio.chunk_pipe`): a thread renders the
    lines into it while Oxigraph reads its ``/dev/fd`` path in Rust, without the GIL, so
    rendering and parsing overlap; a rendering error fails the load instead of ending its
    input early."""
    blocks = iter(blocks)
    while True:
        first = next(blocks, None)
        if first is None:
            return

        def commit(first=first) -> Iterator[bytes]:
            n, block = 0, first
            while True:
                yield block
                n += block.count(b"\n")
                if n >= COMMIT_LINES:
                    return
                block = next(blocks, None)
                if block is None:
                    return
        with rdfio.chunk_pipe(commit()) as source:
            store.ox.bulk_load(**rdfio.reader_source(source), format=RdfFormat.N_TRIPLES, to_graph=setgraph.DEFAULT,
                               lenient=True)


class Difference:
    """What a spec's difference adds, kept on disk (sorted codes, one file per partition)
    until the build's one bulk load renders it (:meth:`blocks`)."""

    def __init__(self, paths: list[Path], terms: list[bytes], derived: bytes, mark: bytes,
                 deleted: int, added: int) -> None:
        self.paths, self.terms, self.derived, self.mark = paths, terms, derived, mark
        self.deleted, self.added = deleted, added

    def blocks(self) -> Iterator[bytes]:
        for path in self.paths:
            yield from chunks(lines(np.fromfile(path, dtype=np.int64), self.terms, self.derived, self.mark),
                              BLOCK_LINES)
            path.unlink()


def apply_difference(store, new: Partitions, old: Partitions, terms: list[bytes],
                     derived: bytes, mark: bytes) -> Difference:
    """Delete the old-only codes, partition by partition, and keep the new-only ones on disk
    for the build's bulk load (:class:`Difference`). Leaves ``new``'s files sorted and
    unique (the spec's state: ``closure_state``)."""
    deleted = added = 0
    fresh_paths = [path.with_suffix(".fresh") for path in new.paths]
    for i in range(new.k):
        a, b = np.unique(new.read(i)), np.unique(old.read(i))
        gone = b[~np.isin(b, a, assume_unique=True)]
        a[~np.isin(a, b, assume_unique=True)].tofile(fresh_paths[i])
        a.tofile(new.paths[i])
        del a, b
        for text in chunks(lines(gone, terms, derived, mark), DELETE_LINES):
            store.ox.update(f"DELETE DATA {{ {text.decode()} }}")
        deleted += len(gone)
        added += fresh_paths[i].stat().st_size // 8
    return Difference(fresh_paths, terms, derived, mark, deleted, added)


BLOCK_LINES = 20_000  # N-Triples lines per block handed to the streamed bulk load


def partitions_for(pairs: int) -> int:
    return max(1, math.ceil(pairs / PART_PAIRS))
