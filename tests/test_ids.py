"""The one QID toolkit and the one language-tag check every command uses."""
from __future__ import annotations

import pytest
from pyoxigraph import Literal, NamedNode

from kgcult import ids, langtags
from kgcult.errors import KgcultError

WD = "http://www.wikidata.org/entity/"


@pytest.mark.parametrize("given", ["Q42", "q42", " wd:Q42 ", WD + "Q42"])
def test_parse_accepts_the_ways_users_write_an_id(given):
    assert ids.parse(given, "Q") == "Q42"


@pytest.mark.parametrize("given", ["Q0", "Q042", "P31", "L7-F1", "Q1 } DROP ALL", "", None])
def test_parse_rejects_anything_else_naming_the_field(given):
    with pytest.raises(KgcultError, match=r"^--country: not a Wikidata id"):
        ids.parse(given, "Q", field="--country")


def test_entities_iris_and_terms():
    assert ids.of_iri(WD + "Q42") == "Q42" and ids.of_iri(WD + "L7-F1") is None
    assert ids.entity_of_iri(WD + "L7-F1") == "L7-F1" and ids.entity_of_iri("http://x/Q42") is None
    assert ids.of_term(NamedNode(WD + "P31"), "Q") is None and ids.of_term(NamedNode(WD + "P31")) == "P31"
    assert ids.entity_of_term(Literal(WD + "Q42")) is None
    assert ids.shorten(WD + "L7-S2") == "L7-S2" and ids.shorten("http://x/y") == "http://x/y"
    assert ids.node("Q42") == NamedNode(WD + "Q42") and ids.iri(WD + "Q1") == WD + "Q1"


def test_sort_key_orders_by_kind_then_number_forms_after_their_lexeme():
    given = ["x", "Q10", WD + "Q2", "P1", "L7-F1", "L7", "Q9"]
    assert sorted(given, key=ids.sort_key) == ["L7", "L7-F1", "P1", WD + "Q2", "Q9", "Q10", "x"]


def test_language_tags_are_lower_cased_and_checked():
    assert langtags.parse(" zh-Hans ") == "zh-hans" and langtags.parse("be-tarask") == "be-tarask"
    for bad in ("en gb", "en\nfr", 'en") }', "", "../x"):
        with pytest.raises(KgcultError, match="languages: .* is not a language tag"):
            langtags.parse(bad, "languages")
