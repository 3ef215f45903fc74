"""The ingest's compact parts: integer entity codes and sets, the int32 edge index and its
widening, the partial JSON decode against a full parse, the subject-grouped frames and the
router that picks members' lines from them, the msgspec-less fallback."""
from __future__ import annotations

import bz2
import json
from array import array

import pytest

from kgcult import vocab
from kgcult.acquire.dump import ingest as ing
from kgcult.acquire import subgraphs
from kgcult.acquire.dump import json_entity as dumpjson
from kgcult.acquire.dump import scan as dumpscan
from kgcult.acquire.dump import truthy
from kgcult.acquire.dump.emit import Router
from kgcult.acquire.dump.selection import DumpBackend, EdgeIndex, IdSet, code, contains, needed_specs
from kgcult.store import Store

from tests.conftest import SHARED
from tests.test_ingest import ENTITIES, write_dump
from tests.test_mirror import data_quads

SAMPLE = SHARED / "reference" / "opentapioca" / "sample_wikidata_items.json.bz2"
SDK = SHARED / "reference" / "wikibase-sdk"


def test_codes_and_id_sets():
    assert code("Q42") == 168 and code("P31") == 125 and code("L7") == 30
    for bad in ("Q042", "Q", "X1", "L7-F1", "Q1a", "Q²"):
        assert code(bad) is None
    index = EdgeIndex({"P31"})
    a = index.id_set(["Q1", "Q3", "L7-F1", "Q2"])
    b = index.id_set(["Q2", "Q5"])
    assert sorted(index.names(a | b)) == ["L7-F1", "Q1", "Q2", "Q3", "Q5"]
    assert sorted(index.names(a - b)) == ["L7-F1", "Q1", "Q3"]
    assert len(a) == 4 and bool(a) and not IdSet.of([]) and list(IdSet.of([3, 1, 3])) == [1, 3]
    assert contains(a.codes, b.codes).tolist() == [True, False]


def test_edge_index_int32_then_widened_to_int64():
    index = EdgeIndex({"P31", "P17"})
    index.add_coded("P31", array("q", [code("Q1"), code("Q5")]), array("q", [code("Q9")]))
    assert index.typecode == "i"
    index.add("P17", f"Q{2**30}", "Q2")  # a code beyond int32: the index widens, nothing is lost
    index.add("P31", "L7-F1", "Q5")
    assert index.typecode == "q" and index.edge_count() == 3
    index.freeze()
    five = index.id_set(["Q5"])
    assert sorted(index.names(index.subjects_pointing_to({"P31"}, five))) == ["L7-F1", "Q1"]
    assert index.names(index.objects_of({"P17"}, index.id_set([f"Q{2**30}"]))) == ["Q2"]
    with_any = index.subjects_with_any({"P31"}, index.id_set(["Q1", "Q9", "Q2"]))
    assert sorted(index.names(with_any)) == ["Q1", "Q9"]


def _lines(path):
    opener = bz2.open if str(path).endswith(".bz2") else open
    with opener(path, "rb") as f:
        data = f.read()
    if data.lstrip().startswith(b"["):
        return [x for x in data.split(b"\n") if x.strip() not in (b"", b"[", b"]")]
    entities = json.loads(data).get("entities", {}) if data.lstrip().startswith(b"{") else {}
    return [json.dumps(e).encode() for e in entities.values()] or [data.strip()]


@pytest.mark.parametrize("fast", [True, False], ids=["msgspec", "full-parse"])
def test_the_scan_decode_gives_the_lines_of_a_full_parse(monkeypatch, fast):
    """On real entities: the scan's decode (typed main snaks, terms kept as a record) gives
    the claim objects and term lines of a full parse, every property and language asked for."""
    if not fast:
        monkeypatch.setattr(dumpjson, "msgspec", None)
    elif dumpjson.msgspec is None:
        pytest.skip("msgspec not installed")
    langs = frozenset({"en", "fr", "zh", "ar", "de", "nl", "ja"})
    label_props = frozenset(subgraphs.LABEL_PROPERTIES)
    lines = _lines(SAMPLE) + [x for p in sorted(SDK.glob("Q*.json")) for x in _lines(p)]
    for line in lines:
        full = truthy.parse_entity_line(line, json.loads)
        props = sorted(full.get("claims") or {})
        eid, objects, record = dumpjson.scan_entity(line, props, langs, label_props, True)
        assert eid == full["id"]
        assert objects == {p: truthy.claim_objects(full, p) for p in props}, eid
        rec = dumpjson.terms(record)
        assert truthy.term_lines(rec, rec.get("sitelinks"), "<x>", langs, label_props) == \
            truthy.label_lines(full, "<x>", langs, label_props, True), eid


def test_unusual_shapes_and_bad_lines_fall_back_to_the_full_parse():
    odd = b'{"type":"item","id":"Q1","labels":[],"claims":[],"sitelinks":[]},'
    eid, objects, record = dumpjson.scan_entity(odd, ["P31"], frozenset({"en"}), {vocab.RDFS + "label"}, True)
    rec = dumpjson.terms(record)
    assert eid == "Q1" and objects == {} and truthy.term_lines(rec, rec.get("sitelinks"), "<x>", {"en"},
                                                               {vocab.RDFS + "label"}) == \
        ['<x> <http://wikiba.se/ontology#sitelinks> "0"^^<http://www.w3.org/2001/XMLSchema#integer> .']
    assert dumpjson.scan_entity(b"[", [], frozenset(), set(), False) is None
    for bad in (b'{"type":"item","labels":{}}', b'{"id":"Q1", "claims": {"P31": [}', b"5"):
        with pytest.raises(ValueError):
            dumpjson.scan_entity(bad, ["P31"], frozenset({"en"}), set(), False)


def _plan_for(names):
    specs = subgraphs.load_specs()
    todo = [specs[n] for n in names]
    return specs, todo, dumpscan.ScanPlan.for_specs("json", needed_specs(specs, todo), todo)


def _sorted_lines(routed: dict) -> dict:
    return {name: sorted(data.decode().splitlines()) for name, data in routed.items()}


def test_frames_group_lines_by_subject_and_the_router_keeps_members_lines():
    specs, todo, plan = _plan_for(["countries", "labels"])
    block = ("[\n" + ",\n".join(json.dumps(e, ensure_ascii=False) for e in ENTITIES) + "\n]\n").encode()
    r = dumpscan.scan_json_block(plan, 1, block)
    assert r.records == len(ENTITIES) and not r.other_edges and not r.terms
    frame = dumpscan.unpack_frame(dumpscan.pack_frame(r))
    text = frame.lines
    assert list(frame.codes) == list(r.groups) and text == r.lines and frame.ends[-1] == len(text)
    first = text[:frame.ends[0]].decode()
    assert all(x.startswith(f"<{vocab.WD}Q2095> ") for x in first.splitlines())

    index = EdgeIndex(set(plan.struct_props))
    for pid, (so, hv) in r.edges.items():
        index.add_coded(pid, so, hv)
    index.freeze()
    backend = DumpBackend(index, specs)
    backend.members = {"countries": index.id_set(["Q142", "Q17"]), "labels": index.id_set(["Q142", "Q900"])}
    routed = dict(Router(todo, backend).route_groups(frame))
    country_lines = routed["countries"].decode().splitlines()
    assert country_lines and all(x.split(" ")[0] in (f"<{vocab.WD}Q142>", f"<{vocab.WD}Q17>") for x in country_lines)
    assert f"<{vocab.WD}Q142> <{vocab.WDT}P30> <{vocab.WD}Q46> ." in country_lines
    label_lines = routed["labels"].decode().splitlines()
    assert f'<{vocab.WD}Q900> <{vocab.RDFS}label> "someone"@en .' in label_lines
    assert not any("voedsel" in x for x in label_lines)  # nl is not a labels language
    assert dict(Router(todo, backend).route(text)) == routed  # the line-by-line form agrees

    # the local engine's form: terms as records, turned into lines for the members only
    t = dumpscan.scan_json_block(plan, 1, block, terms=True)
    assert t.terms and vocab.RDFS.encode() not in t.lines and subgraphs.SITELINKS.encode() not in t.lines
    from_terms = dict(Router(todo, backend).route_groups(dumpscan.unpack_frame(dumpscan.pack_frame(t))))
    assert _sorted_lines(from_terms) == _sorted_lines(routed)


def test_terms_records_without_msgspec_give_the_same_lines(monkeypatch):
    specs, todo, plan = _plan_for(["labels"])
    block = ("[\n" + ",\n".join(json.dumps(e, ensure_ascii=False) for e in ENTITIES) + "\n]\n").encode()
    index = EdgeIndex(set(plan.struct_props))
    index.freeze()
    backend = DumpBackend(index, specs)
    backend.members = {"labels": index.id_set([e["id"] for e in ENTITIES])}
    want = dict(Router(todo, backend).route_groups(dumpscan.unpack_frame(dumpscan.pack_frame(
        dumpscan.scan_json_block(plan, 1, block)))))
    monkeypatch.setattr(dumpjson, "msgspec", None)
    got = dict(Router(todo, backend).route_groups(dumpscan.unpack_frame(dumpscan.pack_frame(
        dumpscan.scan_json_block(plan, 1, block, terms=True)))))
    assert want and _sorted_lines(got) == _sorted_lines(want)


def test_without_msgspec_the_store_is_the_same(tmp_path, monkeypatch, caplog):
    dump = write_dump(tmp_path / "d.json")
    a, b = Store(tmp_path / "a"), Store(tmp_path / "b")
    ing.ingest(a, str(dump), jobs=1)
    monkeypatch.setattr(dumpjson, "msgspec", None)
    with caplog.at_level("INFO"):
        ing.ingest(b, str(dump), jobs=1)
    assert "install msgspec" in caplog.text or dumpjson.orjson is None
    assert data_quads(a) == data_quads(b) and data_quads(a)


def test_a_selected_line_that_is_not_n_triples_stops_the_ingest(tmp_path):
    wd, wdt = vocab.WD, vocab.WDT
    nt = tmp_path / "d.nt"
    nt.write_text(f"<{wd}Q142> <{wdt}P31> <{wd}Q6256> .\n"
                  f"<{wd}Q142> <{wdt}P36> <not an iri> .\n", encoding="utf-8")
    store = Store(tmp_path / "s")
    with pytest.raises(ing.IngestError, match="not valid N-Triples"):
        ing.ingest(store, str(nt), ["countries"], jobs=1)
    assert not data_quads(store)


@pytest.mark.slow  # over 10 s: make test-all
def test_the_writer_loads_on_flush_and_an_abandoned_load_commits_nothing(tmp_path, monkeypatch):
    from pyoxigraph import NamedNode

    from kgcult.acquire.dump import emit as dumpemit
    from kgcult.acquire.dump.emit import Writer
    wd, wdt = vocab.WD, vocab.WDT
    g = NamedNode("https://w3id.org/kgcult/graph/test")
    lines = b"".join(b"<%sQ%d> <%sP31> <%sQ5> .\n" % (wd.encode(), i, wdt.encode(), wd.encode()) for i in range(5000))
    with Store(tmp_path / "a") as st:
        w = Writer(st, str(tmp_path))
        w.add_ntriples(lines, g, "d.json")
        w.add_ntriples(b"<%sQ1> <%sP17>   <%sQ142>.\n" % (wd.encode(), wdt.encode(), wd.encode()), g, "d.json")
        w.flush()
        assert len(data_quads(st)) == 5001
        w = Writer(st, str(tmp_path))
        w.add_ntriples(lines.replace(b"P31", b"P279"), g, "d.json")
        w.remove()  # the emission failed: nothing of this load is committed
        assert len(data_quads(st)) == 5001
        # two loaders share the quads; when the first fails, the second is stopped before it
        # commits (the bad line goes to the first: the loader with the fewest bytes)
        w = Writer(st, str(tmp_path), loaders=2)
        w.add_ntriples(b"<%sQ1> <%sP17> <not an iri> .\n" % (wd.encode(), wdt.encode()), g, "d.nt")
        for i in range(4):
            w.add_ntriples(lines.replace(b"P31", b"P%d" % (1000 + i)), g, "d.nt")
        assert w.pipes[1].bytes
        with pytest.raises(ing.IngestError, match="d.nt: a selected line is not valid N-Triples"):
            w.flush()
        assert len(data_quads(st)) == 5001
        w = Writer(st, str(tmp_path), loaders=2)
        for i in range(4):
            w.add_ntriples(lines.replace(b"P31", b"P%d" % (1000 + i)), g, "d.nt")
        assert all(p.bytes for p in w.pipes)
        w.flush()
        assert len(data_quads(st)) == 5001 + 4 * 5000
        # loads of at most LOADER_QUADS quads each, two at a time, the others committed
        monkeypatch.setattr(dumpemit, "LOADER_QUADS", 6000)
        w = Writer(st, str(tmp_path), loaders=2)
        for i in range(6):
            w.add_ntriples(lines.replace(b"P31", b"P%d" % (2000 + i)), g, "d.nt")
        assert len(w.pipes) == 2 and w.opened == 3  # the third when both had 10000
        w.flush()
        assert len(data_quads(st)) == 5001 + 10 * 5000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]  # no scratch files left
