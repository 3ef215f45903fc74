"""WDQS drop-in: the preparation step every query goes through before it is evaluated
(``kgcult sparql``, views, the Python API, ``kgcult serve``, remote reads).

``prepare(query, closure_fresh=...)`` reads the query's tokens and

1. refuses every ``SERVICE`` but the label service (kgcult never sends a request because a
   query asked it to: no server-side request forgery); WDQS's own services that kgcult
   cannot provide (``wikibase:mwapi``, ``wikibase:around``, ...) are named as such;
2. rewrites ``SERVICE wikibase:label { ... }`` into plain SPARQL with WDQS's answers
   (:mod:`kgcult.sparql.label_service`);
3. rewrites Blazegraph's named subqueries, drops planner hints and refuses, named, the
   Blazegraph-only constructs it cannot answer (:mod:`kgcult.sparql.blazegraph`);
4. evaluates label triples joined onto rows the query already has as one lookup per row
   (``LATERAL``, :mod:`kgcult.sparql.lookups`) when Oxigraph evaluates the query here;
5. answers property paths that a closure spec materializes from the closure, when it
   is fresh (``closure_fresh=True``); stale (False): the path is evaluated as written and a
   notice says so; None (a remote store, a query restricted to a graph): never.

Everything it does not rewrite stays where it was, character for character (deleted spans
become spaces), so a syntax error Oxigraph reports points into the query as written.
:data:`PREFIXES` are WDQS's predeclared prefixes (``queries/wdqs/prefixes.rq``) plus
kgcult's own; a query's PREFIX declarations override them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import pyoxigraph as ox

from kgcult import ontology, resources, vocab
from kgcult.errors import KgcultError, QuerySyntaxError
from kgcult.sparql import blazegraph, label_service, lookups, nesting, paths, service_guard
from kgcult.sparql.tokens import Token, blank_out, matching_close, tokenize

LABEL_SERVICE = vocab.WIKIBASE + "label"
DEFAULT_LANGUAGE = "en"  # what [AUTO_LANGUAGE] means unless the caller says otherwise

_PREFIX_LINE = re.compile(r"^\s*PREFIX\s+([\w.-]*):\s*<([^>]*)>", re.I | re.M)
_AGGREGATES = {"COUNT", "SUM", "MIN", "MAX", "AVG", "SAMPLE", "GROUP_CONCAT", "GROUP"}
_STRINGS_AND_IRIS = re.compile(r""""(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|<[^<>\s]*>""")
_PNAME_PREFIX = re.compile(r"(?<![\w.:-])([A-Za-z][\w.-]*):")
# every rewrite needs one of these words or characters (SERVICE, UNION, GROUP BY, hint:, a
# path, a label lookup)
_ANYTHING_TO_DO = re.compile(r"(?i)service|union|group|hint|queryhints|label|description|include|let|"
                             r"geo|decodeuri|[+*]")
_HELPER = label_service.HELPER  # helper variables of the label service (SELECT * leaves them out)


def _read_prefixes() -> dict[str, str]:
    text = resources.queries("wdqs", "prefixes.rq").read_text(encoding="utf-8")
    return dict(_PREFIX_LINE.findall(text))


WDQS_PREFIXES: dict[str, str] = _read_prefixes()
PREFIXES: dict[str, str] = {**WDQS_PREFIXES, **vocab.PREFIXES}


@lru_cache(maxsize=1)
def _services() -> dict[str, tuple[bool, str]]:
    """{service IRI: (emulated, what it is)} from ``ontology/wdqs-services.ttl``."""
    k = vocab.KGC
    out = {}
    for subject, p in ontology.of_type("wdqs-services.ttl", k + "WdqsService").items():
        emulated = any(o.value == "true" for o in p.get(k + "emulated", []))
        comment = p.get(vocab.RDFS + "comment", [None])[0]
        out[subject.value] = (emulated, comment.value if comment is not None else "")
    return out


@dataclass
class Prepared:
    """A query ready for evaluation, and what the preparation has to tell its user."""
    text: str
    notices: list[str] = field(default_factory=list)

    @property
    def notice_header(self) -> str:
        """The notices as one HTTP header value (X-Kgcult-Notice)."""
        return " | ".join(n.replace("\n", " ") for n in self.notices)


def prepare(query: str, *, closure_fresh: bool | None = None,
            language: str = DEFAULT_LANGUAGE, closures: str = "closures.ttl") -> Prepared:
    """The query as kgcult evaluates it (see the module doc); raises KgcultError for a
    SERVICE kgcult refuses."""
    if not _ANYTHING_TO_DO.search(query):
        return Prepared(query)  # the common case of kgcult's own queries: nothing to read
    query = blazegraph.named_subqueries(query)
    tokens = tokenize(query)
    if not tokens:
        return Prepared(query)
    prefixes = {**PREFIXES, **_declared(tokens)}

    def resolve(tok: Token) -> str | None:
        return _term_iri(tok, prefixes)

    edits: list[tuple[int, int, str]] = []   # (start, end, replacement) in the query text
    notices: list[str] = []
    # SERVICE: refused unless emulated (checked first: nothing else matters if refused)
    serial = [0]
    for i, tok in enumerate(tokens):
        if tok.is_word("SERVICE"):
            edits += _service(query, tokens, i, prefixes, language, serial, closure_fresh is not None)
    blazegraph.refuse(tokens, resolve)
    edits += blazegraph.hint_edits(query, tokens, resolve)
    edits += _group_by_aliases(query, tokens)
    if closure_fresh is not None:  # evaluated here, by Oxigraph
        edits += _union_subselects(tokens, prefixes)
        edits += lookups.lateral_edits(tokens, resolve)
        path_edits = _paths(tokens, prefixes, closures)
        if path_edits and not closure_fresh:
            notices.append("the closure is stale (data changed since `kgcult closure`): property paths "
                           "are evaluated as written, which is slow; run `kgcult closure`")
        elif path_edits:
            edits += path_edits
    if not edits:
        service_guard.refuse_services(query)  # as the engine reads it (escapes included)
        return Prepared(query, notices)
    text = _apply(query, edits)
    if any("?" + _HELPER in e[2] for e in edits):
        text = _expand_select_star(text)
    service_guard.refuse_services(text)  # whatever the rewriting step did not recognise
    nesting.check(text, "query (as rewritten for the engine)")  # every rewrite may add levels
    return Prepared(text, notices)


def refuse_services(update: str) -> None:
    """Raise KgcultError if a SPARQL update has any SERVICE (an update is never rewritten:
    even the label service is refused there)."""
    tokens = tokenize(update)
    prefixes = {**PREFIXES, **_declared(tokens)}
    for i, tok in enumerate(tokens):
        if tok.is_word("SERVICE"):
            j = i + 2 if i + 1 < len(tokens) and tokens[i + 1].is_word("SILENT") else i + 1
            target = tokens[j] if j < len(tokens) else tok
            iri = _term_iri(target, prefixes)
            raise KgcultError(f"SERVICE {'<' + iri + '>' if iri else target.text} is refused in an update: "
                              "kgcult never sends a request on a query's behalf")


def prefix_prologue(query: str) -> str:
    """PREFIX declarations, on one line, for the predeclared prefixes a query uses without
    declaring them: what a remote endpoint needs in front of the query."""
    tokens = tokenize(query)
    declared = _declared(tokens)
    used = {t.text.split(":", 1)[0] for t in tokens if t.kind == "pname"}
    for t in tokens:
        if t.kind == "values":  # prefixed names among the bound values
            bare = _STRINGS_AND_IRIS.sub(" ", t.text)
            used.update(_PNAME_PREFIX.findall(bare))
    return "".join(f"PREFIX {p}: <{PREFIXES[p]}> " for p in sorted(used)
                   if p in PREFIXES and p not in declared)


def syntax_error(query: str, evaluated: str, exc: SyntaxError) -> QuerySyntaxError:
    """Oxigraph's syntax error as a QuerySyntaxError pointing into ``query`` as written
    (``evaluated`` is what :func:`prepare` made of it)."""
    try:
        query = blazegraph.named_subqueries(query)  # positions are those of the subqueries written out
    except KgcultError:
        pass
    if evaluated != query:  # find the error in the text the user wrote
        try:
            _CHECK.query(query, prefixes=PREFIXES)
        except SyntaxError as original:
            exc = original
        else:
            return QuerySyntaxError(f"kgcult's WDQS rewrite made an invalid query (a bug, please "
                                    f"report it): {exc}", None, None, query)
    for tok in tokenize(query):  # Oxigraph points past an undeclared prefix: point at it
        if tok.kind == "pname" and tok.text.split(":", 1)[0] not in PREFIXES \
                and tok.text.split(":", 1)[0] not in _declared(tokenize(query)):
            line = query.count("\n", 0, tok.start) + 1
            column = tok.start - (query.rfind("\n", 0, tok.start) + 1) + 1
            return QuerySyntaxError.at(query, line, column, f"undeclared prefix {tok.text.split(':', 1)[0]}: "
                                       "(declare it with PREFIX; WDQS's prefixes are predeclared)")
    return QuerySyntaxError.from_oxigraph(query, exc)


_CHECK = ox.Store()  # an empty in-memory store: parses a query, never evaluates one here


# -- prologue -------------------------------------------------------------------------


def _declared(tokens: list[Token]) -> dict[str, str]:
    out = {}
    for i, tok in enumerate(tokens[:-2]):
        if tok.is_word("PREFIX") and tokens[i + 1].kind == "pname" and tokens[i + 2].kind == "iri":
            out[tokens[i + 1].text[:-1]] = tokens[i + 2].text[1:-1]
    return out


def _resolver(prefixes: dict[str, str]):
    def resolve(pname: str) -> str | None:
        p, _, local = pname.partition(":")
        base = prefixes.get(p)
        return None if base is None else base + re.sub(r"\\(.)", r"\1", local)
    return resolve


def _term_iri(tok: Token, prefixes: dict[str, str]) -> str | None:
    if tok.kind == "iri":
        return tok.text[1:-1]
    if tok.kind == "pname":
        return _resolver(prefixes)(tok.text)
    return None


def _apply(query: str, edits: list[tuple[int, int, str]]) -> str:
    parts, at = [], 0
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1])):
        if start < at:
            continue  # overlaps an edit already made (a hint inside a label service)
        parts.append(query[at:start])
        parts.append(new)
        at = end
    parts.append(query[at:])
    return "".join(parts)


# -- SERVICE ----------------------------------------------------------------------------


def _service(query: str, tokens: list[Token], i: int, prefixes: dict, language: str, serial: list[int],
             local: bool = True):
    j = i + 1
    if j < len(tokens) and tokens[j].is_word("SILENT"):
        j += 1
    if j >= len(tokens):
        return []  # a syntax error: Oxigraph's parser reports it
    target = tokens[j]
    if target.kind == "var":
        raise KgcultError(f"SERVICE {target.text} is refused: kgcult never sends a request on a "
                          "query's behalf (only SERVICE wikibase:label is answered, locally)")
    iri = _term_iri(target, prefixes)
    if iri is None:
        return []  # an undeclared prefix: Oxigraph's parser reports it
    known = _services().get(iri)
    if known and known[0] and iri == LABEL_SERVICE:
        if j + 1 >= len(tokens) or not tokens[j + 1].is_punct("{"):
            return []
        body = tokens[j + 2:matching_close(tokens, j + 1)]
        if any(t.kind == "pname" and _term_iri(t, prefixes) is None for t in body):
            return []  # an undeclared prefix: left for Oxigraph's parser to report
        return label_service.edits(query, tokens, i, j + 1, lambda t: _term_iri(t, prefixes), language,
                                   serial, lateral=local)
    if known:
        raise KgcultError(f"SERVICE <{iri}> is a WDQS feature kgcult does not provide: {known[1]} "
                          "(kgcult never sends a request on a query's behalf; only SERVICE "
                          "wikibase:label is emulated)")
    raise KgcultError(f"SERVICE <{iri}> is refused: kgcult never sends a request on a query's "
                      "behalf (only SERVICE wikibase:label is answered, locally)")


def _expand_select_star(text: str) -> str:
    """``SELECT *`` at the top of a query whose label service needed helper variables:
    list the query's own variables instead, so the helpers stay out of the answer."""
    tokens = tokenize(text)
    for i, tok in enumerate(tokens):
        if tok.is_word("SELECT"):
            j = i + 1
            if j < len(tokens) and tokens[j].is_word("DISTINCT", "REDUCED"):
                j += 1
            if j < len(tokens) and tokens[j].is_punct("*"):
                names: list[str] = []
                for t in tokens[j + 1:]:
                    if t.kind == "var" and not t.text[1:].startswith(_HELPER) and t.text[1:] not in names:
                        names.append(t.text[1:])
                star = tokens[j]
                return text[:star.start] + " ".join("?" + n for n in names) + text[star.end:]
            return text
    return text


# -- UNION evaluated on its own ------------------------------------------------------------


def _union_subselects(tokens: list[Token], prefixes: dict):
    """``{A} UNION {B} ...`` -> ``{ SELECT * WHERE { {A} UNION {B} ... } }``: the same
    solutions (a group and ``SELECT *`` of it bind the same variables), but Oxigraph then
    evaluates the union once and joins it, instead of once per row of what precedes it
    (FmLAMA's origin union: 17 s -> 13 ms on the stand-in).

    Only where every branch names an entity or a literal (so evaluating it alone is cheap)
    and the query has no VALUES (whose bindings would no longer narrow the union)."""
    if any(t.is_word("VALUES") for t in tokens):
        return []
    edits = []
    done: set[int] = set()
    for u, tok in enumerate(tokens):
        if not tok.is_word("UNION") or u in done or not tokens[u - 1].is_punct("}"):
            continue
        start = _group_open(tokens, u - 1)
        if start is None:
            continue
        end = u
        while end < len(tokens) and tokens[end].is_word("UNION"):
            done.add(end)
            if end + 1 >= len(tokens) or not tokens[end + 1].is_punct("{"):
                return []  # malformed: leave the query to Oxigraph's parser
            end = matching_close(tokens, end + 1) + 1
        if end > len(tokens):
            return []
        if not _branches_anchored(tokens, start, end, prefixes):
            continue
        edits.append((tokens[start].start, tokens[start].start, "{ SELECT * WHERE { "))
        edits.append((tokens[end - 1].end, tokens[end - 1].end, " } }"))
    return edits


def _branches_anchored(tokens: list[Token], start: int, end: int, prefixes: dict) -> bool:
    """Every branch of the union chain tokens[start:end] has an entity IRI or a literal."""
    i = start
    while i < end:
        close = matching_close(tokens, i)
        if not any(t.kind in ("string", "number") or (t.kind in ("iri", "pname")
                   and (_term_iri(t, prefixes) or "").startswith(vocab.WD)) for t in tokens[i:close]):
            return False
        i = close + 2  # past "} UNION"
    return True


def _group_open(tokens: list[Token], close: int) -> int | None:
    depth = 0
    for j in range(close, -1, -1):
        if tokens[j].is_punct("}"):
            depth += 1
        elif tokens[j].is_punct("{"):
            depth -= 1
            if depth == 0:
                return j
    return None


# -- GROUP BY a projected alias ----------------------------------------------------------


def _group_by_aliases(query: str, tokens: list[Token]):
    """``SELECT (LANG(?l) AS ?lang) ... GROUP BY ?x ?lang`` (FmLAMA's query): WDQS
    (Blazegraph) accepts grouping by a variable the WHERE clause never binds that the
    SELECT then defines; SPARQL 1.1 does not. Grouping by a variable unbound in every row
    changes nothing, so such a variable is left out of the GROUP BY."""
    select = next((i for i, t in enumerate(tokens) if t.is_word("SELECT")), None)
    if select is None:
        return []
    where = next((i for i in range(select, len(tokens)) if tokens[i].is_punct("{")), None)
    if where is None:
        return []
    end = matching_close(tokens, where)
    aliases = {tokens[i + 1].text[1:] for i in range(select, where)
               if tokens[i].is_word("AS") and i + 1 < where and tokens[i + 1].kind == "var"}
    if not aliases:
        return []
    in_where = {t.text[1:] for t in tokens[where:end] if t.kind == "var"}
    edits = []
    for i in range(end + 1, len(tokens) - 1):
        if tokens[i].is_word("GROUP") and tokens[i + 1].is_word("BY"):
            k = i + 2
            while k < len(tokens) and tokens[k].kind == "var":
                name = tokens[k].text[1:]
                if name in aliases and name not in in_where:
                    edits.append((tokens[k].start, tokens[k].end, blank_out(tokens[k].text)))
                k += 1
            if k - (i + 2) == len(edits):  # every key removed: keep the grouping itself
                edits = []
    return edits


# -- property paths ------------------------------------------------------------------------


def _paths(tokens: list[Token], prefixes: dict, closures: str):
    """Edits replacing closure-shaped paths; none where the closure (kept in the store's
    default graph only) is not in the query's default graph (FROM clauses, GRAPH blocks)."""
    if any(t.is_word("FROM") for t in tokens):
        return []
    table = paths.closure_table(closures)
    duplicates_matter = _duplicates_matter(tokens)
    resolve = _resolver(prefixes)
    graph_until = -1
    edits = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.is_word("GRAPH") and i + 2 < len(tokens) and tokens[i + 2].is_punct("{"):
            graph_until = max(graph_until, matching_close(tokens, i + 2))
        if i <= graph_until or i == 0:
            i += 1
            continue
        prev = tokens[i - 1]
        subject_before = prev.kind in ("var", "iri", "pname", "bnode") or prev.is_punct(";", "]")
        if subject_before and (tok.kind in ("iri", "pname") or tok.is_punct("(", "^")):
            parsed = paths.parse(tokens, i, resolve)
            if parsed and parsed[1] - i > 1 and parsed[1] < len(tokens) and paths.has_closure_shape(parsed[0]) \
                    and _object_start(tokens[parsed[1]]):
                new = paths.substitute(parsed[0], table, duplicates_matter)
                if new != parsed[0]:
                    edits.append((tok.start, tokens[parsed[1] - 1].end, paths.serialize(new)))
                i = parsed[1]
                continue
        i += 1
    return edits


def _object_start(tok: Token) -> bool:
    return tok.kind in ("var", "iri", "pname", "bnode", "string", "number") or tok.is_punct("[", "(") \
        or tok.is_word("TRUE", "FALSE")


def _duplicates_matter(tokens: list[Token]) -> bool:
    """False for queries whose answers are sets: ASK, CONSTRUCT, DESCRIBE, and one SELECT
    DISTINCT/REDUCED without aggregates or subqueries."""
    forms = [t.text.upper() for t in tokens if t.is_word("SELECT", "ASK", "CONSTRUCT", "DESCRIBE")]
    if not forms:
        return True
    if forms[0] in ("ASK", "CONSTRUCT", "DESCRIBE"):
        return False
    if len(forms) > 1 or any(t.kind == "word" and t.text.upper() in _AGGREGATES for t in tokens):
        return True
    first = next(i for i, t in enumerate(tokens) if t.is_word("SELECT"))
    return not (first + 1 < len(tokens) and tokens[first + 1].is_word("DISTINCT", "REDUCED"))


__all__ = ["prepare", "Prepared", "refuse_services", "prefix_prologue", "syntax_error", "PREFIXES", "WDQS_PREFIXES",
           "LABEL_SERVICE", "DEFAULT_LANGUAGE"]
