"""The mirror's plan (issue 27): specs are counted at a real `oxigraph serve` before
anything is fetched; one too large is refused with its number and a pointer to `kgcult
ingest`; DLAMA's persons are enumerated per country of citizenship (and split further by
the IRI's last digits) without losing anyone; no enumeration query leaves its predicate
unbound."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from rdflib.plugins.sparql import parser as sparql_parser
from rdflib.plugins.sparql.algebra import translateQuery
from rdflib.term import Variable

from kgcult import resources, vocab
from kgcult.acquire import subgraphs
from kgcult.acquire.endpoint import mirror as m
from kgcult.acquire.endpoint.plan import PlanRefused, suffix_patterns
from kgcult.acquire.endpoint.queries import (NAMES, count_classes_query, count_one_query, labels_query,
                                             members_query, statements_query, template)
from kgcult.store import Store
from tests.conftest import SHARED, require_shared, run_cli
from tests.test_mirror import graph_triples

WD, WDT = vocab.WD, vocab.WDT
SUPPLEMENT = SHARED / "standin" / "dlama-supplement.nt.gz"


def _humans(path: Path, n_citizens: int, n_others: int) -> Path:
    """A graph with humans: ``n_citizens`` citizens of France (a culture country), the
    others of a country no culture group lists (Q1)."""
    lines = []
    for i in range(n_citizens + n_others):
        q = f"<{WD}Q{1000 + i}>"
        country = "Q142" if i < n_citizens else "Q1"
        lines += [f"{q} <{WDT}P31> <{WD}Q5> .", f"{q} <{WDT}P27> <{WD}{country}> ."]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_default_specs_plan_within_limit_and_unscoped_persons_are_refused(oxigraph_server, tmp_path):
    srv = oxigraph_server([_humans(tmp_path / "h.nt", 7, 40)])
    # the default specs: persons are counted per culture country: 7, within a limit of 20
    r = run_cli(["mirror", "--endpoint", srv.url, "--no-progress", "--plan", "--max-members", "20",
                 "--page-size", "3"], tmp_path / "s")
    assert r.exit_code == 0, r.output
    plan = {line.split("\t")[0]: line.split("\t")[1:] for line in r.stdout.splitlines()}
    assert plan["dlama-persons"] == ["8", "1", "ok"], plan  # the root Q5 + 7 citizens; one partition
    assert all(v[2] == "ok" for v in plan.values()) and set(plan) == set(subgraphs.load_specs())
    with Store(tmp_path / "s") as st:  # --plan fetched nothing
        assert not [g for g in st.graph_counts() if "/graph/" in g]

    # the same spec without its scope: all 47 humans, refused before anything is fetched
    specs = subgraphs.load_specs()
    specs["dlama-persons"] = replace(specs["dlama-persons"], scope_property="", scope_values=())
    with Store(tmp_path / "u") as st:
        with pytest.raises(PlanRefused) as e:
            m.mirror(st, ["countries", "dlama-persons"], specs=specs, max_members=20,
                     config=m.MirrorConfig(endpoint=srv.url, page_size=3))
        assert not [g for g in st.graph_counts() if "/graph/" in g]  # countries, planned first, not fetched
    msg = str(e.value)
    assert "dlama-persons: about 48 members" in msg and "--max-members 20" in msg and "kgcult ingest" in msg


def test_a_class_too_large_below_the_first_level_is_refused(oxigraph_server, tmp_path):
    # Q5 is a level below the root Q215627 (person): only counted when the walk reaches it
    path = _humans(tmp_path / "h.nt", 3, 30)
    path.write_text(path.read_text() + f"<{WD}Q5> <{WDT}P279> <{WD}Q215627> .\n")
    srv = oxigraph_server([path])
    specs = {"people": subgraphs.validate(subgraphs.SubgraphSpec(
        name="people", graph=vocab.graph_iri("people"), roots=("Q215627",), member_properties=("P31", "P279"),
        member_depth=3, properties=("P27",)))}
    with Store(tmp_path / "s") as st:
        with pytest.raises(PlanRefused, match=r"people: P31 Q5 has 33 members, more than --max-members 10.*kgcult ingest"):
            m.mirror(st, specs=specs, max_members=10, config=m.MirrorConfig(endpoint=srv.url, page_size=3))


def test_suffix_patterns_split_every_qid_once():
    import re

    qids = [f"Q{i}" for i in range(1, 1200)] + ["L7-F1", "P31", "Q1234567"]
    for n, page in ((1200, 1200), (1200, 200), (1200, 20), (1200, 2)):
        pats = [re.compile(p) for p in suffix_patterns(n, page)]
        hits = [sum(bool(p.search(WD + q)) for p in pats) for q in qids]
        assert hits == [1] * len(qids), (n, page)
        assert len(pats) == 1 or len(pats) >= n / page


def _bgp_predicates(node, out):
    """Every triple pattern's predicate in an rdflib algebra tree."""
    if isinstance(node, dict) or hasattr(node, "name"):
        if getattr(node, "name", None) == "BGP":
            out += [t for t in node["triples"]]
        for v in (node.values() if isinstance(node, dict) else []):
            _bgp_predicates(v, out)
    elif isinstance(node, (list, tuple)):
        for v in node:
            _bgp_predicates(v, out)
    return out


def _node_names(node, out):
    if getattr(node, "name", None):
        out.add(node.name)
    if isinstance(node, dict):
        for v in node.values():
            _node_names(v, out)
    elif isinstance(node, (list, tuple)):
        for v in node:
            _node_names(v, out)
    return out


def test_mirror_queries_bind_their_predicates():
    """Parse every queries/mirror/*.rq as kgcult fills it: the enumeration and count
    queries have no triple pattern with a variable predicate; the CONSTRUCT batches (a
    variable ?p filtered to the spec's list) have their subject bound by VALUES."""
    files = {p.stem for p in resources.queries("mirror").glob("*.rq")}
    assert files == set(NAMES)
    spec = subgraphs.load_specs()["dlama-persons"]
    filled = {
        "count-one": count_one_query(template("count-one"), "Q5", "P31"),
        "count-partition": count_one_query(template("count-partition"), "Q5", "P31", "P27", "Q142"),
        "count": count_classes_query(template("count"), ["Q5", "Q6256"], "P31"),
        "members": members_query(template("members"), ["Q5"], "P31", "07$"),
        "members-scoped": members_query(template("members-scoped"), ["Q5"], "P31", scope="P27",
                                        values=list(spec.scope_values)),
        "members-partition": members_query(template("members-partition"), ["Q5"], "P31", "",
                                           scope="P27", value="Q142"),
        "statements": statements_query(template("statements"), ["Q1", "Q2"], ["P31", "P17"]),
        "labels": labels_query(template("labels"), ["Q1"], list(subgraphs.LABEL_PROPERTIES), ["en"], True),
    }
    assert set(filled) == set(NAMES)
    for name, q in filled.items():
        algebra = translateQuery(sparql_parser.parseQuery(q)).algebra
        triples = _bgp_predicates(algebra, [])
        assert triples, name
        if name in ("statements", "labels"):
            assert all(isinstance(s, Variable) and str(s) == "s" for s, p, o in triples), name
            assert "VALUES ?s" in q or "VALUES (?s)" in q, name
        else:
            unbound = [(s, p, o) for s, p, o in triples if isinstance(p, Variable)]
            assert not unbound, (name, unbound)
            assert not {"OrderBy", "Slice"} & _node_names(algebra, set()), name  # no sorting, no paging


def _members(st, name) -> set[str]:
    return {t.split(" ")[0] for t in graph_triples(st, name)}


@pytest.mark.slow
def test_partitioned_persons_select_the_same_members_on_the_standin(oxigraph_server, tmp_path):
    """DLAMA's persons on the stand-in + DLAMA supplement: enumerated per country with
    every partition split by the last digits (page of 5 rows), they are exactly the
    members of one unpartitioned query per class batch (page large enough for all) and of
    the direct selection (humans with a culture country's P27)."""
    import pyoxigraph as ox

    from kgcult.store.rdfio import open_binary

    standin = require_shared()
    srv = oxigraph_server([standin, require_shared(SUPPLEMENT)])
    got = {}
    for label, page in (("split", 5), ("whole", 10_000_000)):
        with Store(tmp_path / label) as st:
            rep = m.mirror(st, ["dlama-persons"], config=m.MirrorConfig(endpoint=srv.url, page_size=page,
                                                                        batch_size=500))
            got[label] = (_members(st, "dlama-persons"), graph_triples(st, "dlama-persons"), rep[0].queries)
    direct = ox.Store()
    for f in (standin, SUPPLEMENT):
        with open_binary(f) as fh:
            direct.bulk_load(input=fh, format=ox.RdfFormat.N_TRIPLES)
    spec = subgraphs.load_specs()["dlama-persons"]
    vals = " ".join(f"<{WD}{v}>" for v in spec.scope_values)
    expected = {f"<{r['x'].value}>" for r in direct.query(
        f"SELECT DISTINCT ?x WHERE {{ VALUES ?v {{ {vals} }} ?x <{WDT}P27> ?v . ?x <{WDT}P31> <{WD}Q5> }}")}
    split, whole = got["split"], got["whole"]
    assert len(expected) > 100, len(expected)
    members_with_claims = expected  # every scoped member has at least its P31 and P27 claims
    assert split[0] - {f"<{WD}Q5>"} == members_with_claims
    assert split[0] == whole[0] and split[1] == whole[1]
    assert split[2] > whole[2]  # the split run did ask more (smaller) enumeration queries
