"""Per-row lookups: label triples joined onto rows a query already has, evaluated as one
index lookup per row instead of a scan of every label.

A WDQS query typically finds a few hundred entities and then joins their labels::

    ?dish wdt:P527 ?ingredient .
    ?ingredient rdfs:label ?ingredientLabel .

Oxigraph may plan the second pattern as a hash join that reads every ``rdfs:label`` triple
of the store (about a million on the stand-in), which costs more than the rest of the query.
When the pattern's subject variable is already bound by what precedes it in the same group,
:func:`lateral_edits` wraps it as ``LATERAL { ?ingredient rdfs:label ?ingredientLabel . }``:
Oxigraph then substitutes each row's ingredient and reads only its labels. For a single
triple pattern LATERAL and a join give the same solutions (the pattern is evaluated with
the row's bindings substituted, then joined with the row), so answers do not change; only
where the lookup is made does.

Which predicates qualify is data: ``ontology/lookup-predicates.ttl``.
"""
from __future__ import annotations

from functools import lru_cache

from kgcult import ontology, vocab
from kgcult.sparql.tokens import Token, enclosing_open, matching_close

# blocks whose variables may be unbound in the group's rows (or are not the group's at all)
_NOT_BINDING = ("OPTIONAL", "MINUS", "EXISTS", "SERVICE")
# query forms whose templates are not graph patterns (LATERAL is not allowed there)
_NOT_A_PATTERN = ("CONSTRUCT", "DESCRIBE", "INSERT", "DELETE", "LOAD", "CLEAR", "DROP")


@lru_cache(maxsize=1)
def lookup_predicates() -> frozenset[str]:
    """IRIs of the predicates looked up per row (``ontology/lookup-predicates.ttl``)."""
    return frozenset(s.value for s in ontology.of_type("lookup-predicates.ttl",
                                                       vocab.KGC + "LookupPredicate"))


def lateral_edits(tokens: list[Token], resolve) -> list[tuple[int, int, str]]:
    """Insertions ``(offset, offset, text)`` wrapping each qualifying triple pattern in
    ``LATERAL { ... }``. ``resolve(token)`` gives a term token's IRI (None if it has none).

    A triple pattern qualifies when it is a whole statement ``?s <p> ?o .`` (or the last one
    of its group; after a FILTER, BIND or VALUES too), ``<p>`` is a lookup predicate, and
    ``?s`` is bound by a pattern or a VALUES block (with no UNDEF) that precedes it in the
    same group outside OPTIONAL, MINUS, EXISTS and SERVICE blocks and outside expressions.
    Anything less plain is left as written. A label joined after others looked up so must
    be looked up so too: Oxigraph 0.5 plans such a join after two LATERALs so badly that
    a FmLAMA-shaped query with its country bound by VALUES took 656 s instead of 0.14 s."""
    if any(t.is_word(*_NOT_A_PATTERN) for t in tokens):
        return []
    predicates = lookup_predicates()
    edits = []
    for k in range(1, len(tokens) - 3):
        s, p, o, end = tokens[k], tokens[k + 1], tokens[k + 2], tokens[k + 3]
        if s.kind != "var" or o.kind != "var" or not end.is_punct(".", "}"):
            continue
        if not (tokens[k - 1].is_punct("{", ".", "}") or tokens[k - 1].kind == "values"
                or _after_expression(tokens, k - 1)) or resolve(p) not in predicates:
            continue
        group = enclosing_open(tokens, k)
        if group is None or _in_service(tokens, group) or not _bound_before(tokens, group, k, s.text):
            continue
        close_at = end.end if end.text == "." else o.end
        edits += [(s.start, s.start, "LATERAL { "), (close_at, close_at, " }")]
    return edits


def _after_expression(tokens: list[Token], close: int) -> bool:
    """Whether ``tokens[close]`` is the ``)`` that ends a FILTER or BIND statement: a
    pattern after it starts a statement of its own (a label joined after a FILTER on the
    labels before it, as FmLAMA-shaped queries write them)."""
    if not tokens[close].is_punct(")"):
        return False
    depth = 0
    for j in range(close, -1, -1):
        t = tokens[j]
        if t.is_punct(")"):
            depth += 1
        elif t.is_punct("("):
            depth -= 1
            if depth == 0:
                return j > 0 and tokens[j - 1].is_word("FILTER", "BIND")
    return False


def _in_service(tokens: list[Token], group: int | None) -> bool:
    """Whether the group opened at ``tokens[group]`` lies in a SERVICE block."""
    while group is not None:
        before = tokens[max(0, group - 3):group]
        if any(t.is_word("SERVICE") for t in before):
            return True
        group = enclosing_open(tokens, group)
    return False


def _bound_before(tokens: list[Token], group: int, k: int, var: str) -> bool:
    """Whether ``var`` occurs, as a pattern term that binds it in every row, between the
    group's opening brace and ``tokens[k]``."""
    j = group + 1
    while j < k:
        tok = tokens[j]
        if tok.is_word("VALUES"):  # binds its variables in every row, unless a row says UNDEF
            names, j = _values(tokens, j, k)
            if var in names:
                return True
            continue
        if tok.is_punct("("):  # an expression (FILTER, BIND) or a path: binds nothing here
            j = matching_close(tokens, j) + 1
            continue
        if tok.is_word(*_NOT_BINDING):
            j = _skip_block(tokens, j, k)
            continue
        if tok.is_word("SELECT"):  # a subquery: only what it projects is bound
            if _projects(tokens, j, k, var):
                return True
            j = _skip_block(tokens, j, k)  # past its WHERE block
            continue
        if tok.kind == "var" and tok.text == var:
            return True
        j += 1
    return False


def _values(tokens: list[Token], j: int, limit: int) -> tuple[set[str], int]:
    """(the variables the VALUES block at ``tokens[j]`` binds in every row, the index past
    it): none when a row leaves one UNDEF (``bind_values`` puts kgcult's bindings first in
    the WHERE group so: ``VALUES (?country) { (wd:Q142) }``)."""
    names: set[str] = set()
    j += 1
    if j < limit and tokens[j].is_punct("("):
        close = matching_close(tokens, j)
        names = {t.text for t in tokens[j + 1:close] if t.kind == "var"}
        j = close + 1
    elif j < limit and tokens[j].kind == "var":
        names = {tokens[j].text}
        j += 1
    if j < limit and tokens[j].kind == "values":  # the data block, one token (tokens.tokenize)
        return (set() if "UNDEF" in tokens[j].text.upper() else names), j + 1
    j = _next_brace(tokens, j, limit)
    if j >= limit:
        return set(), limit
    close = matching_close(tokens, j)
    if any(t.is_word("UNDEF") for t in tokens[j:close]):
        names = set()
    return names, close + 1


def _skip_block(tokens: list[Token], j: int, limit: int) -> int:
    """Index past the ``{ ... }`` block that the keyword at ``tokens[j]`` introduces."""
    j = _next_brace(tokens, j, limit)
    return matching_close(tokens, j) + 1 if j < limit else limit


def _projects(tokens: list[Token], select: int, k: int, var: str) -> bool:
    j = select + 1
    while j < k and not tokens[j].is_punct("{") and not tokens[j].is_word("WHERE"):
        if tokens[j].is_punct("*"):
            return _bound_before(tokens, _next_brace(tokens, j, k), k, var)
        if tokens[j].is_punct("("):
            j = matching_close(tokens, j) + 1
            continue
        if tokens[j].kind == "var" and tokens[j].text == var:
            return True
        j += 1
    return False


def _next_brace(tokens: list[Token], j: int, limit: int) -> int:
    """Index of the first ``{`` at or after ``j`` (``limit`` if there is none before it)."""
    while j < limit and not tokens[j].is_punct("{"):
        j += 1
    return j


__all__ = ["lateral_edits", "lookup_predicates"]
