"""The mirror's SPARQL: the templates of ``queries/mirror/`` with their ``{{slots}}`` filled
by RDF terms that pyoxigraph serializes, and the batch of ids bound as one VALUES block,
so that no configured value is ever formatted into a query as text."""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Sequence

from pyoxigraph import Literal, NamedNode

from kgcult import ids, resources, vocab
from kgcult.acquire.subgraphs import SITELINKS, SubgraphSpec
from kgcult.errors import KgcultError
from kgcult.sparql.query_text import bind_values, term

_SLOT = re.compile(r"\{\{(\w+)\}\}")
NAMES = ("count-one", "count", "count-partition", "members", "members-scoped", "members-partition",
         "statements", "labels")


def template(name: str) -> str:
    path = resources.queries("mirror", name + ".rq")
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise KgcultError(f"{path}: cannot read the query template: {e}") from None


def render(tpl: str, **lists) -> str:
    """Fill the ``{{name}}`` slots of a template with comma-separated RDF terms."""
    def fill(mt):
        name = mt.group(1)
        if name not in lists:
            raise KgcultError(f"query template slot {{{{{name}}}}} has no value")
        return ", ".join(str(term(t)) for t in lists[name])

    return _SLOT.sub(fill, tpl)


def _ids(var: str, entities: list[str]) -> tuple:
    return [var], [[ids.node(e)] for e in entities]


def members_query(tpl: str, classes: list[str], prop: str, pattern: str = "", *, scope: str = "",
                  values: Sequence[str] = (), value: str = "") -> str:
    """The entities one member property ``prop`` below ``classes`` (members.rq), within a
    scope (members-scoped.rq: ``scope`` with any of ``values``; members-partition.rq: with
    the one ``value``), whose IRI matches ``pattern`` (a suffix split; "" for all)."""
    slots = {"property": [vocab.wdt(prop)], "pattern": [Literal(pattern)]}
    if scope and value:  # one class, one value: every term bound, no VALUES block
        slots.update(scope=[vocab.wdt(scope)], value=[ids.node(value)], **{"class": [ids.node(classes[0])]})
        return render(tpl, **slots)
    if scope:
        slots.update(scope=[vocab.wdt(scope)], values=[ids.node(v) for v in values])
    return bind_values(render(tpl, **slots), rows=_ids("c", classes))


def count_classes_query(tpl: str, classes: list[str], prop: str) -> str:
    """count.rq: ?c ?n for a batch of classes."""
    return bind_values(render(tpl, property=[vocab.wdt(prop)]), rows=_ids("c", classes))


def count_one_query(tpl: str, cls: str, prop: str, scope: str = "", value: str = "") -> str:
    """count-one.rq (one class), or count-partition.rq (one class, one scope value)."""
    slots = {"property": [vocab.wdt(prop)], "class": [ids.node(cls)]}
    if scope:
        slots.update(scope=[vocab.wdt(scope)], value=[ids.node(value)])
    return render(tpl, **slots)


def statements_query(tpl: str, entities: list[str], props: list[str]) -> str:
    """CONSTRUCT of the truthy claims of ``props`` of a batch of entities."""
    q = render(tpl, properties=[vocab.wdt(p) for p in props])
    return bind_values(q, rows=_ids("s", entities))


def labels_query(tpl: str, entities: list[str], label_props: list[str], langs: list[str],
                 sitelinks: bool = False) -> str:
    """CONSTRUCT of the labels (in ``langs``) and sitelink counts of a batch of entities."""
    q = render(tpl, properties=[NamedNode(p) for p in label_props], languages=[Literal(x) for x in langs],
               plain=[NamedNode(SITELINKS)] if sitelinks else [])
    return bind_values(q, rows=_ids("s", entities))


def sha(text: str) -> str:
    """The sha256 of a query (its checkpoint key and its share of the provenance hash)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_CONSTRUCT = re.compile(r"^CONSTRUCT\s*\{\s*\?s\s+\?p\s+\?o\s*\.?\s*\}\s*WHERE\s*\{", re.M)


def count_query(construct: str) -> str:
    """The SELECT that counts the distinct triples of a ``CONSTRUCT { ?s ?p ?o } WHERE
    {...}`` batch query (the shape of every template in ``queries/mirror/``): what a
    complete answer must hold."""
    m = _CONSTRUCT.search(construct)
    if not m:
        raise KgcultError("a mirror CONSTRUCT template must start `CONSTRUCT { ?s ?p ?o } WHERE {`")
    return (construct[:m.start()] + "SELECT (COUNT(*) AS ?n) WHERE { SELECT DISTINCT ?s ?p ?o WHERE {"
            + construct[m.end():].rstrip() + "\n}\n")


@dataclass(frozen=True)
class Requested:
    """What one CONSTRUCT batch asked for: its subjects, the spec's predicates and, for
    labels, the languages. An answer's other triples (about subjects never asked for, with
    other predicates or in other languages) are an endpoint's additions: dropped, counted."""
    subjects: frozenset[str]
    predicates: frozenset[str]
    languages: frozenset[str] = frozenset()  # for literals of the label properties

    @classmethod
    def of(cls, spec: SubgraphSpec, batch: list[str]) -> Requested:
        subjects = frozenset(ids.iri(e) for e in batch)
        if spec.is_labels:
            preds = set(spec.label_properties) | ({SITELINKS} if spec.sitelinks else set())
            return cls(subjects, frozenset(preds), frozenset(x.lower() for x in spec.languages))
        return cls(subjects, frozenset(vocab.WDT + p for p in spec.properties))

    def wanted(self, triple) -> bool:
        if triple.subject.value not in self.subjects or triple.predicate.value not in self.predicates:
            return False
        if triple.predicate.value == SITELINKS:  # a count, or nothing (ids.sitelink_count)
            return ids.sitelink_count(triple.object) is not None and \
                getattr(getattr(triple.object, "datatype", None), "value", "") == vocab.XSD + "integer"
        if self.languages:
            return (getattr(triple.object, "language", None) or "").lower() in self.languages
        return True

    def split(self, triples) -> tuple[list, int]:
        """The wanted triples, and how many others there were."""
        kept = [t for t in triples if self.wanted(t)]
        return kept, len(triples) - len(kept)
