"""The one read of a dump: each block of lines (read into a shared ring,
:class:`~kgcult.acquire.dump.reader.BlockRing`) is parsed in a worker process into

* the edges of the structural properties (what the crawl walks), as integer codes of
  subject and object (:func:`~kgcult.acquire.dump.selection.code`), which the main process
  appends to a :class:`~kgcult.acquire.dump.selection.EdgeIndex`;
* the compact intermediate: the N-Triples lines any subgraph being built could keep (the
  properties the specs fetch; from an N-Triples dump also labels in their languages and
  sitelink counts) and, from a JSON dump, each entity's terms record (its terms in those
  languages as raw JSON, its sitelink count), grouped by subject, zstd-compressed in
  frames on disk (:class:`Intermediate`), from which the emission runs after the crawl
  without touching the dump again.

JSON lines are decoded by :mod:`kgcult.acquire.dump.json_entity` (only the parts the plan needs,
with msgspec when installed). The same block functions serve the Spark engine's executors.
"""
from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.pool
import os
import re
import struct
from array import array
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

import zstandard

from kgcult import ids, vocab
from kgcult.acquire import subgraphs
from kgcult.acquire.dump import json_entity
from kgcult.acquire.dump import truthy
from kgcult.acquire.dump.selection import code
from kgcult.acquire.dump.reader import BlockRing, IngestError
from kgcult.acquire.subgraphs import SubgraphSpec

log = logging.getLogger(__name__)

_WD_IRI = "<" + vocab.WD
_WD_B = _WD_IRI.encode()
_WDT_B = b"<" + vocab.WDT.encode()
_GENID_B = b"<" + truthy.GENID.encode()
_DATA_B = b"<https://www.wikidata.org/wiki/Special:EntityData/"  # data:Q42, the full RDF dump's page node


@dataclass(frozen=True)
class ScanPlan:
    """What one read keeps: edges of ``struct_props``; lines of ``keep_props`` (wdt:),
    of ``label_props`` in ``languages`` and the sitelink count when ``sitelinks``."""
    kind: str
    struct_props: tuple[str, ...]
    keep_props: tuple[str, ...]
    languages: frozenset
    label_props: frozenset
    sitelinks: bool

    @classmethod
    def for_specs(cls, kind: str, needed: list[SubgraphSpec], todo: list[SubgraphSpec]) -> "ScanPlan":
        struct: set[str] = set()
        for s in needed:
            struct |= set(s.member_properties) | set(s.properties) | set(s.follow_properties) | set(s.seed_properties)
            struct |= {s.scope_property} if s.scope_property else set()
        keep: set[str] = set()
        langs: set[str] = set()
        lprops: set[str] = set()
        sitelinks = False
        for s in todo:
            if s.is_labels:
                langs |= {x.lower() for x in s.languages}
                lprops |= set(s.label_properties)
                sitelinks = sitelinks or s.sitelinks
            else:
                keep |= set(s.properties)
        return cls(kind, tuple(sorted(struct)), tuple(sorted(keep)), frozenset(langs), frozenset(lprops), sitelinks)


@dataclass
class BlockResult:
    first_line: int
    records: int          # entities (JSON) or triples (N-Triples) read
    edges: dict           # pid -> (interleaved subject, object codes; subjects with a non-item value)
    lines: bytes          # N-Triples kept for the emission, grouped by subject
    groups: array                # the groups' subject codes (-1: not a Q/P/L id)
    ends: array                  # the groups' end offsets in ``lines``
    terms: bytes = b""           # the groups' terms records (``terms=True``), concatenated
    tends: array | None = None   # their end offsets in ``terms`` (None: no terms records)
    other_edges: list = field(default_factory=list)  # (pid, subject, object or None) by id
    error: str | None = None  # the first bad line's problem
    error_line: int = 0   # its line number (counted from first_line)
    line_count: int = 0   # newlines in the block
    sitelink_counts: int = 0  # wikibase:sitelinks lines read (N-Triples)

    def edge_ids(self):
        """(pid, subject id, object id or None) for every edge (for the Spark engine)."""
        for pid, (so, hv) in self.edges.items():
            for k in range(0, len(so), 2):
                yield pid, _dec(so[k]), _dec(so[k + 1])
            for s in hv:
                yield pid, _dec(s), None
        yield from self.other_edges


def _failed(first_line: int, n: int, error: str, line: int) -> BlockResult:
    return BlockResult(first_line, n, {}, b"", array("q"), array("q"), tends=array("q"), error=error,
                       error_line=line)


def _dec(n: int) -> str:
    return "QPL"[n & 3] + str(n >> 2)


class _Edges:
    """A block's edges as the workers send them: integer codes, ids only for the rare
    entities that are not Q/P/L."""

    def __init__(self) -> None:
        self.coded: dict[str, tuple[array, array]] = {}
        self.other: list = []

    def add(self, pid: str, s: str, s_code: int | None, o: str | None) -> None:
        self._put(pid, s, s_code, o, code(o) if o is not None else None)

    def add_object(self, pid: str, s: str, s_code: int | None, nt_object: str) -> None:
        """The edge to a claim's object in N-Triples syntax: an entity's IRI, else a value."""
        local = o_code = None
        if nt_object.startswith(_WD_IRI):
            local = nt_object[len(_WD_IRI):-1]
            o_code = code(local)
            if o_code is None and not ids.is_entity(local):
                local = None  # an IRI in the entity namespace that names no entity: a value
        self._put(pid, s, s_code, local, o_code)

    def _put(self, pid: str, s: str, s_code: int | None, o: str | None, o_code: int | None) -> None:
        """An edge (``o`` an entity, ``o_code`` its code) or a value claim (``o`` None):
        integer-coded when both ends have codes, else kept as strings."""
        if s_code is None or (o is not None and o_code is None):
            self.other.append((pid, s, o))
            return
        pair = self.coded.get(pid)
        if pair is None:
            pair = self.coded[pid] = (array("q"), array("q"))
        if o is None:
            pair[1].append(s_code)
        elif o_code is not None:  # always, by the test above
            pair[0].append(s_code)
            pair[0].append(o_code)


class _Groups:
    """The kept lines, grouped by subject: text chunks, subject codes, end offsets; and
    each group's terms record (b"" for none) with its end offset."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.terms: list[bytes] = []
        self.codes, self.ends, self.tends = array("q"), array("q"), array("q")
        self.pos = self.tpos = 0

    def add(self, subject_code: int | None, data: bytes, terms: bytes = b"") -> None:
        self.chunks.append(data)
        self.pos += len(data)
        self.codes.append(-1 if subject_code is None else subject_code)
        self.ends.append(self.pos)
        if terms:
            self.terms.append(terms)
            self.tpos += len(terms)
        self.tends.append(self.tpos)

    def result(self, first_line: int, n: int, edges: _Edges) -> BlockResult:
        return BlockResult(first_line, n, edges.coded, b"".join(self.chunks), self.codes, self.ends,
                           b"".join(self.terms), self.tends, edges.other)


def _lines(block, span):
    """(line number from 0, line) of ``block`` (bytes, or a mapping with ``span``: (start,
    end)) cut at each newline as ``bytes.split`` cuts, the lines as zero-copy views."""
    start, end = span or (0, len(block))
    view = memoryview(block)
    i = 0
    while True:
        nl = block.find(b"\n", start, end)
        if nl < 0:
            yield i, view[start:end]
            return
        yield i, view[start:nl]
        start = nl + 1
        i += 1


def scan_json_block(plan: ScanPlan, first_line: int, block, terms: bool = False, span=None) -> BlockResult:
    """Parse one block of JSON dump lines (:func:`~kgcult.acquire.dump.json_entity.scan_entity`):
    ``block`` bytes, or a buffer with ``find`` (the :class:`~kgcult.acquire.dump.reader.BlockRing`'s
    mapping) and ``span``, the block's (start, end) in it. ``terms``: each entity's labels,
    aliases, descriptions and sitelink count stay a terms record, which the emission turns
    into lines for the members only; otherwise they become lines here, like the claims."""
    edges, groups = _Edges(), _Groups()
    n = 0
    struct = set(plan.struct_props)
    keep = set(plan.keep_props)
    scan = json_entity.scanner(sorted(struct | keep), plan.languages, plan.label_props, plan.sitelinks)
    i = first_line
    for k, line in _lines(block, span):
        i = first_line + k
        try:
            got = scan(line)
        except (ValueError, TypeError) as ex:
            return _failed(first_line, n, f"not a JSON entity line: {ex}", i)
        except RecursionError:  # the full parse recurses per level (a record nested 100,000 deep)
            return _failed(first_line, n, "not a JSON entity line: nested too deeply to read", i)
        if got is None:
            continue
        n += 1
        eid, objects, record = got
        s_code = code(eid)
        subject = f"<{vocab.WD}{eid}>"
        out: list[str] = []
        for pid, objs in objects.items():
            if pid in struct:
                for o in objs:
                    edges.add_object(pid, eid, s_code, o)
            if pid in keep:
                p = f"<{vocab.WDT}{pid}>"
                out.extend(f"{subject} {p} {o} ." for o in objs)
        if record and not terms:
            rec = json_entity.terms(record)
            out.extend(truthy.term_lines(rec, rec.get("sitelinks"), subject, plan.languages, plan.label_props))
            record = b""
        if out:
            out.append("")
            groups.add(s_code, "\n".join(out).encode(), record)
        elif record:
            groups.add(s_code, b"", record)
    r = groups.result(first_line, n, edges)
    r.line_count = i - first_line
    return r


def split_nt(line: bytes):
    """(subject, predicate, object) byte strings of an N-Triples line; None for a blank or
    comment line; ValueError for anything else that is not a triple."""
    s = line.strip()
    if not s or s.startswith(b"#"):
        return None
    parts = s.split(b" ", 2)
    if len(parts) < 3 or not s.endswith(b"."):
        raise ValueError("not an N-Triples line")
    return parts[0], parts[1], parts[2][:-1].rstrip()


def nt_entity(term: bytes) -> str | None:
    if term.startswith(_WD_B) and term.endswith(b">"):
        local = term[len(_WD_B):-1].decode("ascii", "replace")
        if ids.is_entity(local):
            return local
    return None


_SITELINK_COUNT = re.compile(rb'"[0-9]{1,6}"\^\^<http://www\.w3\.org/2001/XMLSchema#integer>')


def _shown(o: bytes) -> str:
    text = o.decode("utf-8", "replace")
    return text if len(text) <= 60 else text[:60] + "..."


def _nt_predicates(plan: ScanPlan):
    struct = {_WDT_B + p.encode() + b">": p for p in plan.struct_props}
    keep = {_WDT_B + p.encode() + b">" for p in plan.keep_props}
    labels = {b"<" + p.encode() + b">" for p in plan.label_props}
    site = b"<" + subgraphs.SITELINKS.encode() + b">" if plan.sitelinks else None
    return struct, keep, labels, site


def scan_nt_block(plan: ScanPlan, first_line: int, block, terms: bool = False, span=None) -> BlockResult:
    """Filter one block of truthy N-Triples lines (``block`` and ``span`` as for
    :func:`scan_json_block`; label lines are lines: ``terms`` does not apply). A kept
    claim's blank-node object ``_:LABEL`` (somevalue) becomes WDQS's skolem IRI
    ``<http://www.wikidata.org/.well-known/genid/LABEL>``; a ``wikibase:sitelinks`` line on
    ``data:Q..`` (the full dump's page node) is put on ``wd:Q..``; such lines are counted
    (``sitelink_counts``)."""
    if span is not None:
        block = block[span[0]:span[1]]
    struct, keep, labels, site = _nt_predicates(plan)
    langs = {x.encode() for x in plan.languages}
    edges, groups = _Edges(), _Groups()
    out: list[bytes] = []
    subject = b""  # of the lines in ``out``
    n = n_site = 0
    for i, line in enumerate(block.split(b"\n"), first_line):
        try:
            parts = split_nt(line)
        except ValueError as ex:
            return _failed(first_line, n, str(ex), i)
        if parts is None:
            continue
        n += 1
        s, p, o = parts
        pid = struct.get(p)
        if pid is not None:
            se = nt_entity(s)
            if se is not None:
                edges.add(pid, se, code(se), nt_entity(o))
        if p in keep:
            kept = True
            if o.startswith(b"_:"):  # somevalue: the blank node WDQS skolemizes
                line = b"%s %s %s%s> ." % (s, p, _GENID_B, o[2:])
        elif p == site:
            if not _SITELINK_COUNT.fullmatch(o) or int(o[1:o.index(b'"', 1)]) > ids.MAX_SITELINKS:
                return _failed(first_line, n, f"wikibase:sitelinks value {_shown(o)} is not a count "
                                              f'("N"^^xsd:integer, at most {ids.MAX_SITELINKS})', i)
            kept = True
            n_site += 1
            if s.startswith(_DATA_B):  # the full RDF dump: on the data node, as WDQS's munger moves it
                s = _WD_B + s[len(_DATA_B):]
                line = b"%s %s %s ." % (s, p, o)
        elif p in labels:
            at = o.rfind(b'"@')
            kept = at > 0 and o[at + 2:].lower() in langs
        else:
            kept = False
        if kept:
            if s != subject and out:
                _group(groups, subject, out)
                out = []
            subject = s
            out.append(line.strip())
    if out:
        _group(groups, subject, out)
    r = groups.result(first_line, n, edges)
    r.line_count = block.count(b"\n")
    r.sitelink_counts = n_site
    return r


def _group(groups: _Groups, subject: bytes, lines: list[bytes]) -> None:
    local = nt_entity(subject)
    lines.append(b"")
    groups.add(code(local) if local is not None else None, b"\n".join(lines))


SCANNERS = {"json": scan_json_block, "ntriples": scan_nt_block}

_PLAN: ScanPlan | None = None
_RING: BlockRing | None = None  # made before the workers fork; they see its blocks


def _init_worker(plan: ScanPlan) -> None:
    global _PLAN
    _PLAN = plan


def _work(block) -> BlockResult:
    """Scan a block: bytes, or (offset, length) in the ring."""
    plan = _PLAN
    assert plan is not None  # set by _init_worker
    if isinstance(block, tuple):
        assert _RING is not None  # made before the workers fork
        r = SCANNERS[plan.kind](plan, 1, _RING.mem, terms=True, span=(block[0], block[0] + block[1]))
    else:
        r = SCANNERS[plan.kind](plan, 1, block, terms=True)
    r.lines = pack_frame(r) if len(r.groups) else b""
    r.groups = r.ends = _EMPTY  # all in the frame now
    r.tends = None
    r.terms = b""
    return r


_EMPTY = array("q")
_HEAD = struct.Struct("<QQ")


@dataclass
class Frame:
    """A block's groups as the emission reads them back: subject codes (-1: not a Q/P/L
    id), each group's N-Triples lines (``lines`` up to ``ends[g]``) and terms record
    (``terms`` up to ``tends[g]``)."""
    codes: array
    ends: array
    lines: bytes
    tends: array
    terms: bytes = b""


def pack_frame(r: BlockResult) -> bytes:
    """A block's kept lines and terms records with their groups, as one zstd-compressed frame."""
    tends = r.tends if r.tends is not None else array("q", bytes(8 * len(r.groups)))
    return zstandard.ZstdCompressor(level=1).compress(
        _HEAD.pack(len(r.groups), len(r.lines)) + r.groups.tobytes() + r.ends.tobytes() + tends.tobytes()
        + r.lines + r.terms)


def unpack_frame(frame: bytes) -> Frame:
    """The :class:`Frame` of a compressed frame."""
    data = zstandard.ZstdDecompressor().decompress(frame)
    n, size = _HEAD.unpack_from(data)
    codes, ends, tends = array("q"), array("q"), array("q")
    at = _HEAD.size
    for a in (codes, ends, tends):
        a.frombytes(data[at:at + 8 * n])
        at += 8 * n
    return Frame(codes, ends, data[at:at + size], tends, data[at + size:])


def fork_pool(jobs: int, initializer=None, initargs=()):
    """A pool of ``jobs`` forked processes (they inherit the parent's state), or None when
    ``jobs`` is 1 or the platform cannot fork."""
    if jobs <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return None
    return multiprocessing.get_context("fork").Pool(jobs, initializer=initializer, initargs=initargs)


def in_order(pool, fn, items, jobs: int):
    """``fn(item)`` for each item, in order, computed by ``pool`` (inline when None), with
    at most 2 items per worker in flight so memory stays bounded whatever the input."""
    if pool is None:
        for item in items:
            yield fn(item)
        return
    window: deque = deque()
    for item in items:
        window.append(pool.apply_async(fn, (item,)))
        if len(window) >= 2 * jobs:
            yield window.popleft().get()
    while window:
        yield window.popleft().get()


class Workers:
    """Context manager: ``jobs`` worker processes that parse blocks with ``plan`` (inline
    when 1). Start it before anything opens pipes or threads (the dump's reader): forked
    workers would hold the decompressor's pipe open."""

    def __init__(self, plan: ScanPlan, jobs: int):
        self.plan, self.jobs = plan, jobs
        self.pool: multiprocessing.pool.Pool | None = None
        self.ring: BlockRing | None = None

    def __enter__(self) -> "Workers":
        global _RING
        _init_worker(self.plan)
        # in_order keeps at most 2 blocks per worker in flight: one more slot is never in use
        self.ring = _RING = BlockRing(2 * self.jobs + 1)
        self.pool = fork_pool(self.jobs, _init_worker, (self.plan,))
        return self

    def __exit__(self, *exc) -> Literal[False]:
        global _RING
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
        _RING = None
        if self.ring is not None:
            self.ring.close()
        return False

    def scan(self, path: str, reader, on_bytes=None):
        """BlockResults of the blocks of ``reader`` (a :class:`~kgcult.acquire.dump.reader.DumpReader`,
        read into the ring: :meth:`~kgcult.acquire.dump.reader.DumpReader.ring_blocks`) in
        order, ``lines`` packed in a compressed frame; an :class:`IngestError` naming
        ``path`` and the line of the first bad line. ``on_bytes(n)``: n more bytes read."""
        yield from self.scan_blocks(path, reader.ring_blocks(self.ring, on_bytes))

    def scan_blocks(self, path: str, blocks):
        """:meth:`scan` of blocks already cut: bytes, or (offset, length) in the ring."""
        line = 1
        try:
            for r in in_order(self.pool, _work, blocks, self.jobs):
                if r.error:
                    raise IngestError(f"{path}:{line + r.error_line - 1}: {r.error}")
                line += r.line_count
                yield r
        finally:
            # a generator of ring slots holds a view of the ring until it is closed: left to
            # the garbage collector, the ring could not be unmapped when the error passed
            # through Workers.__exit__ (BufferError: a traceback instead of the error)
            close = getattr(blocks, "close", None)
            if close is not None:
                close()


def start_pool_note(jobs: int) -> None:
    log.info("parsing in %d worker process%s with %s", jobs, "es" if jobs > 1 else "", json_entity.parser_name())


class Intermediate:
    """The kept N-Triples, as length-prefixed zstd frames (:func:`pack_frame`) in a file."""

    _LEN = struct.Struct("<Q")

    def __init__(self, path: str):
        self.path = path
        self._f = open(path, "wb")
        self.bytes = 0

    def write(self, frame: bytes) -> None:
        if frame:
            self._f.write(self._LEN.pack(len(frame)))
            self._f.write(frame)
            self.bytes += len(frame) + self._LEN.size

    def close(self) -> None:
        self._f.close()

    def frames(self):
        """The compressed frames, in order."""
        with open(self.path, "rb") as f:
            while head := f.read(self._LEN.size):
                (n,) = self._LEN.unpack(head)
                yield f.read(n)

    def remove(self) -> None:
        try:
            self._f.close()
            os.unlink(self.path)
        except OSError:
            pass
