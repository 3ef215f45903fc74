"""The remote store backend (``--store sparql+http://...``) against `kgcult serve` and
`oxigraph serve` on 127.0.0.1: the read commands give the same answers as the embedded store."""
from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pyoxigraph as ox
import pytest
from pyoxigraph import Literal, NamedNode

from kgcult import vocab
from kgcult.store import hierarchy, setgraph
from kgcult.serve import Server, ServeConfig
from kgcult.store import snapshot
from kgcult.errors import KgcultError
from kgcult.sparql.client import RemoteError
from kgcult.store.remote import RemoteStore
from kgcult.store import Store, open_store

from tests.conftest import SERVE_FOOD as FOOD
from tests.conftest import build_store, free_port, run_cli, running_server
from tests.test_mirror_proxy import FaultProxy

WD = vocab.WD


@pytest.fixture(scope="module")
def embedded(tmp_path_factory):
    """A store with the food fixture, its closure and a cached content hash."""
    path = build_store(tmp_path_factory.mktemp("remote") / "store")
    s = Store(path)
    snapshot.store_content_hash(s)  # cached in the metadata graph, as after a build
    s.close()
    return path


def _copy(path: Path, name: str) -> Path:
    """A copy of a store: the CLI opens its store read-write, and a store must not be
    written while another process reads it (RocksDB), so the server gets its own copy."""
    import shutil

    target = path.parent / name
    if not target.exists():
        shutil.copytree(path, target)
    return target


@pytest.fixture(scope="module")
def served(embedded):
    with running_server(_copy(embedded, "served")) as srv:
        yield srv


@pytest.fixture
def remote(served):
    return RemoteStore(served.url + "/query")


@pytest.fixture
def local(embedded):
    s = Store(embedded, read_only=True)
    yield s
    s.close()


def _rows(result):
    names = [v.value for v in result.variables]
    return sorted(tuple(str(sol[n]) for n in names) for sol in result)


def test_open_store_gives_a_remote_store(served):
    st = open_store("sparql+" + served.url + "/query")
    assert isinstance(st, RemoteStore) and st.remote and st.read_only and not st.closure_stale
    assert st.location == "sparql+" + served.url + "/query"
    with pytest.raises(KgcultError, match="not an http"):
        RemoteStore("ftp://example.org/sparql")


def test_query_returns_pyoxigraph_objects(remote, local):
    q = "SELECT ?d ?l WHERE { ?d kgc:typedAs wd:Q746549 ; rdfs:label ?l }"
    res = remote.query(q)
    assert isinstance(res, ox.QuerySolutions)
    assert _rows(res) == _rows(local.query(q)) and len(_rows(local.query(q))) >= 10
    ask = remote.query("ASK { wd:Q177 wdt:P495 wd:Q38 }")
    assert isinstance(ask, ox.QueryBoolean) and bool(ask)
    assert not bool(remote.query("ASK { wd:Q177 wdt:P495 wd:Q17 }"))
    triples = remote.query("CONSTRUCT WHERE { wd:Q46383 ?p ?o }")
    assert isinstance(triples, ox.QueryTriples)
    assert sorted(map(str, triples)) == sorted(map(str, local.query("CONSTRUCT WHERE { wd:Q46383 ?p ?o }")))
    # DESCRIBE and a query with its own prologue
    d = remote.query("PREFIX x: <http://www.wikidata.org/entity/>\nDESCRIBE x:Q17")
    assert isinstance(d, ox.QueryTriples) and len(list(d)) > 0


def test_bindings_are_values_not_text(remote, local):
    q = "SELECT ?x WHERE { ?x rdfs:label ?l }"
    tricky = Literal('tricky "quoted" <dish> & co', language="en")
    assert [r["x"].value for r in remote.select(q, bindings={"l": tricky})] == [WD + "Q9100023"]
    # an injection attempt stays a literal
    evil = '"} } ; DROP ALL #'
    assert remote.select(q, bindings={"l": evil}) == []
    rows = (["x"], [[NamedNode(WD + "Q17")], [NamedNode(WD + "Q38")]])
    q2 = "SELECT ?x ?l WHERE { ?x rdfs:label ?l FILTER(LANG(?l) = 'en') }"
    assert remote.select(q2, rows=rows) == local.select(q2, rows=rows)


def test_graph_option_uses_default_graph_uri(remote, local):
    q = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
    food = vocab.GRAPH + "food"
    assert remote.select(q, graph=food) == local.select(q, graph=food)
    assert int(remote.select(q, graph=food)[0]["n"].value) < int(remote.select(q)[0]["n"].value)


def test_store_interface_matches_embedded(remote, local):
    assert remote.graph_counts() == local.graph_counts()
    assert remote.triple_count() == local.triple_count()
    assert remote.triple_count(vocab.GRAPH + "food") == local.triple_count(vocab.GRAPH + "food")
    assert remote.data_graphs() == local.data_graphs() == [vocab.GRAPH + "food"]
    for g in local.graph_counts():
        assert sorted(map(str, remote.quads(g))) == sorted(map(str, local.quads(g)))
    assert remote.provenance() == local.provenance()
    assert remote.get_state("closureStale") == "false"
    assert remote.get_state("noSuchState") is None
    assert snapshot.store_content_hash(remote) == snapshot.store_content_hash(local)
    # the read part of pyoxigraph's API, as hierarchy.edges and the linker use it
    assert sorted(hierarchy.edges(remote, vocab.WDT + "P279")) == sorted(hierarchy.edges(local, vocab.WDT + "P279"))
    assert len(remote.ox) == sum(local.graph_counts().values())  # named graphs (the default: their set)
    assert remote.ox.contains_named_graph(NamedNode(vocab.GRAPH + "food"))


def test_writes_are_refused(remote):
    for call in (lambda: remote.load([str(FOOD)]), lambda: remote.writing("load", "x"),
                 lambda: remote.update("CLEAR ALL", []), lambda: remote.set_state("a", "b"),
                 lambda: remote.ox.add(None), lambda: hierarchy.build(remote)):
        with pytest.raises(KgcultError, match="read-only|remote endpoint"):
            call()
    hierarchy.ensure_closure(remote)  # a no-op: the endpoint provides the closure


def test_cli_sparql_show_stats_same_as_embedded(served, embedded):
    url = "sparql+" + served.url + "/query"
    q = "SELECT ?d ?c WHERE { ?d kgc:typedAs wd:Q746549 ; wdt:P495 ?c } ORDER BY ?d"
    for fmt in ("table", "json", "csv", "tsv", "jsonl"):
        a = run_cli(["sparql", q, "--format", fmt], embedded)
        b = run_cli(["sparql", q, "--format", fmt], url)
        assert a.exit_code == 0 and b.exit_code == 0, b.output
        assert a.stdout == b.stdout
    for args in (["show", "Q46383"], ["show", "Q46383", "--lang", "ja", "--format", "json"], ["show", "Q17"]):
        a, b = run_cli(args, embedded), run_cli(args, url)
        assert b.exit_code == 0, b.output
        assert a.stdout == b.stdout
    a, b = run_cli(["stats", "--format", "json"], embedded), run_cli(["stats", "--format", "json"], url)
    sa, sb = json.loads(a.output), json.loads(b.output)
    assert sb.pop("store") == url and sa.pop("store")
    assert sa == sb
    # CONSTRUCT through the CLI prints the same N-Triples
    c = "CONSTRUCT WHERE { wd:Q177 ?p ?o }"
    assert sorted(run_cli(["sparql", c], embedded).output.splitlines()) == sorted(run_cli(["sparql", c], url).output.splitlines())
    # commands that write say so
    r = run_cli(["closure"], url)
    assert r.exit_code == 1 and "remote endpoint" in r.output


def _export_nquads(store_path: Path, target: Path) -> Path:
    with Store(store_path, read_only=True) as s:
        # the named graphs (the default graph is kgcult's set of their triples) and the
        # closure, which kgcult keeps in the default graph only
        own = {p for ps in setgraph.own_properties(s.ox).values() for p in ps} | {setgraph.IN_CYCLE.value}
        target.write_bytes(b"".join(f"{q} .\n".encode() for q in s.ox.quads_for_pattern(None, None, None, None)
                                    if isinstance(q.graph_name, NamedNode) or q.predicate.value in own))
    return target


def test_against_oxigraph_serve(oxigraph_server, embedded, tmp_path):
    srv = oxigraph_server([_export_nquads(embedded, tmp_path / "all.nq")])
    # oxigraph serve keeps a separate default graph unless asked for the union
    url = "sparql+" + srv.url + "?union-default-graph"
    q = "SELECT ?d ?c WHERE { ?d kgc:typedAs wd:Q746549 ; wdt:P495 ?c } ORDER BY ?d"
    a, b = run_cli(["sparql", q, "--format", "json"], embedded), run_cli(["sparql", q, "--format", "json"], url)
    assert b.exit_code == 0, b.output
    assert a.stdout == b.stdout and len(json.loads(a.output)["results"]["bindings"]) == 6
    for args in (["show", "Q46383", "--format", "json"], ["stats", "--format", "json"]):
        a, b = run_cli(args, embedded), run_cli(args, url)
        assert b.exit_code == 0, b.output
        ja, jb = json.loads(a.output), json.loads(b.output)
        ja.pop("store", None), jb.pop("store", None)
        assert ja == jb
    # --graph goes out as default-graph-uri (the union parameter is dropped for it)
    g = run_cli(["sparql", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "--graph", "food", "--format", "csv"], url)
    assert g.exit_code == 0, g.output
    assert g.output == run_cli(["sparql", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "--graph", "food",
                                "--format", "csv"], embedded).output
    # without the union the default graph holds the closure only: documented, and visible
    plain = RemoteStore(srv.url)
    with Store(embedded, read_only=True) as s:
        closure = sum(hierarchy.closure_sizes(s).values())
    assert plain.select("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")[0]["n"].value == str(closure)
    assert plain.graph_counts() == RemoteStore(srv.url + "?union-default-graph").graph_counts()


def test_errors_name_the_endpoint_and_status(served):
    r = RemoteStore(served.url + "/query")
    with pytest.raises(RemoteError, match=r"HTTP 400 .*syntax error"):
        r.query("SELECT ?x WHERE { ?x ?y }")
    with pytest.raises(RemoteError, match="HTTP 404"):
        RemoteStore(served.url + "/nothing-here").query("ASK {}")
    port = free_port()
    down = RemoteStore(f"http://127.0.0.1:{port}/query", retries=0)
    with pytest.raises(RemoteError, match=f"127.0.0.1:{port}/query: no answer"):
        down.query("ASK {}")
    r = run_cli(["sparql", "ASK {}"], f"sparql+http://127.0.0.1:{port}/query")
    assert r.exit_code == 1 and "no answer" in r.output


def test_timeout_of_a_silent_endpoint():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)  # accepts connections, never answers
    try:
        st = RemoteStore(f"http://127.0.0.1:{sock.getsockname()[1]}/query", timeout=0.3, retries=0)
        with pytest.raises(RemoteError, match="no answer .*timeout 0.3 s"):
            st.query("ASK {}")
    finally:
        sock.close()


def test_every_request_carries_the_user_agent_and_the_token(served, monkeypatch):
    monkeypatch.setenv("KGCULT_REMOTE_TOKEN", "s3cret")
    with FaultProxy(served.url + "/query", rate=0.0) as p:
        st = RemoteStore(p.url)
        st.query("ASK { ?s ?p ?o }")
        st.graph_counts()
    assert len(p.headers) >= 2
    for h in p.headers:
        assert h["User-Agent"].startswith("kgcult/") and h["Authorization"] == "Bearer s3cret"


def test_a_server_failure_is_not_run_again(served):
    """500 is how WDQS reports its own query timeout: repeating the query would be as slow."""
    with FaultProxy(served.url + "/query", always="500") as p:
        with pytest.raises(RemoteError, match="HTTP 500"):
            RemoteStore(p.url).query("ASK {}")
        assert p.requests == 1


def test_busy_endpoint_is_retried_then_named(served):
    """The remote store shares the mirror's HTTP client: a 503 is retried, and one that
    persists fails naming the endpoint, the status and the tries."""
    with FaultProxy(served.url + "/query", faults=("503",), rate=1.0, max_consecutive=1) as p:
        assert bool(RemoteStore(p.url).query("ASK { ?s ?p ?o }"))
        assert p.stats == {"503": 1, "ok": 1}
    with FaultProxy(served.url + "/query", always="503") as p:
        with pytest.raises(RemoteError, match=r"/query: failed 3 times, last: HTTP 503 Service Unavailable"):
            RemoteStore(p.url).query("ASK {}")
        assert p.requests == 3


def test_truncated_results_are_an_error(embedded):
    st = Store(embedded, read_only=True)
    srv = Server(st, ServeConfig(port=0, max_rows=2)).start()
    try:
        r = RemoteStore(srv.url + "/query")
        with pytest.raises(RemoteError, match="more than 2 rows"):
            r.select("SELECT ?s WHERE { ?s rdfs:label ?l }")
        assert len(r.select("SELECT ?s WHERE { ?s rdfs:label ?l } LIMIT 2")) == 2
    finally:
        srv.stop()
        st.close()


def test_truncation_header_pages_the_answer():
    """An endpoint that cuts an answer at its row cap and says so (Virtuoso's
    X-SPARQL-MaxRows) is read again page by page (ordered, OFFSET/LIMIT): every row comes
    back, never the cut answer."""
    import re
    import urllib.parse
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    rows = [f"r{i}" for i in range(5)]
    seen = []

    class H(BaseHTTPRequestHandler):
        def do_POST(self):
            form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
            q = form["query"][0]
            seen.append(q)
            m = re.search(r"OFFSET (\d+) LIMIT (\d+)", q)
            start, n = (int(m.group(1)), int(m.group(2))) if m else (0, 2)
            page = rows[start:start + min(n, 2)]
            body = json.dumps({"head": {"vars": ["x"]}, "results": {"bindings": [
                {"x": {"type": "literal", "value": v}} for v in page]}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/sparql-results+json")
            if len(page) == 2:
                self.send_header("X-SPARQL-MaxRows", "2")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        got = RemoteStore(f"http://127.0.0.1:{httpd.server_address[1]}/sparql").select("SELECT ?x {}")
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert [r["x"].value for r in got] == rows
    assert len(seen) == 1 + 3 and all("ORDER BY ?x" in q for q in seen[1:])


def test_prefixes_added_on_the_first_line(served, local):
    from kgcult.sparql.wdqs import prefix_prologue as _prologue

    assert _prologue("SELECT * { ?s wdt:P31 wd:Q5 }") == (
        "PREFIX wd: <http://www.wikidata.org/entity/> PREFIX wdt: <http://www.wikidata.org/prop/direct/> ")
    assert _prologue("PREFIX wd: <http://x/>\nSELECT * { ?s <http://a/wd:b> wd:Q5 }") == ""
    # a syntax error on line 2 is reported on line 2, as by the embedded store
    with pytest.raises(RemoteError, match=r"2:\d+|line 2, column \d+"):
        RemoteStore(served.url + "/query").query("SELECT ?x WHERE {\n ?x wdt:P31 }")


# -- views and the linker against a remote endpoint (the team's seed graph) ------------------

SEED = Path(__file__).resolve().parents[1] / "dumps" / "seed" / "source"


@pytest.fixture(scope="module")
def seed_served(tmp_path_factory):
    files = sorted(SEED.glob("*.ttl"))
    if not files:
        pytest.skip(f"no seed Turtle under {SEED}")
    path = tmp_path_factory.mktemp("seed") / "store"
    s = Store(path)
    s.load(files)
    hierarchy.build(s)
    snapshot.store_content_hash(s)
    s.close()
    st = Store(_copy(path, "served"), read_only=True)
    srv = Server(st, ServeConfig(port=0)).start()
    yield path, srv
    srv.stop()
    st.close()


def test_views_build_same_sha256_remote_and_embedded(seed_served, tmp_path):
    views = pytest.importorskip("kgcult.views", reason="kgcult/views.py (the views module) is not there yet")
    path, srv = seed_served
    remote = RemoteStore(srv.url + "/query")
    names = [v["name"] for v in views.views()]
    assert "fmlama" in names
    with Store(path, read_only=True) as local:
        for name in names:
            a = views.build(local, name, out=tmp_path / "emb")
            b = views.build(remote, name, out=tmp_path / "rem")
            assert a.manifest["sha256"] == b.manifest["sha256"], name
            assert a.manifest["outputs"] == b.manifest["outputs"], name
            assert a.manifest["snapshot_content_sha256"] == b.manifest["snapshot_content_sha256"], name
    assert json.loads((tmp_path / "rem" / "fmlama" / "MANIFEST.json").read_text())["rows"] > 0


def test_cli_build_fmlama_same_sha256(seed_served, tmp_path):
    path, srv = seed_served
    a = run_cli(["build", "fmlama", "--out", str(tmp_path / "emb")], path)
    b = run_cli(["build", "fmlama", "--out", str(tmp_path / "rem")], "sparql+" + srv.url + "/query")
    assert a.exit_code == 0 and b.exit_code == 0, b.output
    ma = json.loads((tmp_path / "emb" / "fmlama" / "MANIFEST.json").read_text())
    mb = json.loads((tmp_path / "rem" / "fmlama" / "MANIFEST.json").read_text())
    assert ma["sha256"] == mb["sha256"] and ma["rows"] > 0
    main_file = ma["output"]
    assert (tmp_path / "emb" / "fmlama" / main_file).read_bytes() == (tmp_path / "rem" / "fmlama" / main_file).read_bytes()


MENTIONS = ["sushi", "kimchi", "pizza", "ramen", "rice", "Japan", "寿司", "nothing-like-this"]


def test_link_index_reads_a_remote_endpoint(seed_served):
    """The linker's index builder reads labels and the topic closure through the store's
    pyoxigraph-like API; RemoteStore.ox answers it with SPARQL."""
    index = pytest.importorskip("kgcult.link.index.reader", reason="kgcult/link is not there yet")
    from kgcult.link.linker import Linker

    path, srv = seed_served
    remote = RemoteStore(srv.url + "/query")
    with Store(path, read_only=True) as local:
        la = Linker(index.build(local, "h"), store=local)
        lb = Linker(index.build(remote, "h"), store=remote)
        langs = {"寿司": "ja"}
        for m in MENTIONS:
            assert la.link(m, lang=langs.get(m, "en")) == lb.link(m, lang=langs.get(m, "en")), m
        assert la.link("sushi")["qid"] == "Q46383"


@pytest.mark.slow  # over 10 s: make test-all
def test_cli_link_against_remote(seed_served, tmp_path, monkeypatch):
    path, srv = seed_served
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KGCULT_CACHE", str(tmp_path / "cache"))
    a = run_cli(["link", "sushi"], path)
    b = run_cli(["link", "sushi"], "sparql+" + srv.url + "/query")
    assert a.exit_code == 0 and b.exit_code == 0, b.output
    assert list((tmp_path / "cache" / "link-index").iterdir()), "the remote index is cached"
    assert a.stdout == b.stdout and json.loads(a.stdout)["qid"] == "Q46383"
