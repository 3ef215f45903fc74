"""The committed seed snapshot dumps/seed/: it verifies, it is in sync with its Turtle
sources (`make seed`), and the issue's checks hold through `kgcult sparql` on it."""
from __future__ import annotations

import json

import pytest

from kgcult import resources
from kgcult.store import snapshot
from kgcult.store import Store

from tests.conftest import run_cli
from tests.test_seed_source import MIN_COUNTRIES, MIN_DISHES, MIN_INGREDIENTS, MIN_LABEL_LANGUAGES

SEED = resources.seed()


@pytest.fixture(scope="module")
def seed_store(tmp_path_factory):
    loc = tmp_path_factory.mktemp("seed") / "store"
    assert run_cli(["snapshot", "import", str(SEED)], loc).exit_code == 0
    assert run_cli(["closure"], loc).exit_code == 0
    return loc


def test_seed_snapshot_verifies_and_matches_its_sources(tmp_path):
    manifest = snapshot.verify(SEED)
    s = Store(tmp_path / "fromsource")
    s.load(sorted((SEED / "source").glob("*.ttl")))
    assert snapshot.store_content_hash(s) == manifest["content_sha256"], \
        "dumps/seed is out of date with dumps/seed/source: run `make seed`"
    s.close()


def count(loc, query) -> int:
    res = run_cli(["sparql", query, "--format", "jsonl"], loc)
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)["n"]


def test_issue_counts_through_sparql(seed_store):
    assert count(seed_store, "SELECT (COUNT(DISTINCT ?d) AS ?n) WHERE { ?d kgc:typedAs wd:Q746549 }") >= MIN_DISHES
    assert count(seed_store, "SELECT (COUNT(DISTINCT ?c) AS ?n) WHERE { ?c wdt:P31 wd:Q6256 }") >= MIN_COUNTRIES
    assert count(seed_store, "SELECT (COUNT(DISTINCT ?i) AS ?n) WHERE { ?d kgc:typedAs wd:Q746549 ; wdt:P527 ?i } ") > 0
    assert count(seed_store, "SELECT (COUNT(DISTINCT ?i) AS ?n) WHERE { ?i kgc:typedAs wd:Q2095 "
                             "FILTER NOT EXISTS { ?i kgc:typedAs wd:Q746549 } }") >= MIN_INGREDIENTS
    assert count(seed_store, "SELECT (COUNT(DISTINCT LANG(?l)) AS ?n) WHERE { ?x rdfs:label ?l }") >= MIN_LABEL_LANGUAGES


def test_demo_query_and_stats_on_seed(seed_store):
    res = run_cli(["sparql", "-f", str(resources.queries("checks", "dishes-per-country.rq")), "--format", "jsonl"], seed_store)
    rows = [json.loads(l) for l in res.stdout.splitlines()]
    assert rows and all(r["dishes"] >= 1 for r in rows)
    stats = json.loads(run_cli(["stats", "--format", "json"], seed_store).stdout)
    assert stats["entities_per_root"]["Q6256 country"] >= MIN_COUNTRIES
    assert not stats["closure_stale"]
