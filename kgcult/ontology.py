"""One loader for kgcult's own RDF in ``ontology/`` (closure and subgraph specs, topic
roots, culture groups, spectral domains, taxonomy, property and root labels).

``read(name_or_path)`` parses a Turtle file once per version (path, mtime) and reports a
malformed file as ``file:line:column``; ``by_subject`` groups its triples the way every
spec reader wants them.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pyoxigraph as ox

from kgcult import resources, vocab
from kgcult.errors import KgcultError, syntax_error


def path_of(name_or_path: str | Path) -> Path:
    """``closures.ttl`` -> kgcult's own file; any path with a directory -> that path."""
    p = Path(name_or_path)
    return p if p.parent != Path(".") or p.is_file() else resources.ontology(str(p))


def read(name_or_path: str | Path) -> tuple[ox.Quad, ...]:
    """Every triple of an ontology file (Turtle), parsed once per file version."""
    p = path_of(name_or_path)
    try:
        mtime = p.stat().st_mtime_ns
    except OSError as e:
        raise KgcultError(f"{p}: cannot read: {e.strerror or e}") from None
    return _parse(str(p), mtime)


@lru_cache(maxsize=32)
def _parse(path: str, mtime: int) -> tuple[ox.Quad, ...]:
    try:
        return tuple(ox.parse(path=path, format=ox.RdfFormat.TURTLE))
    except SyntaxError as e:
        raise syntax_error(path, e) from None
    except OSError as e:
        raise KgcultError(f"{path}: cannot read: {e.strerror or e}") from None


def by_subject(quads) -> dict:
    """{subject term: {predicate IRI: [object terms in file order]}}."""
    out: dict = {}
    for q in quads:
        out.setdefault(q.subject, {}).setdefault(q.predicate.value, []).append(q.object)
    return out


def of_type(name_or_path: str | Path, type_iri: str) -> dict:
    """The resources typed ``type_iri`` in a file, as :func:`by_subject` gives them."""
    rdf_type = vocab.RDF + "type"
    return {s: props for s, props in by_subject(read(name_or_path)).items()
            if any(o.value == type_iri for o in props.get(rdf_type, []))}


def labels(name_or_path: str | Path) -> dict[str, str]:
    """{subject IRI: rdfs:label} of a file (the last label wins)."""
    label = vocab.RDFS + "label"
    return {vocab.value(q.subject): vocab.value(q.object) for q in read(name_or_path) if q.predicate.value == label}
