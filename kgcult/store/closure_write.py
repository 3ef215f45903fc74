"""Writing one closure graph from its records (``hierarchy.ScratchWriter``).

An empty graph is written by bulk loads. A graph that holds an earlier build is changed by
its difference only: the old graph is read back as integer-coded pairs, both sides are
split into partitions by subject (bounded memory) and sorted, and the pairs that are gone
are deleted, the new ones bulk-loaded. Oxigraph deletes about 30k quads/s, so emptying a
graph to write it again costs several times what reading it does, and after a typical data
change most of a closure stays as it was.

A pair is coded ``subject << 32 | object`` over the build's node ids; a cycle mark
(``x kgc:inCycle <spec>``) is ``x << 32 | MARK``. A graph holding anything else (a spec
whose derived property changed, a triple not written by kgcult) is emptied and rewritten.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Iterator

import numpy as np
from pyoxigraph import NamedNode, RdfFormat

from kgcult import vocab
from kgcult.store import setgraph

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


def pair_codes(subjects: np.ndarray, targets: np.ndarray) -> np.ndarray:
    return ((subjects.astype(np.int64)[:, None] << 32) | targets.astype(np.int64)[None, :]).ravel()


def old_codes(ox, graph: str, derived: str, mark_object: str, node_id, out: Partitions) -> bool:
    """Code the graph's triples into ``out``; False (and stop) at a triple that is neither
    a ``derived`` pair nor a cycle mark of this spec."""
    buf: list[int] = []
    in_cycle = vocab.KGC + "inCycle"
    for q in ox.quads_for_pattern(None, None, None, NamedNode(graph)):
        p, s, o = q.predicate.value, q.subject, q.object
        if not isinstance(s, NamedNode) or not isinstance(o, NamedNode):
            return False
        sid = node_id(f"<{s.value}>".encode())
        if p == derived:
            buf.append(sid << 32 | node_id(f"<{o.value}>".encode()))
        elif p == in_cycle and o.value == mark_object:
            buf.append(sid << 32 | MARK)
        else:
            return False
        if len(buf) >= 1_000_000:
            out.add(np.array(buf, dtype=np.int64))
            buf = []
    if buf:
        out.add(np.array(buf, dtype=np.int64))
    return True


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


def apply_difference(store, graph: str, new: Partitions, old: Partitions, terms: list[bytes],
                     derived: bytes, mark: bytes, load_lines: int) -> tuple[int, int]:
    """Delete the old-only codes and load the new-only ones, partition by partition;
    returns (deleted, added)."""
    g = NamedNode(graph)
    deleted = added = 0
    for i in range(new.k):
        a, b = np.unique(new.read(i)), np.unique(old.read(i))
        gone = b[~np.isin(b, a, assume_unique=True)]
        fresh = a[~np.isin(a, b, assume_unique=True)]
        del a, b
        for text in chunks(lines(gone, terms, derived, mark), DELETE_LINES):
            # out of the graph and, unless another graph holds it, out of the default graph
            rows = " ".join(f"({line[:-2]})" for line in text.decode().splitlines())
            store.ox.update(" ;\n".join(setgraph.delete_ops(graph, rows)))
        for text in chunks(lines(fresh, terms, derived, mark), load_lines):
            store.ox.bulk_load(input=text, format=RdfFormat.N_TRIPLES, to_graph=g, lenient=True)
            setgraph.load_default(store.ox, input=text, format=RdfFormat.N_TRIPLES, lenient=True)
        deleted += len(gone)
        added += len(fresh)
    return deleted, added


def partitions_for(pairs: int) -> int:
    return max(1, math.ceil(pairs / PART_PAIRS))
