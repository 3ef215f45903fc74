"""Versioned snapshots: sorted, gzip-compressed N-Quads per graph plus MANIFEST.json.

Layout of a snapshot directory::

    MANIFEST.json          format, content hash, per-graph counts and hashes, provenance
    graphs/<name>.nq.gz    one file per named graph, lines sorted, gzip without timestamp

The same store content always exports byte-identical files (the manifest's ``created``
is the time of the newest provenance record, not the wall clock). The derived closure (in
the default graph, which snapshots never hold) is not exported: ``kgcult closure`` rebuilds it. The metadata graph is exported (it is
the provenance) but not part of the content hash, which covers the data graphs only.
"""
from __future__ import annotations

import gzip
import hashlib
import heapq
import json
import logging
import os
import re
import stat
import tempfile
import zlib
from collections import deque
from pathlib import Path, PurePosixPath
from typing import Iterable, Iterator, TYPE_CHECKING, TypeVar

import pyoxigraph as ox
from pyoxigraph import Literal, NamedNode, Quad, RdfFormat, parse

from kgcult import log as kglog
from kgcult import vocab
from kgcult.version import __version__
from kgcult.errors import KgcultError
from kgcult.safe_text import strip_credentials
from kgcult.files import atomic_open, sha256_file
from kgcult.store import base, rdfio, setgraph, sidefiles
from kgcult.store import provenance as prov

if TYPE_CHECKING:  # the embedded store's module is imported by whoever opens one
    from kgcult.store.embedded import Store

log = logging.getLogger(__name__)

FORMAT = "kgcult-snapshot/1"
MANIFEST = "MANIFEST.json"
_SOURCE = vocab.kgc("source")
RUN_BYTES = 64 << 20  # the external sort's run size (content hash, export)
IMPORT_STAGING = vocab.STAGING_GRAPH + "snapshot-import/"  # where a replacing file waits for the commit


class SnapshotError(KgcultError):
    """A snapshot that is missing, malformed, truncated or tampered with."""


def graph_file_name(iri: str) -> str:
    """A stable, readable file name for a graph IRI, distinct for distinct IRIs: a name whose
    slug lost characters (``日本語`` and ``中文`` both slug to ``graph``), or a foreign IRI,
    carries a hash of the IRI."""
    local = iri[len(vocab.GRAPH):] if iri.startswith(vocab.GRAPH) else iri
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", local).strip("_") or "graph"
    if not iri.startswith(vocab.GRAPH) or slug != local:
        slug = f"{slug[:60]}-{hashlib.sha256(iri.encode()).hexdigest()[:8]}"
    return f"graphs/{slug}.nq.gz"


def content_hash(graph_hashes: dict[str, str]) -> str:
    """Overall content hash: sha256 over ``<graph IRI> <content sha256>`` lines, sorted."""
    h = hashlib.sha256()
    for iri in sorted(graph_hashes):
        h.update(f"{iri} {graph_hashes[iri]}\n".encode())
    return h.hexdigest()


def sorted_nquads(store: Store, iri: str, bar=None) -> Iterator[bytes]:
    """The N-Quads lines of one graph in byte order, in bounded memory: sorted runs of
    about ``RUN_BYTES`` are spilled to temporary files and merged (an external sort).
    ``bar``: a progress bar (:func:`kgcult.log.progress`) counting the quads read."""
    scrub = iri == vocab.META_GRAPH  # provenance recorded before credentials were stripped
    with tempfile.TemporaryDirectory(prefix="kgcult-sort-") as tmp:
        runs: list[str] = []
        lines: list[bytes] = []
        size = 0
        for q in store.quads(iri):
            if scrub and q.predicate == _SOURCE and isinstance(q.object, Literal):
                q = Quad(q.subject, q.predicate, Literal(strip_credentials(q.object.value)), q.graph_name)
            line = f"{q} .\n".encode("utf-8")
            lines.append(line)
            size += len(line) + 80  # the bytes object's own overhead
            if bar is not None and not len(lines) % 65536:
                bar.update(65536)
            if size >= RUN_BYTES:
                if bar is not None:
                    bar.update(len(lines) % 65536)
                runs.append(_spill(tmp, len(runs), lines))
                lines, size = [], 0
        if bar is not None:
            bar.update(len(lines) % 65536)
        lines.sort()
        if not runs:
            yield from lines
            return
        runs.append(_spill(tmp, len(runs), lines))
        del lines
        files = [open(r, "rb") for r in runs]
        try:
            yield from heapq.merge(*files)
        finally:
            for f in files:
                f.close()


def _spill(tmp: str, index: int, lines: list[bytes]) -> str:
    lines.sort()
    path = os.path.join(tmp, f"run-{index}")
    with open(path, "wb", buffering=1 << 20) as f:
        f.writelines(lines)
    return path


def _hash_sorted(lines: Iterable[bytes], sink=None) -> tuple[str, int]:
    """sha256 and count of the lines (each also written to ``sink`` when given)."""
    h, n, batch = hashlib.sha256(), 0, []
    for line in lines:
        batch.append(line)
        if len(batch) == 8192:
            n += _hash_batch(h, batch, sink)
    n += _hash_batch(h, batch, sink)
    return h.hexdigest(), n


def _hash_batch(h, batch: list[bytes], sink) -> int:
    raw = b"".join(batch)
    h.update(raw)
    if sink is not None:
        sink.write(raw)
    n = len(batch)
    batch.clear()
    return n


def export(store: Store, directory: str | os.PathLike) -> dict:
    """Write a snapshot of every non-derived graph to ``directory``; return the manifest."""
    out = Path(directory)
    if (out / "graphs").exists() and not (out / MANIFEST).exists():
        raise SnapshotError(f"{out}: has a graphs/ directory but no {MANIFEST}: not a snapshot; refusing to write into it")
    for inside in (out / "graphs", out / MANIFEST):
        if inside.is_symlink():  # never write (or delete) through a link out of the directory
            raise SnapshotError(f"{inside}: is a symbolic link; refusing to write a snapshot through it")
    previous = _previous_files(out)
    (out / "graphs").mkdir(parents=True, exist_ok=True)
    graphs: list[dict] = []
    counts = store.graph_counts()
    if "" in counts:
        raise SnapshotError(
            "the store's default graph holds triples; snapshots hold named graphs only "
            "(load with --graph)"
        )
    written = set()
    for iri in counts:
        if not (vocab.is_data_graph(iri) or iri == vocab.META_GRAPH):
            continue  # closures are rebuilt; staging graphs are a refresh in progress
        name = graph_file_name(iri)
        log.info("export: %s (%d triples) -> %s", iri, counts[iri], out / name)
        if name in written:  # cannot happen (names are injective); never overwrite a graph
            raise SnapshotError(f"{iri}: its file name {name} is taken by another graph")
        path = out / name
        with atomic_open(path, "wb") as f:
            # filename="" and mtime=0 make the gzip header independent of time and path.
            with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0, compresslevel=6) as gz:
                content_sha, n = _hash_sorted(sorted_nquads(store, iri), gz)
        written.add(name)
        graphs.append(
            {
                "iri": iri,
                "file": name,
                "triples": n,
                "sha256": sha256_file(path),
                "content_sha256": content_sha,
                "derived": False,
                "metadata": iri == vocab.META_GRAPH,
            }
        )
    # Remove the graph files an older snapshot in the same directory listed (only those).
    for name in previous - written:
        old = out / name
        if old.is_file() and not old.is_symlink():
            old.unlink()
    provenance = store.provenance()
    data = {g["iri"]: g["content_sha256"] for g in graphs if not g["metadata"]}
    manifest = {
        "format": FORMAT,
        "kgcult_version": __version__,
        "created": max((p.get("loadedAt", "") for p in provenance), default=""),
        "content_sha256": content_hash(data),
        "triples": sum(g["triples"] for g in graphs if not g["metadata"]),
        "graphs": graphs,
        "provenance": provenance,
    }
    text = json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    (out / MANIFEST).write_text(text, encoding="utf-8")
    return manifest


def _previous_files(out: Path) -> set[str]:
    """The graph files the snapshot already in ``out`` lists (none when there is none)."""
    try:
        old = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
        return {g["file"] for g in old["graphs"] if isinstance(g.get("file"), str)
                and re.fullmatch(r"graphs/[^/]+\.nq\.gz", g["file"])}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return set()


def read_manifest(directory: str | os.PathLike) -> dict:
    """Read and check MANIFEST.json: its shape, every field's type, IRIs, and that each
    file is a plain file inside the snapshot directory."""
    root = Path(directory)
    path = root / MANIFEST
    if not path.is_file():
        raise SnapshotError(f"{directory}: no {MANIFEST}: not a kgcult snapshot")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        line = getattr(e, "lineno", "?")
        raise SnapshotError(f"{path}:{line}: malformed manifest: {e}") from None
    if not isinstance(manifest, dict):
        raise SnapshotError(f"{path}: malformed manifest: the top level must be a JSON object, "
                            f"not {_json_type(manifest)}")
    if manifest.get("format") != FORMAT:
        raise SnapshotError(f"{path}: unsupported snapshot format {manifest.get('format')!r} (expected {FORMAT})")
    kind: type
    for field, kind in (("content_sha256", str), ("triples", int)):
        if field not in manifest:
            raise SnapshotError(f"{path}: lacks field {field!r}")
        _expect(path, field, manifest[field], kind)
    for field, kind in (("provenance", list), ("created", str), ("kgcult_version", str)):
        if field in manifest:
            _expect(path, field, manifest[field], kind)
    graphs = _expect(path, "graphs", manifest.get("graphs"), list)
    seen_iris, seen_files = set(), set()
    for i, g in enumerate(graphs):
        where = f"graphs[{i}]"
        _expect(path, where, g, dict)
        for field, kind in (("iri", str), ("file", str), ("triples", int), ("sha256", str),
                            ("content_sha256", str)):
            if field not in g:
                raise SnapshotError(f"{path}: {where} lacks field {field!r}")
            _expect(path, f"{where}.{field}", g[field], kind)
        if g["triples"] < 0:
            raise SnapshotError(f"{path}: {where}.triples is negative")
        _expect(path, f"{where}.metadata", g.get("metadata", False), bool)
        base.check_graph_iri(g["iri"], f"{path}: {where}.iri")
        if bool(g.get("metadata")) != (g["iri"] == vocab.META_GRAPH):
            raise SnapshotError(f"{path}: {where}: only the entry for {vocab.META_GRAPH} may be (and must be) "
                                "marked metadata")
        if g["iri"] != vocab.META_GRAPH and base.is_reserved(g["iri"]):
            raise SnapshotError(f"{path}: {where}: graph {g['iri']} is reserved for kgcult's own derived data")
        if g["iri"] in seen_iris or g["file"] in seen_files:
            raise SnapshotError(f"{path}: {where}: graph or file listed twice")
        seen_iris.add(g["iri"])
        seen_files.add(g["file"])
        member_file(root, g["file"], f"{path}: {where}.file")
    listed = sum(g["triples"] for g in graphs if not g.get("metadata"))
    if manifest["triples"] != listed:
        raise SnapshotError(f"{path}: triples is {manifest['triples']}, but its data graphs list {listed}")
    return manifest


def _json_type(value) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


_T = TypeVar("_T")


def _expect(path: Path, where: str, value, kind: type[_T]) -> _T:
    """``value`` if it is a ``kind`` (a bool is no int), else a SnapshotError naming ``where``."""
    ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
    if not ok:
        wanted = {str: "a string", int: "an integer", list: "a list", dict: "an object", bool: "true or false"}[kind]
        raise SnapshotError(f"{path}: {where} must be {wanted}, not {_json_type(value)} ({json.dumps(value)[:60]})")
    return value


def member_file(root: Path, name: str, where: str) -> Path:
    """``root/name`` if it is a plain file inside ``root``: no absolute path, no ``..``,
    no symbolic link anywhere on the way."""
    rel = PurePosixPath(name)
    if not name or rel.is_absolute() or "\\" in name or any(part in ("..", "") for part in name.split("/")):
        raise SnapshotError(f"{where}: {name!r} must be a relative path inside the snapshot directory")
    path = root
    for part in rel.parts:
        path = path / part
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            raise SnapshotError(f"{path}: listed in {MANIFEST} but missing") from None
        if stat.S_ISLNK(st.st_mode):
            raise SnapshotError(f"{where}: {name!r} goes through a symbolic link ({path}); "
                                "a snapshot holds plain files only")
    if not stat.S_ISREG(st.st_mode):
        raise SnapshotError(f"{where}: {name!r} is not a plain file")
    return path


def _provenance(graph_file: "GraphFile") -> list[Quad]:
    """The provenance records of a snapshot's metadata graph file (checked whole before:
    :meth:`GraphFile.scan`), each quad checked to be kgcult's provenance or store state."""
    records: list[Quad] = []

    def read(stream) -> None:
        for n, t in enumerate(parse(input=stream, format=RdfFormat.N_TRIPLES), 1):
            q = Quad(t.subject, t.predicate, t.object, prov.META)
            if not _is_kgcult_metadata(q):
                raise SnapshotError(f"{graph_file.path}:{n}: the metadata graph may hold only kgcult's provenance "
                                    f"records and store state, not {q.subject}")
            if prov.is_provenance(q):
                records.append(q)

    _streamed(graph_file, read)
    return records


def _is_kgcult_metadata(q: Quad) -> bool:
    s = q.subject
    return isinstance(s, NamedNode) and (
        s == prov.STATE or s.value.startswith(vocab.GRAPH + "meta/activity/")
    ) and (q.predicate.value.startswith(vocab.KGC) or q.predicate.value == vocab.RDF + "type")


def verify(directory: str | os.PathLike) -> dict:
    """Check a snapshot completely without loading it: what an import checks before it
    writes, and every data line parsed by Oxigraph's parser, as an import's bulk load would
    parse it. Returns the manifest."""
    return _check_before_writing(Path(directory), parse=True)[0]


# -- a data graph file read at the speed of ``kgcult load``: decompressed, hashed and checked
# line by line in C (``bytes.count``), and handed to Oxigraph's bulk loader as N-Triples for
# the one graph the manifest names. Every line ``snapshot export`` writes is ``<s> <p> <o> <g> .``
# with ``g`` the file's graph: the check is that every line ends with `` <g> .``; stripping it
# leaves N-Triples that Oxigraph parses with the graph forced to ``g`` (a line that named any
# other graph keeps a fourth term and is a syntax error), so no quad of a snapshot file can
# land outside the graph the manifest lists it for. No quad goes through Python objects.

CHUNK = 1 << 20
MAX_LINE = 16 << 20  # Oxigraph's parser refuses longer lines anyway


class GraphFile:
    """One data graph file of a snapshot: ``scan()`` checks it without writing anything;
    ``triples()`` streams it as N-Triples (checked again on the way) for a bulk load.
    ``manifest`` is the file's manifest entry (``file``, ``iri``, ``content_sha256``,
    ``triples``)."""

    def __init__(self, path: Path, entry: dict):
        self.path, self.entry = path, entry
        self.suffix = f" <{entry['iri']}> .\n".encode("utf-8")

    def _chunks(self, strip: bool):
        """The decompressed file in whole lines (stripped of the graph suffix when
        ``strip``); checks the suffix of every line, then the content hash and count."""
        sha, lines, tail = hashlib.sha256(), 0, b""
        d = zlib.decompressobj(wbits=31)  # gzip, members concatenated are handled below
        try:
            with open(self.path, "rb") as raw:
                while True:
                    block = raw.read(CHUNK)
                    if not block:
                        break
                    while block:
                        data = d.decompress(block, 16 * CHUNK)  # bounded, whatever the ratio
                        sha.update(data)
                        whole = tail + data
                        cut = whole.rfind(b"\n") + 1
                        whole, tail = whole[:cut], whole[cut:]
                        if len(tail) > MAX_LINE:
                            raise SnapshotError(f"{self.path}:{lines + 1}: a line longer than "
                                                 f"{MAX_LINE >> 20} MiB")
                        if whole and strip:
                            # checked before (scan); a line without the suffix keeps its graph
                            # term, which N-Triples refuses, so counting the suffix suffices
                            lines += whole.count(self.suffix)
                            yield whole.replace(self.suffix, b" .\n")
                        elif whole:
                            n = whole.count(b"\n")
                            if whole.count(self.suffix) != n:
                                self._refuse(whole, lines)
                            lines += n
                            yield whole
                        if d.eof:
                            block = d.unused_data
                            if block:  # a second gzip member
                                d = zlib.decompressobj(wbits=31)
                        else:
                            block = d.unconsumed_tail
                if not d.eof:
                    raise SnapshotError(f"{self.path}: cannot decompress: the gzip data ends early "
                                         "(the file is truncated)")
        except zlib.error as e:
            raise SnapshotError(f"{self.path}: cannot decompress: {e}") from None
        except OSError as e:
            raise SnapshotError(f"{self.path}: cannot read: {e.strerror or e}") from None
        if tail:
            raise SnapshotError(f"{self.path}:{lines + 1}: the last line has no line end "
                                 "(the file is truncated or not written by snapshot export)")
        if sha.hexdigest() != self.entry["content_sha256"]:
            raise SnapshotError(f"{self.path}: content sha256 does not match MANIFEST.json")
        if lines != self.entry["triples"]:
            raise SnapshotError(f"{self.path}: {lines} triples, MANIFEST.json says {self.entry['triples']}")

    def _refuse(self, whole: bytes, before: int) -> None:
        """Name the first line of ``whole`` that is not a quad of the file's graph."""
        for i, line in enumerate(whole.splitlines(keepends=True), start=before + 1):
            if not line.endswith(self.suffix):
                shown = line.decode("utf-8", "replace").strip()[:120]
                raise SnapshotError(
                    f"{self.path}:{i}: not a quad of graph {self.entry['iri']}, which MANIFEST.json lists "
                    f"this file for (every line must end with `<{self.entry['iri']}> .`): {shown}")

    def scan(self) -> None:
        """Read the whole file and check it (hash, count, every line's graph)."""
        for _ in self._chunks(strip=False):
            pass

    def triples(self) -> rdfio.chunk_pipe:
        """A context manager giving a readable pipe of the file as N-Triples (fed by a
        thread); leaving it raises the file's error, if any (after the consumer's)."""
        return rdfio.chunk_pipe(self._chunks(strip=True), buffering=CHUNK)


# -- writing a graph file into the store -------------------------------------------------

def _streamed(graph_file: GraphFile, work) -> None:
    """``work(stream)`` over the file as N-Triples; Oxigraph's syntax error named by file and
    line (the stream's own error first). Raised from a list, so that no frame keeps a
    reference (a cycle through the traceback would keep the store open until a garbage
    collection)."""
    failures: list[KgcultError] = []
    with graph_file.triples() as stream:
        try:
            work(stream)
        except SyntaxError as e:
            failures.append(rdfio.syntax_error(str(graph_file.path), e))
    if failures:
        raise failures.pop()


def parse_file(graph_file: GraphFile) -> None:
    """Parse the whole file (Oxigraph's parser, as an import's bulk load will) without
    writing it."""
    _streamed(graph_file, lambda stream: deque(parse(input=stream, format=RdfFormat.N_TRIPLES), maxlen=0))


def bulk_load(store: ox.Store, graph_file: GraphFile, to_graph) -> None:
    """Bulk-load the file into ``to_graph`` (a named graph or the default graph), streamed
    as N-Triples: Oxigraph's own parser and loader, as ``kgcult load``."""
    _streamed(graph_file, lambda stream: store.bulk_load(**rdfio.reader_source(stream), format=RdfFormat.N_TRIPLES,
                                                         to_graph=to_graph))
    store.flush()


def load_graph(store: ox.Store, graph_file: GraphFile) -> None:
    """The file into its graph, then into the default graph (the set; ``setgraph``)."""
    bulk_load(store, graph_file, NamedNode(graph_file.entry["iri"]))
    bulk_load(store, graph_file, setgraph.DEFAULT)


def _check_before_writing(root: Path, parse: bool = False) -> tuple[dict, list[Quad]]:
    """Everything an import checks before it writes anything: the manifest, every file's
    hash, every data line's graph (:class:`GraphFile`; with ``parse``, each line parsed
    too), every content hash and count, and the metadata graph parsed whole. Returns the
    manifest and the metadata graph's provenance (what an import copies of it)."""
    manifest = read_manifest(root)
    provenance: list[Quad] = []
    data = {}
    for g in manifest["graphs"]:
        path = member_file(root, g["file"], f"{root / MANIFEST}")
        if sha256_file(path) != g["sha256"]:
            raise SnapshotError(f"{path}: sha256 does not match {MANIFEST}: the file was altered or truncated")
        if g.get("metadata"):
            GraphFile(path, g).scan()
            provenance = _provenance(GraphFile(path, g))
            continue
        if parse:
            parse_file(GraphFile(path, g))
        else:
            GraphFile(path, g).scan()
        data[g["iri"]] = g["content_sha256"]
    if content_hash(data) != manifest.get("content_sha256"):
        raise SnapshotError(f"{root / MANIFEST}: content_sha256 does not match the graphs it lists")
    return manifest, provenance


def import_(store: Store, directory: str | os.PathLike, *, replace: bool = False) -> dict:
    """Check a snapshot completely (before anything is written), then load it all or
    nothing. Graphs the store already holds are refused unless ``replace`` (then replaced
    whole); the metadata graph's provenance records are merged (its store state is not: the
    store keeps its own).

    One journaled write (``Store.writing``): a file whose graph is empty or absent is
    bulk-loaded straight into it and the default graph (as ``kgcult load`` does); a file
    whose graph holds data is bulk-loaded into a staging graph beside it (outside the set),
    which the commit makes the graph equal to, by their difference (a batch per
    transaction, as a refreshed mirror). A failure, or a kill before the commit, rolls it
    all back (a kill on the next writable open); a kill after it is finished by that open.
    While it is under way, readers are told the graphs are partial."""
    root = Path(directory)
    manifest, provenance = _check_before_writing(root)
    data = [g for g in manifest["graphs"] if not g.get("metadata")]
    counts = store.graph_counts()
    clashes = [g["iri"] for g in data if counts.get(g["iri"], 0) > 0]
    if clashes and not replace:
        raise SnapshotError(
            f"the store already holds graph(s) {', '.join(clashes)}; use --replace to replace them"
        )
    records = list(provenance)
    for g in data:
        records += prov.activity(kind="snapshot-import", source=str(root.resolve()),
                                    sha256=g["content_sha256"], graph=g["iri"], triples=g["triples"])[1]
    state = Quad(prov.STATE, vocab.kgc("snapshotContentSha256"), Literal(manifest["content_sha256"]),
                 prov.META)
    stage = {iri: f"{IMPORT_STAGING}{i}" for i, iri in enumerate(clashes)}
    with store.writing("import", str(root), creates=[g["iri"] for g in data if g["iri"] not in stage],
                       swaps=[(s, target) for target, s in stage.items()]) as w:
        for g in data:
            log.info("import: %s (%d triples)%s", g["iri"], g["triples"], " beside it" if g["iri"] in stage else "")
            if g["iri"] in stage:
                bulk_load(store.ox, _graph_file(root, g), NamedNode(stage[g["iri"]]))
            else:
                load_graph(store.ox, _graph_file(root, g))
        w.ops.append(prov.insert_data(records + [state]))
    return manifest


def _graph_file(root: Path, g: dict) -> GraphFile:
    return GraphFile(member_file(root, g["file"], f"{root / MANIFEST}").resolve(), g)


def store_content_hash(store: Store) -> str:
    """The content hash a snapshot of the store's data graphs would have right now. Kept
    until the data changes: in the metadata graph of a writable store (where a client of
    ``kgcult serve`` reads it), and beside the store for any open (:mod:`kgcult.store.sidefiles`),
    so a build on an unchanged store does not read the whole store again."""
    cached = store.get_state("contentSha256")
    if cached:
        return cached

    def compute() -> str:
        log.info("computing the store's content hash (once per change of the data)")
        hashes = {}
        # every graph read, sorted and hashed without a word: a line every 10 s from here (a
        # bar on a terminal) counts the quads read and names the graph and the phase
        with kglog.progress(desc="content hash", unit=" quads", unit_scale=True) as bar:
            graphs = store.data_graphs()  # a count of every graph: a second on the stand-in
            for i, iri in enumerate(graphs, 1):
                bar.set_postfix_str(f"graph {i} of {len(graphs)}: {iri}")
                hashes[iri] = _hash_sorted(sorted_nquads(store, iri, bar))[0]
        return content_hash(hashes)

    digest = sidefiles.cached(store, "contentSha256", compute)
    if not store.read_only and not store.remote:
        store.set_state("contentSha256", digest)
    return digest


__all__ = ["export", "import_", "verify", "read_manifest", "content_hash", "store_content_hash", "SnapshotError", "NamedNode"]
