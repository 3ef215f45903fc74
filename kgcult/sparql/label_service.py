"""WDQS's label service (``SERVICE wikibase:label { ... }``) as plain SPARQL, with the
answers WDQS gives (docs/wdqs.md cites the sources: wikimedia/wikidata-query-rdf,
``blazegraph/.../label/LabelService.java`` and ``EmptyLabelServiceOptimizer.java``):

- the service runs after the rest of its group: the label joins are appended at the end
  of the group (BINDs of the group that read a label are moved after them, as WDQS places
  the service before such assignments);
- what it binds: the explicit triples in its body (``?x rdfs:label ?name``, any subject
  and predicate), or, with none, every plain variable ``?fooLabel`` / ``?fooAltLabel`` /
  ``?fooDescription`` the enclosing SELECT projects (nothing under ASK);
- per row: a target the row already binds is left alone; an unbound subject gives an
  unbound target (the subject is replaced by a sentinel IRI that has no labels, so a
  label join can never bind it); otherwise the values of the first listed language that
  has any (several values of that language joined by ", "), else, for ``rdfs:label``
  only, the entity id (``"Q42"``) or the subject's string.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import AbstractSet

from kgcult import vocab
from kgcult.errors import KgcultError
from kgcult.sparql.tokens import Token, blank_out, enclosing_open, matching_close

BD = "http://www.bigdata.com/rdf#"
HELPER = "_kgcultLabel_"  # prefix of every helper variable (SELECT * leaves them out)
UNBOUND = "urn:kgcult:label-service:unbound"  # the subject of a row whose subject is unbound
_LABEL, _DESCRIPTION = vocab.RDFS + "label", vocab.SCHEMA + "description"
_SUFFIXES = (("AltLabel", vocab.SKOS + "altLabel"), ("Label", _LABEL), ("Description", _DESCRIPTION))
_LANGUAGE = re.compile(r"[A-Za-z0-9-]+")


@dataclass(frozen=True)
class Resolution:
    subject: str    # "?x" or "<iri>"
    predicate: str  # IRI
    target: str     # variable name, without "?"


def edits(query: str, tokens: list[Token], i: int, brace: int, resolve, default_language: str,
          serial: list[int], lateral: bool = True) -> list[tuple[int, int, str]]:
    """Edits replacing the label service whose SERVICE keyword is ``tokens[i]`` and whose
    body opens at ``tokens[brace]``. ``resolve(token)`` gives a term token's IRI;
    ``serial`` numbers helper variables across the services of one query. ``lateral``:
    aliases are looked up per row with LATERAL (Oxigraph); without it (a remote endpoint,
    which may not know SPARQL 1.2's LATERAL) with a SPARQL 1.1 subquery joined once."""
    close = matching_close(tokens, brace)
    if close >= len(tokens):
        return []  # unclosed: Oxigraph's parser reports it
    languages, explicit = _body(tokens[brace + 1:close], resolve, default_language)
    group = enclosing_open(tokens, i)
    if group is None:
        return []
    group_close = matching_close(tokens, group)
    if group_close >= len(tokens):
        return []
    wanted = explicit or _automatic(tokens, group)
    end = tokens[close].end
    if close + 1 < group_close and tokens[close + 1].is_punct("."):
        end = tokens[close + 1].end  # `SERVICE wikibase:label { ... } .`
    out = [(tokens[i].start, end, blank_out(query[tokens[i].start:end]))]
    service_span = (i, close + 1)
    targets = {r.target for r in wanted}
    moved, moved_edits, skip = _dependent_binds(query, tokens, group, group_close, targets, service_span)
    out += moved_edits
    own = _own_bindings(tokens, group, group_close, targets, service_span, skip)
    serial[0] += 1
    n = serial[0]
    for k in own:
        for tok in own[k]:
            out.append((tok.start, tok.end, f"?{HELPER}own{n}_{k}"))
    bound = _always_bound(tokens, group, group_close, service_span)
    block = _block(wanted, languages, n, set(own), lateral, bound)
    at = tokens[group_close].start
    out.append((at, at, " " + block + " ".join(moved) + " "))
    return out


# -- the service's body ------------------------------------------------------------------


def _body(body: list[Token], resolve, default_language: str):
    """(languages in order, explicit resolutions) of a label service's body."""
    languages: list[str] = []
    explicit: list[Resolution] = []
    triples, k = [], 0
    subject = None
    while k < len(body):
        tok = body[k]
        if tok.is_punct("."):
            subject, k = None, k + 1
            continue
        if tok.is_punct(";", ","):
            k += 1
            continue
        if subject is None:
            subject, k = tok, k + 1
            continue
        if k + 1 >= len(body):
            raise KgcultError(f"the label service's body is not a list of triples near {tok.text!r}")
        triples.append((subject, tok, body[k + 1]))
        k += 2
    found_param = False
    for s, p, o in triples:
        if resolve(s) == BD + "serviceParam":
            if resolve(p) == vocab.WIKIBASE + "language":
                found_param = True
                if o.kind != "string":
                    raise KgcultError("the label service's wikibase:language must be a string literal "
                                      f"(got {o.text})")
                languages.append(o.text.strip("\"'"))
            continue
        if o.kind != "var":
            raise KgcultError(f"the label service binds variables: {s.text} {p.text} {o.text} has no variable "
                              "in the object position (WDQS refuses it too)")
        predicate = resolve(p)
        if predicate is None:
            raise KgcultError(f"the label service's predicate {p.text} is not an IRI")
        if s.kind == "var":
            target = s.text
        elif resolve(s) is not None:
            target = f"<{resolve(s)}>"
        else:
            raise KgcultError(f"the label service's subject {s.text} is neither a variable nor an IRI")
        explicit.append(Resolution(target, predicate, o.text[1:]))
    if not found_param:
        raise KgcultError("the label service needs a language: SERVICE wikibase:label { bd:serviceParam "
                          'wikibase:language "en" } (WDQS: "You must provide the label service a list of '
                          'languages")')
    langs: list[str] = []
    for part in ",".join(languages).split(","):
        part = part.strip()
        if part.upper() == "[AUTO_LANGUAGE]":
            part = default_language
        part = part.lower()
        if part and _LANGUAGE.fullmatch(part) and part not in langs:
            langs.append(part)
    return langs, explicit


def _automatic(tokens: list[Token], group: int) -> list[Resolution]:
    """The resolutions WDQS infers from the projection of the (sub)query the service lies
    in: each plain projected ?fooAltLabel, ?fooLabel, ?fooDescription."""
    b: int | None = group
    while b is not None:
        select = _select_of(tokens, b)
        if select is not None:
            break
        b = enclosing_open(tokens, b)
    if b is None:  # the service is not under a SELECT: ASK gets nothing; others their variables
        form = next((t for t in tokens if t.is_word("SELECT", "ASK", "CONSTRUCT", "DESCRIBE")), None)
        if form is None or form.is_word("ASK"):
            return []
        names = _names([t for t in tokens if t.kind == "var"])
    else:
        assert select is not None  # the walk up stopped at this SELECT
        head = tokens[select + 1:b]
        if any(t.is_punct("*") for t in head):
            names = _names([t for t in tokens[b:matching_close(tokens, b)] if t.kind == "var"])
        else:
            names, depth = [], 0
            for t in head:
                if t.is_punct("("):
                    depth += 1
                elif t.is_punct(")"):
                    depth -= 1
                elif depth == 0 and t.kind == "var" and t.text[1:] not in names:
                    names.append(t.text[1:])
    out = []
    for name in names:
        for suffix, predicate in _SUFFIXES:
            if name.endswith(suffix) and len(name) > len(suffix):
                out.append(Resolution("?" + name[:-len(suffix)], predicate, name))
                break
    return out


def _names(var_tokens: list[Token]) -> list[str]:
    out: list[str] = []
    for t in var_tokens:
        if t.text[1:] not in out and not t.text[1:].startswith(HELPER):
            out.append(t.text[1:])
    return out


def _select_of(tokens: list[Token], brace: int) -> int | None:
    """Index of the SELECT whose WHERE clause opens at ``tokens[brace]``, if it is one."""
    j = brace - 1
    while j >= 0:
        t = tokens[j]
        if t.is_word("SELECT"):
            return j
        if t.is_punct(")"):
            depth = 0
            while j >= 0:
                if tokens[j].is_punct(")"):
                    depth += 1
                elif tokens[j].is_punct("("):
                    depth -= 1
                    if depth == 0:
                        break
                j -= 1
            j -= 1
            continue
        if t.kind in ("var", "iri", "pname") or t.is_punct("*") or t.is_word("WHERE", "DISTINCT", "REDUCED",
                                                                               "FROM", "NAMED"):
            j -= 1
            continue
        return None
    return None


# -- the group around it ---------------------------------------------------------------------


def _top_level(tokens: list[Token], group: int, group_close: int):
    """(index, end) of each element of the group that starts with a keyword FILTER or
    BIND directly inside it: the end is past its parenthesized part."""
    j = group + 1
    while j < group_close:
        t = tokens[j]
        if t.is_punct("{"):
            j = matching_close(tokens, j) + 1
            continue
        if t.is_word("FILTER", "BIND"):
            k = j + 1
            while k < group_close and not tokens[k].is_punct("(", "{"):
                k += 1  # FILTER regex(...), FILTER NOT EXISTS { ... }
            end = matching_close(tokens, k) + 1 if k < group_close else k
            yield j, min(end, group_close)
            j = end
            continue
        j += 1


def _dependent_binds(query, tokens, group, group_close, targets, service_span):
    """BINDs directly in the group whose expression reads a label (or what such a BIND
    defines): blanked where they are, to be appended after the label joins."""
    reads = set(targets)
    moved, out, skip = [], [], []
    for j, end in _top_level(tokens, group, group_close):
        if not tokens[j].is_word("BIND") or service_span[0] <= j < service_span[1]:
            continue
        inner = tokens[j:end]
        as_at = max((k for k, t in enumerate(inner) if t.is_word("AS")), default=None)
        if as_at is None or as_at + 1 >= len(inner):
            continue
        used = {t.text[1:] for t in inner[:as_at] if t.kind == "var"}
        if used & reads:
            stop = tokens[end - 1].end
            if end < group_close and tokens[end].is_punct("."):
                stop = tokens[end].end
            moved.append(query[tokens[j].start:tokens[end - 1].end])
            out.append((tokens[j].start, stop, blank_out(query[tokens[j].start:stop])))
            reads.add(inner[as_at + 1].text[1:])
            skip.append((j, end))
    return moved, out, skip


def _own_bindings(tokens: list[Token], group: int, group_close: int, targets, service_span,
                  skip) -> dict[str, list[Token]]:
    """{target: its tokens to rename} for each target the query binds itself in the group
    (it occurs outside the service, the moved BINDs and the FILTERs directly in the
    group). Those occurrences, FILTERs included (they read the query's own value, as on
    WDQS, where the service never overwrites a bound variable), are renamed."""
    filters = [(j, end) for j, end in _top_level(tokens, group, group_close) if tokens[j].is_word("FILTER")]
    seen: dict[str, list[Token]] = {}
    binding: set[str] = set()
    for k in range(group + 1, group_close):
        t = tokens[k]
        if t.kind != "var" or t.text[1:] not in targets or any(a <= k < b for a, b in [service_span, *skip]):
            continue
        seen.setdefault(t.text[1:], []).append(t)
        if not any(a <= k < b for a, b in filters):
            binding.add(t.text[1:])
    return {name: toks for name, toks in seen.items() if name in binding}


# -- the label joins -------------------------------------------------------------------------


def _always_bound(tokens: list[Token], group: int, group_close: int, service_span) -> set[str]:
    """Variables of triple patterns directly in the group (not in a nested group, an
    expression or a VALUES header): bound in every row the group gives."""
    out: set[str] = set()
    j, parens = group + 1, 0
    while j < group_close:
        t = tokens[j]
        if t.is_punct("{") or (t.kind == "values"):
            j = (matching_close(tokens, j) + 1) if t.is_punct("{") else j + 1
            continue
        if service_span[0] <= j < service_span[1]:
            j = service_span[1]
            continue
        if t.is_punct("("):
            parens += 1
        elif t.is_punct(")"):
            parens -= 1
        elif t.kind == "var" and parens == 0 and not tokens[j - 1].is_word("VALUES"):
            out.add(t.text)
        j += 1
    return out


def _block(wanted: list[Resolution], languages: list[str], n: int, own: set[str], lateral: bool,
           bound: AbstractSet[str] = frozenset()) -> str:
    parts: list[str] = []
    subjects: dict[str, str] = {}
    for r in wanted:
        if r.subject.startswith("?") and r.subject in bound:
            subjects[r.subject] = r.subject  # bound in every row: looked up directly
        if r.subject not in subjects:
            helper = f"?{HELPER}s{n}_{len(subjects)}"
            subjects[r.subject] = helper
            # an unbound subject becomes an IRI without labels: no label join can bind it
            parts.append(f"BIND(COALESCE({r.subject}, <{UNBOUND}>) AS {helper})")
    for k, r in enumerate(wanted):
        s = subjects[r.subject]
        value = f"?{HELPER}v{n}_{k}"
        pred = f"<{r.predicate}>"
        if r.predicate in (_LABEL, _DESCRIPTION):
            # one label per language in Wikidata: a lookup per row and language, the first
            # language found is kept (a later OPTIONAL on the same variable cannot match)
            parts += [f'OPTIONAL {{ {s} {pred} {value} FILTER(LANG({value}) = "{lang}") }}' for lang in languages]
        else:
            # every value of a language joined by ", ", looked up per row (LATERAL); one
            # variable per language (a LATERAL subquery may not project a bound variable).
            # The language tag is set explicitly: SPARQL 1.1's GROUP_CONCAT gives a plain
            # string (Virtuoso), Oxigraph keeps a tag its values share
            a = f"?{HELPER}a{n}_{k}"
            per_language = [f"{value}_{m}" for m in range(len(languages))]
            lookups = [f'OPTIONAL {{ SELECT {s} (STRLANG(STR(GROUP_CONCAT({a}; separator=", ")), "{lang}") AS {v}) '
                       f'WHERE {{ {s} {pred} {a} FILTER(LANG({a}) = "{lang}") }} GROUP BY {s} }}'
                       for v, lang in zip(per_language, languages)]
            parts += [f"LATERAL {{ {x} }}" for x in lookups] if lateral else lookups
        choices = [f"?{HELPER}own{n}_{r.target}"] if r.target in own else []
        choices += per_language if r.predicate not in (_LABEL, _DESCRIPTION) else [value]
        if r.predicate == _LABEL:
            subj = r.subject
            choices.append(f'IF(isIRI({subj}) && STRSTARTS(STR({subj}), "{vocab.WD}"), '
                           f'STRAFTER(STR({subj}), "{vocab.WD}"), STR({subj}))')
        parts.append(f"BIND(COALESCE({', '.join(choices)}) AS ?{r.target})")
    return " ".join(parts) + " "


__all__ = ["edits", "HELPER", "UNBOUND", "Resolution"]
