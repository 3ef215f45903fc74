"""WDQS compatibility suite (issue 28): queries in the shapes of the papers' code
(FmLAMA, DLAMA, MakiEval) and of the WDQS examples, written by the team
(tests/fixtures/wdqs/compat/NAME.rq), each answered by kgcult row for row as Oxigraph
answers the same query written without the WDQS features (NAME.explicit.rq: explicit
label joins, subqueries for named subqueries, no hints), through the Python API,
SPARQLWrapper against a real `kgcult serve` on 127.0.0.1, and `kgcult sparql`."""
from __future__ import annotations

import json
from collections import Counter

import pytest

from kgcult.errors import KgcultError
from kgcult.sparql import wdqs
from kgcult.store import Store
from tests.conftest import FIXTURES, build_store, run_cli, running_server

COMPAT = FIXTURES / "wdqs" / "compat"
DATA = FIXTURES / "wdqs" / "compat.ttl"
NAMES = sorted(p.name[:-3] for p in COMPAT.glob("*.rq") if not p.name.endswith(".explicit.rq"))
WD = "http://www.wikidata.org/entity/"
JOINED = ("AltLabel", "aliases")  # values joined by ", " in an order SPARQL leaves open


@pytest.fixture(scope="module")
def compat_path(tmp_path_factory):
    return build_store(tmp_path_factory.mktemp("compat") / "store", [DATA])


@pytest.fixture(scope="module")
def served(compat_path):
    with running_server(compat_path) as srv:
        yield srv


def _value(var: str, kind: str, value: str, lang: str) -> tuple:
    if kind == "literal" and var.endswith(JOINED):
        value = ", ".join(sorted(value.split(", ")))
    return kind, value, lang


def _row(pairs) -> tuple:
    return tuple(sorted(pairs))


def ox_rows(result) -> Counter:
    """Rows of a pyoxigraph result as comparable tuples (unbound variables left out)."""
    out = Counter()
    names = [v.value for v in result.variables]
    for r in result:
        pairs = []
        for name in names:
            t = r[name]
            if t is None:
                continue
            if type(t).__name__ == "Literal":
                pairs.append((name, _value(name, "literal", t.value, t.language or "")))
            else:
                pairs.append((name, _value(name, "uri", t.value, "")))
        out[_row(pairs)] += 1
    return out


def json_rows(doc: dict) -> Counter:
    """Rows of a W3C SPARQL results JSON document, as :func:`ox_rows` gives them."""
    out = Counter()
    for b in doc["results"]["bindings"]:
        pairs = []
        for name, v in b.items():
            kind = "uri" if v["type"] == "uri" else "literal"
            pairs.append((name, _value(name, kind, v["value"], v.get("xml:lang", ""))))
        out[_row(pairs)] += 1
    return out


def expected(store: Store, name: str) -> Counter:
    """Oxigraph's answer to the query written without the WDQS features."""
    text = (COMPAT / f"{name}.explicit.rq").read_text(encoding="utf-8")
    assert "SERVICE" not in text and "hint:" not in text and "INCLUDE" not in text
    return ox_rows(store.ox.query(text, prefixes=wdqs.PREFIXES))  # the default graph: the set


def wdqs_query(name: str) -> str:
    return (COMPAT / f"{name}.rq").read_text(encoding="utf-8")


def test_every_shape_has_an_explicit_twin():
    assert len(NAMES) >= 12
    for name in NAMES:
        assert (COMPAT / f"{name}.explicit.rq").exists(), name


@pytest.mark.parametrize("name", NAMES)
def test_the_api_answers_as_oxigraph_answers_the_explicit_query(compat_path, name):
    with Store(compat_path, read_only=True) as store:
        want = expected(store, name)
        assert sum(want.values()) > 0
        assert ox_rows(store.query(wdqs_query(name))) == want


@pytest.mark.parametrize("name", NAMES)
def test_sparqlwrapper_on_kgcult_serve_answers_as_oxigraph(compat_path, served, name):
    from SPARQLWrapper import JSON, SPARQLWrapper

    sw = SPARQLWrapper(served.url + "/query")
    sw.setQuery(wdqs_query(name))
    sw.setReturnFormat(JSON)
    with Store(compat_path, read_only=True) as store:
        assert json_rows(sw.query().convert()) == expected(store, name)


@pytest.mark.parametrize("name", NAMES)
def test_kgcult_sparql_answers_as_oxigraph(compat_path, name):
    result = run_cli(["sparql", wdqs_query(name), "--format", "json"], store_path=compat_path)
    assert result.exit_code == 0, result.output
    with Store(compat_path, read_only=True) as store:
        assert json_rows(json.loads(result.output)) == expected(store, name)


# -- answers known by hand (so the explicit twins are checked too) ---------------------------------


def _answers(store, name) -> list[dict]:
    return [{k: v[1] for k, v in row} for row in ox_rows(store.query(wdqs_query(name))).elements()]


def test_an_unbound_subject_gives_an_unbound_label(compat_path):
    with Store(compat_path, read_only=True) as store:
        got = sorted(_answers(store, "unbound-optional"), key=lambda r: r["x"])
    assert got == [{"x": WD + "Q910100", "y": WD + "Q910200", "yLabel": "North City"},
                   {"x": WD + "Q910101"}]


def test_makieval_country_of_an_entity_without_one_is_no_country(compat_path):
    with Store(compat_path, read_only=True) as store:
        assert _answers(store, "makieval-country-none") == [{}]  # one row, nothing bound: no bogus country
        assert sorted(r["countryLabel"] for r in _answers(store, "makieval-country-two")) == ["Q910103", "Southland"]
        assert _answers(store, "makieval-country-one") == [{"countryLabel": "Northland"}]


def test_a_label_the_query_binds_itself_is_left_alone(compat_path):
    with Store(compat_path, read_only=True) as store:
        got = {r["item"]: r for r in _answers(store, "own-label")}
        # ja first in the service, but the query's own English label stays
        assert got[WD + "Q910402"]["itemLabel"] == "A Book" and "performer" not in got[WD + "Q910402"]
        assert got[WD + "Q910401"]["performerLabel"] == "Nobody Known"
        capitals = {r["country"]: r for r in _answers(store, "capitals")}
    assert capitals[WD + "Q910102"]["countryLabel"] == "Eastmark"  # mul
    assert capitals[WD + "Q910103"]["capitalLabel"] == "Q910203"   # de only: the id
    assert "capital" not in capitals[WD + "Q910101"] and "capitalLabel" not in capitals[WD + "Q910101"]


# -- Blazegraph idioms refused, named ------------------------------------------------------------

REFUSED = {
    "LET": "SELECT ?x WHERE { LET (?x := 1) }",
    "geof:distance": "SELECT ?d WHERE { wd:Q1 wdt:P625 ?a . wd:Q2 wdt:P625 ?b . BIND(geof:distance(?a, ?b) AS ?d) }",
    "cutoffLimit": "SELECT ?x WHERE { ?x wdt:P31 ?y . hint:Prior hint:cutoffLimit 10 . }",
    "INCLUDE %missing": "SELECT ?x WHERE { INCLUDE %missing }",
    "needs a language": "SELECT ?x ?xLabel WHERE { ?x wdt:P31 ?y SERVICE wikibase:label { } }",
    "wikibase:decodeUri": "SELECT ?t WHERE { BIND(wikibase:decodeUri(\"a%20b\") AS ?t) }",
}


@pytest.mark.parametrize("named", sorted(REFUSED))
def test_blazegraph_only_constructs_are_refused_with_their_name(compat_path, named):
    query = REFUSED[named]
    with pytest.raises(KgcultError, match=named.replace("(", r"\(").split(":")[-1]):
        wdqs.prepare(query, closure_fresh=True)
    result = run_cli(["sparql", query], store_path=compat_path)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.startswith("error: ") and len(result.output.strip().splitlines()) == 1


def test_a_remote_endpoint_gets_sparql_1_1_and_the_same_answers(compat_path, oxigraph_server):
    """A remote store gets the rewrite without SPARQL 1.2's LATERAL (an endpoint such as
    QLever or a WDQS mirror may not know it), with the same rows."""
    from kgcult.store import RemoteStore

    assert "LATERAL" not in wdqs.prepare(wdqs_query("aliases-descriptions"), closure_fresh=None).text
    assert "LATERAL" in wdqs.prepare(wdqs_query("aliases-descriptions"), closure_fresh=True).text
    remote = RemoteStore(oxigraph_server([DATA]).url)
    try:
        with Store(compat_path, read_only=True) as store:
            for name in ("aliases-descriptions", "explicit-form", "unbound-optional", "capitals", "own-label"):
                assert ox_rows(remote.query(wdqs_query(name))) == expected(store, name), name
    finally:
        remote.close()
