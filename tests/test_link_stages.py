"""The linker's stage registry and its input rows, on the hand-written graph of test_link.py:
a stage added by one class and one registry entry runs, ranks, shows its match and score
and appears in ``--stages``' help; a mention file's rows are checked once, with FILE:LINE."""
from __future__ import annotations

import pytest

from kgcult.errors import KgcultError
from kgcult.link import Linker, mention_rows, pipeline
from kgcult.link.stages import lexical
from kgcult.link.stages.base import Stage
from tests.test_link import make_store


@pytest.fixture(scope="module")
def lstore(tmp_path_factory):
    s = make_store(tmp_path_factory.mktemp("stages") / "store")
    yield s
    s.close()


class Reverse(Stage):
    """A toy stage: the mention spelled backwards is an English name."""
    name = "reverse"
    base_score = 0.5

    def run(self, batch):
        for s in batch:
            s.add_found(lexical.exact(self.ctx.ix, s.text[::-1], "en"), self)


@pytest.fixture
def with_reverse(monkeypatch):
    """The registry with ``Reverse`` after ``tokens``: what adding a stage takes."""
    reg = list(pipeline.REGISTRY)
    reg.insert(reg.index(lexical.Tokens) + 1, Reverse)
    monkeypatch.setattr(pipeline, "REGISTRY", tuple(reg))
    monkeypatch.setattr(pipeline, "STAGES", tuple(c.name for c in reg))
    monkeypatch.setattr(pipeline, "BY_NAME", {c.name: c for c in reg})


def test_a_registered_stage_runs_ranks_and_is_listed(lstore, with_reverse):
    assert "reverse" in pipeline.default_stages() and "tokens,reverse" in pipeline.help_text()
    lk = Linker.open(lstore, stages=["reverse", "exact"])
    assert lk.stages == ("exact", "reverse")  # pipeline order
    res = lk.link("nomel", topic="food")
    assert (res["qid"], res["match"], res["status"]) == ("Q1093742", "reverse", "resolved")
    assert res["candidates"][0]["score"] == 0.5
    # its rank is its place in the registry: an exact hit of the same entity ranks first
    assert lk.stage("reverse").rank == pipeline.REGISTRY.index(Reverse)
    assert lk.stage("exact").rank < lk.stage("reverse").rank
    assert Linker.open(lstore, stages=["exact"]).link("nomel", topic="food")["status"] == "unresolved"
    with pytest.raises(KgcultError, match="unknown linking stage 'nope': one of .*tokens, reverse, semantic"):
        pipeline.checked(["reverse", "nope"])


def test_stage_order_and_defaults_come_from_the_registry():
    assert pipeline.STAGES == tuple(c.name for c in pipeline.REGISTRY)
    assert pipeline.STAGES[:4] == ("exact", "normalized", "english", "any")
    assert "embedding" not in pipeline.default_stages() and pipeline.default_stages(True)[-1] == "embedding"
    assert pipeline.checked(["tokens", "exact"]) == ("exact", "tokens")


BAD_LINES = [
    ('{"mention": 5}', "mention must be a string"),
    ('{"mention": "x", "lang": 3}', "lang must be a string"),
    ('{"mention": "x", "topic": "nope"}', "unknown topic 'nope'"),
    ('{"mention": "x", "topic": ["food"]}', "unknown topic"),
    ('{"mention": "x", "topic": {"food": 1}}', "unknown topic"),
    ('{"mention": "x", "group": true}', "group must be a string or an integer"),
    ('{"id": "r", "entities": ["x"]}', "entities must be a JSON object"),
]


def test_mention_file_rows_checked_once_with_file_and_line(lstore, tmp_path, monkeypatch):
    lk = Linker.open(lstore)
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(['{"mention": "lemon", "topic": "food"}'] + [b for b, _ in BAD_LINES]
                             + ['{"id": "e", "entities": {"lemon": "dish_name", "paella": null}, "group": "g"}'])
                   + "\n")
    for n, (_, msg) in enumerate(BAD_LINES, start=2):
        one = tmp_path / f"bad{n}.jsonl"
        one.write_text('{"mention": "lemon"}\n' + BAD_LINES[n - 2][0] + "\n")
        with pytest.raises(KgcultError, match=f"^{one}:2: {msg}"):
            list(lk.link_many(mention_rows.read(one, lk.topics)))
    calls = []
    real = mention_rows.check
    monkeypatch.setattr(mention_rows, "check", lambda row, topics, *a: calls.append(row) or real(row, topics, *a))
    mentions = mention_rows.read(src, lk.topics, on_error="skip", country="Q29")
    got = list(lk.link_many(mentions))
    assert mentions.rows == 2 and [r["id"] for r in got] == [1, "e#0", "e#1"]
    assert len(calls) == 3 + 6  # once per row (6 refused): the linker does not check a read row again
    assert got[1]["group"] == "g" and got[1]["prompt_country"] == "Q29" and got[0]["qid"] == "Q1093742"


def test_api_rows_are_checked_by_the_same_rules(lstore):
    lk = Linker.open(lstore)
    for row in ({"mention": "lemon", "group": True}, {"mention": None}, {"mention": "x", "topic": "nope"}):
        with pytest.raises(KgcultError):
            list(lk.link_many([row]))
    m = mention_rows.check({"mention": " Lemon ", "lang": " EN ", "source_id": 7}, lk.topics)
    assert (m.mention, m.lang, m.topic, m.group) == (" Lemon ", "en", None, 7)
