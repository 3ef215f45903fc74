"""Topic roots (``ontology/topics.ttl``): which classes make a candidate valid for a topic,
the granularity scale (MakiEval App. B.2) per topic, and the classes whose instances are
countries (``kgc:CountryClass``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kgcult import ids, ontology, vocab
from kgcult.errors import KgcultError


@dataclass
class Kind:
    order: int
    root: str            # QID
    item_name: str
    category_name: str
    score: int | None = None  # fixed score (e.g. a genre is always a category)


@dataclass
class Topic:
    name: str
    roots: list[str]                 # QIDs
    via: list[str] = field(default_factory=list)   # property IDs (P131, ...)
    kinds: list[Kind] = field(default_factory=list)
    # property IDs (P527, ...): an entity that a member typed by the roots points at with
    # one of them is a member too (a dish's ingredient is food)
    via_inverse: list[str] = field(default_factory=list)


def load_topics(path: str | Path | None = None) -> list[Topic]:
    """The topics of ``path`` (default: kgcult's ``ontology/topics.ttl``), sorted by name."""
    path = ontology.path_of(path or "topics.ttl")
    k = vocab.KGC
    props = ontology.by_subject(ontology.read(path))
    topics = []
    for subj, p in props.items():
        if not any(o.value == k + "Topic" for o in p.get(vocab.RDF + "type", [])):
            continue
        if k + "name" not in p:
            raise KgcultError(f"{path}: topic {subj} lacks kgc:name")
        kinds = []
        for node in p.get(k + "kind", []):
            kp = props.get(node, {})
            try:
                kinds.append(Kind(
                    order=int(kp[k + "order"][0].value),
                    root=ids.parse(kp[k + "kindRoot"][0].value, "Q", field=f"{path}: kgc:kindRoot of {subj}"),
                    item_name=kp[k + "itemName"][0].value,
                    category_name=kp[k + "categoryName"][0].value,
                    score=int(kp[k + "score"][0].value) if k + "score" in kp else None,
                ))
            except (KeyError, ValueError) as e:
                raise KgcultError(f"{path}: a kgc:kind of {subj} is incomplete ({e})") from None
        kinds.sort(key=lambda x: x.order)
        topics.append(Topic(
            name=p[k + "name"][0].value,
            roots=sorted(ids.parse(o.value, "Q", field=f"{path}: kgc:root of {subj}")
                         for o in p.get(k + "root", [])),
            via=sorted(o.value.rsplit("/", 1)[-1] for o in p.get(k + "viaProperty", [])),
            kinds=kinds,
            via_inverse=sorted(o.value.rsplit("/", 1)[-1] for o in p.get(k + "viaInverseProperty", [])),
        ))
    topics.sort(key=lambda t: t.name)
    if not topics:
        raise KgcultError(f"{path}: no kgc:Topic found")
    return topics


def load_country_classes(path: str | Path | None = None) -> frozenset[str]:
    """QIDs of the ``kgc:CountryClass`` resources of ``path`` (default: kgcult's
    ``ontology/topics.ttl``): an entity typed (P31) with one is a country of its own."""
    path = ontology.path_of(path or "topics.ttl")
    return frozenset(ids.parse(s.value, "Q", field=f"{path}: a kgc:CountryClass")
                     for s in ontology.of_type(path, vocab.KGC + "CountryClass"))


def load_settlement_classes(path: str | Path | None = None) -> frozenset[str]:
    """QIDs of the ``kgc:SettlementClass`` resources of ``path`` (default: kgcult's
    ``ontology/topics.ttl``): an entity typed (P31) with one or a subclass of one is a
    settlement."""
    path = ontology.path_of(path or "topics.ttl")
    return frozenset(ids.parse(s.value, "Q", field=f"{path}: a kgc:SettlementClass")
                     for s in ontology.of_type(path, vocab.KGC + "SettlementClass"))
