"""Fidelity of kgcult's truthy triples to WDQS's RDF on real entities.

* Every ``wdt:`` triple of the WDQS ("munged") RDF of Q42 and Q513 in
  ../shared/reference/wikidata-query-rdf is rebuilt from the JSON snak it comes from, and
  must come out value-equal (as Oxigraph stores it) to what WDQS wrote: dates, quantities,
  coordinates, monolingual text, commons media, urls, external ids, items.
* On the 100 real entities of the opentapioca sample and the wikibase-sdk entity files,
  the triples kgcult emits follow WDQS's truthy rule: best rank only (preferred if a
  property has any, else normal), deprecated never, somevalue as WDQS's skolem IRI,
  novalue left out.
"""
from __future__ import annotations

import bz2
import json
import re
from urllib.parse import unquote

import pyoxigraph as ox
import pytest

from kgcult import vocab
from kgcult.acquire.dump import truthy

from tests.conftest import SHARED

REF = SHARED / "reference"
MUNGED = sorted((REF / "wikidata-query-rdf").glob("*munged.ttl"))
SAMPLE = REF / "opentapioca" / "sample_wikidata_items.json.bz2"
SDK = REF / "wikibase-sdk"
XSD = vocab.XSD
WKT = "http://www.opengis.net/ont/geosparql#wktLiteral"
_POINT = re.compile(r"^(?:<([^>]+)> )?Point\(([-0-9.eE+]+) ([-0-9.eE+]+)\)$")


def _need(path):
    if not path.exists():
        pytest.skip(f"{path} not found: ../shared is not beside this checkout")
    return path


def _snak_for(o) -> dict:
    """The JSON main snak WDQS's truthy object ``o`` was written from."""
    def snak(datatype, dtype, value):
        return {"snaktype": "value", "datatype": datatype, "datavalue": {"type": dtype, "value": value}}
    if isinstance(o, ox.NamedNode):
        if o.value.startswith(vocab.WD):
            return snak("wikibase-item", "wikibase-entityid", {"id": o.value[len(vocab.WD):]})
        if o.value.startswith(truthy.FILEPATH):
            return snak("commonsMedia", "string", unquote(o.value[len(truthy.FILEPATH):]))
        return snak("url", "string", o.value)
    if o.language:
        return snak("monolingualtext", "monolingualtext", {"text": o.value, "language": o.language})
    dt = o.datatype.value
    if dt == XSD + "dateTime":
        return snak("time", "time", {"time": "+" + o.value, "precision": 11})
    if dt == XSD + "decimal":
        return snak("quantity", "quantity", {"amount": o.value, "unit": "1"})
    if dt == WKT:
        globe, lon, lat = _POINT.match(o.value).groups()
        return snak("globe-coordinate", "globecoordinate",
                    {"latitude": json.loads(lat), "longitude": json.loads(lon),
                     "globe": globe or "http://www.wikidata.org/entity/Q2"})
    assert dt == XSD + "string", o
    return snak("external-id", "string", o.value)


def _stored(term):
    """``term`` as Oxigraph stores it (decimals and other known datatypes canonical)."""
    st = ox.Store()
    s = ox.NamedNode("http://example.org/s")
    st.add(ox.Quad(s, s, term))
    return next(iter(st)).object


def test_every_wdqs_truthy_value_of_q42_and_q513_comes_out_the_same():
    kinds = set()
    n = 0
    for path in MUNGED or [_need(REF / "wikidata-query-rdf" / "Q42-munged.ttl")]:
        for t in ox.parse(path=str(path), format=ox.RdfFormat.TURTLE, lenient=True):
            if not t.predicate.value.startswith(vocab.WDT) or isinstance(t.object, ox.BlankNode):
                continue
            snak = _snak_for(t.object)
            got = truthy.value_nt(snak)
            assert got is not None, (path.name, str(t))
            term = next(iter(ox.parse(f"<http://example.org/s> <http://example.org/p> {got} .".encode(),
                                      format=ox.RdfFormat.N_TRIPLES))).object
            assert _stored(term) == _stored(t.object), (path.name, str(t), got)
            kinds.add(snak["datatype"])
            n += 1
    assert n > 300
    assert {"wikibase-item", "commonsMedia", "url", "monolingualtext", "time", "quantity",
            "globe-coordinate", "external-id"} <= kinds


def _real_entities():
    out = []
    with bz2.open(_need(SAMPLE)) as f:
        for line in f:
            e = truthy.parse_entity_line(line)
            if e is not None:
                out.append(e)
    for name in ("Q2112.json", "Q571.json"):
        out.append(json.loads(_need(SDK / name).read_text()))
    out.extend(json.loads((SDK / "wbgetentities_response.json").read_text())["entities"].values())
    return out


def test_real_entities_follow_the_truthy_rule():
    entities = _real_entities()
    assert len(entities) >= 102
    checked = {"preferred-over-normal": 0, "deprecated": 0, "somevalue/novalue": 0}
    for e in entities:
        got: dict[str, list[str]] = {}
        for line in truthy.entity_lines(e, None):
            _, p, o = line[:-2].split(" ", 2)
            got.setdefault(p[len(vocab.WDT) + 1:-1], []).append(o)
        for pid, stmts in (e.get("claims") or {}).items():
            preferred = [s for s in stmts if s["rank"] == "preferred"]
            best = preferred or [s for s in stmts if s["rank"] == "normal"]
            values = [s["mainsnak"] for s in best if s["mainsnak"]["snaktype"] == "value"]
            unknown = [s for s in best if s["mainsnak"]["snaktype"] == "somevalue"]
            assert len(got.get(pid, [])) == len(values) + len(unknown), (e["id"], pid)
            assert got.get(pid, []) == [truthy.statement_nt(s["mainsnak"], pid, s["id"]) for s in best
                                        if s["mainsnak"]["snaktype"] != "novalue"]
            assert all(truthy.statement_nt(s["mainsnak"], pid, s["id"]).startswith(f"<{truthy.GENID}")
                       for s in unknown)
            best_objects = {truthy.value_nt(v) for v in values}
            for s in stmts:
                if s["rank"] == "deprecated" or (preferred and s["rank"] == "normal"):
                    o = truthy.value_nt(s["mainsnak"])
                    if o is not None and o not in best_objects:  # (a quantity may differ in bounds only)
                        assert o not in got.get(pid, []), (e["id"], pid)
                        checked["deprecated" if s["rank"] == "deprecated" else "preferred-over-normal"] += 1
                if s["mainsnak"]["snaktype"] != "value" and s in best:
                    checked["somevalue/novalue"] += 1
    assert all(checked.values()), checked


def test_real_values_have_wdqs_forms():
    forms = {
        "commonsMedia": re.compile(r"^<http://commons\.wikimedia\.org/wiki/Special:FilePath/[^ _<>]*[^ <>]*>$"),
        "time": re.compile(r'^"-?\d{4,}-\d\d-\d\dT\d\d:\d\d:\d\dZ"\^\^<http://www\.w3\.org/2001/XMLSchema#dateTime>$'),
        "quantity": re.compile(r'^"-?\d+(\.\d+)?"\^\^<http://www\.w3\.org/2001/XMLSchema#decimal>$'),
        "globe-coordinate": re.compile(r'^"(<http://www\.wikidata\.org/entity/Q\d+> )?Point\(-?[\d.eE-]+ -?[\d.eE-]+\)"'
                                       r'\^\^<http://www\.opengis\.net/ont/geosparql#wktLiteral>$'),
        "monolingualtext": re.compile(r'^".*"@[a-z]+(-[a-z0-9]+)*$'),
        "external-id": re.compile(r'^".*"$'),
        "wikibase-item": re.compile(r"^<http://www\.wikidata\.org/entity/Q\d+>$"),
    }
    seen = set()
    for e in _real_entities():
        for stmts in (e.get("claims") or {}).values():
            for s in stmts:
                snak = s["mainsnak"]
                if snak["snaktype"] == "value" and snak["datatype"] in forms:
                    got = truthy.value_nt(snak)
                    assert forms[snak["datatype"]].match(got), (e["id"], snak["datatype"], got)
                    seen.add(snak["datatype"])
    assert seen == set(forms)
