"""Which named graphs users may write: a graph name must be a valid IRI, and the graphs
kgcult writes itself (the metadata graph, closure spec IRIs, staging graphs) are reserved."""
from __future__ import annotations

from pyoxigraph import NamedNode

from kgcult import vocab
from kgcult.errors import KgcultError

RESERVED_PREFIXES = (vocab.CLOSURE_GRAPH, vocab.STAGING_GRAPH)


def is_reserved(iri: str) -> bool:
    """True for graphs only kgcult itself writes: metadata, closures, staging."""
    return iri == vocab.META_GRAPH or iri.startswith(RESERVED_PREFIXES)


def in_set(iri: str) -> bool:
    """Whether a named graph's triples are in the default graph (the set): data graphs, and
    the closure graphs of a store built before the closure lived in the default graph only."""
    return vocab.is_data_graph(iri) or vocab.is_derived_graph(iri)


def check_graph_iri(iri: str, where: str) -> NamedNode:
    """``iri`` as a NamedNode, or a KgcultError naming ``where`` (a file or an option)
    when it is not a valid IRI."""
    try:
        return NamedNode(iri)
    except ValueError as e:
        raise KgcultError(f"{where}: {iri!r} is not a valid graph IRI ({e})") from None


def check_user_graph(iri: str, where: str) -> NamedNode:
    """A graph a user may load into: a valid IRI that kgcult does not reserve, and not the
    bare graph namespace an empty name gives (``--graph ''``)."""
    if iri.rstrip("/") + "/" == vocab.GRAPH or not iri.strip():
        raise KgcultError(f"{where}: an empty graph name; name the graph (e.g. --graph dishes)")
    node = check_graph_iri(iri, where)
    if is_reserved(iri):
        raise KgcultError(
            f"{where}: graph {iri} is reserved for kgcult's own data (metadata, closures, "
            "staging); load into another graph"
        )
    return node
