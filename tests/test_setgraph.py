"""The default graph is a set, as WDQS's one graph is: a triple several named graphs hold
matches once in every query (CLI, API, serve, views), while GRAPH queries still see each
graph's own triples; every write path keeps it so (kgcult.store.setgraph)."""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pyoxigraph as ox
import pytest
from pyoxigraph import DefaultGraph, NamedNode

from kgcult import inspection, vocab
from kgcult.errors import KgcultError
from kgcult.store import Store, hierarchy, recovery, snapshot
from tests.conftest import ROOT, STANDIN, require_shared, run_cli
from tests.test_mirror import default_is_the_set

WD = vocab.WD
PRE = """@prefix wd: <http://www.wikidata.org/entity/> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
"""
# two sources that agree on Japan, its capital and sushi's origin; `b` also knows ramen
# and calls Japan something else in Korean
A = PRE + """wd:Q17 rdfs:label "Japan"@en, "일본"@ko ; wdt:P31 wd:Q6256 ; wdt:P36 wd:Q1490 .
wd:Q46383 rdfs:label "sushi"@en ; wdt:P31 wd:Q746549 ; wdt:P495 wd:Q17 .
wd:Q6256 rdfs:label "country"@en .
"""
B = PRE + """wd:Q17 rdfs:label "Japan"@en, "일본국"@ko ; wdt:P31 wd:Q6256 ; wdt:P36 wd:Q1490 .
wd:Q46383 rdfs:label "sushi"@en ; wdt:P31 wd:Q746549 ; wdt:P495 wd:Q17 .
wd:Q177 rdfs:label "ramen"@en ; wdt:P31 wd:Q746549 ; wdt:P495 wd:Q17 .
"""
COUNT_DISHES = "SELECT (COUNT(*) AS ?n) WHERE { ?d wdt:P31 wd:Q746549 ; wdt:P495 wd:Q17 }"


def count(store, q, **kw) -> int:
    return int(next(iter(store.query(q, **kw)))["n"].value)


@pytest.fixture
def two(tmp_path):
    (tmp_path / "a.ttl").write_text(A, encoding="utf-8")
    (tmp_path / "b.ttl").write_text(B, encoding="utf-8")
    s = Store(tmp_path / "store")
    s.load([tmp_path / "a.ttl"], graph="a")
    s.load([tmp_path / "b.ttl"], graph="b")
    yield s
    if hasattr(s, "_ox"):  # a test may have closed it to open it again
        s.close()


def test_a_triple_in_two_graphs_matches_once(two):
    assert count(two, COUNT_DISHES) == 2  # sushi and ramen; the union counted sushi twice
    assert count(two, "SELECT (COUNT(*) AS ?n) WHERE { wd:Q17 wdt:P36 ?c }") == 1
    rows = two.select("SELECT ?d ?dLabel WHERE { ?d wdt:P495 wd:Q17 "
                      'SERVICE wikibase:label { bd:serviceParam wikibase:language "en". } }')
    assert sorted(r["dLabel"].value for r in rows) == ["ramen", "sushi"]
    # GRAPH queries still see each graph's own triples, and provenance stays per graph
    per_graph = two.select("SELECT ?g WHERE { GRAPH ?g { wd:Q46383 wdt:P495 wd:Q17 } } ORDER BY ?g")
    assert [r["g"].value for r in per_graph] == [vocab.GRAPH + "a", vocab.GRAPH + "b"]
    assert count(two, COUNT_DISHES, graph=vocab.GRAPH + "a") == 1
    assert two.triple_count() == len({str(q.triple) for g in ("a", "b") for q in two.quads(vocab.GRAPH + g)})
    default_is_the_set(two)


def test_cli_show_prints_each_claim_once(tmp_path):
    loc = tmp_path / "store"
    for g, text in (("a", A), ("b", B)):
        (tmp_path / f"{g}.ttl").write_text(text, encoding="utf-8")
        assert run_cli(["load", str(tmp_path / f"{g}.ttl"), "--graph", g], loc).exit_code == 0
    assert run_cli(["closure"], loc).exit_code == 0
    res = run_cli(["show", "Q17", "--format", "json"], loc)
    card = json.loads(res.stdout)
    claims = [(c["property"], c["value"]) for c in card["claims"]]
    assert sorted(claims) == [("P31", "Q6256"), ("P36", "Q1490")]
    text = run_cli(["show", "Q17"], loc).stdout
    assert text.count("P36") == 1 and "label@ko" in text
    res = run_cli(["sparql", COUNT_DISHES, "--format", "csv"], loc)
    assert res.stdout.splitlines()[1] == "2"


def test_show_and_stats_say_which_graphs_disagree(two):
    card = inspection.show(two, "Q17")
    assert card["disagreements"] == [{"field": "label", "lang": "ko", "values": [
        {"value": "일본", "graphs": ["a"]}, {"value": "일본국", "graphs": ["b"]}]}]
    text = inspection.format_card(card)
    assert "graphs disagree" in text and "label@ko: '일본' in a; '일본국' in b" in text
    assert inspection.show(two, "Q46383")["disagreements"] == []  # agreement is not news
    stats = inspection.stats(two)
    assert stats["disagreements"] == [{"graphs": ["a", "b"], "field": "label", "entities": 1,
                                       "example": "Q17 (ko)"}]
    assert "label: a vs b (e.g. Q17 (ko))" in inspection.format_stats(stats)


def test_dropping_a_graph_keeps_what_another_holds(two):
    assert count(two, COUNT_DISHES) == 2
    two.clear_graph(vocab.GRAPH + "b")
    assert count(two, COUNT_DISHES) == 1  # sushi stays (graph a holds it), ramen is gone
    assert count(two, "SELECT (COUNT(*) AS ?n) WHERE { wd:Q177 ?p ?o }") == 0
    assert not two.ox.contains_named_graph(NamedNode(vocab.GRAPH + "b"))
    default_is_the_set(two)


def test_replacing_a_graph_by_a_snapshot_import(two, tmp_path):
    # a new version of graph b: no sushi origin any more, ramen renamed
    other = Store(tmp_path / "other")
    (tmp_path / "b2.ttl").write_text(PRE + 'wd:Q177 rdfs:label "rāmen"@en ; wdt:P31 wd:Q746549 ; wdt:P495 wd:Q17 .\n'
                                     'wd:Q46383 wdt:P31 wd:Q746549 .\n', encoding="utf-8")
    other.load([tmp_path / "b2.ttl"], graph="b")
    snapshot.export(other, tmp_path / "snap")
    other.close()
    snapshot.import_(two, tmp_path / "snap", replace=True)
    default_is_the_set(two)
    assert count(two, COUNT_DISHES) == 2  # sushi (its type in a and b, its origin in a), ramen
    assert count(two, "SELECT (COUNT(*) AS ?n) WHERE { wd:Q46383 wdt:P495 wd:Q17 }") == 1  # graph a's
    labels = two.select("SELECT ?l WHERE { wd:Q177 rdfs:label ?l }")
    assert [r["l"].value for r in labels] == ["rāmen"]


def test_closure_writes_keep_the_set(two, tmp_path):
    hierarchy.build(two)
    default_is_the_set(two)
    assert count(two, "SELECT (COUNT(*) AS ?n) WHERE { ?d kgc:typedAs wd:Q746549 ; wdt:P495 wd:Q17 }") == 2
    # a data change: the rebuild changes the closure graphs by their difference
    (tmp_path / "c.ttl").write_text(PRE + "wd:Q746549 wdt:P279 wd:Q2095 .\n", encoding="utf-8")
    two.load([tmp_path / "c.ttl"], graph="c")
    two.clear_graph(vocab.GRAPH + "b")
    hierarchy.build(two)
    default_is_the_set(two)
    assert count(two, "SELECT (COUNT(*) AS ?n) WHERE { ?d kgc:typedAs wd:Q2095 }") == 2  # sushi, dish
    assert count(two, "SELECT (COUNT(*) AS ?n) WHERE { wd:Q177 kgc:typedAs ?c }") == 0  # ramen left


def test_killed_load_is_repaired_on_open(two, tmp_path):
    # what a writer killed between the named load and the default load leaves (an update's
    # entry: repaired forward, never rolled back)
    recovery.begin(two, kind="update", what="a test", marks=[vocab.GRAPH + "x"])
    two.ox.bulk_load(input=(PRE + "wd:Q999 wdt:P495 wd:Q17 ; wdt:P31 wd:Q746549 .\n").encode(),
                     format=ox.RdfFormat.TURTLE, to_graph=NamedNode(vocab.GRAPH + "x"))
    # and a stale default triple no graph holds
    two.ox.add(ox.Quad(NamedNode(WD + "Q1"), NamedNode(WD + "P1"), NamedNode(WD + "Q2"), DefaultGraph()))
    loc = two.location
    two.close()
    with Store(loc) as again:
        assert recovery.read(loc) == []
        default_is_the_set(again)
        assert count(again, COUNT_DISHES) == 3


def test_a_store_written_before_the_set_is_refused_with_the_way_out(tmp_path):
    loc = tmp_path / "old"
    raw = ox.Store(str(loc))  # as an older kgcult left it: named graphs, an empty default graph
    for g, text in (("a", A), ("b", B)):
        raw.load(input=text.encode(), format=ox.RdfFormat.TURTLE, to_graph=NamedNode(vocab.GRAPH + g))
    raw.flush()
    n = len(raw)
    del raw
    for read_only in (True, False):
        with pytest.raises(KgcultError, match="written by an older kgcult .its default graph is not the set.*"
                                              "snapshot export"):
            Store(loc, read_only=read_only)
    r = run_cli(["stats"], loc)
    assert r.exit_code == 1 and "written by an older kgcult" in r.output and "Traceback" not in r.output
    raw = ox.Store.read_only(str(loc))  # refused, not changed
    assert len(raw) == n and next(iter(raw.quads_for_pattern(None, None, None, DefaultGraph())), None) is None


def test_quads_for_the_default_graph_are_refused(store, tmp_path):
    f = tmp_path / "q.nq"
    f.write_text("<http://a/s> <http://a/p> <http://a/o> <http://a/g> .\n<http://a/s> <http://a/p> <http://a/o> .\n")
    with pytest.raises(KgcultError, match="quad 2 is in the default graph"):
        store.load([f])
    assert store.graph_counts() == {}


# -- the seed and the stand-in in one store -------------------------------------------

def _seed_as_ntriples(path: Path) -> Path:
    """Every data triple of the seed snapshot as one N-Triples file."""
    with open(path, "wb") as out:
        for f in sorted((ROOT / "dumps" / "seed" / "graphs").glob("*.nq.gz")):
            with gzip.open(f, "rb") as stream:
                for q in ox.parse(input=stream, format=ox.RdfFormat.N_QUADS):
                    if q.graph_name.value != vocab.META_GRAPH:
                        out.write(f"{q.triple} .\n".encode())
    return path


@pytest.mark.slow
def test_seed_and_standin_give_the_standins_rows(tmp_path):
    """Seed + stand-in in two graphs answer as the same triples in one graph (set
    semantics), and, where the seed adds no fact, as the stand-in alone (the Japanese
    dishes: 217 rows under the union, 186 dishes)."""
    require_shared(STANDIN)
    alone = tmp_path / "alone"
    with Store(alone) as s:
        s.load([STANDIN], graph="standin")
        hierarchy.build(s)
    both = tmp_path / "both"
    shutil.copytree(alone, both)
    with Store(both) as s:
        snapshot.import_(s, ROOT / "dumps" / "seed")
        hierarchy.build(s)
        default_is_the_set(s)
    merged = tmp_path / "merged"  # the same triples, in one graph
    shutil.copytree(alone, merged)
    with Store(merged) as s:
        s.load([_seed_as_ntriples(tmp_path / "seed.nt")], graph="standin")
        hierarchy.build(s)

    queries = {p.name: p.read_text() for p in sorted((ROOT / "queries" / "checks").glob("*.rq"))}
    queries["fmlama-dishes Q17"] = (ROOT / "queries" / "wdqs" / "papers" / "fmlama-dishes.rq").read_text().replace(
        "COUNTRY", "Q17")
    queries["labels"] = ("SELECT ?dish ?dishLabel WHERE { ?dish kgc:typedAs wd:Q746549 ; wdt:P495 wd:Q17 "
                         'SERVICE wikibase:label { bd:serviceParam wikibase:language "en,ja". } }')
    japan = "SELECT (COUNT(*) AS ?n) WHERE { ?dish kgc:typedAs wd:Q746549 ; wdt:P495 wd:Q17 }"

    def rows(loc, q):
        # GROUP_CONCAT's order follows the engine's scan order, which differs between stores
        with Store(loc, read_only=True) as s:
            return sorted(" | ".join(", ".join(sorted(t.value.split(", "))) if isinstance(t, ox.Literal) else str(t)
                                     for t in r) for r in s.query(q))

    for name, q in queries.items():
        a, b = rows(both, q), rows(merged, q)
        assert a == b, (name, len(a), len(b), sorted(set(a) ^ set(b))[:4])
    assert rows(both, japan) == rows(alone, japan) == rows(merged, japan)
    assert rows(both, queries["labels"]) == rows(alone, queries["labels"])
    with Store(both, read_only=True) as s:
        assert count(s, japan) == 186
    # the views' counts
    for loc in (both, merged):
        res = run_cli(["build", "fmlama", "--out", str(tmp_path / f"fmlama-{loc.name}")], loc)
        assert res.exit_code == 0, res.output
    # every output (rows, counts, the released layout's files) byte for byte; the manifests
    # differ only in the snapshot they name (two graphs here, one there)
    built = {n: tmp_path / f"fmlama-{n}" / "fmlama" for n in ("both", "merged")}
    files = sorted(p.relative_to(built["both"]) for p in built["both"].rglob("*") if p.is_file()
                   and p.name != "MANIFEST.json")
    assert files and files == sorted(p.relative_to(built["merged"]) for p in built["merged"].rglob("*")
                                     if p.is_file() and p.name != "MANIFEST.json")
    for f in files:
        assert (built["both"] / f).read_bytes() == (built["merged"] / f).read_bytes(), f


@pytest.mark.parametrize("update,refused", [
    ('INSERT DATA { <http://a/s> <http://a/p> "o" }', "INSERT DATA"),
    ('INSERT DATA { GRAPH <http://a/g> { <http://a/s> <http://a/p> "o" } }', None),
    ("DELETE WHERE { ?s wdt:P31 ?o }", "DELETE WHERE"),
    ("WITH <http://a/g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }", None),
    ("DELETE { GRAPH <http://a/g> { ?s ?p ?o } } INSERT { ?s ?p ?o } WHERE { ?s ?p ?o }", "INSERT { ... } without GRAPH or WITH"),
    ("LOAD <http://a/f.nt>", "LOAD without INTO GRAPH"),
    ("LOAD <http://a/f.nt> INTO GRAPH <http://a/g>", None),
    ("CLEAR DEFAULT", "CLEAR DEFAULT"), ("DROP ALL", "DROP ALL"), ("DROP GRAPH <http://a/g>", None),
    ("ADD <http://a/g> TO DEFAULT", "ADD ... DEFAULT"), ("COPY DEFAULT TO <http://a/g>", None),
    ("MOVE DEFAULT TO <http://a/g>", "MOVE ... DEFAULT"),
])
def test_updates_that_would_write_the_default_graph_are_named(update, refused):
    from kgcult.sparql import update_scope

    assert update_scope.default_graph_write(update, vocab.PREFIXES) == refused
