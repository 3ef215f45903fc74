"""kgcult mirror: a real `oxigraph serve` on 127.0.0.1 loaded with a hand-written fixture."""
from __future__ import annotations

import urllib.parse
import urllib.request
from pathlib import Path

import pyoxigraph as ox
import pytest
from pyoxigraph import DefaultGraph, NamedNode
from tests.conftest import run_cli
from tests.test_mirror_proxy import FaultProxy

from kgcult import ids, vocab
from kgcult.acquire.endpoint import mirror as m
from kgcult.acquire import subgraphs
from kgcult.acquire.endpoint.client import EndpointClient
from kgcult.acquire.endpoint.queries import labels_query, template
from kgcult.store import Store, setgraph

FIXTURE = Path(__file__).parent / "fixtures" / "mirror" / "graph.ttl"
WD = vocab.WD


# -- helpers shared by the mirror tests ------------------------------------------------------

def data_quads(store) -> set[str]:
    """The store's mirrored data as N-Quads lines (metadata graph left out; the default
    graph is the set of the named graphs' triples, checked by ``default_is_the_set``)."""
    default_is_the_set(store)
    return {str(q) for q in store.ox.quads_for_pattern(None, None, None, None)
            if isinstance(q.graph_name, NamedNode) and q.graph_name.value != vocab.META_GRAPH}


def default_is_the_set(store) -> None:
    """The store's default graph holds exactly the triples of its data graphs, besides the
    closure's own (its derived properties and cycle marks, held by no named graph)."""
    own = {p for ps in setgraph.own_properties(store.ox).values() for p in ps} | {setgraph.IN_CYCLE.value}
    union = {str(q.triple) for q in store.ox.quads_for_pattern(None, None, None, None)
             if isinstance(q.graph_name, NamedNode) and setgraph.visible(q.graph_name.value)
             and q.predicate.value not in own}
    default = {str(q.triple) for q in store.ox.quads_for_pattern(None, None, None, DefaultGraph())
               if q.predicate.value not in own}
    assert default == union, (sorted(default - union)[:5], sorted(union - default)[:5])


def graph_triples(store, name) -> set[str]:
    return {str(q.triple) for q in store.quads(vocab.graph_iri(name))}


def fast_config(url, **kw) -> m.MirrorConfig:
    base = dict(endpoint=url, timeout=10, backoff=0.01, max_backoff=0.05, max_attempts=8,
                retry_budget=500, seed=1, batch_size=4, class_batch_size=3, page_size=3, throttle_floor=0.01)
    base.update(kw)
    return m.MirrorConfig(**base)


def _entity(term) -> str | None:
    return ids.entity_of_term(term)


def reference_selection(ox_store: ox.Store, specs: dict) -> dict[str, set[str]]:
    """The same selection as the mirror, done directly with SPARQL property paths on a
    store that holds the whole source graph (depth bounds assumed not reached)."""
    out: dict[str, set] = {}
    quads: dict[str, list] = {}

    def sel(q):
        return list(ox_store.query(q, use_default_graph_as_union=True))

    def values(var, iris):
        return f"VALUES ?{var} {{ {' '.join(f'<{i}>' for i in iris)} }}"

    for spec in specs.values():
        members = set(spec.roots)
        if spec.scoped_properties and spec.member_depth:
            # a scoped walk, level by level: finds through a scoped property need the scope
            frontier = set(spec.roots)
            scope = values("v", [WD + v for v in spec.scope_values])
            for _ in range(spec.member_depth):
                new = set()
                for p in spec.member_properties:
                    extra = (f" FILTER EXISTS {{ {scope} ?x <{vocab.WDT}{spec.scope_property}> ?v }}"
                             if p in spec.scoped_properties else "")
                    q = (f"SELECT DISTINCT ?x WHERE {{ {values('c', [WD + c for c in sorted(frontier)])} "
                         f"?x <{vocab.WDT}{p}> ?c .{extra} }}")
                    new |= {e for r in sel(q) for e in [_entity(r["x"])] if e}
                frontier = new - members
                members |= new
                if not frontier:
                    break
        elif spec.member_properties and spec.member_depth and spec.roots:
            path = "(" + "|".join(f"<{vocab.WDT}{p}>" for p in spec.member_properties) + ")"
            path += "?" if spec.member_depth == 1 else "*"
            for r in sel(f"SELECT DISTINCT ?x WHERE {{ {values('r', [WD + x for x in spec.roots])} ?x {path} ?r }}"):
                e = _entity(r["x"])
                if e:
                    members.add(e)
        for dep in spec.seed_from:
            for t in quads.get(dep, []):
                if spec.seed_all:
                    cands = (t.subject, t.object)
                else:
                    cands = (t.object,) if t.predicate.value in {vocab.WDT + p for p in spec.seed_properties} else ()
                for c in cands:
                    e = _entity(c)
                    if e:
                        members.add(e)
        if spec.follow_properties and spec.follow_depth and members:
            path = "(" + "|".join(f"<{vocab.WDT}{p}>" for p in spec.follow_properties) + ")"
            path += "?" if spec.follow_depth == 1 else "*"
            for r in sel(f"SELECT DISTINCT ?y WHERE {{ {values('m', [WD + x for x in sorted(members)])} ?m {path} ?y }}"):
                e = _entity(r["y"])
                if e:
                    members.add(e)
        ids = values("s", [WD + x for x in sorted(members)]) if members else "VALUES ?s {}"
        # (one VALUES block per query: Oxigraph is very slow with several)
        if spec.is_labels:
            langs = ", ".join(f'"{x}"' for x in spec.languages)
            lps = ", ".join(f"<{p}>" for p in spec.label_properties)
            q = (f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ {ids} ?s ?p ?o "
                 f"FILTER(?p IN ({lps}) && LANG(?o) IN ({langs})) }}")
            triples = list(ox_store.query(q, use_default_graph_as_union=True))
            if spec.sitelinks:
                triples += list(ox_store.query(
                    f"CONSTRUCT {{ ?s <{subgraphs.SITELINKS}> ?n }} WHERE {{ {ids} ?s <{subgraphs.SITELINKS}> ?n }}",
                    use_default_graph_as_union=True))
        else:
            props = ", ".join(f"<{vocab.WDT}{p}>" for p in spec.properties)
            triples = list(ox_store.query(f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ {ids} ?s ?p ?o FILTER(?p IN ({props})) }}",
                                          use_default_graph_as_union=True))
        quads[spec.name] = triples
        out[spec.name] = {str(t) for t in triples}
    return out


@pytest.fixture
def fixture_server(oxigraph_server):
    return oxigraph_server([FIXTURE])


@pytest.fixture(scope="module")
def reference():
    s = ox.Store()
    s.load(path=str(FIXTURE), format=ox.RdfFormat.TURTLE)
    return reference_selection(s, subgraphs.load_specs())


# -- tests -------------------------------------------------------------------------------

def test_cli_mirror_equals_direct_selection(fixture_server, reference, tmp_path):
    r = run_cli(["mirror", "--endpoint", fixture_server.url, "--no-progress", "--batch-size", "3",
                 "--page-size", "2", "--class-batch-size", "2"], tmp_path / "store")
    assert r.exit_code == 0, r.output
    with Store(tmp_path / "store") as st:
        for name in reference:
            assert graph_triples(st, name) == reference[name], name
            assert reference[name], f"the fixture should give {name} some triples"
        # no staging graph is left behind
        assert not [g for g in st.graph_counts() if "/staging/" in g]
    assert "dishes\tmirrored\t" in r.stdout


def test_content_restricted_to_spec(fixture_server, tmp_path):
    with Store(tmp_path / "s") as st:
        m.mirror(st, config=fast_config(fixture_server.url))
        dishes = graph_triples(st, "dishes")
        labels = graph_triples(st, "labels")
        # members through (P31|P279)*: instance of a sub-sub-class, subclass in a P279 cycle
        assert f"<{WD}Q102> <{vocab.WDT}P31> <{WD}Q12>" in dishes
        assert f"<{WD}Q103> <{vocab.WDT}P279> <{WD}Q13>" in dishes
        # properties outside the spec are not fetched; unrelated entities are not selected
        assert not any("/P1082>" in t or "Q900>" in t for t in dishes | labels)
        # the dish's image (P18) is in the spec (the query page's image grid)
        assert f"<{WD}Q100> <{vocab.WDT}P18> <http://commons.wikimedia.org/wiki/Special:FilePath/X.jpg>" in dishes
        # languages outside the list are not fetched; tricky literals survive intact
        assert not any('"@nl' in t for t in labels)
        assert f'<{WD}Q100> <{vocab.RDFS}label> "bouillabaisse"@fr' in labels
        assert f'<{WD}Q102> <{vocab.SKOS}altLabel> "pork \\"bone\\" {{ramen}}\\nsecond line"@en' in labels
        assert f'<{WD}Q100> <{vocab.WIKIBASE}sitelinks> "42"^^<{vocab.XSD}integer>' in labels
        # territories: the P131 chain up from Paris (a capital the countries graph references)
        terr = graph_triples(st, "territories")
        assert f"<{WD}Q400> <{vocab.WDT}P131> <{WD}Q401>" in terr
        assert f"<{WD}Q401> <{vocab.WDT}P131> <{WD}Q142>" in terr
        # ingredients seeded from the dishes' P527/P186 objects
        ingr = graph_triples(st, "ingredients")
        assert f"<{WD}Q202> <{vocab.WDT}P279> <{WD}Q25403900>" in ingr


def test_provenance_and_stale_closure(fixture_server, tmp_path):
    with Store(tmp_path / "s") as st:
        st.set_state("closureStale", False)
        m.mirror(st, ["countries"], config=fast_config(fixture_server.url))
        assert st.closure_stale
        recs = [p for p in st.provenance() if p.get("kind") == "mirror"]
        assert len(recs) == 1
        rec = recs[0]
        assert rec["source"] == fixture_server.url and rec["subgraph"] == "countries"
        assert rec["targetGraph"] == vocab.graph_iri("countries")
        assert int(rec["tripleCount"]) == st.triple_count(vocab.graph_iri("countries")) > 0
        assert len(rec["sourceSha256"]) == 64 and int(rec["queryCount"]) >= 2
        from kgcult.store import snapshot

        manifest = snapshot.export(st, tmp_path / "snap")
        assert any(p.get("kind") == "mirror" for p in manifest["provenance"])


def _update(server, sparql_update: str):
    url = server.url.rsplit("/", 1)[0] + "/update"
    req = urllib.request.Request(url, data=urllib.parse.urlencode({"update": sparql_update}).encode(),
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    urllib.request.urlopen(req, timeout=10).read()


def test_skip_refresh_and_atomic_swap(fixture_server, tmp_path):
    with Store(tmp_path / "s") as st:
        m.mirror(st, ["countries"], config=fast_config(fixture_server.url))
        before = graph_triples(st, "countries")
        _update(fixture_server, f"INSERT DATA {{ <{WD}Q999> <{vocab.WDT}P31> <{WD}Q6256> }}")
        _update(fixture_server, f"DELETE DATA {{ <{WD}Q38> <{vocab.WDT}P30> <{WD}Q46> }}")
        reps = m.mirror(st, ["countries"], config=fast_config(fixture_server.url))
        assert reps[0].skipped and graph_triples(st, "countries") == before
        # a refresh whose endpoint dies mid-way leaves the old graph untouched
        with FaultProxy(fixture_server.url, fail_after=1) as p:
            with pytest.raises(m.MirrorError, match=r"countries: .*failed 3 times"):
                m.mirror(st, ["countries"], config=fast_config(p.url, refresh=True, max_attempts=3))
        assert graph_triples(st, "countries") == before
        # a successful refresh swaps the new content in
        m.mirror(st, ["countries"], config=fast_config(fixture_server.url, refresh=True))
        after = graph_triples(st, "countries")
        assert f"<{WD}Q999> <{vocab.WDT}P31> <{WD}Q6256>" in after
        assert f"<{WD}Q38> <{vocab.WDT}P30> <{WD}Q46>" not in after
        assert not [g for g in st.graph_counts() if "/staging/" in g]


def test_resume_after_endpoint_failure(fixture_server, reference, tmp_path):
    with Store(tmp_path / "s") as st:
        with FaultProxy(fixture_server.url, rate=0.0, fail_after=60) as p:
            with pytest.raises(m.MirrorError) as e:
                m.mirror(st, config=fast_config(p.url, max_attempts=2))
            assert "batch" in str(e.value)
            p.fail_after = None  # the endpoint is back (same URL: the checkpoint is for it)
            reps = m.mirror(st, config=fast_config(p.url))
        assert sum(r.resumed_queries for r in reps) > 0  # finished queries were not asked again
        for name in reference:
            assert graph_triples(st, name) == reference[name], name


def test_exhausted_retries_fail_loudly(fixture_server, tmp_path):
    with FaultProxy(fixture_server.url, always="503") as p:
        r = run_cli(["mirror", "countries", "--endpoint", p.url, "--no-progress", "--max-attempts", "3",
                     "--backoff", "0.01"], tmp_path / "store")
    assert r.exit_code == 1
    assert "countries: plan, count P31" in r.stderr and "HTTP 503" in r.stderr
    with Store(tmp_path / "store") as st:
        assert st.triple_count(vocab.graph_iri("countries")) == 0


def test_retry_budget(fixture_server, tmp_path):
    with FaultProxy(fixture_server.url, always="500") as p:
        with Store(tmp_path / "s") as st:
            with pytest.raises(m.MirrorError, match="retry budget of 2 exhausted"):
                m.mirror(st, ["countries"], config=fast_config(p.url, retry_budget=2))


def test_retry_after_is_honoured(fixture_server):
    """A 429's Retry-After is waited by the client-wide throttle; 429s spend neither the
    query's tries nor the retry budget, and the client stops at its limit of 429s."""
    slept = []
    with FaultProxy(fixture_server.url, always="429", retry_after="2") as p:
        client = EndpointClient(fast_config(p.url, max_attempts=3, retry_budget=1, sleep=slept.append,
                                            throttle_slow_at=6, throttle_stop_at=6))
        with pytest.raises(m.MirrorError, match=r"HTTP 429.*6 HTTP 429 .*answers within 20 minutes"):
            client.select_iris("SELECT ?x WHERE { ?x ?p ?o } LIMIT 1", "x", "probe")
    assert slept == pytest.approx([2.0] * 5, abs=0.05) and p.requests == 6
    assert client.retries == 0 and client.throttled == 6


def test_user_agent_and_fractional_retry_after(fixture_server):
    slept = []
    with FaultProxy(fixture_server.url, always="503", retry_after="1.5") as p:
        client = EndpointClient(fast_config(p.url, max_attempts=2, sleep=slept.append,
                                            user_agent="my-lab/1.0 (me@example.org)"))
        with pytest.raises(m.MirrorError, match="HTTP 503"):
            client.select_iris("SELECT ?x WHERE { ?x ?p ?o } LIMIT 1", "x", "probe")
    assert slept == [1.5]  # WDQS-style fractional seconds are obeyed, not replaced by the backoff
    assert [h["User-Agent"] for h in p.headers] == ["my-lab/1.0 (me@example.org)"] * 2
    assert all(h["Accept-Encoding"] == "gzip" for h in p.headers)


@pytest.mark.parametrize("fault", ["html200", "htmlxml", "truncated", "short", "reset", "500"])
def test_bad_responses_are_retried_never_loaded(fixture_server, fault):
    slept = []
    with FaultProxy(fixture_server.url, always=fault) as p:
        client = EndpointClient(fast_config(p.url, max_attempts=2, sleep=slept.append))
        with pytest.raises(m.MirrorError, match="failed 2 times"):
            client.construct(f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ VALUES ?s {{ <{WD}Q100> }} ?s ?p ?o }}", "probe")
        with pytest.raises(m.MirrorError, match="failed 2 times"):
            client.select_iris("SELECT ?x WHERE { ?x ?p ?o }", "x", "probe")
    assert len(slept) == 2  # one backoff per failed attempt before the last


def test_backoff_grows_with_jitter(fixture_server):
    slept = []
    with FaultProxy(fixture_server.url, always="500") as p:
        client = EndpointClient(fast_config(p.url, max_attempts=5, backoff=1.0, max_backoff=100, sleep=slept.append))
        with pytest.raises(m.MirrorError):
            client.select_iris("SELECT ?x WHERE { ?x ?p ?o }", "x", "probe")
    assert len(slept) == 4
    for i, s in enumerate(slept):
        assert 0.5 * 2 ** i <= s <= 1.5 * 2 ** i


@pytest.mark.parametrize("args,needle", [
    (["--lang", 'en") } DROP ALL #'], "is not a language tag"),
    (["--lang", "en\nfr"], "is not a language tag"),
    (["--root", "dishes=Q1 } DROP ALL #"], "is not a Wikidata entity id"),
    (["--root", 'dishes=Q1"'], "is not a Wikidata entity id"),
])
def test_injection_shaped_config_is_rejected(fixture_server, tmp_path, args, needle):
    with FaultProxy(fixture_server.url, rate=0.0) as p:
        r = run_cli(["mirror", "--endpoint", p.url, "--no-progress", *args], tmp_path / "store")
        assert r.exit_code == 1 and needle in r.stderr
        assert p.requests == 0  # nothing was sent
    assert fixture_server.proc.poll() is None


@pytest.mark.parametrize("field,value,needle", [
    ("kgc:labelLanguage", '"en\\") } DROP ALL #"', "labelLanguage"),
    ("kgc:root", "<http://www.wikidata.org/entity/Q1%7D>", "kgc:root"),
    ("kgc:root", '"Q1 }\\n DROP ALL"', "kgc:root"),
    ("kgc:property", "<http://example.org/p>", "kgc:property"),
])
def test_injection_in_spec_file_is_rejected(tmp_path, field, value, needle):
    head = ("@prefix kgc: <https://w3id.org/kgcult/ns#> . @prefix wd: <http://www.wikidata.org/entity/> .\n"
            "@prefix wdt: <http://www.wikidata.org/prop/direct/> . "
            "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
            'kgc:x a kgc:SubgraphSpec ; kgc:name "x" ; kgc:root wd:Q1 ; ')
    body = "kgc:labelProperty rdfs:label" if field == "kgc:labelLanguage" else "kgc:property wdt:P31"
    spec = tmp_path / "specs.ttl"
    spec.write_text(f"{head}{body} ; {field} {value} .\n")
    with pytest.raises(subgraphs.SpecError, match=needle):
        subgraphs.load_specs(spec)
    r = run_cli(["mirror", "--specs", str(spec), "--endpoint", "http://127.0.0.1:9/query"], tmp_path / "store")
    assert r.exit_code == 1 and needle in r.stderr


def test_language_values_are_bound_not_formatted():
    q = labels_query(template("labels"), ["Q1"], [vocab.RDFS + "label"], ['x") } DROP ALL #'])
    # even an unvalidated value can only ever be a literal inside VALUES
    assert '"x\\") } DROP ALL #"' in q
    ox.Store().query(q)  # still one well-formed query


def test_foreign_graph_is_not_overwritten(fixture_server, tmp_path):
    ttl = tmp_path / "countries.ttl"
    ttl.write_text(f"<{WD}Q1> <{vocab.RDFS}label> \"mine\"@en .\n")
    with Store(tmp_path / "s") as st:
        st.load([ttl])
        with pytest.raises(m.MirrorError, match="did not write; pass --refresh"):
            m.mirror(st, ["countries"], config=fast_config(fixture_server.url))
        assert graph_triples(st, "countries") == {f'<{WD}Q1> <{vocab.RDFS}label> "mine"@en'}


def test_seeded_subgraph_follows_its_sources(fixture_server, reference, tmp_path):
    with Store(tmp_path / "s") as st:
        m.mirror(st, ["labels"], config=fast_config(fixture_server.url))
        assert graph_triples(st, "labels") == set()  # nothing to seed from yet
        m.mirror(st, ["dishes", "labels"], config=fast_config(fixture_server.url))
        assert graph_triples(st, "labels") and graph_triples(st, "labels") < reference["labels"]


def test_bad_options(tmp_path):
    r = run_cli(["mirror", "--endpoint", "ftp://x", "--no-progress"], tmp_path / "store")
    assert r.exit_code == 1 and "not an http(s) URL" in r.stderr
    r = run_cli(["mirror", "nosuch", "--endpoint", "http://127.0.0.1:9/q"], tmp_path / "store")
    assert r.exit_code == 1 and "unknown subgraph(s) nosuch" in r.stderr


def test_resume_refetches_lost_batch_files(fixture_server, reference, tmp_path):
    import shutil

    with Store(tmp_path / "s") as st:
        with FaultProxy(fixture_server.url, rate=0.0, fail_after=45) as p:
            with pytest.raises(m.MirrorError):
                m.mirror(st, config=fast_config(p.url, max_attempts=2, concurrency=1))
            staged = list(Path(str(tmp_path / "s") + ".mirror-checkpoint.sqlite.staging").rglob("*.nt"))
            assert staged
            for f in staged[::2]:
                f.unlink()  # lost files: their batches must be fetched again, not skipped
            p.fail_after = None
            reps = m.mirror(st, config=fast_config(p.url))
        assert sum(r.resumed_queries for r in reps) > 0
        for name in reference:
            assert graph_triples(st, name) == reference[name], name
    assert not list(Path(str(tmp_path / "s") + ".mirror-checkpoint.sqlite.staging").rglob("*.nt"))
    shutil.rmtree(tmp_path / "s", ignore_errors=True)
