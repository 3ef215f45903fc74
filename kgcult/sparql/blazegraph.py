"""Blazegraph idioms in queries pasted from WDQS (docs/wdqs.md lists them):

- named subqueries, ``WITH { SELECT ... } AS %name`` ... ``INCLUDE %name``, become plain
  subqueries at the place of each INCLUDE (:func:`named_subqueries`; the same solutions:
  a named subquery is evaluated on its own and joined where it is included, as a SPARQL
  subquery is);
- query hints (``hint:Query hint:optimizer "None" .``, ``hint:Prior hint:runFirst true .``)
  that only steer the planner are dropped (:func:`hint_edits`); those that change answers
  (``ontology/wdqs-services.ttl``, ``kgc:BlazegraphHint``) are refused, named;
- functions WDQS adds to Blazegraph (``geof:distance``, ``wikibase:decodeUri``, ...) and
  Blazegraph's ``LET (?x := ...)`` are refused, named (:func:`refuse`): Oxigraph would
  evaluate an unknown function to an error and silently drop values.
"""
from __future__ import annotations

from functools import lru_cache

from kgcult import ontology, vocab
from kgcult.errors import KgcultError
from kgcult.sparql import nesting
from kgcult.sparql.tokens import Token, blank_out, matching_close, tokenize

HINT = "http://www.bigdata.com/queryHints#"
# characters a query may grow to when its named subqueries are written out: each INCLUDE
# copies a body, so twenty levels that each include the one before twice would grow a
# 1.6 KB text a million-fold; refused (named) before the copies are made
MAX_EXPANDED = 1 << 20


@lru_cache(maxsize=1)
def _named(type_name: str) -> dict[str, str]:
    """{IRI: what it is} of the resources of ``ontology/wdqs-services.ttl`` of a type."""
    out = {}
    for subject, p in ontology.of_type("wdqs-services.ttl", vocab.KGC + type_name).items():
        comment = p.get(vocab.RDFS + "comment", [None])[0]
        out[subject.value] = comment.value if comment is not None else subject.value
    return out


def named_subqueries(query: str) -> str:
    """The query with Blazegraph's named subqueries written as SPARQL subqueries (the
    query unchanged when it has none). Raises KgcultError when the written-out query would
    pass :data:`MAX_EXPANDED` characters (or four times the query's own length, if more)
    or nest deeper than the engine can take (:func:`kgcult.sparql.nesting.check` on the
    written-out text: each INCLUDE adds a level the text as written does not show)."""
    if "INCLUDE" not in query.upper():
        return query
    tokens = tokenize(query)
    bodies: dict[str, str] = {}
    budget = _Budget(max(MAX_EXPANDED, 4 * len(query)))
    edits: list[tuple[int, int, str]] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.is_word("WITH") and i + 1 < len(tokens) and tokens[i + 1].is_punct("{"):
            close = matching_close(tokens, i + 1)
            name_at = close + 3
            if close >= len(tokens) or name_at >= len(tokens) or not tokens[close + 1].is_word("AS") \
                    or tokens[close + 2].text != "%" or tokens[name_at].kind != "word":
                raise KgcultError("a named subquery is written WITH { SELECT ... } AS %name "
                                  f"(near offset {tok.start})")
            name = tokens[name_at].text
            body = _include(query[tokens[i + 1].end:tokens[close].start], bodies, budget)
            bodies[name] = body
            edits.append((tok.start, tokens[name_at].end, blank_out(query[tok.start:tokens[name_at].end])))
            i = name_at + 1
            continue
        if tok.is_word("INCLUDE") and i + 2 < len(tokens) and tokens[i + 1].text == "%":
            name = tokens[i + 2].text
            if name not in bodies:
                raise KgcultError(f"INCLUDE %{name}: no named subquery %{name} is defined before it "
                                  "(WITH { SELECT ... } AS %" + name + ")")
            budget.spend(len(bodies[name]) + 4)
            edits.append((tok.start, tokens[i + 2].end, "{ " + bodies[name] + " }"))
            i += 3
            continue
        i += 1
    if not edits:
        return query
    parts, at = [], 0
    for start, end, new in edits:
        parts += [query[at:start], new]
        at = end
    parts.append(query[at:])
    out = "".join(parts)
    nesting.check(out, "query (its named subqueries written out)")
    return out


class _Budget:
    """Characters the named-subquery copies may still add."""

    def __init__(self, limit: int):
        self.limit = self.left = limit

    def spend(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise KgcultError(f"the query's named subqueries (WITH {{ ... }} AS %name / INCLUDE %name) would "
                              f"grow it past {self.limit} characters when written out: each INCLUDE copies the "
                              "subquery it names; include each one fewer times")


def _include(text: str, bodies: dict[str, str], budget: _Budget) -> str:
    """A named subquery's body with the INCLUDEs of earlier ones substituted."""
    if "INCLUDE" not in text.upper():
        return text
    tokens = tokenize(text)
    out, at = [], 0
    for i, tok in enumerate(tokens[:-2]):
        if tok.is_word("INCLUDE") and tokens[i + 1].text == "%":
            name = tokens[i + 2].text
            if name not in bodies:
                raise KgcultError(f"INCLUDE %{name}: no named subquery %{name} is defined before it")
            budget.spend(len(bodies[name]) + 4)
            out += [text[at:tok.start], "{ " + bodies[name] + " }"]
            at = tokens[i + 2].end
    out.append(text[at:])
    return "".join(out)


def refuse(tokens: list[Token], resolve) -> None:
    """Raise KgcultError naming the first Blazegraph-only construct kgcult cannot answer
    faithfully: a WDQS function, LET, a query hint that changes answers."""
    functions = _named("WdqsFunction")
    hints = _named("BlazegraphHint")
    for i, tok in enumerate(tokens):
        if tok.is_word("LET") and i + 1 < len(tokens) and tokens[i + 1].is_punct("("):
            raise KgcultError("LET (?x := ...) is Blazegraph syntax, not SPARQL: write BIND(expression AS ?x)")
        if tok.kind not in ("iri", "pname"):
            continue
        iri = resolve(tok)
        if iri in functions and i + 1 < len(tokens) and tokens[i + 1].is_punct("("):
            raise KgcultError(f"<{iri}> is a WDQS function kgcult does not provide: {functions[iri]}")
        if iri in hints:
            raise KgcultError(f"{tok.text} is a Blazegraph query hint kgcult does not provide: {hints[iri]} "
                              "(hints that only steer the query planner are dropped)")


def hint_edits(query: str, tokens: list[Token], resolve) -> list[tuple[int, int, str]]:
    """Blank out every triple whose subject is a ``hint:`` term (up to its ``.``)."""
    edits = []
    for i, tok in enumerate(tokens):
        iri = resolve(tok) if tok.kind in ("pname", "iri") else None
        if not iri or not iri.startswith(HINT):
            continue
        if i and not _starts_pattern(tokens, i):
            continue  # a hint term as a predicate or object: left to Oxigraph (a plain IRI)
        end = i + 3
        if end > len(tokens):
            continue
        stop = tokens[end - 1].end
        if end < len(tokens) and tokens[end].is_punct("."):
            stop = tokens[end].end
        edits.append((tok.start, stop, blank_out(query[tok.start:stop])))
    return edits


def _starts_pattern(tokens: list[Token], i: int) -> bool:
    """Whether ``tokens[i]`` can begin a triple pattern, wherever WDQS accepts a hint: after
    ``{``, ``.`` or ``}``, after a VALUES data block, after ``BIND(...)`` or
    ``FILTER(...)`` / ``FILTER fn(...)`` (before, a hint there stayed in the query as an
    ordinary triple pattern, matched nothing and emptied the answer without a word)."""
    prev = tokens[i - 1]
    if prev.is_punct("{", ".", "}") or prev.kind == "values":
        return True
    if not prev.is_punct(")"):
        return False
    depth, k = 0, i - 1
    while k >= 0:  # the "(" that this ")" closes
        if tokens[k].is_punct(")"):
            depth += 1
        elif tokens[k].is_punct("("):
            depth -= 1
            if depth == 0:
                break
        k -= 1
    if k <= 0:
        return False
    before = tokens[k - 1]
    if before.is_word("BIND", "FILTER"):
        return True
    return before.kind in ("word", "pname", "iri") and k >= 2 and tokens[k - 2].is_word("FILTER")


__all__ = ["named_subqueries", "refuse", "hint_edits", "HINT"]
