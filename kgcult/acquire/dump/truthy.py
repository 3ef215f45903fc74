"""One Wikidata JSON entity as the truthy triples WDQS serves for it, as N-Triples text.

The mapping follows WDQS's RDF (wikidata/query/rdf, "munged" form):

* best rank only: a property's preferred statements if it has any, else its normal ones;
  deprecated statements never;
* items/properties/lexemes ``wd:Q1``; strings and external ids plain literals;
  monolingual text a language-tagged literal (tag lower-cased, as Oxigraph stores it);
  quantities the amount as ``xsd:decimal`` (WDQS writes ``"+1.96"``, kgcult ``"1.96"``:
  the same value, which Oxigraph stores in one canonical form);
  times ``xsd:dateTime`` as Wikibase's RDF writes them (:mod:`kgcult.acquire.dump.wbtime`:
  precision, BCE years in XSD 1.1 numbering, Julian dates converted to Gregorian; year 0
  a plain string);
  coordinates ``"Point(lon lat)"^^geo:wktLiteral`` (another globe's IRI in front; the
  numbers as PHP writes floats: :func:`php_float`);
  commons media ``<http://commons.wikimedia.org/wiki/Special:FilePath/A%20b.jpg>``
  (the file name percent-encoded, spaces as ``%20``); urls IRIs;
* somevalue ("unknown value") as WDQS serves it: the skolem IRI
  ``<http://www.wikidata.org/.well-known/genid/LABEL>`` of the blank node Wikibase writes,
  ``LABEL`` = md5 of the statement id (``$`` as ``-``), the ``wdt:`` and value namespace
  IRIs and the snak's hash, joined by ``-`` (:func:`somevalue_iri`); a statement without an
  id gives nothing. novalue (``a wdno:P``) is left out: no spec fetches ``rdf:type``.

Labels, aliases and descriptions become ``rdfs:label``, ``skos:altLabel`` and
``schema:description``; the number of sitelinks ``wikibase:sitelinks``. The hot path
(:func:`entity_lines`) builds N-Triples text directly; :func:`truthy_claims` and
:func:`entity_triples` give pyoxigraph terms for the Python API and tests.
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Sequence
from urllib.parse import quote

import pyoxigraph as ox

from kgcult import vocab
from kgcult.acquire import subgraphs
from kgcult.acquire.dump import wbtime

WD, WDT = vocab.WD, vocab.WDT
_DEC = f"<{vocab.XSD}decimal>"
_DT = f"<{vocab.XSD}dateTime>"
_INT = f"<{vocab.XSD}integer>"
_WKT = "<http://www.opengis.net/ont/geosparql#wktLiteral>"
FILEPATH = "http://commons.wikimedia.org/wiki/Special:FilePath/"
COMMONS_DATA = "http://commons.wikimedia.org/data/main/"
LABEL, ALT, DESC = (f"<{p}>" for p in subgraphs.LABEL_PROPERTIES)
SITELINKS = f"<{subgraphs.SITELINKS}>"
_ENTITY_PREFIX: dict[str | None, str] = {"item": "Q", "property": "P", "lexeme": "L"}
GENID = "http://www.wikidata.org/.well-known/genid/"
VALUE_NS = "http://www.wikidata.org/value/"
_SOMEVALUE_CLASS = "Wikibase\\DataModel\\Snak\\PropertySomeValueSnak"
_LNAME = re.compile(r"[^A-Za-z0-9_-]")


def literal(text: str) -> str:
    """An N-Triples string literal (without tag or datatype)."""
    if not ('"' in text or "\\" in text or "\n" in text or "\r" in text):  # faster than a regex search
        return '"' + text + '"'
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r") + '"'


def _iri_or_literal(value: str) -> str:
    try:
        return str(ox.NamedNode(value))
    except ValueError:
        return literal(value)


def value_nt(snak: dict) -> str | None:
    """The WDQS truthy object of a main snak in N-Triples syntax, or None (somevalue,
    novalue, or a value type WDQS has no truthy form for)."""
    return snak_nt(snak.get("snaktype"), snak.get("datatype", ""), snak.get("datavalue"))


def snak_nt(snaktype: str | None, datatype: str | None, datavalue: dict | None) -> str | None:
    """:func:`value_nt` of a main snak given by its fields (a missing datatype is "")."""
    if snaktype != "value":
        return None
    dv = datavalue or {}
    t = dv.get("type")
    v: Any = dv.get("value")  # a string or an object, as the type says
    if t == "wikibase-entityid":
        if not isinstance(v, dict):
            return None
        eid = v.get("id")
        if not eid and "numeric-id" in v:
            eid = _ENTITY_PREFIX.get(v.get("entity-type"), "Q") + str(v["numeric-id"])
        return f"<{WD}{eid}>" if eid else None
    if t == "string":
        dt = datatype
        if dt == "commonsMedia":
            return f"<{FILEPATH}{quote(v, safe='')}>"
        if dt in ("geo-shape", "tabular-data"):
            return f"<{COMMONS_DATA}{quote(v.replace(' ', '_'), safe=';@$!*(),/~:')}>"
        if dt == "url":
            return _iri_or_literal(v)
        return literal(v)
    if t == "monolingualtext":
        return literal(v["text"]) + "@" + v["language"].lower()
    if t == "quantity":
        return literal(v["amount"].lstrip("+")) + "^^" + _DEC
    if t == "time":
        s = wbtime.clean(v["time"], v.get("precision"), v.get("calendarmodel"))
        return literal(v["time"]) if s is None else literal(s) + "^^" + _DT
    if t == "globecoordinate":
        point = f"Point({php_float(v['longitude'])} {php_float(v['latitude'])})"
        globe = v.get("globe") or ""
        if globe and not globe.endswith("/Q2"):
            point = f"<{globe}> {point}"
        return literal(point) + "^^" + _WKT
    return None


def somevalue_label(statement_id: str, pid: str, direct_ns: str = WDT, value_ns: str = VALUE_NS) -> str:
    """The label of the blank node Wikibase's ``SnakRdfBuilder`` writes for a somevalue
    ("unknown value") main snak on ``wdt:``: md5 of the statement's LName (its id, ``$``
    and every other character but letters, digits, ``_``, ``-`` as ``-``), ``direct_ns``,
    ``value_ns`` and the snak hash (sha1 of the PHP serialization of
    ``PropertySomeValueSnak(pid)``), joined by ``-``. (Wikibase since February 2025,
    T384344; before, the namespace names ``wdt`` and ``v`` were hashed instead of their IRIs.)"""
    snak = f'C:{len(_SOMEVALUE_CLASS)}:"{_SOMEVALUE_CLASS}":{len(pid)}:{{{pid}}}'
    snak_hash = hashlib.sha1(snak.encode()).hexdigest()
    return hashlib.md5("-".join((_LNAME.sub("-", statement_id), direct_ns, value_ns, snak_hash)).encode()).hexdigest()


def somevalue_iri(statement_id: str | None, pid: str) -> str | None:
    """The WDQS object of a truthy somevalue claim in N-Triples syntax: WDQS's
    ``BNodeSkolemization`` makes Wikibase's blank node ``_:LABEL`` (:func:`somevalue_label`)
    ``<http://www.wikidata.org/.well-known/genid/LABEL>``. None without a statement id."""
    if not statement_id:
        return None
    return f"<{GENID}{somevalue_label(statement_id, pid)}>"


def statement_nt(snak: dict, pid: str, statement_id: str | None) -> str | None:
    """:func:`value_nt` of a statement's main snak, somevalue included (:func:`somevalue_iri`)."""
    if snak.get("snaktype") == "somevalue":
        return somevalue_iri(statement_id, pid)
    return value_nt(snak)


def php_float(x: float | int | str) -> str:
    """A coordinate as Wikibase's RDF writes it, and so WDQS: PHP's string form of a float
    (14 significant digits, no ".0" on whole numbers, "1.0E-5" for small ones), which is not
    always the JSON dump's form of the same value (``47.0`` in JSON, ``47`` in WDQS)."""
    s = "%.14G" % float(x)
    if "E" in s:
        mantissa, exp = s.split("E")
        s = f"{mantissa if '.' in mantissa else mantissa + '.0'}E{int(exp):+d}"
    return s


def best_statements(stmts: Sequence[dict]) -> list:

    """A property's truthy statements: preferred ones if any, else normal ones."""
    preferred = [s for s in stmts if s.get("rank") == "preferred"]
    return preferred or [s for s in stmts if s.get("rank") != "deprecated"]


def claim_objects(entity: dict, pid: str) -> list[str]:
    """The N-Triples objects of ``entity``'s truthy ``pid`` claims."""
    out = []
    for s in best_statements((entity.get("claims") or {}).get(pid) or ()):
        o = statement_nt(s.get("mainsnak") or {}, pid, s.get("id"))
        if o is not None:
            out.append(o)
    return out


def label_lines(entity: dict, subject: str, languages, label_props, sitelinks: bool) -> list[str]:
    """N-Triples lines of the entity's labels, aliases and descriptions in ``languages``
    (lower-cased tags; the predicates in ``label_props``, full IRIs), and its sitelink
    count when ``sitelinks``."""
    count = len(entity["sitelinks"] or {}) if sitelinks and "sitelinks" in entity else None
    return term_lines(entity, count, subject, languages, label_props)


def term_lines(terms: dict, sitelink_count: int | None, subject: str, languages, label_props) -> list[str]:
    """:func:`label_lines` from an entity's term sections (``labels``, ``aliases``,
    ``descriptions``; at least those in ``languages``) and its sitelink count (None: no
    sitelinks line)."""
    out = []
    if languages and label_props:
        labels = (terms.get("labels") or {}) if vocab.RDFS + "label" in label_props else {}
        aliases = (terms.get("aliases") or {}) if vocab.SKOS + "altLabel" in label_props else {}
        descriptions = (terms.get("descriptions") or {}) if vocab.SCHEMA + "description" in label_props else {}
        present = languages
        if isinstance(labels, dict) and isinstance(aliases, dict) and isinstance(descriptions, dict):
            present = {t for section in (labels, aliases, descriptions) for t in section if t in languages}
        for tag in sorted(present):  # Wikibase language codes are lower-case
            if tag in labels:
                out.append(f"{subject} {LABEL} {literal(labels[tag]['value'])}@{tag} .")
            for d in aliases.get(tag, ()):
                out.append(f"{subject} {ALT} {literal(d['value'])}@{tag} .")
            if tag in descriptions:
                out.append(f"{subject} {DESC} {literal(descriptions[tag]['value'])}@{tag} .")
    if sitelink_count is not None:
        out.append(f'{subject} {SITELINKS} "{sitelink_count}"^^{_INT} .')
    return out


def entity_lines(entity: dict, props, languages=(), label_props=(), sitelinks=False) -> list[str]:
    """N-Triples lines for one entity: truthy claims of ``props`` (None: every property),
    then its label triples (see :func:`label_lines`)."""
    subject = f"<{WD}{entity['id']}>"
    claims = entity.get("claims") or {}
    out: list[str] = []
    for pid in (claims if props is None else props):
        if pid in claims:
            p = f"<{WDT}{pid}>"
            out.extend(f"{subject} {p} {o} ." for o in claim_objects(entity, pid))
    out.extend(label_lines(entity, subject, languages, label_props, sitelinks))
    return out


def _terms(lines: list[str]) -> list[tuple]:
    data = "\n".join(lines).encode()
    return [(t.subject, t.predicate, t.object) for t in ox.parse(data, format=ox.RdfFormat.N_TRIPLES)] if data else []


def truthy_claims(entity: dict, props=None) -> list[tuple[str, object]]:
    """[(property id, object term)] of the entity's truthy claims for ``props`` (None: all)."""
    return [(t[1].value[len(WDT):], t[2]) for t in _terms(entity_lines(entity, props))]


def entity_triples(entity: dict, *, props=None, languages=None, label_props=(), sitelinks=False) -> list:
    """The WDQS triples kgcult keeps for one JSON entity, as pyoxigraph terms."""
    langs = {x.lower() for x in languages or ()}
    return _terms(entity_lines(entity, props if props is None or props else (), langs, set(label_props), sitelinks))


def all_lines(entity: dict) -> list[str]:
    """Every truthy claim, every label, alias and description, and the sitelink count."""
    langs = set()
    for key in ("labels", "aliases", "descriptions"):
        langs |= {x.lower() for x in entity.get(key) or ()}
    return entity_lines(entity, None, langs, set(subgraphs.LABEL_PROPERTIES), True)


def parse_entity_line(line: bytes, loads=json.loads):
    """The entity of one dump line (``[``/``]``/blank lines give None); ValueError when the
    line is not a JSON entity."""
    s = line.strip()
    if not s or s in (b"[", b"]"):
        return None
    if s.endswith(b","):
        s = s[:-1]
    e = loads(s)
    if not isinstance(e, dict) or "id" not in e:
        raise ValueError('an entity line needs an "id"')
    return e
