"""WDQS drop-in (docs/wdqs.md): predeclared prefixes, the label service emulated locally,
SERVICE refused (no request ever leaves), hint: triples ignored, closure-shaped paths
answered from fresh closure graphs with identical answers, readable syntax errors; through
the Python API, `kgcult sparql`, `kgcult serve` and a remote store."""
from __future__ import annotations

import json
import logging
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from kgcult import resources
from kgcult.errors import KgcultError, QuerySyntaxError
from kgcult.sparql import wdqs
from kgcult.store import RemoteStore, Store, hierarchy
from tests.conftest import FIXTURES, build_store, require_shared, run_cli, running_server

LABELS = FIXTURES / "wdqs" / "labels.ttl"
SEED = sorted(resources.seed("source").glob("*.ttl"))
WD = "http://www.wikidata.org/entity/"

ISSUE_QUERY = """SELECT ?dish ?dishLabel WHERE { ?dish wdt:P495 wd:Q900100 . SERVICE wikibase:label {
  bd:serviceParam wikibase:language "[AUTO_LANGUAGE],ja". } }"""


@pytest.fixture(scope="module")
def labels_path(tmp_path_factory):
    return build_store(tmp_path_factory.mktemp("wdqs") / "labels", [LABELS])


@pytest.fixture(scope="module")
def seed_path(tmp_path_factory):
    return build_store(tmp_path_factory.mktemp("wdqs") / "seed", SEED)


@pytest.fixture
def labels_store(labels_path):
    s = Store(labels_path, read_only=True)
    yield s
    s.close()


def rows(result) -> list[dict]:
    return [{v.value: (r[v].value if r[v] is not None else None) for v in result.variables} for r in result]


def as_written(store: Store, query: str) -> Counter:
    """The query evaluated by Oxigraph exactly as written (paths walked, no closure)."""
    res = store.ox.query(query, prefixes=wdqs.PREFIXES)  # the default graph: the set of all graphs
    return Counter(tuple(str(t) for t in r) for r in res)


def through_kgcult(store: Store, query: str) -> Counter:
    return Counter(tuple(str(t) for t in r) for r in store.query(query))


class Listener:
    """A TCP listener on 127.0.0.1 that records every connection it receives."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self):
        self._stop = True
        self.thread.join(2)
        self.sock.close()


@pytest.fixture
def listener():
    lst = Listener()
    yield lst
    lst.close()


# -- prefixes ---------------------------------------------------------------------------


def test_wdqs_prefixes_are_predeclared_and_a_query_overrides_them(labels_store):
    for p in ("wd", "wdt", "p", "ps", "pq", "psv", "wdno", "wds", "wdref", "wdv", "wdata", "schema",
              "owl", "skos", "prov", "bd", "hint", "geo", "geof", "mwapi", "ontolex", "dct", "cc"):
        assert p in wdqs.PREFIXES, p
    q = "SELECT ?d WHERE { ?d wdt:P495 wd:Q900100 . ?d p:P31 ?st . ?st ps:P31 ?c }"
    assert rows(labels_store.query(q)) == []  # parses: p: and ps: are declared
    got = {r["d"] for r in rows(labels_store.query("SELECT ?d WHERE { ?d wdt:P495 wd:Q900100 }"))}
    assert got == {WD + "Q900001", WD + "Q900002", WD + "Q900003"}
    own = "PREFIX wd: <http://example.org/> SELECT ?d WHERE { ?d wdt:P495 wd:Q900100 }"
    assert rows(labels_store.query(own)) == []


# -- the label service ------------------------------------------------------------------------


def test_label_service_languages_in_order_and_the_id_as_last_fallback(labels_store):
    got = {r["dish"]: r["dishLabel"] for r in rows(labels_store.query(ISSUE_QUERY))}
    assert got == {WD + "Q900001": "Pizza", WD + "Q900002": "寿司", WD + "Q900003": "Q900003"}
    res = labels_store.query(ISSUE_QUERY)
    by_dish = {str(r["dish"]): r["dishLabel"] for r in res}
    assert by_dish[f"<{WD}Q900001>"].language == "en" and by_dish[f"<{WD}Q900002>"].language == "ja"
    assert by_dish[f"<{WD}Q900003>"].language is None
    ja_first = ISSUE_QUERY.replace("[AUTO_LANGUAGE],ja", "ja,en")
    assert {r["dish"]: r["dishLabel"] for r in rows(labels_store.query(ja_first))}[WD + "Q900001"] == "ピザ"


def test_label_service_descriptions_aliases_and_select_star(labels_store):
    q = """SELECT * WHERE { ?dish wdt:P495 wd:Q900100 .
      SERVICE wikibase:label { bd:serviceParam wikibase:language "en,ja" }
      BIND(1 AS ?one) } ORDER BY ?dish"""
    res = labels_store.query(q)
    assert [v.value for v in res.variables] == ["dish", "one"]  # no helper variables leak
    q = """SELECT ?dish ?dishLabel ?dishDescription ?dishAltLabel WHERE { ?dish wdt:P495 wd:Q900100 .
      SERVICE wikibase:label { bd:serviceParam wikibase:language "en,ja" } } ORDER BY ?dish"""
    got = rows(labels_store.query(q))
    assert [r["dishDescription"] for r in got] == ["an Italian dish", "日本料理", None]
    assert sorted(got[0]["dishAltLabel"].split(", ")) == ["pie", "za"]
    assert got[1]["dishAltLabel"] is None


def test_label_service_explicit_form(labels_store):
    q = """SELECT ?dish ?name ?about WHERE { ?dish wdt:P495 wd:Q900100 .
      SERVICE wikibase:label { bd:serviceParam wikibase:language "en" .
        ?dish rdfs:label ?name . ?dish schema:description ?about . } } ORDER BY ?dish"""
    got = rows(labels_store.query(q))
    assert [(r["name"], r["about"]) for r in got] == [("Pizza", "an Italian dish"), ("Q900002", None),
                                                      ("Q900003", None)]


def test_label_service_gives_the_rows_of_explicit_label_joins_on_the_seed(seed_path):
    with Store(seed_path, read_only=True) as s:
        service = rows(s.query("""SELECT ?dish ?dishLabel ?country WHERE { ?dish wdt:P495 ?country .
            SERVICE wikibase:label { bd:serviceParam wikibase:language "en". } }"""))
        explicit = rows(s.query("""SELECT ?dish ?l ?country WHERE { ?dish wdt:P495 ?country .
            OPTIONAL { ?dish rdfs:label ?l FILTER(LANG(?l) = "en") } }"""))
    assert len(service) == len(explicit) > 20
    want = Counter((r["dish"], r["l"] or r["dish"].rsplit("/", 1)[1], r["country"]) for r in explicit)
    assert Counter((r["dish"], r["dishLabel"], r["country"]) for r in service) == want


# -- SERVICE refused ---------------------------------------------------------------------------


def test_service_is_refused_everywhere_and_no_request_leaves(labels_path, listener, tmp_path):
    target = f"http://127.0.0.1:{listener.port}/sparql"
    q = f"SELECT * WHERE {{ SERVICE <{target}> {{ ?s ?p ?o }} }}"
    with Store(labels_path, read_only=True) as s:
        with pytest.raises(KgcultError, match=f"SERVICE <{target}> is refused"):
            s.query(q)
        with pytest.raises(KgcultError, match="refused"):
            s.query("SELECT * WHERE { SERVICE SILENT ?where { ?s ?p ?o } }")
    result = run_cli(["sparql", q], store_path=labels_path)
    assert result.exit_code == 1 and f"SERVICE <{target}> is refused" in result.output
    assert "Traceback" not in result.output
    with running_server(labels_path) as srv:
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(srv.url + "/query?" + urllib.parse.urlencode({"query": q}), timeout=10)
        assert err.value.code == 400 and target in err.value.read().decode()
        remote = RemoteStore(srv.url + "/query")
        with pytest.raises(KgcultError, match="refused"):
            remote.query(q)
        # the label service works through a remote store (rewritten before it is sent)
        assert {r["dishLabel"] for r in rows(remote.query(ISSUE_QUERY))} == {"Pizza", "寿司", "Q900003"}
        remote.close()
    assert listener.connections == 0


@pytest.mark.parametrize("service, named", [("wikibase:mwapi", "MediaWiki API"), ("wikibase:around", "around"),
                                            ("wikibase:box", "box"), ("gas:service", "GAS")])
def test_wdqs_services_kgcult_cannot_provide_are_named(labels_store, service, named):
    with pytest.raises(KgcultError, match=f"WDQS feature kgcult does not provide: .*{named}"):
        labels_store.query(f"SELECT * WHERE {{ SERVICE {service} {{ ?s ?p ?o }} }}")


def test_hint_triples_are_ignored(labels_store):
    q = """SELECT ?d WHERE { hint:Query hint:optimizer "None" . ?d wdt:P495 wd:Q900100 .
      hint:Prior hint:runFirst true . }"""
    assert len(rows(labels_store.query(q))) == 3


# -- property paths from the closure -----------------------------------------------------------

PATH_QUERIES = [
    "SELECT ?x ?y WHERE { ?x (wdt:P31|wdt:P279)+ ?y }",
    "SELECT ?x WHERE { ?x (wdt:P279|wdt:P31)+ wd:Q900300 }",
    "SELECT ?x ?y WHERE { ?x wdt:P279+ ?y }",
    "SELECT ?x ?y WHERE { ?x wdt:P279* ?y }",
    "SELECT ?y WHERE { wd:Q900200 wdt:P279* ?y }",
    "SELECT ?x WHERE { ?x wdt:P279* wd:Q900300 }",
    "SELECT ?x ?y WHERE { ?x wdt:P31/wdt:P279* ?y }",
    "SELECT DISTINCT ?x ?y WHERE { ?x wdt:P31/wdt:P279* ?y }",
    "SELECT ?x WHERE { ?x wdt:P31/wdt:P279* wd:Q900301 }",
    "ASK { wd:Q900001 wdt:P31/wdt:P279* wd:Q900301 }",
    "SELECT ?x ?y WHERE { ?x wdt:P361+ ?y }",
    "SELECT ?x ?y WHERE { ?x (wdt:P31|wdt:P279|wdt:P361)+ ?y }",
    "SELECT ?x ?y WHERE { ?y ^wdt:P279+ ?x }",
]


@pytest.mark.parametrize("query", PATH_QUERIES)
def test_closure_paths_give_the_answers_of_the_path_as_written(labels_store, seed_path, query):
    text = wdqs.prepare(query, closure_fresh=True).text
    assert "https://w3id.org/kgcult/ns#" in text, text  # answered from a closure graph
    if query.startswith("ASK"):
        assert bool(labels_store.query(query)) is bool(labels_store.ox.query(
            query, prefixes=wdqs.PREFIXES))
        return
    assert through_kgcult(labels_store, query) == as_written(labels_store, query)
    with Store(seed_path, read_only=True) as seed:
        seed_query = query.replace("Q900300", "Q746549").replace("Q900200", "Q2095").replace("Q900301", "Q2095")
        assert through_kgcult(seed, seed_query) == as_written(seed, seed_query)


def test_paths_are_not_rewritten_inside_graph_blocks_or_with_from():
    for q in ("SELECT * WHERE { GRAPH ?g { ?x wdt:P279+ ?y } }",
              "SELECT * FROM <urn:g> WHERE { ?x wdt:P279+ ?y }"):
        assert wdqs.prepare(q, closure_fresh=True).text == q
    assert wdqs.prepare("SELECT * WHERE { ?x wdt:P279+ ?y }", closure_fresh=None).notices == []


def test_stale_closure_evaluates_paths_as_written_and_says_so_once(tmp_path, caplog):
    path = build_store(tmp_path / "s", [LABELS])
    with Store(path) as s:
        s.load([FIXTURES / "serve" / "food.ttl"])  # data changed: the closure is stale
        assert s.closure_stale
        q = "SELECT ?x WHERE { ?x (wdt:P31|wdt:P279)+ wd:Q900300 }"
        with caplog.at_level(logging.WARNING, logger="kgcult"):
            first = through_kgcult(s, q)
            through_kgcult(s, q)
        assert first == as_written(s, q)
        stale = [r for r in caplog.records if "closure is stale" in r.getMessage()]
        assert len(stale) == 1
    with running_server(path) as srv:
        url = srv.url + "/query?" + urllib.parse.urlencode({"query": q})
        with urllib.request.urlopen(url, timeout=10) as resp:
            assert "closure is stale" in resp.headers["X-Kgcult-Notice"]
            assert len(json.load(resp)["results"]["bindings"]) == sum(first.values())


# -- syntax errors ---------------------------------------------------------------------------


def test_syntax_errors_show_line_column_and_a_caret(labels_store, labels_path):
    q = "SELECT ?dish WHERE {\n  ?dish wdt:P495 wd:Q17 .\n  ?dish zz:P1 ?x .\n}"
    with pytest.raises(QuerySyntaxError) as err:
        labels_store.query(q)
    msg = str(err.value)
    assert "line 3, column 9" in msg and "undeclared prefix zz:" in msg
    assert msg.splitlines()[1:] == ["    ?dish zz:P1 ?x .", "          ^"]
    with pytest.raises(QuerySyntaxError) as err:
        labels_store.query("SELECT ?x WHERE { ?x wdt:P31 ?y ) }")
    assert "\\u{" not in str(err.value) and len(str(err.value)) < 400
    result = run_cli(["sparql", "SELEC ?x WHERE { ?x ?p ?o }"], store_path=labels_path)
    assert result.exit_code == 1 and "line 1, column" in result.output and "^" in result.output


# -- the seed papers' query shapes through kgcult serve ------------------------------------------

PAPERS = Path(__file__).resolve().parents[1] / "queries" / "wdqs" / "papers"
FMLAMA_COUNTRIES = (PAPERS / "fmlama-countries.rq").read_text()

FMLAMA_DISHES = (PAPERS / "fmlama-dishes.rq").read_text()  # COUNTRY: the QID

# a DLAMA relation query: subjects of the region's countries, objects filtered as DLAMA does
DLAMA_CAPITALS = """
SELECT DISTINCT ?subject ?object WHERE {
  ?subject wdt:P36 ?object .
  ?subject wdt:P31 wd:Q3624078 .
  FILTER NOT EXISTS { ?object wdt:P31 wd:Q6256 }
  ?subject rdfs:label ?sl . FILTER(LANG(?sl) = "en")
}"""


def _unordered(row: dict) -> tuple:
    """A row with GROUP_CONCAT values as sorted lists (SPARQL leaves their order open)."""
    return tuple(sorted((k, ", ".join(sorted(v.split(", "))) if k.startswith("hasParts") else v)
                        for k, v in row.items()))


def _sparqlwrapper(url: str, query: str) -> list[dict]:
    from SPARQLWrapper import JSON, SPARQLWrapper

    sw = SPARQLWrapper(url)
    sw.setQuery(query)
    sw.setReturnFormat(JSON)
    return [{k: v["value"] for k, v in b.items()} for b in sw.query().convert()["results"]["bindings"]]


@pytest.mark.slow  # 5-7 s: make test-all
def test_seed_paper_queries_through_serve_give_the_views_rows(seed_path):
    from pyoxigraph import NamedNode

    origins_rq = resources.queries("views", "fmlama-origins.rq").read_text()
    with Store(seed_path, read_only=True) as s, running_server(seed_path) as srv:
        url = srv.url + "/query"
        countries = _sparqlwrapper(url, FMLAMA_COUNTRIES)
        assert len(countries) >= 5
        checked = 0
        chosen = {"Q38", "Q17", "Q668", "Q159", "Q142", "Q29"}  # FmLAMA countries in the seed
        for qid in sorted(c["labelID"] for c in countries if c["labelID"] in chosen):
            query = FMLAMA_DISHES.replace("COUNTRY", qid)
            got = _sparqlwrapper(url, query)
            walked = s.ox.query(wdqs.prepare(query, closure_fresh=None).text,  # paths walked, unions as written
                                prefixes=wdqs.PREFIXES)
            assert Counter(_unordered(r) for r in got) == Counter(
                _unordered({v.value: r[v].value for v in walked.variables if r[v] is not None}) for r in walked)
            view_dishes = {r["dish"].value for r in s.query(origins_rq, bindings={
                "dishClass": NamedNode(WD + "Q746549"), "countryClass": NamedNode(WD + "Q6256"),
                "country": NamedNode(WD + qid)})}
            assert {r["dish"] for r in got} <= view_dishes
            checked += bool(got)
        assert checked >= 3
        dlama = _sparqlwrapper(url, DLAMA_CAPITALS)
        assert dlama and Counter(tuple(sorted(r.items())) for r in dlama) == Counter(
            tuple(sorted((v.value, r[v].value) for v in res.variables))
            for res in [s.ox.query(DLAMA_CAPITALS, prefixes=wdqs.PREFIXES)]
            for r in res)
        labelled = _sparqlwrapper(url, """SELECT ?dish ?dishLabel WHERE { ?dish wdt:P495 wd:Q38 .
            SERVICE wikibase:label { bd:serviceParam wikibase:language "[AUTO_LANGUAGE],en". } }""")
        assert labelled and all(r["dishLabel"] for r in labelled)


# -- the stand-in --------------------------------------------------------------------------


@pytest.mark.slow
def test_closure_paths_identical_on_the_standin(tmp_path_factory):
    standin = require_shared()
    path = tmp_path_factory.mktemp("standin") / "store"
    with Store(path) as s:
        s.load([standin], graph="standin")
        hierarchy.build(s)
    with Store(path, read_only=True) as s:
        for q in ["SELECT ?x WHERE { ?x (wdt:P31|wdt:P279)+ wd:Q746549 }",
                  "SELECT ?x ?y WHERE { ?x wdt:P279+ ?y }",
                  "SELECT ?x WHERE { ?x wdt:P279* wd:Q2095 }",
                  "SELECT ?y WHERE { wd:Q746549 wdt:P279* ?y }",
                  "SELECT ?x WHERE { ?x wdt:P31/wdt:P279* wd:Q2095 }",
                  "SELECT DISTINCT ?x ?y WHERE { ?x wdt:P31/wdt:P279* ?y }",
                  "SELECT ?x ?y WHERE { ?x wdt:P131+ ?y }",
                  "SELECT ?x ?y WHERE { ?x wdt:P361+ ?y }"]:
            assert "kgcult/ns#" in wdqs.prepare(q, closure_fresh=True).text
            assert through_kgcult(s, q) == as_written(s, q), q


def test_the_query_page_offers_a_wdqs_example_that_runs(tmp_path):
    from kgcult.serve.pages import EXAMPLES

    ex = next(e for e in EXAMPLES if e["id"] == "wdqs-label-service")
    assert "SERVICE wikibase:label" in ex["query"] and "PREFIX" not in ex["query"]
    path = build_store(tmp_path / "food")
    with running_server(path) as srv:
        url = srv.url + "/query?" + urllib.parse.urlencode({"query": ex["query"]})
        with urllib.request.urlopen(url, timeout=10) as resp:
            rows = json.load(resp)["results"]["bindings"]
    assert len(rows) == 2 and all(r["dishLabel"]["value"] for r in rows)
    assert {r["dish"]["value"] for r in rows} <= {r["dish"]["value"] for r in rows if "dishLabel" in r}


def test_values_blocks_are_one_token_and_bound_text_is_never_rewritten(labels_store):
    from kgcult.sparql.tokens import tokenize

    q = 'SELECT * WHERE { VALUES (?x ?m) { (<http://a#b> "} SERVICE <http://x/> {") } ?x ?p ?m }'
    kinds = [t.kind for t in tokenize(q)]
    assert kinds.count("values") == 1 and "string" not in kinds
    assert wdqs.prepare(q, closure_fresh=True).text == q
    # a mention with braces, quotes and a SERVICE keyword, bound as a value: just a literal
    mention = 'pizza" } SERVICE <http://127.0.0.1:9/> { "'
    got = rows(labels_store.query("SELECT ?d WHERE { ?d rdfs:label ?m }", bindings={"m": mention}))
    assert got == []


def test_the_python_api_and_the_cli_run_wdqs_queries(labels_path):
    import kgcult

    kg = kgcult.open(labels_path, read_only=True)
    assert {r["dishLabel"] for r in kg.sparql(ISSUE_QUERY)} == {"Pizza", "寿司", "Q900003"}
    kg.store.close()
    result = run_cli(["sparql", ISSUE_QUERY, "--format", "csv"], store_path=labels_path)
    assert result.exit_code == 0, result.output
    assert "Pizza" in result.output and "Q900003" in result.output


def test_a_remote_endpoint_gets_the_prefixes_a_query_uses_even_among_bound_values():
    q = resources.queries("views", "fmlama-extras.rq").read_text()  # VALUES ?property { wdt:P186 wdt:P18 }
    assert wdqs.prefix_prologue(q) == f"PREFIX wdt: <{wdqs.PREFIXES['wdt']}> "
    q = 'SELECT * WHERE { VALUES ?x { "wd:b" <http://x/rdfs:y> 1^^xsd:integer _:b } }'
    assert wdqs.prefix_prologue(q) == f"PREFIX xsd: <{wdqs.PREFIXES['xsd']}> "


# -- per-row label lookups ----------------------------------------------------------------

LOOKUP_QUERIES = {
    # bound by the triple before it: looked up per row
    "joined": ("SELECT ?d ?i ?il WHERE { ?d wdt:P527 ?i . ?i rdfs:label ?il }", 1),
    # both labels, a language filter across them (FmLAMA's shape)
    "filtered": ("SELECT ?d ?dl ?i ?il WHERE { ?d wdt:P495 ?c . ?d rdfs:label ?dl . ?d wdt:P527 ?i . "
                 "?i rdfs:label ?il . FILTER(LANG(?dl) = LANG(?il)) }", 2),
    # bound inside a SELECT * subquery and a plain group
    "subquery": ("SELECT ?d ?dl WHERE { { SELECT * WHERE { { ?d wdt:P495 ?c } UNION { ?d wdt:P361 ?c } } } "
                 "?d rdfs:label ?dl . }", 1),
    # the object bound too, and a description
    "object bound": ("SELECT ?d ?x ?desc WHERE { ?d rdfs:label ?x . ?d wdt:P495 ?c . ?d rdfs:label ?x . "
                     "?d schema:description ?desc }", 2),
    # bound only in an OPTIONAL, in a FILTER, or in a subquery that does not project it: as written
    "optional only": ("SELECT ?d ?cl WHERE { ?d wdt:P527 ?i OPTIONAL { ?d wdt:P495 ?c } ?c rdfs:label ?cl }", 0),
    "filter only": ("SELECT ?d ?dl WHERE { FILTER(BOUND(?d)) ?d rdfs:label ?dl }", 0),
    "not projected": ("SELECT ?c ?dl WHERE { { SELECT ?c WHERE { ?d wdt:P495 ?c } } ?d rdfs:label ?dl }", 0),
    # the first pattern of its group: nothing to look up from
    "first": ("SELECT ?d ?dl WHERE { ?d rdfs:label ?dl . ?d wdt:P495 ?c }", 0),
    # a statement after a FILTER, and a subject bound by a VALUES block (kgcult's bindings):
    # a label left joined after two looked up per row, Oxigraph plans very badly
    "after a filter": ("SELECT ?d ?dl ?i ?il WHERE { ?d wdt:P527 ?i . ?i rdfs:label ?il . "
                       "FILTER(LANG(?il) != \"\") ?d rdfs:label ?dl }", 2),
    "values": ("SELECT ?c ?d ?cl WHERE { VALUES (?c) { (wd:Q17) } ?c rdfs:label ?cl . ?d wdt:P495 ?c }", 1),
    "values undef": ("SELECT ?c ?cl WHERE { VALUES (?c) { (UNDEF) } ?c rdfs:label ?cl }", 0),
}


@pytest.mark.slow  # 15 s for one of its shapes: make test-all
@pytest.mark.parametrize("name", sorted(LOOKUP_QUERIES))
def test_label_lookups_are_made_per_row_with_the_rows_of_the_join(seed_path, name):
    query, wrapped = LOOKUP_QUERIES[name]
    prepared = wdqs.prepare(query, closure_fresh=True).text
    assert prepared.count("LATERAL {") == wrapped, prepared
    with Store(seed_path, read_only=True) as store:
        expected = as_written(store, query)
        assert through_kgcult(store, query) == expected
        if wrapped:
            assert sum(expected.values()) > 0  # the comparison is not between two empty answers


def test_label_lookups_leave_templates_and_remote_queries_alone():
    construct = "CONSTRUCT { ?i rdfs:label ?il } WHERE { ?d wdt:P527 ?i . ?i rdfs:label ?il }"
    assert "LATERAL" not in wdqs.prepare(construct, closure_fresh=True).text
    joined = LOOKUP_QUERIES["joined"][0]
    assert "LATERAL" not in wdqs.prepare(joined, closure_fresh=None).text  # a remote endpoint
    assert "LATERAL" in wdqs.prepare(joined, closure_fresh=False).text  # stale closure: still local


def test_fmlama_per_country_query_looks_labels_up_per_row():
    text = resources.queries("wdqs", "papers", "fmlama-dishes.rq").read_text(encoding="utf-8")
    prepared = wdqs.prepare(text.replace("COUNTRY", "Q17"), closure_fresh=True).text
    assert "LATERAL { ?ingredient rdfs:label ?ingredientLabel . }" in prepared
    assert "LATERAL { ?dish rdfs:label ?dishLabel . }" in prepared
