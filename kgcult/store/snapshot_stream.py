"""A snapshot's data graph file read at the speed of ``kgcult load``: decompressed,
hashed and checked line by line in C (``bytes.count``), and handed to Oxigraph's bulk
loader as N-Triples for the one graph the manifest names.

Every line of a data graph file that ``snapshot export`` writes is ``<s> <p> <o> <g> .``
with ``g`` the graph of the file. The check is that every line ends with `` <g> .``
(as many line ends as occurrences of that suffix, which itself ends with the line end);
stripping it leaves N-Triples, which Oxigraph parses with the graph forced to ``g``
(``to_graph``): a line that named any other graph keeps a fourth term and is a syntax
error, so no quad of a snapshot file can land outside the graph the manifest lists it
for, whatever the file holds. No quad goes through Python objects.
"""
from __future__ import annotations

import hashlib
import zlib
from pathlib import Path

import pyoxigraph
from pyoxigraph import BlankNode, NamedNode, Quad, RdfFormat, Triple

from kgcult.errors import KgcultError
from kgcult.store import rdfio, setgraph

CHUNK = 1 << 20
MAX_LINE = 16 << 20  # Oxigraph's parser refuses longer lines anyway


class GraphFileError(KgcultError):
    """A graph file that is not what its manifest entry says (wrapped by the caller)."""


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
                            raise GraphFileError(f"{self.path}:{lines + 1}: a line longer than "
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
                    raise GraphFileError(f"{self.path}: cannot decompress: the gzip data ends early "
                                         "(the file is truncated)")
        except zlib.error as e:
            raise GraphFileError(f"{self.path}: cannot decompress: {e}") from None
        except OSError as e:
            raise GraphFileError(f"{self.path}: cannot read: {e.strerror or e}") from None
        if tail:
            raise GraphFileError(f"{self.path}:{lines + 1}: the last line has no line end "
                                 "(the file is truncated or not written by snapshot export)")
        if sha.hexdigest() != self.entry["content_sha256"]:
            raise GraphFileError(f"{self.path}: content sha256 does not match MANIFEST.json")
        if lines != self.entry["triples"]:
            raise GraphFileError(f"{self.path}: {lines} triples, MANIFEST.json says {self.entry['triples']}")

    def _refuse(self, whole: bytes, before: int) -> None:
        """Name the first line of ``whole`` that is not a quad of the file's graph."""
        for i, line in enumerate(whole.splitlines(keepends=True), start=before + 1):
            if not line.endswith(self.suffix):
                shown = line.decode("utf-8", "replace").strip()[:120]
                raise GraphFileError(
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

def _digest(triple) -> bytes:
    return hashlib.blake2b(str(triple).encode("utf-8"), digest_size=16).digest()


def parse_digests(graph_file: GraphFile, keep: bool) -> set[bytes]:
    """Parse the whole file (Oxigraph's parser, as its bulk load will) without writing it;
    with ``keep``, return a digest of each triple (what the graph will hold)."""
    digests: set[bytes] = set()
    failures: list[KgcultError] = []  # raised by pop(): no frame keeps a reference (a cycle
    # through the traceback would keep the store open until a garbage collection)
    with graph_file.triples() as stream:
        try:
            for t in pyoxigraph.parse(input=stream, format=RdfFormat.N_TRIPLES):
                if keep:
                    digests.add(_digest(t))
        except SyntaxError as e:
            failures.append(rdfio.syntax_error(str(graph_file.path), e))  # the stream's error first
    if failures:
        raise failures.pop()
    return digests


def bulk_load(store: pyoxigraph.Store, graph_file: GraphFile, to_graph) -> None:
    """Bulk-load the file into ``to_graph`` (a named graph or the default graph), streamed
    as N-Triples: Oxigraph's own parser and loader, as ``kgcult load``."""
    failures: list[KgcultError] = []  # see parse_digests
    with graph_file.triples() as stream:
        try:
            store.bulk_load(**rdfio.reader_source(stream), format=RdfFormat.N_TRIPLES, to_graph=to_graph)
        except SyntaxError as e:
            failures.append(rdfio.syntax_error(str(graph_file.path), e))  # the stream's error first
    if failures:
        raise failures.pop()
    store.flush()


def load_graph(store: pyoxigraph.Store, graph_file: GraphFile) -> None:
    """The file into its graph, then into the default graph (the set; ``setgraph``)."""
    bulk_load(store, graph_file, NamedNode(graph_file.entry["iri"]))
    bulk_load(store, graph_file, setgraph.DEFAULT)


def replace_graph(store: pyoxigraph.Store, graph_file: GraphFile, keep: set[bytes] | None = None) -> int:
    """Make the file's graph hold exactly the file's triples: the triples it holds that the
    file lacks leave it (and the default graph, unless another visible graph holds them),
    a batch per transaction; then the file is bulk-loaded into it and into the default
    graph (a triple it holds already is written again, unchanged). Idempotent if killed.
    ``keep``: the file's digests when already computed. Returns the triples removed."""
    graph = NamedNode(graph_file.entry["iri"])
    removed = 0
    if store.contains_named_graph(graph):
        keep = parse_digests(graph_file, True) if keep is None else keep
        doomed: list[Triple] = []
        for q in store.quads_for_pattern(None, None, None, graph):  # a snapshot of the store
            if _digest(q.triple) not in keep:
                doomed.append(q.triple)
                if len(doomed) == REMOVE_BATCH:
                    removed += _remove(store, graph, doomed)
        removed += _remove(store, graph, doomed)
    load_graph(store, graph_file)
    return removed


REMOVE_BATCH = 20_000


def _remove(store: pyoxigraph.Store, graph: NamedNode, triples: list[Triple]) -> int:
    """Remove triples from ``graph`` and from the default graph unless another visible
    graph holds them; one transaction (triples with blank nodes, which SPARQL cannot
    name, one by one, under the pending mark the import holds)."""
    n = len(triples)
    blank = [t for t in triples if isinstance(t.subject, BlankNode) or isinstance(t.object, BlankNode)]
    rows = " ".join(f"({t.subject} {t.predicate} {t.object})" for t in triples
                    if not (isinstance(t.subject, BlankNode) or isinstance(t.object, BlankNode)))
    if rows:
        store.update(" ;\n".join(setgraph.delete_ops(graph.value, rows)))
    for t in blank:
        store.remove(Quad(t.subject, t.predicate, t.object, graph))
        if not any(isinstance(q.graph_name, NamedNode) and setgraph.visible(q.graph_name.value)
                   for q in store.quads_for_pattern(t.subject, t.predicate, t.object, None)):
            store.remove(Quad(t.subject, t.predicate, t.object, setgraph.DEFAULT))
    triples.clear()
    return n
