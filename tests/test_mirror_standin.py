"""Integration: mirror the stand-in (1.13 M triples) from `oxigraph serve` and compare every
subgraph with the same selection done by direct SPARQL (property paths) on the stand-in."""
from __future__ import annotations

import pyoxigraph as ox
import pytest

from kgcult.acquire.endpoint import mirror as m
from kgcult.acquire import subgraphs
from kgcult.store.rdfio import open_binary
from kgcult.store import Store

from tests.test_mirror import graph_triples, reference_selection


@pytest.mark.slow
def test_standin_mirror_matches_direct_sparql(standin_path, oxigraph_server, tmp_path):
    specs = subgraphs.load_specs()
    srv = oxigraph_server([standin_path])
    with Store(tmp_path / "mirror") as st:
        reports = {r.name: r for r in m.mirror(st, config=m.MirrorConfig(endpoint=srv.url, concurrency=2))}
        got = {name: graph_triples(st, name) for name in specs}
    direct = ox.Store()
    with open_binary(standin_path) as f:
        direct.bulk_load(input=f, format=ox.RdfFormat.N_TRIPLES)
    expected = reference_selection(direct, specs)
    counts = {n: (len(got[n]), len(expected[n])) for n in specs}
    for name in specs:
        assert len(got[name]) == len(expected[name]), counts
        assert got[name] == expected[name], name
        assert reports[name].triples == len(expected[name])
    # the stand-in has foods, dishes, ingredients, countries, places and labels (its P279
    # sample hardly touches the cuisine and food classes, so those two are tiny)
    assert counts["dishes"][0] > 5000 and counts["labels"][0] > 20000, counts
    assert counts["countries"][0] > 500 and counts["ingredients"][0] > 500 and counts["territories"][0] > 100, counts
