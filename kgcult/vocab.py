"""IRIs kgcult uses: Wikidata's own vocabulary (as WDQS serves it) and kgcult's namespace.

kgcult's terms are declared in ``ontology/kgcult.ttl``; this module only names them so
that Python code and SPARQL files agree on one spelling.
"""
from __future__ import annotations

from pyoxigraph import BlankNode, Literal, NamedNode, Triple

from kgcult.errors import KgcultError

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
SKOS = "http://www.w3.org/2004/02/skos/core#"
SCHEMA = "http://schema.org/"
WIKIBASE = "http://wikiba.se/ontology#"
XSD = "http://www.w3.org/2001/XMLSchema#"
PROV = "http://www.w3.org/ns/prov#"

KGC = "https://w3id.org/kgcult/ns#"
GRAPH = "https://w3id.org/kgcult/graph/"

META_GRAPH = GRAPH + "meta"          # provenance and store state
CLOSURE_GRAPH = GRAPH + "closure/"   # prefix of derived hierarchy graphs
STAGING_GRAPH = GRAPH + "staging/"   # prefix of graphs a `mirror --refresh` is building
DERIVED_PREFIXES = (CLOSURE_GRAPH,)

# Prefixes every kgcult query may use without declaring them (as WDQS does).
PREFIXES = {
    "wd": WD,
    "wdt": WDT,
    "rdf": RDF,
    "rdfs": RDFS,
    "skos": SKOS,
    "schema": SCHEMA,
    "wikibase": WIKIBASE,
    "xsd": XSD,
    "prov": PROV,
    "kgc": KGC,
    "kgcg": GRAPH,
}


def wdt(pid: str) -> NamedNode:
    return NamedNode(WDT + pid)


def kgc(local: str) -> NamedNode:
    return NamedNode(KGC + local)


def value(term: NamedNode | BlankNode | Literal | Triple) -> str:
    """The IRI, blank node id or literal text of a term read from a store or a file.
    kgcult writes no RDF 1.2 triple terms, so one where a plain term belongs is refused."""
    if isinstance(term, Triple):
        raise KgcultError(f"a triple term where an IRI, blank node or literal belongs: {term}")
    return term.value


def graph_iri(name: str) -> str:
    """The named graph of a subgraph or a seed file: ``dishes`` -> .../graph/dishes."""
    if "://" in name or name.startswith("urn:"):
        return name
    return GRAPH + name


def is_derived_graph(iri: str) -> bool:
    return iri.startswith(DERIVED_PREFIXES)


def is_data_graph(iri: str) -> bool:
    """Mirrored or loaded data: not the metadata graph, a closure or a staging graph."""
    return bool(iri) and iri != META_GRAPH and not iri.startswith(DERIVED_PREFIXES + (STAGING_GRAPH,))

