"""Hierarchy closures computed with networkx and written to derived graphs."""
from __future__ import annotations

import networkx as nx
import pytest

from kgcult import vocab
from kgcult.store import hierarchy
from kgcult.store.hierarchy import transitive_reach

from tests.conftest import FIXTURES, run_cli

MINI = FIXTURES / "foundation" / "mini.ttl"
WD = vocab.WD


def pairs(store, prop):
    rows = store.query(f"SELECT ?x ?y WHERE {{ ?x kgc:{prop} ?y }}")
    return {(r["x"].value[len(WD):], r["y"].value[len(WD):]) for r in rows}


def test_transitive_reach_matches_networkx_on_random_graphs():
    for seed in range(5):
        g = nx.gnp_random_graph(60, 0.04, seed=seed, directed=True)
        g = nx.relabel_nodes(g, {n: str(n) for n in g})
        reach, cycles = transitive_reach(g)
        for n in g:
            expected = set(nx.descendants(g, n))
            if any(n in c for c in cycles):
                expected.add(n)
            assert set(reach[n]) == expected
        assert all(len(c) > 1 or g.has_edge(c[0], c[0]) for c in cycles)


def test_closures_on_fixture(store):
    store.load([MINI])
    reports = {r.spec: r for r in hierarchy.build(store)}
    assert not store.closure_stale
    sub = pairs(store, "subclassOf")
    assert ("Q41415", "Q2095") in sub and ("Q41415", "Q746549") in sub
    inst = pairs(store, "instanceOf")
    assert {("Q9000030", "Q41415"), ("Q9000030", "Q746549"), ("Q9000030", "Q2095")} <= inst
    assert ("Q9000030", "Q9000030") not in inst
    typed = pairs(store, "typedAs")
    assert ("Q9000030", "Q746549") in typed and ("Q41415", "Q746549") in typed
    assert ("Q746549", "Q746549") not in typed
    loc = pairs(store, "locatedIn")
    assert loc == {("Q1899", "Q212"), ("Q9000001", "Q1899"), ("Q9000001", "Q212")}
    assert pairs(store, "partOf") == {("Q9000020", "Q9000021"), ("Q9000020", "Q9000022"), ("Q9000021", "Q9000022")}
    # the P279 cycle is tolerated and reported; its members reach each other and food
    assert reports["closure-subclass"].cycles == [[WD + "Q9000010", WD + "Q9000011", WD + "Q9000012"]]
    for a in ("Q9000010", "Q9000011", "Q9000012"):
        for b in ("Q9000010", "Q9000011", "Q9000012", "Q2095"):
            assert (a, b) in sub
    assert ("Q9000013", "Q2095") in inst
    marked = store.query("SELECT ?x WHERE { ?x kgc:inCycle kgc:closure-subclass }")
    assert {r["x"].value[len(WD):] for r in marked} == {"Q9000010", "Q9000011", "Q9000012"}


def test_rebuild_replaces_and_load_marks_stale(store, tmp_path):
    store.load([MINI])
    hierarchy.build(store)
    n1 = store.triple_count(vocab.CLOSURE_GRAPH + "typed")
    hierarchy.build(store)
    assert store.triple_count(vocab.CLOSURE_GRAPH + "typed") == n1
    extra = tmp_path / "extra.nt"
    extra.write_text(f"<{WD}Q9000099> <{vocab.WDT}P31> <{WD}Q41415> .\n")
    store.load([extra])
    assert store.closure_stale
    hierarchy.ensure_closure(store)
    assert not store.closure_stale
    assert ("Q9000099", "Q746549") in pairs(store, "typedAs")


def test_closure_answers_equal_property_paths(store):
    store.load([MINI])
    hierarchy.build(store)
    path = store.query("SELECT DISTINCT ?x WHERE { ?x (wdt:P31|wdt:P279)+ wd:Q2095 }")
    closed = store.query("SELECT DISTINCT ?x WHERE { ?x kgc:typedAs wd:Q2095 }")
    assert {r["x"].value for r in path} == {r["x"].value for r in closed}
    path = store.query("SELECT DISTINCT ?x ?y WHERE { ?x wdt:P131+ ?y }")
    closed = store.query("SELECT DISTINCT ?x ?y WHERE { ?x kgc:locatedIn ?y }")
    assert {(r["x"].value, r["y"].value) for r in path} == {(r["x"].value, r["y"].value) for r in closed}


def test_cli_closure_reports_cycles(tmp_path):
    s = tmp_path / "s"
    run_cli(["load", str(MINI)], s)
    res = run_cli(["closure"], s)
    assert res.exit_code == 0, res.stderr
    assert "1 cycle(s) tolerated: Q9000010 -> Q9000011 -> Q9000012" in res.stderr


def test_bad_spec_file_is_a_clear_error(tmp_path, store):
    bad = tmp_path / "specs.ttl"
    bad.write_text("@prefix kgc: <https://w3id.org/kgcult/ns#> .\nkgc:x a kgc:ClosureSpec ; kgc:graph <http://g> .\n")
    with pytest.raises(Exception, match="lacks kgc:derivedProperty"):
        hierarchy.load_specs(bad)
    bad.write_text("this is not turtle\n")
    with pytest.raises(Exception, match=r"specs.ttl:1"):
        hierarchy.load_specs(bad)
