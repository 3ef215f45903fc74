"""Versioned snapshots: sorted, gzip-compressed N-Quads per graph plus MANIFEST.json.

Layout of a snapshot directory::

    MANIFEST.json          format, content hash, per-graph counts and hashes, provenance
    graphs/<name>.nq.gz    one file per named graph, lines sorted, gzip without timestamp

The same store content always exports byte-identical files (the manifest's ``created``
is the time of the newest provenance record, not the wall clock). Derived closure graphs
are not exported: ``kgcult closure`` rebuilds them. The metadata graph is exported (it is
the provenance) but not part of the content hash, which covers the data graphs only.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
from pathlib import Path

from pyoxigraph import NamedNode, RdfFormat

from kgcult import vocab
from kgcult.version import __version__
from kgcult.errors import KgcultError
from kgcult.files import atomic_open, sha256_file
from kgcult.store.embedded import Store

FORMAT = "kgcult-snapshot/1"
MANIFEST = "MANIFEST.json"


class SnapshotError(KgcultError):
    """A snapshot that is missing, malformed, truncated or tampered with."""


def graph_file_name(iri: str) -> str:
    """A stable, readable file name for a graph IRI."""
    local = iri[len(vocab.GRAPH):] if iri.startswith(vocab.GRAPH) else iri
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", local).strip("_") or "graph"
    if not iri.startswith(vocab.GRAPH):  # foreign IRIs: keep names unique
        slug = f"{slug[:60]}-{hashlib.sha256(iri.encode()).hexdigest()[:8]}"
    return f"graphs/{slug}.nq.gz"


def content_hash(graph_hashes: dict[str, str]) -> str:
    """Overall content hash: sha256 over ``<graph IRI> <content sha256>`` lines, sorted."""
    h = hashlib.sha256()
    for iri in sorted(graph_hashes):
        h.update(f"{iri} {graph_hashes[iri]}\n".encode())
    return h.hexdigest()


def _sorted_nquads(store: Store, iri: str) -> list[bytes]:
    lines = [f"{q} .\n".encode("utf-8") for q in store.quads(iri)]
    lines.sort()
    return lines


def export(store: Store, directory: str | os.PathLike) -> dict:
    """Write a snapshot of every non-derived graph to ``directory``; return the manifest."""
    out = Path(directory)
    if (out / "graphs").exists() and not (out / MANIFEST).exists():
        raise SnapshotError(f"{out}: has a graphs/ directory but no {MANIFEST}: not a snapshot; refusing to write into it")
    (out / "graphs").mkdir(parents=True, exist_ok=True)
    graphs = []
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
        lines = _sorted_nquads(store, iri)
        raw = b"".join(lines)
        name = graph_file_name(iri)
        path = out / name
        with atomic_open(path, "wb") as f:
            # filename="" and mtime=0 make the gzip header independent of time and path.
            with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0, compresslevel=6) as gz:
                gz.write(raw)
        written.add(name)
        graphs.append(
            {
                "iri": iri,
                "file": name,
                "triples": len(lines),
                "sha256": sha256_file(path),
                "content_sha256": hashlib.sha256(raw).hexdigest(),
                "derived": False,
                "metadata": iri == vocab.META_GRAPH,
            }
        )
    # Remove graph files of an older snapshot in the same directory.
    for old in (out / "graphs").glob("*.nq.gz"):
        if f"graphs/{old.name}" not in written:
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


def read_manifest(directory: str | os.PathLike) -> dict:
    path = Path(directory) / MANIFEST
    if not path.is_file():
        raise SnapshotError(f"{directory}: no {MANIFEST}: not a kgcult snapshot")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        line = getattr(e, "lineno", "?")
        raise SnapshotError(f"{path}:{line}: malformed manifest: {e}") from None
    if manifest.get("format") != FORMAT:
        raise SnapshotError(f"{path}: unsupported snapshot format {manifest.get('format')!r} (expected {FORMAT})")
    for i, g in enumerate(manifest.get("graphs", [])):
        for field in ("iri", "file", "triples", "sha256", "content_sha256"):
            if field not in g:
                raise SnapshotError(f"{path}: graphs[{i}] lacks field {field!r}")
    return manifest


def verify(directory: str | os.PathLike) -> dict:
    """Check every hash and count of a snapshot without loading it. Returns the manifest."""
    root = Path(directory)
    manifest = read_manifest(root)
    data = {}
    for g in manifest["graphs"]:
        path = root / g["file"]
        if not path.is_file():
            raise SnapshotError(f"{path}: listed in {MANIFEST} but missing")
        if sha256_file(path) != g["sha256"]:
            raise SnapshotError(f"{path}: sha256 does not match {MANIFEST}: the file was altered or truncated")
        try:
            with gzip.open(path, "rb") as f:
                raw = f.read()
        except (OSError, EOFError) as e:
            raise SnapshotError(f"{path}: cannot decompress: {e}") from None
        if hashlib.sha256(raw).hexdigest() != g["content_sha256"]:
            raise SnapshotError(f"{path}: content sha256 does not match {MANIFEST}")
        lines = raw.count(b"\n")
        if lines != g["triples"]:
            raise SnapshotError(f"{path}: {lines} triples, {MANIFEST} says {g['triples']}")
        if not g.get("metadata"):
            data[g["iri"]] = g["content_sha256"]
    if content_hash(data) != manifest.get("content_sha256"):
        raise SnapshotError(f"{root / MANIFEST}: content_sha256 does not match the graphs it lists")
    return manifest


def import_(store: Store, directory: str | os.PathLike, *, replace: bool = False) -> dict:
    """Verify a snapshot, then load it. Graphs the store already holds are refused unless
    ``replace`` (then replaced whole); the metadata graph is merged."""
    root = Path(directory)
    manifest = verify(root)
    existing = set(store.graph_counts())
    clashes = [g["iri"] for g in manifest["graphs"] if g["iri"] in existing and not g.get("metadata")]
    if clashes and not replace:
        raise SnapshotError(
            f"the store already holds graph(s) {', '.join(clashes)}; use --replace to replace them"
        )
    for iri in clashes:
        store.clear_graph(iri)
    for g in manifest["graphs"]:
        with gzip.open(root / g["file"], "rb") as f:
            store.ox.bulk_load(input=io.BufferedReader(f, 1 << 20), format=RdfFormat.N_QUADS)
        if not g.get("metadata"):
            store.record_activity(
                kind="snapshot-import", source=str(root.resolve()), sha256=g["content_sha256"],
                graph=g["iri"], triples=g["triples"],
            )
    store.set_state("snapshotContentSha256", manifest["content_sha256"])
    store.mark_closure_stale()
    store.flush()
    return manifest


def store_content_hash(store: Store) -> str:
    """The content hash a snapshot of the store's data graphs would have right now
    (cached in the metadata graph until the data changes)."""
    cached = store.get_state("contentSha256")
    if cached:
        return cached
    hashes = {}
    for iri in store.data_graphs():
        raw = b"".join(_sorted_nquads(store, iri))
        hashes[iri] = hashlib.sha256(raw).hexdigest()
    digest = content_hash(hashes)
    if not store.read_only and not store.remote:
        store.set_state("contentSha256", digest)
    return digest


__all__ = ["export", "import_", "verify", "read_manifest", "content_hash", "store_content_hash", "SnapshotError", "NamedNode"]
