"""The query page's paging by request (issue 31, deliverable 5): `/query` answers a
window of a SELECT's rows (``offset``, ``rows``) with ``X-Kgcult-More``, and counts every
row with ``total=true`` (``X-Kgcult-Total-Rows``) without writing them; a request without
these parameters gets the whole result as before (downloads stay complete)."""
from __future__ import annotations

import json

import pytest

from tests.conftest import build_store, running_server
from tests.test_serve import post_query

# every label in the test store, in a fixed order (ORDER BY makes the pages consistent)
LABELS = "SELECT ?x ?l WHERE { ?x rdfs:label ?l } ORDER BY ?x ?l"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(build_store(tmp_path_factory.mktemp("paging") / "store")) as srv:
        yield srv


def rows(body: bytes) -> list[tuple]:
    return [(b["x"]["value"], b["l"]["value"]) for b in json.loads(body)["results"]["bindings"]]


def test_windows_of_a_select_are_its_rows_in_order(server):
    status, headers, body = post_query(server.url, LABELS)
    assert status == 200
    everything = rows(body)
    assert len(everything) > 12
    status, headers, body = post_query(server.url, LABELS, rows="5")
    assert status == 200 and rows(body) == everything[:5]
    assert headers["X-Kgcult-More"] == "true" and headers["X-Kgcult-Rows"] == "5"
    status, headers, body = post_query(server.url, LABELS, offset="5", rows="5")
    assert rows(body) == everything[5:10]
    status, headers, body = post_query(server.url, LABELS, offset=str(len(everything) - 3), rows="5")
    assert rows(body) == everything[-3:] and headers["X-Kgcult-More"] == "false"
    assert headers["X-Kgcult-Rows"] == "3"


def test_total_counts_every_row_without_writing_them(server):
    everything = rows(post_query(server.url, LABELS)[2])
    status, headers, body = post_query(server.url, LABELS, rows="0", total="true")
    assert status == 200 and rows(body) == []
    assert headers["X-Kgcult-Total-Rows"] == str(len(everything))
    status, headers, body = post_query(server.url, LABELS, offset="2", rows="3", total="true")
    assert rows(body) == everything[2:5] and headers["X-Kgcult-Total-Rows"] == str(len(everything))


def test_a_window_applies_to_csv_too_and_bad_parameters_are_refused(server):
    status, _, body = post_query(server.url, LABELS, accept="text/csv", rows="2")
    assert status == 200 and len(body.decode().strip().splitlines()) == 3  # header and two rows
    for bad in ({"rows": "-1"}, {"offset": "x"}, {"rows": "1e3"}):
        status, _, body = post_query(server.url, LABELS, **bad)
        assert status == 400 and b"whole number" in body, (bad, body)
