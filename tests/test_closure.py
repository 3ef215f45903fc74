"""Hierarchy closures: integer-coded reach, written once into the default graph (each spec
under its derived property), compared triple for triple with the old networkx algorithm
(kept here as the reference)."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import pyoxigraph as ox
from pyoxigraph import DefaultGraph, NamedNode

from kgcult import vocab
from kgcult.errors import KgcultError
from kgcult.store import Store, closure_state, closure_write, hierarchy, intgraph, rdfio, recovery, setgraph
from kgcult.store.hierarchy import scratch_dir

from tests.conftest import FIXTURES, run_cli

MINI = FIXTURES / "foundation" / "mini.ttl"
WD = vocab.WD


def pairs(store, prop):
    rows = store.query(f"SELECT ?x ?y WHERE {{ ?x kgc:{prop} ?y }}")
    return {(r["x"].value[len(WD):], r["y"].value[len(WD):]) for r in rows}


def reference_reach(graph: nx.DiGraph) -> tuple[dict, list]:
    """The pre-integer algorithm, kept as the reference: reach over the condensation;
    members of a cycle reach each other and themselves."""
    cond = nx.condensation(graph)
    members = {c: frozenset(cond.nodes[c]["members"]) for c in cond.nodes}
    cyclic = {c for c in cond.nodes if len(members[c]) > 1 or any(graph.has_edge(n, n) for n in members[c])}
    reach_c: dict = {}
    for c in reversed(list(nx.topological_sort(cond))):
        r: set = set()
        for s in cond.successors(c):
            r |= members[s] | reach_c[s]
        reach_c[c] = frozenset(r | (members[c] if c in cyclic else set()))
    reach = {n: reach_c[c] for c, ms in members.items() for n in ms}
    return reach, sorted(sorted(members[c]) for c in cyclic)


def reference_closure(store, spec) -> set[tuple[str, str, str]]:
    """What a spec's graph must hold, computed the old way (networkx, string pairs)."""
    g = nx.DiGraph()
    for p in spec.steps:
        g.add_edges_from(hierarchy.edges(store, p))
    reach, cycles = reference_reach(g)
    out = set()
    if spec.first is None:
        out |= {(x, spec.derived, y) for x, ys in reach.items() for y in ys}
    else:
        for x, c in hierarchy.edges(store, spec.first):
            out |= {(x, spec.derived, y) for y in {c} | reach.get(c, frozenset())}
    out |= {(n, vocab.KGC + "inCycle", vocab.KGC + spec.name) for cyc in cycles for n in cyc}
    return out


def spec_quads(store, spec, graph=setgraph.DEFAULT) -> list:
    """A spec's closure quads: its derived property's and its cycle marks (in ``graph``;
    None: in every graph)."""
    ox_ = getattr(store, "ox", store)
    return (list(ox_.quads_for_pattern(None, NamedNode(spec.derived), None, graph))
            + list(ox_.quads_for_pattern(None, setgraph.IN_CYCLE, NamedNode(vocab.KGC + spec.name), graph)))


def spec_triples(store, spec) -> set[tuple[str, str, str]]:
    return {(q.subject.value, q.predicate.value, q.object.value) for q in spec_quads(store, spec)}


def assert_same_as_reference(store) -> None:
    for spec in hierarchy.load_specs():
        assert spec_triples(store, spec) == reference_closure(store, spec), spec.name
        # written once, into the default graph: no named graph holds a closure triple
        assert all(isinstance(q.graph_name, DefaultGraph) for q in spec_quads(store, spec, None)), spec.name
    assert not any(vocab.is_derived_graph(g.value) for g in getattr(store, "ox", store).named_graphs())


def test_reach_matches_networkx_on_random_graphs():
    for seed in range(8):
        g = nx.gnp_random_graph(80, 0.03, seed=seed, directed=True)
        g.add_edges_from([(3, 3), (5, 5)])  # self-loops are cycles too
        src = np.array([u for u, _ in g.edges], dtype=np.int32)
        dst = np.array([v for _, v in g.edges], dtype=np.int32)
        walk = intgraph.Reach(intgraph.Csr.from_edges(src, dst, 80))
        got, cycles = {}, []
        for members, reach, cyclic in walk:
            got.update({m: set(reach.tolist()) for m in members})
            if cyclic:
                cycles.append(sorted(members))
        expected, expected_cycles = reference_reach(g)
        assert got == {n: set(r) for n, r in expected.items()}
        assert sorted(cycles) == expected_cycles


def test_closure_equals_reference_on_seed(tmp_path):
    s = tmp_path / "s"
    res = run_cli(["snapshot", "import", "--seed"], s)
    assert res.exit_code == 0, res.stderr
    assert run_cli(["closure"], s).exit_code == 0
    with Store(s) as store:
        assert not store.closure_stale
        assert_same_as_reference(store)
        assert not scratch_dir(store).exists()


def test_specs_are_streamed_in_bounded_commits_into_the_default_graph(store, monkeypatch):
    """Every spec's closure is written by one streamed bulk load for the whole build, fed
    block by block (tiny blocks here), committed every COMMIT_LINES triples (the commit ends
    at the block that reaches it), into the default graph only: every triple once, every
    spec equal to the reference."""
    store.load([MINI])
    calls, blocks = [], []
    pipe, blocks_of = rdfio.chunk_pipe, hierarchy._blocks

    class Counted(pipe):  # one per commit: the lines it carries
        def __init__(self, chunks, **kw):
            i = len(calls)
            calls.append(0)

            def counted():
                for chunk in chunks:
                    calls[i] += chunk.count(b"\n")
                    yield chunk
            super().__init__(counted(), **kw)

    def counted_blocks(*args):
        for text in blocks_of(*args):
            blocks.append(text.count(b"\n"))
            yield text

    monkeypatch.setattr(hierarchy, "BLOCK_LINES", 3)
    monkeypatch.setattr(closure_write, "COMMIT_LINES", 40)
    monkeypatch.setattr(rdfio, "chunk_pipe", Counted)
    monkeypatch.setattr(hierarchy, "_blocks", counted_blocks)
    reports = hierarchy.build(store)
    monkeypatch.undo()
    n = sum(r.triples_out for r in reports)
    assert sum(calls) == n and max(blocks) < 3 + 10  # blocks stop soon after BLOCK_LINES
    # commits of about COMMIT_LINES triples: each ends at the block that reaches it
    assert len(calls) > 1 and all(40 <= c < 40 + max(blocks) for c in calls[:-1]) and calls[-1] > 0
    assert len(blocks) > len(calls)  # streamed: several blocks a commit
    assert_same_as_reference(store)
    assert n == sum(len(spec_quads(store, spec, None)) for spec in hierarchy.load_specs())


def test_the_store_is_compacted_right_after_the_load_before_any_other_write(store, monkeypatch):
    """The build compacts once, straight after its bulk load: a write first (the records
    that mark the closure fresh) would wait while RocksDB merged the load's level-0 files
    in the background, work the compaction then did again (BENCHMARKS.md, issue 32)."""
    store.load([MINI])
    events = []
    load_lines, optimize = closure_write.load_lines, store.optimize
    begin, commit = recovery.begin, recovery.commit
    monkeypatch.setattr(closure_write, "load_lines", lambda *a: (events.append("load"), load_lines(*a))[1])
    monkeypatch.setattr(store, "optimize", lambda: (events.append("compact"), optimize())[1])
    monkeypatch.setattr(recovery, "begin", lambda *a, **k: (events.append(f"begin {k['kind']}"), begin(*a, **k))[1])
    monkeypatch.setattr(recovery, "commit", lambda s, e, ops=(), *a: (events.append(list(ops)), commit(s, e, ops, *a))[1])
    hierarchy.build(store)
    assert events[:3] == ["begin closure", "load", "compact"] and len(events) == 4
    ops = " ".join(events[3])  # the commit: each spec's input record, the closure fresh, the activity
    assert "closureInput" in ops and '"false"' in ops and "closureStale" in ops and '"closure"' in ops
    monkeypatch.undo()
    assert not store.closure_stale
    assert_same_as_reference(store)
    # nothing written: nothing to compact
    events.clear()
    monkeypatch.setattr(store, "optimize", lambda: events.append("compact"))
    hierarchy.build(store)
    assert "compact" not in events


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
    typed = next(s for s in hierarchy.load_specs() if s.name == "closure-typed")
    n1 = len(spec_quads(store, typed))
    hierarchy.build(store)
    assert len(spec_quads(store, typed)) == n1
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


def test_interrupted_build_leaves_store_stale_and_next_build_repairs(store, tmp_path, monkeypatch):
    store.load([MINI])
    hierarchy.build(store)
    specs = hierarchy.load_specs()
    old = {s.graph: spec_triples(store, s) for s in specs}
    extra = tmp_path / "extra.nt"  # changes every graph that follows P279 or P131
    extra.write_text(f"<{WD}Q2095> <{vocab.WDT}P279> <{WD}Q9000098> .\n<{WD}Q212> <{vocab.WDT}P131> <{WD}Q9000097> .\n")
    store.load([extra])
    new = {s.graph: reference_closure(store, s) for s in specs}
    assert all(old[s.graph] != new[s.graph] for s in specs if s.name != "closure-partof")
    apply, calls = closure_write.apply_difference, []

    def dies_in_third(store_, new_, old_, terms, derived, mark):
        calls.append(derived)
        if len(calls) == 3:  # half-way through: one old triple deleted, nothing added
            first = next(iter(store_.ox.quads_for_pattern(None, NamedNode(derived.decode().strip()[1:-1]),
                                                          None, DefaultGraph())))
            store_.ox.remove(first)
            raise RuntimeError("killed")
        return apply(store_, new_, old_, terms, derived, mark)

    monkeypatch.setattr(closure_write, "apply_difference", dies_in_third)
    with pytest.raises(RuntimeError):
        hierarchy.build(store)
    assert store.closure_stale
    # the build's journal entry is settled: its scratch records removed, the closure stale
    assert not scratch_dir(store).exists() and recovery.read(store.location) == []
    # graphs whose input changed are changed in spec order after all are computed (the
    # P361 one is kept: its edges did not change), their additions all loaded at the end:
    # the first three hold part of the old closure (their gone triples deleted, the third
    # cut short; nothing added yet) and have no record, the rest are untouched (still the
    # old closure, recorded)
    rewritten = [s for s in specs if s.name != "closure-partof"]
    recorded = closure_state.recorded(store.ox)
    for s in rewritten[:3]:
        partial = spec_triples(store, s)
        assert partial <= old[s.graph] and partial != new[s.graph] and s.graph not in recorded, s.name
    assert spec_triples(store, rewritten[2]) < old[rewritten[2].graph]
    for s in rewritten[3:]:
        assert spec_triples(store, s) == old[s.graph] and s.graph in recorded, s.name
    monkeypatch.undo()
    hierarchy.ensure_closure(store)
    assert not store.closure_stale and not scratch_dir(store).exists()
    assert_same_as_reference(store)


def test_difference_in_partitions_and_removed_edges(store, tmp_path, monkeypatch, caplog):
    """A rebuild changes each graph by its difference, partition by partition; an edge
    removed from the data takes its closure pairs with it."""
    caplog.set_level("DEBUG", logger="kgcult.store.hierarchy")
    monkeypatch.setattr(closure_write, "PART_PAIRS", 3)
    store.load([MINI])
    hierarchy.build(store)
    extra = tmp_path / "extra.nt"
    extra.write_text(f"<{WD}Q2095> <{vocab.WDT}P279> <{WD}Q9000098> .\n")
    store.load([extra])
    hierarchy.build(store)
    assert_same_as_reference(store)
    removed = next(iter(store.ox.quads_for_pattern(NamedNode(f"{WD}Q2095"), NamedNode(f"{vocab.WDT}P279"),
                                                   NamedNode(f"{WD}Q9000098"), None)))
    store.ox.remove(removed)
    with store.writing("update", "a test's removal"):  # a write: the closure is stale
        pass
    reports = {r.spec: r for r in hierarchy.build(store)}
    assert not reports["closure-typed"].kept and reports["closure-located"].kept
    assert_same_as_reference(store)
    assert ("Q2095", "Q9000098") not in pairs(store, "subclassOf")
    assert "closure-typed: 0 triples deleted" in caplog.text  # the new edge: only additions
    assert any(m.startswith("closure-subclass: ") and "deleted, 0 to add" in m and not m.startswith("closure-subclass: 0 ")
               for m in caplog.messages)  # the removed edge: only deletions


def test_unchanged_graphs_are_kept_and_changed_ones_rebuilt(store, tmp_path):
    store.load([MINI])
    first = {r.spec: r for r in hierarchy.build(store)}
    assert not any(r.kept for r in first.values())
    labels = tmp_path / "labels.nt"  # no hierarchy edge: every graph is kept
    labels.write_text(f'<{WD}Q2095> <http://www.w3.org/2000/01/rdf-schema#label> "Essen"@de .\n')
    store.load([labels])
    assert store.closure_stale
    again = hierarchy.build(store)
    assert all(r.kept for r in again) and not store.closure_stale
    assert {r.spec: r.triples_out for r in again} == {k: r.triples_out for k, r in first.items()}
    assert_same_as_reference(store)
    extra = tmp_path / "extra.nt"  # a P131 edge: only the P131 graph changes
    extra.write_text(f"<{WD}Q212> <{vocab.WDT}P131> <{WD}Q9000097> .\n")
    store.load([extra])
    third = {r.spec: r for r in hierarchy.build(store)}
    assert [k for k, r in third.items() if not r.kept] == ["closure-located"]
    assert_same_as_reference(store)
    assert not any(r.kept for r in hierarchy.build(store, force=True))
    assert_same_as_reference(store)


def test_a_closure_removed_behind_the_builds_back_is_rebuilt(store):
    store.load([MINI])
    hierarchy.build(store)
    setgraph.drop_property(store.ox, vocab.KGC + "locatedIn")  # not something kgcult does; the record stays
    with store.writing("update", "a test's removal"):
        pass
    reports = {r.spec: r for r in hierarchy.build(store)}
    assert not reports["closure-located"].kept and reports["closure-typed"].kept
    assert_same_as_reference(store)


def test_a_changed_spec_is_rebuilt(store, tmp_path):
    store.load([MINI])
    specs = hierarchy.load_specs()
    hierarchy.build(store, specs)
    for spec in specs:
        if spec.name == "closure-subclass":
            spec.derived = vocab.KGC + "subclassOfOther"
    reports = {r.spec: r for r in hierarchy.build(store, specs)}
    assert not reports["closure-subclass"].kept and reports["closure-typed"].kept
    assert pairs(store, "subclassOf") == set()  # the old term is gone from the store
    rows = store.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ ?x <{vocab.KGC}subclassOfOther> ?y }}")
    assert int(next(iter(rows))["n"].value) > 0
    sub = next(s for s in specs if s.name == "closure-subclass")
    assert len(spec_quads(store, sub)) == reports["closure-subclass"].triples_out
    assert setgraph.own_properties(store.ox)[sub.graph] == {vocab.KGC + "subclassOfOther"}


def test_a_rebuild_after_data_changes_equals_a_fresh_build(tmp_path):
    """Edges added and removed: the rebuild (by difference, in the default graph) holds the
    same closure triples as a store built fresh from the same data."""
    grow = tmp_path / "grow.nt"
    grow.write_text(f"<{WD}Q2095> <{vocab.WDT}P279> <{WD}Q9000098> .\n<{WD}Q212> <{vocab.WDT}P131> <{WD}Q9000097> .\n")
    other = tmp_path / "other.nt"
    other.write_text(f"<{WD}Q9000098> <{vocab.WDT}P279> <{WD}Q9000096> .\n<{WD}Q9000099> <{vocab.WDT}P31> <{WD}Q41415> .\n")
    with Store(tmp_path / "rebuilt") as s:
        s.load([MINI], graph="mini")
        s.load([grow], graph="grow")
        hierarchy.build(s)
        s.clear_graph(vocab.GRAPH + "grow")  # its edges and their closure pairs go
        s.load([other], graph="other")
        reports = hierarchy.build(s)
        assert not all(r.kept for r in reports)
        rebuilt = {spec.name: spec_triples(s, spec) for spec in hierarchy.load_specs()}
        assert_same_as_reference(s)
    with Store(tmp_path / "fresh") as s:
        s.load([MINI], graph="mini")
        s.load([other], graph="other")
        hierarchy.build(s)
        assert {spec.name: spec_triples(s, spec) for spec in hierarchy.load_specs()} == rebuilt


def _as_older_kgcult_left_it(store) -> None:
    """Turn a built store into what kgcult wrote before the closure lived in the default
    graph only: each spec's triples in its named graph too, version-1 input records, no
    registered closure properties."""
    for spec in hierarchy.load_specs():
        quads = spec_quads(store, spec)
        store.ox.bulk_extend(ox.Quad(q.subject, q.predicate, q.object, NamedNode(spec.graph)) for q in quads)
        known = closure_state.recorded(store.ox)[spec.graph]
        closure_state.forget_input(store.ox, spec.graph)
        store.ox.update(closure_state.record_op(spec.graph, "0" * 64, known[1], None))
        for prop in setgraph.own_properties(store.ox).get(spec.graph, ()):
            setgraph.disown(store.ox, spec.graph, prop)
    store.flush()


def test_a_store_with_named_closure_graphs_is_refused(tmp_path):
    loc = tmp_path / "s"
    with Store(loc) as s:
        s.load([MINI])
        hierarchy.build(s)
        _as_older_kgcult_left_it(s)
    with pytest.raises(KgcultError, match="written by an older kgcult .its closure is in named graphs"):
        Store(loc)


def test_closure_triples_are_not_orphans_of_the_set(store):
    """Repairing the set (after a killed write or a SPARQL Update) keeps the closure, which
    no named graph holds."""
    store.load([MINI])
    hierarchy.build(store)
    store.ox.add(ox.Quad(NamedNode(WD + "Q1"), NamedNode(WD + "P1"), NamedNode(WD + "Q2"), DefaultGraph()))
    assert setgraph.sync(store.ox) == (1, 0)  # the stray triple only
    assert_same_as_reference(store)


def test_a_rebuild_takes_the_old_side_from_the_kept_state(store, tmp_path, monkeypatch):
    """After a data change, the difference's old side comes from what the last build kept
    beside the store, not from reading the closure back; without that state (removed, or
    another build's) the closure is read back, with the same result."""
    from kgcult.store import closure_state
    store.load([MINI])
    hierarchy.build(store)
    assert closure_state.state_dir(store.location).is_dir()
    extra = tmp_path / "extra.nt"
    extra.write_text(f"<{WD}Q2095> <{vocab.WDT}P279> <{WD}Q9000098> .\n<{WD}Q212> <{vocab.WDT}P131> <{WD}Q9000097> .\n")
    store.load([extra])
    reads = []
    monkeypatch.setattr(closure_write, "old_codes", lambda *a: reads.append(a) or pytest.fail("read back"))
    reports = hierarchy.build(store)
    assert [r.spec for r in reports if not r.kept] and not reads
    assert_same_as_reference(store)
    monkeypatch.undo()
    closure_state.remove(store.location)  # e.g. a store copied without it
    more = tmp_path / "more.nt"
    more.write_text(f"<{WD}Q9000098> <{vocab.WDT}P279> <{WD}Q9000096> .\n")
    store.load([more])
    hierarchy.build(store)
    assert_same_as_reference(store)


@pytest.mark.parametrize("damage", ["out-of-range", "symlinked-terms", "flipped-byte"])
def test_a_damaged_closure_state_is_read_back_not_a_traceback(store, tmp_path, damage, caplog):
    """issue 40: an out-of-range code or a symlinked terms file in the state kept beside the
    store gave an IndexError traceback on the next `kgcult closure`. The state is checked
    (checksum, ranges, no links): a damaged one is not used, and the closure is read back."""
    import logging

    import numpy as np

    from kgcult.store import closure_state
    store.load([MINI])
    hierarchy.build(store)
    state = closure_state.state_dir(store.location)
    codes = max(state.glob("*.i64"), key=lambda p: p.stat().st_size)
    terms = codes.with_suffix(".terms")
    if damage == "out-of-range":
        local = np.fromfile(codes, dtype=np.int64)
        local[0] = (10**6) << 32 | 5
        local.tofile(codes)
    elif damage == "symlinked-terms":
        elsewhere = tmp_path / "elsewhere.terms"
        elsewhere.write_bytes(terms.read_bytes().split(b"\n")[0])  # another file: one term
        terms.unlink()
        terms.symlink_to(elsewhere)
    else:
        data = bytearray(terms.read_bytes())
        data[0] ^= 1
        terms.write_bytes(bytes(data))
    extra = tmp_path / "extra.nt"
    extra.write_text(f"<{WD}Q2095> <{vocab.WDT}P279> <{WD}Q9000098> .\n")
    store.load([extra])
    with caplog.at_level(logging.WARNING):
        hierarchy.build(store)
    assert_same_as_reference(store)
    if damage != "symlinked-terms":
        assert any("closure state" in m and "damaged" in m for m in caplog.messages)
