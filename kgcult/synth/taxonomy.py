"""The CultureSynth cultural taxonomy (``ontology/taxonomy.ttl``, SKOS) and its tertiary
level read from the graph.

The paper (CultureSynth, §3.1, Table 10) has 12 primary and 130 secondary topics and asks
an LLM for country-specific tertiary topics and keywords (Figure 10). Here the secondary
topics the mirrored subgraphs cover carry Wikidata anchors (``kgc:anchorClass``,
``kgc:anchorEntity``) and the keywords of a topic for a country are the graph entities
under those anchors that the graph ties to the country:

* typing: ``?x kgc:typedAs ?anchorClass`` ((P31|P279)+), or ``?x kgc:broader ?anchorEntity``
  ((P31|P279|P361)+) or ``?x`` is the anchor entity itself;
* country: ``?x P ?c`` for the scheme's ``kgc:countryProperty`` (P495 origin, P17 country),
  directly, through a place ``kgc:locatedIn`` the country (P131+) or whose P17 is the
  country, or through a cuisine (``?x P2012|P361 ?cuisine``, the cuisine's P17/P495 is the
  country, or the country's P2012 is the cuisine); or ``?c P ?x`` for the topic's
  ``kgc:countryInverseProperty`` (official language P37, currency P38, public holiday P832, ...).
  Values reached through an inverse property must satisfy the typing when they are typed
  at all (have a P31/P279) or when the topic is anchored on entities; untyped values of a
  class-anchored topic are kept (the property's range is their only type).

Only closure lookups and single-step properties are used (no ``+``/``*`` paths).
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyoxigraph import NamedNode

from kgcult import ids, ontology, resources, vocab
from kgcult.errors import KgcultError

SCHEME = "https://w3id.org/kgcult/taxonomy/culturesynth/"
SKOS = vocab.SKOS
CULTURESYNTH_LANGS = ("ar", "es", "fr", "ja", "ko", "pt", "zh")


@dataclass
class Topic:
    iri: str
    notation: str                      # "SS" or "SS.05"
    labels: dict[str, str]             # prefLabel by language
    alt_labels: list[str] = field(default_factory=list)
    parent: str | None = None          # IRI of the primary topic (secondary topics)
    children: list[str] = field(default_factory=list)
    anchor_classes: list[str] = field(default_factory=list)
    anchor_entities: list[str] = field(default_factory=list)
    close_matches: list[str] = field(default_factory=list)
    inverse_properties: list[str] = field(default_factory=list)

    @property
    def primary(self) -> bool:
        return self.parent is None

    @property
    def anchored(self) -> bool:
        return bool(self.anchor_classes or self.anchor_entities or self.inverse_properties)

    def label(self, lang: str = "en") -> str:
        return self.labels.get(lang) or self.labels.get("en") or self.notation

    def as_dict(self, lang: str = "en") -> dict:
        return {
            "iri": self.iri, "notation": self.notation, "label": self.label(lang),
            "labels": dict(sorted(self.labels.items())), "alt_labels": self.alt_labels,
            "primary": self.notation.split(".")[0],
            "anchor_classes": [ids.shorten(a) for a in self.anchor_classes],
            "anchor_entities": [ids.shorten(a) for a in self.anchor_entities],
            "country_inverse_properties": [p.rsplit("/", 1)[-1] for p in self.inverse_properties],
        }


class Taxonomy:
    """The SKOS taxonomy as Python objects: topics by IRI, primary topics in file order."""

    def __init__(self, topics: dict[str, Topic], roots: list[str], country_properties: list[str],
                 source: str = ""):
        self.topics = topics
        self.roots = roots
        self.country_properties = country_properties
        self.source = source

    def primaries(self) -> list[Topic]:
        return [self.topics[r] for r in self.roots]

    def secondaries(self) -> list[Topic]:
        return [self.topics[c] for r in self.roots for c in self.topics[r].children]

    def __iter__(self):
        for p in self.primaries():
            yield p
            for c in p.children:
                yield self.topics[c]

    def resolve(self, name: str) -> Topic:
        """A topic by notation (``SS.05``, ``SS``), IRI, local name (``SS-05``), or a
        prefLabel/altLabel in any language (case- and accent-insensitive); a unique
        prefix of an English label also works. Raises KgcultError naming the candidates."""
        key = _norm(name)
        if not key:
            raise KgcultError("empty topic name")
        if name in self.topics:
            return self.topics[name]
        exact = [t for t in self if key in (_norm(t.notation), _norm(t.iri.rsplit("/", 1)[-1]))]
        if not exact:
            exact = [t for t in self if key in {_norm(v) for v in t.labels.values()}]
        if not exact:
            exact = [t for t in self if key in {_norm(v) for v in t.alt_labels}]
        if not exact:
            exact = [t for t in self if _norm(t.label("en")).startswith(key)]
        if len(exact) == 1:
            return exact[0]
        if not exact:
            raise KgcultError(f"unknown topic {name!r}: give a notation such as SS.05, a label, or "
                              "an alternative label such as 'food' (see `kgcult taxonomy`)")
        shown = ", ".join(f"{t.notation} {t.label()}" for t in exact[:8])
        raise KgcultError(f"topic {name!r} is ambiguous: {shown}")

    def anchored(self) -> list[Topic]:
        return [t for t in self.secondaries() if t.anchored]


def _norm(s: str) -> str:
    s = unicodedata.normalize("NFKD", s.strip().casefold())
    return "".join(c for c in s if not unicodedata.combining(c))


def taxonomy_path() -> Path:
    return resources.ontology("taxonomy.ttl")


def load(path: str | Path | None = None) -> Taxonomy:
    """The taxonomy from ``ontology/taxonomy.ttl`` (or ``path``)."""
    p = Path(path) if path else taxonomy_path()
    if not p.is_file():
        raise KgcultError(f"{p}: no such taxonomy file")
    return parse(p)


def parse(path: str | Path) -> Taxonomy:
    """The taxonomy of a SKOS Turtle file (read through :mod:`kgcult.ontology`)."""
    topics: dict[str, Topic] = {}
    roots: list[str] = []
    country_props: list[str] = []
    for s, props in ontology.by_subject(ontology.read(path)).items():
        def values(p: str) -> list[str]:
            return [o.value for o in props.get(p, [])]

        types = set(values(vocab.RDF + "type"))
        if SKOS + "ConceptScheme" in types:
            roots = values(SKOS + "hasTopConcept")
            country_props = sorted(values(vocab.KGC + "countryProperty"))
            continue
        if SKOS + "Concept" not in types:
            continue
        notation = values(SKOS + "notation")
        if not notation:
            raise KgcultError(f"{path}: topic {s.value} has no skos:notation")
        broader = values(SKOS + "broader")
        topics[s.value] = Topic(
            iri=s.value, notation=notation[-1],
            labels={o.language or "": o.value for o in props.get(SKOS + "prefLabel", [])},
            alt_labels=sorted(values(SKOS + "altLabel")),
            parent=broader[-1] if broader else None,
            anchor_classes=sorted(values(vocab.KGC + "anchorClass")),
            anchor_entities=sorted(values(vocab.KGC + "anchorEntity")),
            close_matches=sorted(values(SKOS + "closeMatch")),
            inverse_properties=sorted(values(vocab.KGC + "countryInverseProperty")),
        )
    # pyoxigraph returns triples in file order only within a subject; order children by notation
    for s, t in topics.items():
        kids = [c for c in topics if topics[c].parent == s]
        t.children = sorted(kids, key=lambda c: topics[c].notation)
    if not roots:
        raise KgcultError(f"{path}: no skos:ConceptScheme with skos:hasTopConcept")
    roots = [r for r in roots if r in topics]
    return Taxonomy(topics, roots, country_props, source=str(path))


# -- printing -------------------------------------------------------------------------

def tree(tax: Taxonomy, lang: str = "en", anchored_only: bool = False) -> str:
    """The taxonomy as an indented text tree; anchors shown after each anchored topic."""
    out = []
    for p in tax.primaries():
        kids = [tax.topics[c] for c in p.children]
        if anchored_only:
            kids = [k for k in kids if k.anchored]
            if not kids:
                continue
        out.append(f"{p.notation}  {p.label(lang)}")
        for k in kids:
            line = f"  {k.notation:<7} {k.label(lang)}"
            anchors = [ids.shorten(a) for a in k.anchor_classes + k.anchor_entities]
            if anchors:
                line += "  [" + " ".join(anchors) + "]"
            out.append(line)
    return "\n".join(out) + "\n"


# -- keywords: the tertiary level from the graph --------------------------------------

# How an entity is tied to a country. Each query starts from the bound country (and
# property), so it touches only that country's neighbourhood of the graph.
_TIE_QUERIES = {
    "direct": "SELECT DISTINCT ?x WHERE { ?x ?cp ?country }",
    "located": "SELECT DISTINCT ?x WHERE { ?place kgc:locatedIn ?country . ?x ?cp ?place }",
    "place": "SELECT DISTINCT ?x WHERE { ?place wdt:P17 ?country . FILTER(?place != ?country) ?x ?cp ?place }",
    "cuisine": """SELECT DISTINCT ?x WHERE {
        { ?cuisine wdt:P17 ?country } UNION { ?cuisine wdt:P495 ?country } UNION { ?country wdt:P2012 ?cuisine }
        { ?x wdt:P2012 ?cuisine } UNION { ?x wdt:P361 ?cuisine } }""",
}

# Which of the candidate entities lie under which anchors (closure lookups with ?x bound).
_TYPED_Q = """
SELECT DISTINCT ?x ?anchor WHERE {
  { ?x kgc:typedAs ?anchor } UNION { ?x kgc:broader ?anchor }
  FILTER(?x != ?anchor)
  VALUES ?anchor { %s }
}
"""

# Values of the topic's country -> entity properties; ?ok when typed under an anchor.
_INVERSE_Q = """
SELECT DISTINCT ?x ?p ?typed ?ok ?anchor WHERE {
  ?country ?p ?x . FILTER(isIRI(?x))
  OPTIONAL { ?x wdt:P31|wdt:P279 ?t }
  BIND(BOUND(?t) AS ?typed)
  OPTIONAL {
    VALUES ?anchor { %s }
    { ?x kgc:typedAs ?anchor } UNION { ?x kgc:broader ?anchor }
    BIND(true AS ?ok)
  }
}
"""


def keywords(store, tax: Taxonomy, topic: Topic | str, country: str, lang: str = "en",
             limit: int | None = None) -> list[dict]:
    """Graph entities under ``topic``'s anchors that the graph ties to ``country`` (a QID).

    A primary topic gives the union of its secondary topics. Each keyword:
    ``{"qid", "label", "label_lang", "topics", "anchors", "via"}``, sorted by label then QID
    (entities without any label last). The closure must be fresh (``hierarchy.ensure_closure``)."""
    if isinstance(topic, str):
        topic = tax.resolve(topic)
    country_node = NamedNode(country_iri(country))
    targets = [tax.topics[c] for c in topic.children] if topic.primary else [topic]
    found: dict[str, dict] = {}
    anchored = any(t.anchor_classes or t.anchor_entities for t in targets)
    ties = _country_ties(store, tax, country_node) if anchored else {}
    for t in targets:
        for row in _keywords_of(store, tax, t, country_node, ties):
            rec = found.setdefault(row["iri"], {"topics": set(), "anchors": set(), "via": set()})
            rec["topics"].add(t.notation)
            rec["anchors"].update(row["anchors"])
            rec["via"].update(row["via"])
    labels = labels_with_lang(store, list(found), lang)
    out: list[dict[str, Any]] = []
    for iri, rec in found.items():
        label, llang = labels.get(iri, ("", ""))
        out.append({
            "qid": ids.shorten(iri), "label": label, "label_lang": llang,
            "topics": sorted(rec["topics"]),
            "anchors": sorted(ids.shorten(a) for a in rec["anchors"]),
            "via": sorted(rec["via"]),
        })
    out.sort(key=lambda r: (r["label"] == "", r["label"].casefold(), ids.sort_key(r["qid"])))
    return out[:limit] if limit else out


def _country_ties(store, tax: Taxonomy, country: NamedNode) -> dict[str, set[str]]:
    """{entity IRI: how it is tied to the country} for the scheme's country properties."""
    ties: dict[str, set[str]] = {}
    cps = [NamedNode(p) for p in tax.country_properties]
    for via, q in _TIE_QUERIES.items():
        if via == "cuisine":
            rows = store.select(q, bindings={"country": country})
        else:
            rows = store.select(q, rows=(["cp", "country"], [[cp, country] for cp in cps]))
        for r in rows:
            if isinstance(r["x"], NamedNode):
                ties.setdefault(r["x"].value, set()).add(via)
    return ties


def _keywords_of(store, tax: Taxonomy, t: Topic, country: NamedNode, ties=None) -> list[dict]:
    res: dict[str, dict] = {}

    def add(x: str, anchor: str | None, via: str) -> None:
        rec = res.setdefault(x, {"iri": x, "anchors": set(), "via": set()})
        if anchor:
            rec["anchors"].add(anchor)
        rec["via"].add(via)

    anchors = [NamedNode(a) for a in t.anchor_classes + t.anchor_entities]
    if anchors and tax.country_properties:
        if ties is None:
            ties = _country_ties(store, tax, country)
        cands = sorted(ties)
        values = " ".join(str(a) for a in anchors)
        for chunk in range(0, len(cands), 500):
            rows = store.select(_TYPED_Q % values,
                                rows=(["x"], [[NamedNode(x)] for x in cands[chunk:chunk + 500]]))
            for r in rows:
                for via in ties[r["x"].value]:
                    add(r["x"].value, r["anchor"].value, via)
        for a in t.anchor_entities:  # the anchor entity itself (a language, a religion)
            for via in ties.get(a, ()):
                add(a, a, via)
    if t.inverse_properties:
        values = " ".join(str(a) for a in anchors) or "<urn:x-kgcult:none>"
        rows = [(country, NamedNode(p)) for p in t.inverse_properties]
        by_x: dict[str, dict] = {}
        for r in store.select(_INVERSE_Q % values, rows=(["country", "p"], rows)):
            d = by_x.setdefault(r["x"].value, {"props": set(), "typed": False, "ok": False, "anchors": set()})
            d["props"].add(r["p"].value)
            if "anchor" in r:
                d["anchors"].add(r["anchor"].value)
            d["typed"] |= "typed" in r and r["typed"].value == "true"
            d["ok"] |= "ok" in r
        for x, d in by_x.items():
            if not anchors or d["ok"] or x in t.anchor_entities:
                keep = True
            else:
                # untyped values of a class-anchored topic: the property's range is their type
                keep = not d["typed"] and not t.anchor_entities
            if keep:
                for p in sorted(d["props"]):
                    add(x, x if x in t.anchor_entities else None, "inverse:" + p.rsplit("/", 1)[-1])
                for a in d["anchors"]:
                    add(x, a, "inverse:" + sorted(d["props"])[0].rsplit("/", 1)[-1])
    return list(res.values())


def country_iri(country: str) -> str:
    """The entity IRI of a user-given country id (``Q17``, ``wd:Q17``, the IRI)."""
    return ids.iri(ids.parse(country, "Q", field="--country"))


def labels_with_lang(store, iris: list[str], lang: str) -> dict[str, tuple[str, str]]:
    """rdfs:label of each IRI in ``lang``, else English, else any: {iri: (label, its language)}."""
    if not iris:
        return {}
    rows = store.select(
        "SELECT ?x ?l WHERE { ?x rdfs:label ?l }",
        rows=(["x"], [[NamedNode(i)] for i in sorted(set(iris))]),
    )
    best: dict[str, tuple[tuple, str, str]] = {}
    for r in rows:
        l = r["l"]
        ll = l.language or ""
        rank = 0 if ll == lang else 1 if ll == "en" else 2
        key = (rank, ll, l.value)
        x = r["x"].value
        if x not in best or key < best[x][0]:
            best[x] = (key, l.value, ll)
    return {x: (v, ll) for x, (_, v, ll) in best.items()}
