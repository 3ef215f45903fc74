"""Running a view's queries over a store and fetching labels: :class:`ViewContext`, what
every dataset processor gets.

Values are bound with VALUES blocks by the store (:mod:`kgcult.sparql.query_text`), never
formatted into the query text. Only ``store.select`` is called, so a view runs unchanged
against a remote SPARQL endpoint (``--store sparql+http://...``).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from pyoxigraph import Literal, NamedNode

from kgcult import langtags
from kgcult.errors import KgcultError
from kgcult.views.spec import View, ViewError


def _value(term) -> str:
    if isinstance(term, (NamedNode, Literal)):
        return term.value
    return str(term)


class ViewContext:
    """The store, the view, its resolved parameters, and ``select``/``labels`` over them.
    A processor that changes the graph's text (a script conversion) says so in
    ``conversions``, which the manifest records."""

    def __init__(self, store, view: View, params: dict):
        self.store = store
        self.view = view
        self.params = params
        self.conversions: dict = {}
        self.query_text = {k: p.read_text(encoding="utf-8") for k, p in view.queries.items()}

    def select(self, key: str, *, bindings: dict | None = None, rows: tuple | None = None,
               chunk: int = 5000) -> list[dict]:
        """Run the view's query ``key``; solutions as {var: str} (IRIs as full IRIs,
        literals as their lexical value; language tags under ``<var>@lang``).

        ``rows`` larger than ``chunk`` are sent in several queries (remote endpoints limit
        the request size); results are concatenated."""
        if key not in self.view.queries:
            raise ViewError(f"view {self.view.name}: {self.view.path} names no query {key!r}")
        if rows is None:
            return self._run(key, bindings=bindings)
        variables, values = rows
        values = list(values)
        out = []
        for i in range(0, len(values), chunk):
            out.extend(self._run(key, rows=(variables, values[i:i + chunk])))
        return out

    def _run(self, key, bindings=None, rows=None) -> list[dict]:
        where = f"view {self.view.name}: {self.view.rel(self.view.queries[key])}"
        try:
            res = self.store.select(self.query_text[key], bindings=bindings, rows=rows)
        except KgcultError as e:
            line = getattr(e, "line", None)
            if line:
                raise ViewError(f"{where}:{line}:{getattr(e, 'column', None)}: {e}") from None
            raise ViewError(f"{where}:1: query failed: {e}") from None
        except (OSError, RuntimeError, ValueError, TypeError) as e:
            raise ViewError(f"{where}:1: query failed: {e}") from None
        out = []
        for sol in res:
            row = {}
            for k, t in sol.items():
                row[k] = _value(t)
                if isinstance(t, Literal) and t.language:
                    row[k + "@lang"] = t.language
            out.append(row)
        return out

    def labels(self, entities: Iterable[str], langs: list[str], key: str = "labels") -> dict[str, dict[str, str]]:
        """{entity IRI: {lang: label}}, each requested language through its fallback chain
        (:func:`kgcult.langtags.fallback_chain`: ``zh`` is also read from ``zh-hans``,
        ``zh-hant``, ``zh-cn``, ...; then ``mul``, Wikidata's default for all languages), the
        first language of the chain that has one; several labels in a language -> the
        smallest string."""
        ents = sorted(set(entities))
        res: dict[str, dict[str, str]] = defaultdict(dict)
        if not ents or not langs:
            return res
        chains = {lang: langtags.fallback_chain(lang) for lang in langs}
        fetch = sorted({x for chain in chains.values() for x in chain})
        found: dict[str, dict[str, str]] = defaultdict(dict)
        for r in self.select(key, rows=(["entity", "lang"], [[NamedNode(e), lang] for e in ents for lang in fetch])):
            cur = found[r["entity"]].get(r["lang"])
            text = r["label"] if "label" in r else r["description"]
            if cur is None or text < cur:
                found[r["entity"]][r["lang"]] = text
        for e, by_lang in found.items():
            for lang, chain in chains.items():
                got = next((by_lang[x] for x in chain if x in by_lang), None)
                if got is not None:
                    res[e][lang] = got
        return res

    def choose(self, param: str, known: dict, what: str, source) -> list[str]:
        """The names a list parameter picks among ``known`` (all of them when it is empty);
        an unknown name is an error saying where the known ones are defined."""
        chosen = self.params[param] or list(known)
        for name in chosen:
            if name not in known:
                raise ViewError(f"view {self.view.name}: unknown {what} {name!r}; {source} "
                                f"defines {', '.join(known)}")
        return chosen
