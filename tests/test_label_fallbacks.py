"""Labels in a language come through Wikibase's fallback chain: the language, its variants
(zh -> zh-hans, zh-hant, zh-cn, zh-tw, ...), then ``mul`` (Wikidata's "default for all
languages", since 2024); the labels subgraph fetches every language of the chains.
Small hand-written graphs and entities."""
from __future__ import annotations

import json

from kgcult import langtags, views, vocab
from kgcult.acquire import subgraphs
from kgcult.acquire.dump import ingest as ing
from kgcult.store import Store

WD, RDFS, SCHEMA = vocab.WD, vocab.RDFS, vocab.SCHEMA

GRAPH = "\n".join([
    # Q1: an English label and a mul label: English wins for en, mul serves zh and ko
    f'<{WD}Q1> <{RDFS}label> "Douglas Adams (writer)"@en .',
    f'<{WD}Q1> <{RDFS}label> "Douglas Adams"@mul .',
    # Q2: no plain zh label, only regional ones: zh takes zh-cn (before zh-tw in the chain),
    # zh-hant takes zh-tw, zh-hans takes zh-cn; en has none and no mul either
    f'<{WD}Q2> <{RDFS}label> "台湾菜"@zh-cn .',
    f'<{WD}Q2> <{RDFS}label> "臺灣菜"@zh-tw .',
    f'<{WD}Q2> <{SCHEMA}description> "一種菜系"@zh-hk .',
    # Q3: zh itself beats its variants and mul
    f'<{WD}Q3> <{RDFS}label> "饺子"@zh .',
    f'<{WD}Q3> <{RDFS}label> "餃子"@zh-hant .',
    f'<{WD}Q3> <{RDFS}label> "Jiaozi"@mul .',
    # Q4: a zh-hans label never serves zh-hant (that would need script conversion)
    f'<{WD}Q4> <{RDFS}label> "面条"@zh-hans .',
]) + "\n"


def _metadata(tmp_path, langs):
    nt = tmp_path / "g.nt"
    nt.write_text(GRAPH, encoding="utf-8")
    with Store(tmp_path / f"store-{langs}") as st:
        st.load([nt], graph="fixture")
        r = views.build(st, "entity-metadata", {"entities": "Q1,Q2,Q3,Q4", "languages": langs}, out=tmp_path / langs)
    return {row["qid"]: row for row in map(json.loads, (r.path / "entity-metadata.jsonl").read_text().splitlines())}


def test_chains_are_wikibase_s_without_conversion():
    assert langtags.fallback_chain("zh") == ("zh", "zh-hans", "zh-hant", "zh-cn", "zh-tw", "zh-hk", "zh-sg",
                                              "zh-mo", "zh-my", "mul")
    assert langtags.fallback_chain("zh-hant") == ("zh-hant", "zh-tw", "zh-hk", "zh-mo", "mul")
    assert langtags.fallback_chain("en") == ("en", "mul")  # no final en fallback for other languages either
    assert "en" not in langtags.fallback_chain("ko")


def test_views_read_labels_through_variants_and_mul(tmp_path):
    rows = _metadata(tmp_path, "en,zh,ko")
    assert rows["Q1"]["labels"] == {"en": "Douglas Adams (writer)", "zh": "Douglas Adams", "ko": "Douglas Adams"}
    assert rows["Q2"]["labels"] == {"zh": "台湾菜"}
    assert rows["Q2"]["descriptions"] == {"zh": "一種菜系"}
    assert rows["Q3"]["labels"] == {"zh": "饺子", "en": "Jiaozi", "ko": "Jiaozi"}
    assert rows["Q4"]["labels"] == {"zh": "面条"}
    rows = _metadata(tmp_path, "zh-hant,zh-hans")
    assert rows["Q2"]["labels"] == {"zh-hant": "臺灣菜", "zh-hans": "台湾菜"}
    assert rows["Q4"]["labels"] == {"zh-hans": "面条"}  # not zh-hant
    assert rows["Q3"]["labels"] == {"zh-hant": "餃子", "zh-hans": "Jiaozi"}  # zh is no zh-hans text: mul


def test_labels_spec_fetches_the_chains():
    spec = subgraphs.load_specs()["labels"]
    assert {"mul", "zh-hans", "zh-hant", "zh-tw", "zh-cn", "zh-hk"} <= set(spec.languages)
    specs = subgraphs.override(subgraphs.load_specs(), languages=["en"])
    assert specs["labels"].languages == ("en", "mul")


def test_ingest_keeps_mul_and_variant_labels(tmp_path):
    def item(qid, labels, claims=()):
        return {"type": "item", "id": qid, "labels": {k: {"language": k, "value": v} for k, v in labels.items()},
                "claims": {p: [{"mainsnak": {"snaktype": "value", "property": p, "datatype": "wikibase-item",
                                              "datavalue": {"type": "wikibase-entityid", "value": {"id": o}}},
                                 "rank": "normal", "id": f"{qid}${p}"}] for p, o in claims},
                "sitelinks": {}}
    entities = [item("Q6256", {"en": "country"}),
                item("Q9", {"mul": "Zanzibar", "zh-hk": "桑給巴爾", "nl": "Zanzibar (nl)"}, [("P31", "Q6256")])]
    dump = tmp_path / "d.json"
    dump.write_text("[\n" + ",\n".join(json.dumps(e, ensure_ascii=False) for e in entities) + "\n]\n")
    specs = subgraphs.override(subgraphs.load_specs(), languages=["en", "zh"])
    with Store(tmp_path / "s") as st:
        ing.ingest(st, str(dump), ["countries", "labels"], specs=specs, jobs=1)
        got = {str(q.object) for q in st.quads(vocab.graph_iri("labels")) if q.subject.value == WD + "Q9"}
    assert '"Zanzibar"@mul' in got and '"桑給巴爾"@zh-hk' in got and not any("@nl" in x for x in got)


def test_linker_matches_and_labels_through_the_chain(tmp_path):
    from kgcult.link.linker import Linker
    from kgcult.store import hierarchy

    nt = tmp_path / "link.nt"
    nt.write_text("\n".join([
        f'<{WD}Q2095> <{RDFS}label> "food"@en .',
        f'<{WD}Q9101> <{vocab.WDT}P279> <{WD}Q2095> .',
        f'<{WD}Q9101> <{RDFS}label> "臺灣菜"@zh-tw .',
        f'<{WD}Q9101> <{RDFS}label> "Taiwanese cuisine"@en .',
        f'<{WD}Q9102> <{vocab.WDT}P31> <{WD}Q2095> .',
        f'<{WD}Q9102> <{RDFS}label> "Bún chả"@mul .',
    ]) + "\n", encoding="utf-8")
    with Store(tmp_path / "s") as st:
        st.load([nt], graph="fixture")
        hierarchy.build(st)
        linker = Linker.open(st)
        r = linker.link("臺灣菜", lang="zh", topic="food")
        assert (r["qid"], r["match"], r["lang_used"], r["label"]) == ("Q9101", "exact-label", "zh-tw", "臺灣菜")
        r = linker.link("Bún chả", lang="vi", topic="food")
        assert (r["qid"], r["match"], r["lang_used"], r["label"], r["label_en"]) == \
            ("Q9102", "exact-label", "mul", "Bún chả", "Bún chả")


def test_show_labels_claim_objects_through_the_chain(tmp_path):
    from kgcult import inspection

    nt = tmp_path / "g.nt"
    nt.write_text(GRAPH, encoding="utf-8")
    with Store(tmp_path / "s") as st:
        st.load([nt], graph="fixture")
        got = inspection.labels_in(st, [WD + "Q1", WD + "Q2", WD + "Q3", WD + "Q4"], "zh")
        assert got == {WD + "Q1": "Douglas Adams", WD + "Q2": "台湾菜", WD + "Q3": "饺子", WD + "Q4": "面条"}
        got = inspection.labels_in(st, [WD + "Q1", WD + "Q2", WD + "Q4"], "ko")
        assert got == {WD + "Q1": "Douglas Adams"}  # mul; then English, which Q2 and Q4 lack
        assert inspection.show(st, "Q2", lang="zh")["label"] == "台湾菜"
        assert inspection.show(st, "Q1", lang="ko")["label"] == "Douglas Adams"
        assert "一種菜系" in inspection.format_card(inspection.show(st, "Q2", lang="zh"), lang="zh")
