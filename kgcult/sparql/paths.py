"""Property paths answered from kgcult's closure (the derived properties).

``kgcult closure`` materializes the paths declared in ``ontology/closures.ttl`` as derived
properties (``x (wdt:P31|wdt:P279)+ y`` as ``x kgc:typedAs y``). This module reads a
property path from a query's tokens and replaces each part that a closure materializes by
the derived property, only where the answers are provably the same:

- ``(p|q)+`` -> ``D`` when a spec's steps are {p, q} and it has no first property: both
  give each (x, y) pair once (SPARQL's ``+`` yields distinct nodes per start).
- ``(p|q)*`` -> ``D?``: ``*`` is the zero-length match plus ``+``; ``?`` has the same
  zero-length semantics (and distinct answers) as ``*``.
- ``f/(p|q)*`` -> the derived property of a spec with first property f (the instance
  typing) only where duplicates do not count (ASK, CONSTRUCT, SELECT DISTINCT without
  aggregates): the sequence yields one row per intermediate class, the closure one per
  pair. Elsewhere its ``(p|q)*`` part is still answered as ``D?``.

The specs are data: a new one in closures.ttl is used here without a code change.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from kgcult import ontology, vocab
from kgcult.sparql.tokens import Token

RDF_TYPE = vocab.RDF + "type"

# path nodes: ("iri", IRI) ("inv", node) ("alt", nodes) ("seq", nodes) ("mod", node, "+*?")
# ("neg", source text of a negated property set, kept as written)


@dataclass(frozen=True)
class ClosureTable:
    """The closure specs as path shapes: {frozenset(step IRIs): derived IRI} for the
    transitive ones, {(first IRI, frozenset(step IRIs)): derived IRI} for the others."""
    transitive: dict
    first_then_steps: dict


@lru_cache(maxsize=4)
def closure_table(name_or_path: str = "closures.ttl") -> ClosureTable:
    k = vocab.KGC
    transitive, first_then = {}, {}
    for _, p in ontology.of_type(name_or_path, k + "ClosureSpec").items():
        if k + "derivedProperty" not in p or k + "stepProperty" not in p:
            continue  # hierarchy.load_specs reports an incomplete spec
        steps = frozenset(o.value for o in p[k + "stepProperty"])
        derived = p[k + "derivedProperty"][0].value
        if k + "firstProperty" in p:
            first_then[(p[k + "firstProperty"][0].value, steps)] = derived
        else:
            transitive[steps] = derived
    return ClosureTable(transitive, first_then)


class _Parser:
    """SPARQL 1.1's Path grammar over tokens (PathAlternative down to PathPrimary)."""

    def __init__(self, tokens: list[Token], resolve: Callable[[str], str | None]):
        self.t, self.resolve = tokens, resolve

    def alternative(self, i):
        first = self.sequence(i)
        if first is None:
            return None
        items, i = [first[0]], first[1]
        while i < len(self.t) and self.t[i].is_punct("|"):
            nxt = self.sequence(i + 1)
            if nxt is None:
                return None
            items.append(nxt[0])
            i = nxt[1]
        return (items[0] if len(items) == 1 else ("alt", tuple(items))), i

    def sequence(self, i):
        first = self.elt_or_inverse(i)
        if first is None:
            return None
        items, i = [first[0]], first[1]
        while i < len(self.t) and self.t[i].is_punct("/"):
            nxt = self.elt_or_inverse(i + 1)
            if nxt is None:
                return None
            items.append(nxt[0])
            i = nxt[1]
        return (items[0] if len(items) == 1 else ("seq", tuple(items))), i

    def elt_or_inverse(self, i):
        if i < len(self.t) and self.t[i].is_punct("^"):
            inner = self.elt(i + 1)
            return None if inner is None else (("inv", inner[0]), inner[1])
        return self.elt(i)

    def elt(self, i):
        prim = self.primary(i)
        if prim is None:
            return None
        node, i = prim
        if i < len(self.t) and self.t[i].is_punct("*", "+", "?"):
            return ("mod", node, self.t[i].text), i + 1
        return node, i

    def primary(self, i):
        if i >= len(self.t):
            return None
        tok = self.t[i]
        if tok.kind in ("iri", "pname"):
            iri = tok.text[1:-1] if tok.kind == "iri" else self.resolve(tok.text)
            return (None if iri is None else (("iri", iri), i + 1))
        if tok.kind == "word" and tok.text == "a":
            return ("iri", RDF_TYPE), i + 1
        if tok.is_punct("!"):
            j = i + 1
            if j < len(self.t) and self.t[j].is_punct("("):
                depth = 0
                while j < len(self.t):
                    depth += self.t[j].is_punct("(") - self.t[j].is_punct(")")
                    j += 1
                    if depth == 0:
                        break
            else:
                j += 2 if j < len(self.t) and self.t[j].is_punct("^") else 1
            return ("neg", tuple(t.text for t in self.t[i:j])), j
        if tok.is_punct("("):
            inner = self.alternative(i + 1)
            if inner is None or inner[1] >= len(self.t) or not self.t[inner[1]].is_punct(")"):
                return None
            return inner[0], inner[1] + 1
        return None


def parse(tokens: list[Token], i: int, resolve: Callable[[str], str | None]):
    """(path node, index after it) for the path starting at ``tokens[i]``, or None."""
    return _Parser(tokens, resolve).alternative(i)


def _iri_set(node) -> frozenset | None:
    if node[0] == "iri":
        return frozenset([node[1]])
    if node[0] == "alt" and all(n[0] == "iri" for n in node[1]):
        return frozenset(n[1] for n in node[1])
    return None


def substitute(node, table: ClosureTable, duplicates_matter: bool, top: bool = True):
    """The path with every part a closure materializes replaced (see the module doc)."""
    kind = node[0]
    if kind == "mod" and node[2] in "+*":
        derived = table.transitive.get(_iri_set(node[1]))
        if derived:
            return ("iri", derived) if node[2] == "+" else ("mod", ("iri", derived), "?")
    if (top and not duplicates_matter and kind == "seq" and len(node[1]) == 2
            and node[1][0][0] == "iri" and node[1][1][0] == "mod" and node[1][1][2] == "*"):
        steps = _iri_set(node[1][1][1])
        derived = table.first_then_steps.get((node[1][0][1], steps))
        if derived:
            return ("iri", derived)
    if kind in ("alt", "seq"):
        return (kind, tuple(substitute(n, table, duplicates_matter, False) for n in node[1]))
    if kind == "inv":
        return ("inv", substitute(node[1], table, duplicates_matter, False))
    if kind == "mod":
        return ("mod", substitute(node[1], table, duplicates_matter, False), node[2])
    return node


def has_closure_shape(node) -> bool:
    """True when the path has a ``+`` or ``*`` part (something a closure might answer)."""
    kind = node[0]
    if kind == "mod":
        return node[2] in "+*" or has_closure_shape(node[1])
    if kind in ("alt", "seq"):
        return any(has_closure_shape(n) for n in node[1])
    if kind == "inv":
        return has_closure_shape(node[1])
    return False


def serialize(node) -> str:
    kind = node[0]
    if kind == "iri":
        return f"<{node[1]}>"
    if kind == "neg":
        return " ".join(node[1])
    if kind == "inv":
        return "^" + _wrapped(node[1])
    if kind == "mod":
        return _wrapped(node[1]) + node[2]
    sep = "|" if kind == "alt" else "/"
    return "(" + sep.join(serialize(n) for n in node[1]) + ")"


def _wrapped(node) -> str:
    text = serialize(node)
    return text if node[0] in ("iri", "alt", "seq") else f"({text})"


__all__ = ["ClosureTable", "closure_table", "parse", "substitute", "has_closure_shape", "serialize"]
