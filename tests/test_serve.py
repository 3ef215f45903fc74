"""`kgcult serve`: a real HTTP server on 127.0.0.1 over a real store, queried by
SPARQLWrapper, rdflib's SPARQLStore and plain urllib."""
from __future__ import annotations

from http.client import HTTPConnection
import json
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from kgcult import inspection, resources
from kgcult.serve.config import ServeConfig, check_config, is_loopback
from kgcult.serve.protocol import parse_accept
from kgcult.sparql.query_text import classify, first_keyword
from kgcult.errors import KgcultError
from kgcult.store import Store

from tests.conftest import SERVE_FOOD as FOOD
from tests.conftest import build_store, run_cli, running_server
WD = "http://www.wikidata.org/entity/"


@pytest.fixture(scope="module")
def server(store_path):
    with running_server(store_path) as srv:
        yield srv


def http(url, data=None, headers=None, method=None):
    """(status, headers, body) without raising on HTTP errors."""
    req = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def post_query(base, query, accept="application/sparql-results+json", **params):
    data = urllib.parse.urlencode({"query": query, **params}).encode()
    return http(base + "/query", data, {"Accept": accept, "Content-Type": "application/x-www-form-urlencoded"})


# -- SPARQL clients ------------------------------------------------------------------------

def test_sparqlwrapper_select_ask_construct(server):
    from SPARQLWrapper import JSON, N3, XML, SPARQLWrapper

    sw = SPARQLWrapper(server.url + "/query")
    sw.setQuery("""PREFIX wd: <http://www.wikidata.org/entity/>
        PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
        SELECT ?l WHERE { wd:Q46383 rdfs:label ?l } ORDER BY ?l""")
    sw.setReturnFormat(JSON)
    res = sw.query().convert()
    labels = {(b["l"]["value"], b["l"].get("xml:lang")) for b in res["results"]["bindings"]}
    assert ("sushi", "en") in labels and ("寿司", "ja") in labels and len(labels) == 5

    sw.setReturnFormat(XML)
    doc = sw.query().convert()  # a DOM
    assert len(doc.getElementsByTagName("result")) == 5

    sw.setMethod("POST")
    sw.setReturnFormat(JSON)
    sw.setQuery("ASK { wd:Q177 wdt:P495 wd:Q38 }")  # predeclared prefixes
    assert sw.query().convert()["boolean"] is True

    sw.setQuery("CONSTRUCT WHERE { wd:Q177 ?p ?o }")
    sw.setReturnFormat(N3)
    g = sw.query().convert()
    if isinstance(g, (bytes, str)):
        from rdflib import Graph
        g = Graph().parse(data=g, format="turtle")
    # 5 data triples (2 labels, P279, P495, P527) and 6 from the closure (in the default graph)
    assert len(g) == 11


def test_rdflib_sparqlstore(server):
    from rdflib import Graph, Literal, URIRef
    from rdflib.plugins.stores.sparqlstore import SPARQLStore

    st = SPARQLStore(server.url + "/query")
    g = Graph(store=st)
    rows = list(g.query("""SELECT ?country (COUNT(?d) AS ?n) WHERE {
        ?d <https://w3id.org/kgcult/ns#typedAs> <http://www.wikidata.org/entity/Q746549> ;
           <http://www.wikidata.org/prop/direct/P495> ?country } GROUP BY ?country ORDER BY ?country"""))
    got = {str(r[0]): int(r[1]) for r in rows}
    assert got == {WD + "Q17": 2, WD + "Q38": 2, WD + "Q884": 2}
    assert g.query("ASK { <http://www.wikidata.org/entity/Q17> ?p ?o }").askAnswer is True
    # triple patterns through the store API (a CONSTRUCT under the hood)
    labels = set(g.objects(URIRef(WD + "Q17"), URIRef("http://www.w3.org/2000/01/rdf-schema#label")))
    assert Literal("日本", lang="ja") in labels
    res = g.query("CONSTRUCT { ?d ?p ?o } WHERE { ?d ?p ?o FILTER(?d = <http://www.wikidata.org/entity/Q177>) }")
    assert len(res.graph) == 11


# -- protocol and negotiation ---------------------------------------------------------------

def test_get_post_and_sparql_query_body(server):
    q = "SELECT ?o WHERE { wd:Q38 rdfs:label ?o } ORDER BY ?o"
    status, _, body = http(server.url + "/query?" + urllib.parse.urlencode({"query": q}),
                           headers={"Accept": "application/sparql-results+json"})
    assert status == 200
    assert [b["o"]["value"] for b in json.loads(body)["results"]["bindings"]] == ["Italia", "Italy"]
    status, _, body2 = http(server.url + "/query", q.encode(), {"Content-Type": "application/sparql-query"})
    assert status == 200 and json.loads(body2) == json.loads(body)


@pytest.mark.parametrize("accept,ctype,check", [
    ("text/csv", "text/csv", lambda b: b.startswith(b"o\r\nItalia\r\nItaly\r\n")),
    ("text/tab-separated-values", "text/tab-separated-values", lambda b: b'"Italia"@it' in b),
    ("application/sparql-results+xml", "application/sparql-results+xml", lambda b: b'<literal xml:lang="it">Italia</literal>' in b),
    ("text/csv;q=0.5, application/sparql-results+xml", "application/sparql-results+xml", lambda b: b"<sparql" in b),
    ("*/*", "application/sparql-results+json", lambda b: json.loads(b)["head"]["vars"] == ["o"]),
    ("image/png", "application/sparql-results+json", lambda b: b"Italia" in b),
])
def test_select_content_negotiation(server, accept, ctype, check):
    status, headers, body = post_query(server.url, "SELECT ?o WHERE { wd:Q38 rdfs:label ?o } ORDER BY ?o", accept)
    assert status == 200
    assert headers["Content-Type"].startswith(ctype)
    assert check(body), body


@pytest.mark.parametrize("accept,ctype", [
    ("application/n-triples", "application/n-triples"),
    ("text/turtle", "text/turtle"),
    ("application/rdf+xml", "application/rdf+xml"),
    ("application/n-quads", "application/n-quads"),
    ("application/ld+json", "application/ld+json"),
    ("application/sparql-results+json", "application/n-triples"),  # no RDF type asked: default
])
def test_construct_content_negotiation(server, accept, ctype):
    import pyoxigraph as ox

    status, headers, body = post_query(server.url, "CONSTRUCT WHERE { wd:Q177 ?p ?o }", accept)
    assert status == 200 and headers["Content-Type"].startswith(ctype)
    fmt = ox.RdfFormat.from_media_type(ctype)
    assert len(list(ox.parse(body, format=fmt))) == 11  # 5 data + 6 closure triples


def test_format_parameter_and_ask_formats(server):
    status, headers, body = post_query(server.url, "SELECT * WHERE { wd:Q38 rdfs:label ?o }", "", format="csv")
    assert status == 200 and headers["Content-Type"].startswith("text/csv")
    status, _, body = post_query(server.url, "ASK { wd:Q38 ?p ?o }", "application/sparql-results+xml")
    assert b"<boolean>true</boolean>" in body
    status, _, body = post_query(server.url, "ASK { wd:Q38 wdt:P495 ?o }")
    assert json.loads(body) == {"head": {}, "boolean": False}
    status, _, body = post_query(server.url, "ASK { wd:Q38 ?p ?o }", "text/csv")
    assert (status, body) == (200, b"true\n")


TRIPLE_TERM = "SELECT ?t WHERE { BIND(<<( wd:Q38 wdt:P31 wd:Q6256 )>> AS ?t) }"


@pytest.mark.parametrize("accept", ["application/sparql-results+json", "application/sparql-results+xml",
                                    "text/csv", "text/tab-separated-values"])
def test_triple_terms_in_results(server, accept):
    status, _, body = post_query(server.url, TRIPLE_TERM, accept)
    assert status == 200, body
    assert b"http://www.wikidata.org/entity/Q6256" in body
    if "json" in accept:
        assert json.loads(body)["results"]["bindings"][0]["t"]["type"] == "triple"


def test_request_line_limit(server):
    status, _, _ = http(server.url + "/query?" + urllib.parse.urlencode({"query": "ASK {}" + " " * (100 << 10)}))
    assert status == 414


def test_union_default_graph_and_dataset_parameters(server):
    # default: the set of all graphs' triples, closures included
    status, _, body = post_query(server.url, "SELECT (COUNT(*) AS ?n) WHERE { ?s kgc:typedAs ?o }")
    assert int(json.loads(body)["results"]["bindings"][0]["n"]["value"]) > 0
    # default-graph-uri narrows the default graph to the food data graph
    status, _, body = post_query(server.url, "SELECT (COUNT(*) AS ?n) WHERE { ?s kgc:typedAs ?o }",
                                 **{"default-graph-uri": "https://w3id.org/kgcult/graph/food"})
    assert status == 200 and json.loads(body)["results"]["bindings"][0]["n"]["value"] == "0"
    status, _, body = post_query(server.url, "SELECT (COUNT(*) AS ?n) WHERE { ?s wdt:P495 ?o }",
                                 **{"default-graph-uri": "https://w3id.org/kgcult/graph/food"})
    assert json.loads(body)["results"]["bindings"][0]["n"]["value"] == "6"


def test_syntax_error_is_400_with_position(server):
    status, _, body = post_query(server.url, "SELECT ?x WHERE { ?x ?y }")
    assert status == 400 and b"syntax error" in body.lower() and b"line 1, column 26" in body
    assert body.splitlines()[1:] == [b"  SELECT ?x WHERE { ?x ?y }", b"  " + b" " * 25 + b"^"]  # a caret


def test_no_query_and_unknown_paths(server):
    assert http(server.url + "/query", b"", {"Content-Type": "application/x-www-form-urlencoded"})[0] == 400
    assert http(server.url + "/nope")[0] == 404
    assert http(server.url + "/query?query=", headers={})[0] == 400
    assert http(server.url + "/query", method="PUT", data=b"x")[0] == 405
    status, headers, body = http(server.url + "/query?query=ASK%7B%7D", method="HEAD")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) > 0


# -- read-only by default ------------------------------------------------------------------

INSERT = 'INSERT DATA { <http://example.org/x> <http://example.org/p> "smuggled" }'
INSERT_NAMED = 'INSERT DATA { GRAPH <http://example.org/g> { <http://example.org/x> <http://example.org/p> "smuggled" } }'


def _count_example(base) -> int:
    _, _, body = post_query(base, "SELECT (COUNT(*) AS ?n) WHERE { ?s <http://example.org/p> ?o }")
    return int(json.loads(body)["results"]["bindings"][0]["n"]["value"])


def test_update_without_writable_is_403_everywhere(server):
    u = server.url
    # /update with a form, and with a sparql-update body
    assert http(u + "/update", urllib.parse.urlencode({"update": INSERT}).encode(),
                {"Content-Type": "application/x-www-form-urlencoded"})[0] == 403
    assert http(u + "/update", INSERT.encode(), {"Content-Type": "application/sparql-update",
                                                 "Authorization": "Bearer whatever-token"})[0] == 403
    # smuggled through /query: as query=, as update=, as a sparql-update body, after a prologue
    assert post_query(u, INSERT)[0] == 403
    assert post_query(u, "PREFIX ex: <http://example.org/>\n# comment\n" + INSERT)[0] == 403
    assert http(u + "/query", urllib.parse.urlencode({"update": INSERT}).encode(),
                {"Content-Type": "application/x-www-form-urlencoded"})[0] == 403
    assert http(u + "/query", INSERT.encode(), {"Content-Type": "application/sparql-update"})[0] == 403
    assert http(u + "/query?" + urllib.parse.urlencode({"query": "DROP ALL"}))[0] == 403
    # a disguised update still never runs: Oxigraph's query parser rejects it
    status, _, _ = post_query(u, "  SELECT * WHERE {} ; " + INSERT)
    assert status == 400
    assert _count_example(u) == 0
    status, _, body = post_query(u, "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
    assert status == 200


def test_non_loopback_writable_without_token_refused_at_start(store_path):
    for bind in ("0.0.0.0", "192.0.2.10", "::"):
        with pytest.raises(KgcultError, match="not a loopback address"):
            check_config(ServeConfig(bind=bind, writable=True))
    r = run_cli(["serve", "--bind", "0.0.0.0", "--port", "0", "--writable"], store_path)
    assert r.exit_code == 1
    assert "refusing --writable on 0.0.0.0" in r.output
    # with a token it is accepted (not started here)
    cfg = check_config(ServeConfig(bind="0.0.0.0", writable=True, token="s3cret-token-123"))
    assert cfg.token == "s3cret-token-123"
    # loopback without a token: a random token is generated, updates still need it
    cfg = check_config(ServeConfig(bind="127.0.0.1", writable=True))
    assert cfg.generated_token and len(cfg.token) >= 24
    with pytest.raises(KgcultError, match="--token only makes sense with --writable"):
        check_config(ServeConfig(token="abcdefghijk"))


def test_is_loopback():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert is_loopback("127.8.0.1")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3") and not is_loopback("::")


def test_writable_with_token(make_server):
    token = "t0ken-for-the-test"
    srv = make_server(ServeConfig(port=0, writable=True, token=token), writable_store=True)
    u = srv.url
    body = INSERT_NAMED.encode()
    ctype = {"Content-Type": "application/sparql-update"}
    assert http(u + "/update", body, ctype)[0] == 401
    status, headers, _ = http(u + "/update", body, {**ctype, "Authorization": "Bearer wrong-token"})
    assert status == 403
    assert http(u + "/update", body, {**ctype, "Authorization": "Basic " + token})[0] == 401
    assert _count_example(u) == 0
    assert http(u + "/update", body, {**ctype, "Authorization": "Bearer " + token})[0] == 204
    assert _count_example(u) == 1
    # a form update works too; an update sent to /query is pointed at /update
    form = urllib.parse.urlencode({"update": 'INSERT DATA { GRAPH <http://example.org/g> { <http://example.org/y> '
                                             '<http://example.org/p> "2" } }'}).encode()
    assert http(u + "/update", form, {"Content-Type": "application/x-www-form-urlencoded",
                                      "Authorization": "Bearer " + token})[0] == 204
    assert _count_example(u) == 2
    assert post_query(u, INSERT)[0] == 400
    # the default graph is the set of the named graphs: an update writes named graphs only
    auth = {**ctype, "Authorization": "Bearer " + token}
    status, _, text = http(u + "/update", INSERT.encode(), auth)
    assert status == 400 and b"INSERT DATA" in text and b"named graph" in text
    assert _count_example(u) == 2
    # a triple two graphs hold counts once; it stays until both have dropped it
    other = INSERT_NAMED.replace("example.org/g>", "example.org/h>")
    assert http(u + "/update", other.encode(), auth)[0] == 204
    assert _count_example(u) == 2
    assert http(u + "/update", b"DROP GRAPH <http://example.org/g>", auth)[0] == 204
    assert _count_example(u) == 1
    assert http(u + "/update", other.replace("INSERT", "DELETE").encode(), auth)[0] == 204
    assert _count_example(u) == 0
    # the update made the closure stale and left a provenance record
    assert srv.app.store.closure_stale
    assert any(p.get("kind") == "update" for p in srv.app.store.provenance())
    # GET on /update is not allowed; a query sent to /update is refused
    assert http(u + "/update")[0] == 405
    assert http(u + "/update", b"SELECT * WHERE {}", {**ctype, "Authorization": "Bearer " + token})[0] == 400


# -- protection: timeouts, result limits, a bounded pool -------------------------------------

CROSS = "SELECT * WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"          # ~10^9 rows, streamed
CROSS_COUNT = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"  # ~5*10^6 inside one step


def test_timeout_streaming_query_is_504(make_server):
    srv = make_server(ServeConfig(port=0, timeout=0.3, max_rows=10**9, max_bytes=10**10))
    status, _, body = post_query(srv.url, CROSS)
    assert status == 504 and b"timed out" in body
    # the server keeps answering
    assert post_query(srv.url, "ASK { ?s ?p ?o }")[0] == 200
    assert srv.app.stats["timeouts"] == 1


def test_timeout_inside_one_evaluation_step_is_504(make_server):
    srv = make_server(ServeConfig(port=0, timeout=0.05))
    status, _, body = post_query(srv.url, CROSS_COUNT)
    assert status == 504
    assert post_query(srv.url, "ASK { ?s ?p ?o }")[0] == 200


def test_result_row_and_byte_limits(make_server):
    srv = make_server(ServeConfig(port=0, max_rows=3, max_bytes=2000))
    q = "SELECT ?s ?l WHERE { ?s rdfs:label ?l } ORDER BY ?s ?l"
    status, headers, body = post_query(srv.url, q)
    assert status == 507 and b"more than 3 rows" in body and headers["X-Kgcult-Limit"] == "rows=3"
    status, headers, body = post_query(srv.url, q, **{"limit-mode": "truncate"})
    assert status == 200 and headers["X-Kgcult-Truncated"] == "true"
    assert len(json.loads(body)["results"]["bindings"]) == 3
    assert post_query(srv.url, q + " LIMIT 3")[0] == 200
    status, _, _ = post_query(srv.url, "CONSTRUCT WHERE { ?s rdfs:label ?o }", "application/n-triples")
    assert status == 507
    big = 'SELECT ?x WHERE { VALUES ?x { "%s" } }' % ("x" * 3000)
    status, headers, body = post_query(srv.url, big)
    assert status == 507 and headers["X-Kgcult-Limit"] == "bytes=2000"


RUNAWAY = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"  # ~10^9, one step


def query_from(source: str, base: str, query: str, timeout: float = 60):
    """(status, body) of a query sent from the loopback address ``source`` (a client of its own)."""
    conn = HTTPConnection(urllib.parse.urlsplit(base).hostname, urllib.parse.urlsplit(base).port,
                                      timeout=timeout, source_address=(source, 0))
    try:
        conn.request("POST", "/query", urllib.parse.urlencode({"query": query}),
                     {"Content-Type": "application/x-www-form-urlencoded"})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def wait_in_flight(srv, n: int) -> None:
    for _ in range(200):
        if srv.app.pool.in_flight() >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"never {n} requests in flight")


def test_runaway_query_is_stopped_and_its_worker_replaced(make_server):
    """A query inside one long evaluation step (a 4-way cross product COUNT) gets 504 at
    the deadline and its worker process is killed and replaced: the one worker answers again."""
    srv = make_server(ServeConfig(port=0, workers=1, timeout=1))
    assert query_from("127.0.0.2", srv.url, "ASK {}")[0] == 200
    pids = srv.app.pool.worker_pids()
    assert len(pids) == 1
    status, body = query_from("127.0.0.2", srv.url, RUNAWAY)
    assert status == 504 and b"timed out" in body
    assert query_from("127.0.0.2", srv.url, "ASK { wd:Q177 wdt:P495 wd:Q38 }")[0] == 200
    assert srv.app.pool.worker_pids().isdisjoint(pids)  # a fresh process
    assert srv.app.stats["timeouts"] == 1


def test_busy_pool_answers_503(make_server):
    srv = make_server(ServeConfig(port=0, workers=1, queue=0, timeout=2))
    out = []
    t = threading.Thread(target=lambda: out.append(query_from("127.0.0.2", srv.url, RUNAWAY)))
    t.start()
    wait_in_flight(srv, 1)
    status, body = query_from("127.0.0.3", srv.url, "ASK {}")
    assert status == 503 and b"busy" in body
    t.join(30)
    assert out[0][0] == 504
    assert query_from("127.0.0.3", srv.url, "ASK {}")[0] == 200  # the slot came back


def test_queue_timeout_drops_a_waiting_query(make_server):
    srv = make_server(ServeConfig(port=0, workers=1, queue=4, timeout=3, queue_timeout=0.2))
    t = threading.Thread(target=query_from, args=("127.0.0.2", srv.url, RUNAWAY))
    t.start()
    wait_in_flight(srv, 1)
    status, body = query_from("127.0.0.3", srv.url, "ASK {}")
    assert status == 503 and b"no query worker became free" in body
    t.join(30)
    assert query_from("127.0.0.3", srv.url, "ASK {}")[0] == 200


def test_one_client_cannot_take_every_worker(make_server):
    srv = make_server(ServeConfig(port=0, workers=2, timeout=3, queue_timeout=1))
    assert srv.app.pool.per_client == 1
    t = threading.Thread(target=query_from, args=("127.0.0.2", srv.url, RUNAWAY))
    t.start()
    wait_in_flight(srv, 1)
    status, body = query_from("127.0.0.2", srv.url, RUNAWAY)  # the same client again: waits, then 429
    assert status == 429 and b"too many queries at once from 127.0.0.2" in body
    # another client still gets the free worker, at once
    assert query_from("127.0.0.3", srv.url, "ASK { wd:Q177 wdt:P495 wd:Q38 }")[0] == 200
    t.join(30)
    assert srv.app.stats["limited"] == 1


def test_request_body_limit(make_server):
    srv = make_server(ServeConfig(port=0, max_request_bytes=1000))
    status, _, _ = http(srv.url + "/query", b"SELECT * WHERE {}" + b" " * 2000, {"Content-Type": "application/sparql-query"})
    assert status == 413


# -- the page, the entity page and the examples ------------------------------------------------

def _self_contained(server, path, assets):
    status, headers, body = http(server.url + path)
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    html = body.decode()
    for name in assets:
        assert f'"/static/{name}"' in html, name
        status, _, asset = http(server.url + "/static/" + name)
        assert status == 200 and asset
        if not name.startswith("vendor/"):  # YASGUI's bundle names docs sites in its help texts
            html += asset.decode()
    # no CDN, no external fonts or scripts: nothing is fetched from another origin
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "fetch(\"http" not in html and "import(" not in html
    return html


def test_query_page_is_self_contained(server):
    from kgcult.serve import pages

    _self_contained(server, "/plain", ("app.js", "style.css"))
    if pages.vendored():  # YASGUI from npm (make vendor): the page and its bundle come from here
        html = _self_contained(server, "/", ("vendor/yasgui.min.js", "vendor/yasgui.min.css", "yasr-plugins.js",
                                             "yasgui-page.js", "style.css"))
        assert "lov.linkeddata" not in html and '"variables", "prefixes"' in html  # no online completers
    else:  # without npm at build time: the plain page
        _self_contained(server, "/", ("app.js", "style.css"))
    assert http(server.url + "/static/vendor/nothing.js")[0] == 404
    assert http(server.url + "/static/../serve.py")[0] == 404
    prefixes = json.loads(http(server.url + "/api/prefixes")[2])
    assert prefixes["wd"] == WD and prefixes["geo"] == "http://www.opengis.net/ont/geosparql#"


def test_page_falls_back_to_the_plain_page_without_yasgui(server, monkeypatch, tmp_path):
    """A build without npm has no web/vendor/: `/` is the plain page, the bundle a clear 404."""
    from kgcult.serve import pages

    monkeypatch.setattr(pages, "VENDOR_DIR", tmp_path / "no-vendor")
    status, _, body = http(server.url + "/")
    assert status == 200 and b'src="/static/app.js"' in body and b"yasgui" not in body.lower()
    status, _, body = http(server.url + "/static/vendor/yasgui.min.js")
    assert status == 404 and b"make vendor" in body


def test_examples_run_and_use_closures(server):
    status, _, body = http(server.url + "/api/examples")
    examples = json.loads(body)
    assert {e["id"] for e in examples} == {p.stem.split("-", 1)[1] for p in resources.queries("examples").glob("*.rq")}
    assert len(examples) >= 10 and {"map-of-capitals", "dish-images", "most-used-ingredients"} <= {e["id"] for e in examples}
    for ex in examples:
        if ex["id"] == "wdqs-label-service":  # written as for WDQS: tests/test_wdqs.py runs it
            continue
        assert "+" not in ex["query"].replace("+ 1", "") and "*" not in ex["query"].split("WHERE")[1], ex["id"]
        status, _, body = post_query(server.url, ex["query"])
        assert status == 200, (ex["id"], body)
        rows = json.loads(body)["results"]["bindings"]
        assert rows, ex["id"]
        if ex["id"] == "dishes-per-country":
            got = {b["country"]["value"]: int(b["dishes"]["value"]) for b in rows}
            assert got == {WD + "Q17": 2, WD + "Q38": 2, WD + "Q884": 2}
        if ex["id"] == "food-hierarchy":
            depth = {b["class"]["value"]: int(b["depth"]["value"]) for b in rows}
            assert depth == {WD + "Q41415": 1, WD + "Q9100002": 1, WD + "Q177": 1, WD + "Q9100001": 2}
        if ex["id"] == "labels-all-languages":
            assert len(rows) == 7
        if ex["id"] == "map-of-capitals":  # WKT points as WDQS writes P625
            got = {b["capitalLabel"]["value"]: b["coord"] for b in rows}
            assert set(got) == {"Tokyo", "Seoul", "Rome"}
            assert got["Tokyo"] == {"type": "literal", "value": "Point(139.69171 35.6895)",
                                    "datatype": "http://www.opengis.net/ont/geosparql#wktLiteral"}
        if ex["id"] == "dlama-capitals":
            assert {(b["countryLabel"]["value"], b["capitalLabel"]["value"]) for b in rows} == {
                ("Italy", "Rome"), ("Japan", "Tokyo"), ("South Korea", "Seoul")}


def test_entity_page_shows_the_card(server, store_path):
    status, headers, body = http(server.url + "/entity/Q46383")
    assert status == 200 and headers["Content-Type"].startswith("text/html"), body[:500]
    page = body.decode()
    for text in ("sushi", "寿司", "すし", "Japanese dish of vinegared rice", "P495 (country of origin)",
                 'href="/entity/Q17?lang=en">Japan (Q17)', "typedAs", "dish (Q746549)", "sitelinks: 120"):
        assert text in page, text
    status, _, body = http(server.url + "/api/entity/Q46383?lang=ja")
    with Store(store_path, read_only=True) as st:
        assert json.loads(body) == inspection.show(st, "Q46383", lang="ja")
    assert json.loads(body)["label"] == "寿司"
    # values are escaped
    status, _, body = http(server.url + "/entity/Q9100023")
    assert b"tricky &quot;quoted&quot; &lt;dish&gt; &amp; co" in body and b"<dish>" not in body
    assert http(server.url + "/entity/Q424242")[0] == 404
    assert http(server.url + "/entity/Q46383?lang=%22%3E")[0] == 400


def test_status_endpoint(server):
    status, _, body = http(server.url + "/api/status")
    s = json.loads(body)
    assert s["writable"] is False and s["closure_stale"] is False
    # WDQS-like defaults: a 60 s deadline, no row cap, a byte bound on the spooled answer
    assert s["limits"]["timeout_s"] == 60 and s["limits"]["max_rows"] is None
    assert s["limits"]["max_bytes"] == 1 << 30 and s["limits"]["in_memory_bytes"] == 1 << 20
    assert s["limits"]["truncate_rows"] == 100_000


def test_large_results_are_not_refused_by_a_row_count(server):
    """WDQS has no row cap, only its deadline: 125 000 rows come back whole by default
    (the former default refused more than 100 000 rows with 507), and the query page's
    limit-mode=truncate still gets a bounded answer."""
    digits = " ".join(str(i) for i in range(50))
    q = f"SELECT ?a ?b ?c WHERE {{ VALUES ?a {{ {digits} }} VALUES ?b {{ {digits} }} VALUES ?c {{ {digits} }} }}"
    status, headers, body = post_query(server.url, q, "text/tab-separated-values")
    assert status == 200 and headers["X-Kgcult-Rows"] == "125000"
    assert body.count(b"\n") == 125_001 and "X-Kgcult-Truncated" not in headers
    status, headers, body = post_query(server.url, q, "text/tab-separated-values", **{"limit-mode": "truncate"})
    assert status == 200 and headers["X-Kgcult-Truncated"] == "true" and body.count(b"\n") == 100_001


def test_classify():
    assert classify("PREFIX a: <x:>\nBASE <http://b/>\n# c\n  insert data {}") == "update"
    assert classify("select * {}") == "query"
    assert classify("WITH <g> DELETE {} WHERE {}") == "update"
    assert classify("# only a comment") is None
    assert first_keyword("PREFIX : <http://x/> CONSTRUCT {} WHERE {}") == "construct"


def test_parse_accept():
    assert parse_accept("text/csv;q=0.5, application/json, */*;q=0.1") == ["application/json", "text/csv", "*/*"]
    assert parse_accept("text/csv;q=0") == []
    assert parse_accept(None) == []


# -- the command itself, as a process ------------------------------------------------------

def _start_cli(args, store_path):
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import free_port

    port = free_port()
    # Ctrl+C's SIGINT as a terminal delivers it: a process started in the background by a
    # non-interactive shell (`make test &`, a CI runner) inherits SIGINT ignored, and then
    # Python never raises KeyboardInterrupt in the server
    proc = subprocess.Popen([sys.executable, "-m", "kgcult.cli", "--store", str(store_path), "serve",
                             "--port", str(port), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = []
    end = time.time() + 60
    while time.time() < end:
        line = proc.stderr.readline()
        if not line:
            if proc.poll() is not None:
                break
            continue
        lines.append(line)
        if "press Ctrl+C" in line:
            return proc, f"http://127.0.0.1:{port}", "".join(lines)
    proc.kill()
    raise AssertionError("kgcult serve did not start: " + "".join(lines) + (proc.stderr.read() or ""))


def test_cli_serve_process_writable_with_generated_token(tmp_path):
    import signal

    path = build_store(tmp_path / "store")
    proc, url, err = _start_cli(["--writable"], path)
    try:
        assert "writable" in err
        token = re.search(r"Authorization: Bearer (\S+)", err).group(1)
        body = INSERT_NAMED.encode()
        ctype = {"Content-Type": "application/sparql-update"}
        assert http(url + "/update", body, ctype)[0] == 401
        assert http(url + "/update", body, {**ctype, "Authorization": "Bearer " + token})[0] == 204
        assert _count_example(url) == 1
        assert http(url + "/")[0] == 200
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl+C stops it cleanly
        assert proc.wait(20) == 0


def test_cli_serve_warns_about_a_stale_closure_and_refuses_missing_store(tmp_path):
    s = Store(tmp_path / "stale")
    s.load([FOOD])  # no closure built
    s.close()
    proc, url, err = _start_cli(["--quiet"], tmp_path / "stale")
    try:
        assert "closure is stale" in err and "read-only" in err
        assert json.loads(http(url + "/api/status")[2])["closure_stale"] is True
    finally:
        proc.terminate()
        proc.wait(20)
    r = run_cli(["serve", "--port", "0"], tmp_path / "nothing-here")
    assert r.exit_code == 1 and "no store at" in r.output
    r = run_cli(["serve", "--port", "0"], "sparql+http://127.0.0.1:1/query")
    assert r.exit_code == 1 and "embedded store" in r.output
