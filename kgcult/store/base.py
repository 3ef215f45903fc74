"""What both store backends share: where a store is (``--store`` / ``KGCULT_STORE`` /
``.kgcult/store``), which named graphs users may write (a valid IRI, not one of kgcult's
own), and the reads written once on top of ``query`` and ``graph_counts``."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Iterator

from pyoxigraph import DefaultGraph, NamedNode, Quad

from kgcult import vocab
from kgcult.errors import KgcultError
from kgcult.safe_text import strip_credentials

DEFAULT_LOCATION = os.path.join(".kgcult", "store")
DEFAULT_GRAPH = DefaultGraph()  # the default graph: every data graph's triples and the closure's, each once


def resolve_location(location: str | os.PathLike | None = None) -> str:
    """``--store`` beats ``KGCULT_STORE`` beats ``.kgcult/store`` under the working directory."""
    if location:
        return str(location)
    return os.environ.get("KGCULT_STORE") or DEFAULT_LOCATION


RESERVED_PREFIXES = (vocab.CLOSURE_GRAPH, vocab.STAGING_GRAPH)


def is_reserved(iri: str) -> bool:
    """True for graphs only kgcult itself writes: metadata, closures, staging."""
    return iri == vocab.META_GRAPH or iri.startswith(RESERVED_PREFIXES)


def in_set(iri: str) -> bool:
    """Whether a named graph's triples are in the default graph (the set): data graphs."""
    return vocab.is_data_graph(iri)


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


class StoreReads:
    """Reads shared by the embedded Store and the RemoteStore, written once on top of
    their ``query``, ``graph_counts`` and ``ox`` (pyoxigraph's or a SPARQL stand-in)."""

    if TYPE_CHECKING:  # what each backend provides
        @property
        def ox(self) -> Any: ...
        def query(self, sparql: str, *, graph: str | None = None, bindings: dict | None = None,
                  rows: tuple | None = None) -> Any: ...
        def graph_counts(self) -> dict[str, int]: ...
        def close(self) -> None: ...

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def select(self, sparql: str, **kw) -> list[dict]:
        """SELECT as a list of {variable: term} dicts (unbound variables left out)."""
        res = self.query(sparql, **kw)
        names = [v.value for v in res.variables]
        return [{n: sol[n] for n in names if sol[n] is not None} for sol in res]

    def quads_for_pattern(self, s=None, p=None, o=None, g=None) -> Iterator[Quad]:
        """Quads matching a pattern of pyoxigraph terms (``g``: a graph, :data:`DEFAULT_GRAPH`
        for the default graph, the set; None for every graph)."""
        return self.ox.quads_for_pattern(s, p, o, g)

    def quads(self, graph: str | None = None) -> Iterator[Quad]:
        """Every quad of ``graph`` (or of all graphs, the default graph's set included)."""
        return self.ox.quads_for_pattern(None, None, None, NamedNode(graph) if graph else None)

    def data_graphs(self) -> list[str]:
        """Named graphs holding mirrored or loaded data (not metadata, derived or staging)."""
        return [g for g in self.graph_counts() if vocab.is_data_graph(g)]

    def provenance(self) -> list[dict]:
        """Every provenance record of the metadata graph, oldest first, as plain dicts."""
        rows = self.query("SELECT ?a ?p ?o WHERE { GRAPH ?m { ?a a kgc:Load ; ?p ?o } }",
                          bindings={"m": NamedNode(vocab.META_GRAPH)})
        records: dict[str, dict] = {}
        for r in rows:
            rec = records.setdefault(r["a"].value, {})
            p = r["p"].value
            if p.startswith(vocab.KGC):
                rec[p[len(vocab.KGC):]] = r["o"].value
        for rec in records.values():  # a record made before credentials were stripped
            if "source" in rec:
                rec["source"] = strip_credentials(rec["source"])
        return sorted(records.values(), key=lambda d: (d.get("loadedAt", ""), d.get("source", "")))
