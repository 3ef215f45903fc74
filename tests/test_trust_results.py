"""Issue 40, "silent wrong results" and "tracebacks and leaks" at the query layer: WDQS hints
dropped wherever WDQS takes them, the query page paging past any row count, remote answers
read by their real syntax, and paging parameters in ASCII digits only."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgcult.store import Store
from tests.conftest import running_server
from tests.test_serve import post_query

HINTS = {
    "after-values": "SELECT ?x WHERE { VALUES ?x {1} hint:Prior hint:runFirst true . }",
    "after-bind": "SELECT ?x WHERE { BIND(1 AS ?x) hint:Prior hint:runFirst true . }",
    "after-filter": "SELECT ?x WHERE { VALUES ?x {1} FILTER(?x = 1) hint:Prior hint:runFirst true . }",
    "after-filter-function": 'SELECT ?x WHERE { VALUES ?x {"a"} FILTER regex(?x, "a") hint:Prior hint:runFirst true . }',
    "after-values-header": "SELECT ?x WHERE { VALUES (?x) {(1)} hint:Query hint:optimizer \"None\" . }",
}


@pytest.mark.parametrize("name", sorted(HINTS))
def test_a_hint_after_a_closing_bracket_is_dropped(store_path, name):
    """Before: the hint after VALUES {...}, BIND(...) or FILTER(...) stayed in the query as a
    triple pattern, matched nothing and the answer was empty (0 rows instead of 1)."""
    with Store(store_path, read_only=True) as st:
        assert len(list(st.query(HINTS[name]))) == 1


def test_a_hint_term_as_an_object_is_still_left_alone(store_path):
    with Store(store_path, read_only=True) as st:
        assert list(st.query("SELECT ?x WHERE { VALUES ?x {1} ?s ?p hint:Prior . }")) == []


# -- the query page pages past any row count ----------------------------------------------------

MANY = ("SELECT ?a ?b ?c ?d ?e WHERE { VALUES ?a {0 1 2 3 4 5 6 7 8 9} VALUES ?b {0 1 2 3 4 5 6 7 8 9} "
        "VALUES ?c {0 1 2 3 4 5 6 7 8 9} VALUES ?d {0 1 2 3 4 5 6 7 8 9} VALUES ?e {0 1 2 3 4 5 6 7 8 9 10 11} }")
MANY_ROWS = 120_000  # past the 100,000 rows one truncate-mode answer holds


def test_the_page_pages_past_100000_rows(store_path):
    """The page asks in truncate mode. Before, the result itself was cut at 100,000 rows:
    the count said 100000 for 120,000 rows and a block past 100,000 came back empty."""
    with running_server(store_path) as srv:
        status, headers, body = post_query(srv.url, MANY, **{"limit-mode": "truncate", "rows": "0", "total": "true"})
        assert status == 200 and headers["X-Kgcult-Total-Rows"] == str(MANY_ROWS)
        assert "X-Kgcult-Truncated" not in headers
        status, headers, body = post_query(srv.url, MANY, **{"limit-mode": "truncate", "offset": "119998", "rows": "5"})
        got = json.loads(body)["results"]["bindings"]
        assert status == 200 and len(got) == 2 and headers["X-Kgcult-More"] == "false"
        # one answer still holds at most 100,000 rows, and says so when it is cut
        status, headers, body = post_query(srv.url, MANY, **{"limit-mode": "truncate", "offset": "1", "rows": "200000"})
        assert status == 200 and headers["X-Kgcult-Truncated"] == "true" and headers["X-Kgcult-Rows"] == "100000"


def test_the_page_reads_x_kgcult_truncated():
    """The page's script reads the header on every answer it fetches (the count and each
    block) and keeps "next" open when the server cut an answer."""
    js = (Path(__file__).resolve().parents[1] / "kgcult" / "serve" / "web" / "yasgui-page.js").read_text()
    assert 'headers.get("X-Kgcult-Truncated")' in js
    assert "wasCut(got.resp)" in js and js.count("wasCut(got.resp)") >= 2
    assert "|| paging.cut, () => showBlock(paging.offset + BLOCK)" in js


# -- paging parameters: ASCII digits only -------------------------------------------------------


@pytest.mark.parametrize("param,value", [("rows", "²"), ("offset", "١٢"), ("rows", "１０"), ("offset", "1_0")],
                         ids=["superscript", "arabic-indic", "fullwidth", "underscore"])
def test_paging_parameters_take_ascii_digits_only(store_path, param, value):
    """Before: rows=² answered 500 ValueError; offset=١٢ was read as 12."""
    with running_server(store_path) as srv:
        status, _, body = post_query(srv.url, MANY, **{param: value})
        assert status == 400 and b"whole number" in body and body.count(b"\n") == 1, (status, body)


def test_an_accept_qvalue_in_other_digits_is_no_preference(store_path):
    from kgcult.serve.protocol import parse_accept

    assert parse_accept("text/csv;q=١, application/json;q=0.5") == ["application/json"]
    assert parse_accept("text/csv;q=0.9, application/json;q=1") == ["application/json", "text/csv"]


# -- remote CONSTRUCT answers read by their real syntax ----------------------------------------

S, P = "http://www.wikidata.org/entity/Q46383", "http://www.wikidata.org/prop/direct/P495"
O1, O2 = "http://www.wikidata.org/entity/Q17", "http://www.wikidata.org/entity/Q884"
ANSWERS = {
    "n-quads": ("application/n-quads",
                f"<{S}> <{P}> <{O1}> <http://g/1> .\n<{S}> <{P}> <{O2}> .\n"),
    "trig": ("application/trig", f"<http://g/1> {{ <{S}> <{P}> <{O1}> . }}\n<{S}> <{P}> <{O2}> .\n"),
    "turtle": ("text/turtle; charset=utf-8", f"<{S}> <{P}> <{O1}>, <{O2}> .\n"),
    "rdf-xml": ("application/rdf+xml",
                '<?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
                f'xmlns:wdt="http://www.wikidata.org/prop/direct/"><rdf:Description rdf:about="{S}">'
                f'<wdt:P495 rdf:resource="{O1}"/><wdt:P495 rdf:resource="{O2}"/></rdf:Description></rdf:RDF>'),
}


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_a_remote_construct_answer_is_read_by_its_syntax(name):
    """Before: an N-Quads answer was loaded into its named graphs and read back as an empty
    graph, with no error."""
    from kgcult.store.remote import RemoteStore
    from tests.test_trust_wayin import http_server

    ctype, body = ANSWERS[name]
    with http_server(lambda h, b: (200, [("Content-Type", ctype)], body.encode())) as srv:
        got = {(t.subject.value, t.predicate.value, t.object.value)
               for t in RemoteStore(srv.url + "/query").query("CONSTRUCT WHERE { ?s ?p ?o }")}
    assert got == {(S, P, O1), (S, P, O2)}


def test_a_remote_construct_answer_in_no_rdf_syntax_is_an_error():
    from kgcult.sparql.client import RemoteError
    from kgcult.store.remote import RemoteStore
    from tests.test_trust_wayin import http_server

    for ctype in ("text/html", "application/sparql-results+json"):
        with http_server(lambda h, b: (200, [("Content-Type", ctype)], b"<html>hello</html>")) as srv:
            with pytest.raises(RemoteError, match="not an RDF syntax kgcult reads"):
                list(RemoteStore(srv.url + "/query").query("CONSTRUCT WHERE { ?s ?p ?o }"))
