"""The graph as synthesis reads it: claims, labels, aliases and descriptions of the
entities a synthesis touches, fetched in batches (VALUES rows), never with property paths."""
from __future__ import annotations

from typing import Iterable

from pyoxigraph import NamedNode

from kgcult import vocab

_BATCH = 400
_CLAIMS = ("SELECT ?x ?p ?o WHERE { ?x ?p ?o . FILTER(isIRI(?o) && STRSTARTS(STR(?p), "
           "\"http://www.wikidata.org/prop/direct/\")) }")
_NAMES = ("SELECT ?x ?k ?l WHERE { { ?x rdfs:label ?l BIND(1 AS ?k) } UNION "
          "{ ?x skos:altLabel ?l BIND(2 AS ?k) } UNION { ?x schema:description ?l BIND(3 AS ?k) } }")


class GraphCache:
    """Claims ({entity IRI: {PID: object IRIs}}) and names ({entity IRI: {lang: ...}}) of
    the entities fetched so far."""

    def __init__(self, store) -> None:
        self.store = store
        self.claims: dict[str, dict[str, set[str]]] = {}
        self.labels: dict[str, dict[str, str]] = {}
        self.aliases: dict[str, dict[str, list[str]]] = {}
        self.descriptions: dict[str, dict[str, str]] = {}

    def fetch_claims(self, iris: Iterable[str]) -> None:
        todo = sorted({i for i in iris if i not in self.claims})
        for i in todo:
            self.claims[i] = {}
        for r in self._rows(todo, _CLAIMS):
            pid = r["p"].value[len(vocab.WDT):]
            self.claims[r["x"].value].setdefault(pid, set()).add(r["o"].value)

    def fetch_names(self, iris: Iterable[str]) -> None:
        todo = sorted({i for i in iris if i not in self.labels})
        for i in todo:
            self.labels[i] = {}
            self.aliases[i] = {}
            self.descriptions[i] = {}
        for r in self._rows(todo, _NAMES):
            x, k, l = r["x"].value, r["k"].value, r["l"]
            lang = getattr(l, "language", None) or ""
            if k == "1":
                cur = self.labels[x].get(lang)
                if cur is None or l.value < cur:  # deterministic if a language has two
                    self.labels[x][lang] = l.value
            elif k == "2":
                self.aliases[x].setdefault(lang, []).append(l.value)
            else:
                self.descriptions[x].setdefault(lang, l.value)
        for i in todo:
            for v in self.aliases[i].values():
                v.sort()

    def _rows(self, iris: list[str], query: str):
        """The query's rows with ``?x`` bound to each entity, in batches."""
        for start in range(0, len(iris), _BATCH):
            yield from self.store.select(query, rows=(["x"], [[NamedNode(i)] for i in iris[start:start + _BATCH]]))

    def label(self, iri: str, lang: str) -> str | None:
        return self.labels.get(iri, {}).get(lang)

    def objects(self, iri: str, pid: str) -> set[str]:
        return self.claims.get(iri, {}).get(pid, set())

    def surface_forms(self, iri: str) -> set[str]:
        """Every label and alias of an entity, any language."""
        forms = set(self.labels.get(iri, {}).values())
        for vs in self.aliases.get(iri, {}).values():
            forms.update(vs)
        return {f for f in forms if f.strip()}

