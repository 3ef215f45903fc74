"""The mirror's SPARQL: the templates of ``queries/mirror/`` with their ``{{slots}}`` filled
by RDF terms that pyoxigraph serializes, and the batch of ids bound as one VALUES block,
so that no configured value is ever formatted into a query as text."""
from __future__ import annotations

import hashlib
import re

from pyoxigraph import Literal, NamedNode

from kgcult import ids, resources, vocab
from kgcult.acquire.subgraphs import SITELINKS
from kgcult.errors import KgcultError
from kgcult.sparql.text import bind_values, term

_SLOT = re.compile(r"\{\{(\w+)\}\}")
NAMES = ("members", "statements", "labels")


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


def members_query(tpl: str, classes: list[str], props: list[str], after: str, limit: int) -> str:
    """One keyset page of the entities one member property below ``classes``."""
    q = render(tpl, properties=[vocab.wdt(p) for p in props], after=[Literal(after)])
    q = bind_values(q, rows=_ids("c", classes))
    return q.rstrip() + f"\nLIMIT {int(limit)}\n"


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
