"""The on-disk link index answers as the in-memory one did.

A reference index is built here the way the in-memory index was (Python dicts straight
from the store's quads), and the reference fuzzy / token pools are ``FuzzyPool``
/ ``TokenPool`` (tests/reference_pools.py) over ``names_of(members(topic))``, as the linker built them
lazily before; every candidate stage must give the same candidates on the seed snapshot
(every name, and each with a typo) and on a sample of the stand-in dev set (slow)."""
from __future__ import annotations

import json
import logging
import random
from pathlib import Path

import pyoxigraph as ox
import pytest

from tests.reference_pools import FuzzyPool, TokenPool
from kgcult.link.index import reader as lx
from kgcult.link.index import build
from kgcult.link.index import encoding
from kgcult.link import normalize
from kgcult.link.index import layout
from kgcult.link.index import name_pools
from kgcult.link.linker import Linker
from kgcult.store import Store, hierarchy, snapshot

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT.parent / "shared" / "standin" / "link-dev.jsonl"


def reference_maps(store, ix):
    """exact / norm / anyl as the in-memory index built them (codes as sets)."""
    exact, norm, anyl = {}, {}, {}
    for alias, pred in ((0, build.RDFS_LABEL), (1, build.SKOS_ALT)):
        for q in build._data_quads(store, pred):
            e = ix.eid_of.get(build._local(q.subject))
            lit = q.object
            if e is None or not isinstance(lit, ox.Literal) or not lit.language:
                continue
            lang = lit.language.lower()
            _, f, s = normalize.keys(lit.value, lang)
            exact.setdefault((lang, lit.value), set()).add((e << 1) | alias)
            norm.setdefault((lang, s), set()).add((e << 1) | alias)
            acode = (((e << encoding.LANG_BITS) | ix.lang_id[lang]) << 1) | alias
            for k in {f, s}:
                anyl.setdefault(k, set()).add(acode)
    return exact, norm, anyl


def reference_pools(ix):
    """The pools as the linker built them in its first pass, per (topic, language)."""
    fuzzy, parts = {}, {}
    for topic in [None] + [t.name for t in ix.topics]:
        members = ([e for e, b in enumerate(ix.topic_bits) if b] if topic is None else ix.members(topic))
        for lg in ix.langs:
            names = ix.names_of(members, {lg})
            fuzzy[(topic, lg)] = FuzzyPool(names)
            parts[(topic, lg)] = TokenPool.entries_of(names)
    return fuzzy, parts


_TOKEN_POOLS: dict = {}


def token_pool(parts, topic, lang):
    key = (id(parts), topic, lang)
    if key in _TOKEN_POOLS:
        return _TOKEN_POOLS[key]
    entries = []
    for lg in sorted({lang, normalize.base_lang(lang), "en"}):
        entries.extend(parts.get((topic, lg), ()))
    pool = _TOKEN_POOLS[key] = TokenPool(lang=lang, entries=entries)
    return pool


def typo(s: str, rng: random.Random) -> str:
    if len(s) < 6:
        return s + "x"
    i = rng.randrange(1, len(s) - 2)
    return s[:i] + s[i + 1] + s[i] + s[i + 2:]


def compare(ix, store, mentions, fuzzy=None, parts=None):
    """Assert that every stage agrees with the reference on ``mentions`` (mention, lang, topic)."""
    exact, norm, anyl = reference_maps(store, ix)
    for (lang, text), cs in exact.items():
        assert set(encoding.codes(ix.exact[lang].get(text))) == cs, (lang, text)
    for (lang, key), cs in norm.items():
        assert set(encoding.codes(ix.norm[lang].get(key))) == cs, (lang, key)
    for key, cs in anyl.items():
        assert set(encoding.codes(ix.anyl.get(key))) == cs, key
    if fuzzy is None:
        fuzzy, parts = reference_pools(ix)
    checked = 0
    for m, lang, topic in mentions:
        keys = normalize.keys(m, lang)
        for lg in sorted({lang, normalize.base_lang(lang), "en"}):
            ref = fuzzy.get((topic, lg))
            got = ix.fuzzy_pool(topic, lg).search(keys[1])
            assert got == (ref.search(keys[1]) if ref else []), (m, lang, topic, lg)
            checked += bool(got)
        # the fuzzy stage searches a mention's parts in one query: the same answers per part
        pools = [ix.fuzzy_pool(topic, lg) for lg in sorted({lang, normalize.base_lang(lang), "en"})]
        assert name_pools.search_parts(ix.db, pools, keys[1]) == [p.search(keys[1]) for p in pools], (m, lang)
        if topic is not None:
            got = ix.token_pool(topic, lang).search(m)
            ref = token_pool(parts, topic, lang).search(m)
            assert [(round(s, 9), e, lg, n) for s, e, lg, n in got] == \
                   [(round(s, 9), e, lg, n) for s, e, lg, n in ref], (m, lang, topic)
            checked += bool(got)
    return checked


@pytest.fixture(scope="module")
def seed(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("seed") / "store")
    snapshot.import_(s, ROOT / "dumps" / "seed")
    hierarchy.ensure_closure(s)
    yield s
    s.close()


def test_seed_candidates_match_the_in_memory_index(seed):
    ix = lx.load_or_build(seed)
    rng = random.Random(7)
    names = sorted({(text, lang) for (lang, text) in reference_maps(seed, ix)[0]})
    names = rng.sample(names, min(len(names), 400))
    mentions = []
    for text, lang in names:
        for topic in (None, "food", "place"):
            mentions.append((text, lang, topic))
            mentions.append((typo(text, rng), lang, topic))
    mentions += [("chicken soup", "en", "food"), ("red wine sauce", "en", "food"), ("pão", "pt-br", "food")]
    assert compare(ix, seed, mentions) > 100  # the pools found something, and agreed


def test_index_files_and_fresh_linker(seed):
    """The index is a directory of one database and memory-mapped arrays; a fresh linker
    finds its pools there and links a typo at once."""
    ix = lx.load_or_build(seed)
    path = lx.index_path(seed, ix.content_hash, ix.topics)
    assert path.is_dir() and (path / layout.DB_NAME).is_file() and (path / "qnum.npy").is_file()
    assert lx.disk_bytes(path) > 0
    assert isinstance(ix.qnum, memoryview) and type(ix.qnum.obj).__name__ == "mmap"  # a view of the mapping
    lk = Linker(lx.LabelIndex(path), store=seed)
    r = lk.link("tiramissu", topic="food")
    assert r["match"] == "fuzzy" and r["qid"]
    assert isinstance(r["candidates"][0]["sitelinks"], int)
    json.dumps(r)  # plain Python values only


def test_pools_are_built_when_a_mention_first_needs_them(tmp_path, caplog):
    """A fresh index has no pools database: a mention an exact name settles leaves it so;
    the first one that reaches the fuzzy stage builds it once, beside the index, saying
    so, and the next process finds it there (issue 41: a first link in seconds)."""
    s = Store(tmp_path / "store")
    snapshot.import_(s, ROOT / "dumps" / "seed")
    hierarchy.ensure_closure(s)
    ix = lx.load_or_build(s)
    pools_db = ix.directory / name_pools.POOLS_DB
    assert ix.fresh and not pools_db.exists()
    lk = Linker(ix, store=s, stages=["exact", "normalized", "fuzzy"])
    assert lk.link("tiramisu", topic="food")["match"] == "exact-label"
    assert not pools_db.exists()
    with caplog.at_level(logging.INFO, logger="kgcult"):
        r = lk.link("tiramissu", topic="food")
    assert r["match"] == "fuzzy" and r["qid"] == lk.link("tiramisu", topic="food")["qid"]
    assert pools_db.is_file() and any("building its fuzzy and token pools" in m for m in caplog.messages)
    assert not [p for p in ix.directory.iterdir() if ".tmp-" in p.name or p.name.endswith(".scratch")]
    again = Linker(lx.LabelIndex(ix.directory), store=s)
    assert again.ix.ensure_pools() == pools_db and again.link("tiramissu", topic="food")["qid"] == r["qid"]
    s.close()


def test_part_rows_are_part_names_read_lazily(seed):
    ix = lx.load_or_build(seed)
    for topic, lang in ((None, "en"), ("food", "en"), ("food", "fr"), ("place", "xx")):
        ref = ix.part_names(topic, lang)
        rows = ix.part_rows(topic, lang)
        assert len(rows) == len(ref) and list(rows) == ref
        if ref:
            assert rows[len(ref) - 1] == ref[-1] and rows[0] == ref[0]
            assert len(rows._memo) == 2  # only the rows asked for were read
            with pytest.raises(IndexError):
                rows[len(ref)]
            fresh = ix.part_rows(topic, lang)
            want = list(range(0, len(ref), 3))
            fresh.prefetch(want)
            assert sorted(fresh._memo) == want  # one query read them all
            assert [fresh[i] for i in want] == [ref[i] for i in want]


def test_stored_morphology_pools_answer_as_in_memory(seed, tmp_path):
    """morphology_pools.StoredKeyPool (searched on disk) gives what morphology.KeyPool gives,
    for the stem and compound pools, names and typos alike; a fresh linker uses it."""
    from kgcult.link.stages import morphology_pools
    from kgcult.link.stages import morphology

    if not morphology.available():
        pytest.skip("snowballstemmer not installed")
    ix = lx.load_or_build(seed)
    rng = random.Random(5)
    checked = 0
    for topic, lang, compound in (("food", "en", False), ("food", "de", True), ("food", "fr", False),
                                  ("place", "nl", True), ("food", "sv", True)):
        names = ix.part_names(topic, lang)
        mem = morphology.KeyPool(names, lang, compound=compound)
        stored = morphology_pools.save(mem, tmp_path / f"{topic}-{lang}-{compound}.sqlite")
        assert isinstance(stored, morphology_pools.StoredKeyPool)
        assert stored.compound == bool(mem.vocab)
        texts = [n for _e, _l, n in names[:150]]
        texts += [typo(t, rng) for t in texts[:50]] + [" ".join(reversed(t.split())) for t in texts[:50]]
        texts += ["Apfelkuchen", "Erdbeerkuchen", "kanelbullar", "sopa de tomate", ""]
        for t in texts:
            assert stored.key(t) == mem.key(t), t
            got = stored.search(t)
            assert got == mem.search(t) and list(got) == list(mem.search(t)), t
            checked += bool(got)
    assert checked > 100
    assert morphology_pools.open_pool(tmp_path / "missing.sqlite", "en") is None
    (tmp_path / "junk.sqlite").write_bytes(b"not a database")
    assert morphology_pools.open_pool(tmp_path / "junk.sqlite", "en") is None
    lk = Linker(lx.LabelIndex(lx.index_path(seed, ix.content_hash, ix.topics)), store=seed)
    lk.link("tomato soups", topic="food")
    pools = [p for name in ("stem", "compound") for p in lk.stage(name).pools.values()]
    assert pools and all(isinstance(p, morphology_pools.StoredKeyPool) for p in pools)


def test_semantic_search_reads_mapped_vectors_in_blocks(tmp_path):
    """A memory-mapped part is read from its file block by block (no page of it stays
    mapped); the hits are those of the plain matrix product (row order breaks ties), and
    a query's cosines do not depend on the other queries of its batch."""
    import numpy as np

    from kgcult.link.semantic import search as semantic

    rng = np.random.default_rng(3)
    v = rng.normal(size=(300, 16)).astype("float32")
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    v[7] = v[5]  # a tie
    np.save(tmp_path / "v.npy", v)
    mat = np.load(tmp_path / "v.npy", mmap_mode="r")
    rows = [(i // 2, "en", f"n{i}") for i in range(300)]
    q = v[[5, 10, 299]] + 0.01

    class Spy(semantic.SemanticPool):
        QUERY_BLOCK = 2  # several products per block of rows
        ROW_BLOCK = 64   # several blocks, the best rows in different ones

    from kgcult.link.semantic import bound as semantic_bound

    blocks = []
    real = semantic_bound.read_blocks

    def spy(m, n, step):
        for r0, b in real(m, n, step):
            blocks.append((r0, isinstance(b, np.memmap)))
            yield r0, b

    semantic_bound.read_blocks = spy
    try:
        got = Spy([(rows, mat)]).search(q, k=4)
        one = Spy([(rows, mat)]).search(q[:1], k=4)  # a single query
        mem = Spy([(rows, np.array(v))]).search(q, k=4)  # an in-memory matrix: sliced
    finally:
        semantic_bound.read_blocks = real
    assert [r0 for r0, _ in blocks[:5]] == [0, 64, 128, 192, 256]
    assert not any(is_map for _, is_map in blocks)  # read into a buffer, not mapped
    sims = q @ v.T
    for qi in range(3):
        order = sorted(range(300), key=lambda i: (-sims[qi, i], i))[:4]
        assert [(h[1], h[3]) for h in got[qi]] == [(rows[i][0], rows[i][2]) for i in order]
        assert [h[0] for h in got[qi]] == pytest.approx([float(sims[qi, i]) for i in order], abs=1e-6)
    assert got[0][0][3] == "n5" and got[0][1][3] == "n7"
    assert one[0] == got[0] and mem == got
    with semantic.blas_threads(1):  # the limit the search applies
        from threadpoolctl import threadpool_info
        assert all(i["num_threads"] == 1 for i in threadpool_info() if i["user_api"] == "blas")


def test_read_rows_of_a_mapped_file_in_few_reads(tmp_path, monkeypatch):
    """``semantic_bound.read_rows`` returns exactly ``mat[rows]`` for any sorted row set
    (runs, gaps, long stretches), reading rows up to ``READ_GAP`` apart in one call, no
    call longer than ``SPAN_ROWS`` rows."""
    import numpy as np

    from kgcult.link.semantic import bound as semantic_bound

    rng = np.random.default_rng(5)
    v = rng.normal(size=(3000, 8)).astype("float32")
    np.save(tmp_path / "v.npy", v)
    mat = np.load(tmp_path / "v.npy", mmap_mode="r")
    sizes = []
    real = semantic_bound._read_into
    monkeypatch.setattr(semantic_bound, "_read_into", lambda f, view, pos: sizes.append(len(view)) or real(f, view, pos))
    row_bytes = 8 * 4
    for rows in (np.arange(0, 3000, 3), np.array([0, 1, 2, 9, 10, 19, 28, 1000, 2999]),
                 np.arange(500, 900), np.unique(rng.integers(0, 3000, 700)), np.array([7])):
        sizes.clear()
        assert np.array_equal(semantic_bound.read_rows(mat, rows), v[rows])
        assert all(s <= semantic_bound.SPAN_ROWS * row_bytes for s in sizes)
    sizes.clear()
    semantic_bound.read_rows(mat, np.arange(0, 3000, 3))  # every third row: runs of 43 rows
    assert len(sizes) == -(-1000 // (semantic_bound.SPAN_ROWS // 3 + 1))
    sizes.clear()
    semantic_bound.read_rows(mat, np.array([0, 1, 2, 9, 10, 18, 27, 1000, 2999]))
    assert len(sizes) == 4  # 0..18 (gaps of at most READ_GAP = 8 rows), 27, 1000, 2999


def test_semantic_search_above_a_floor_reads_only_what_can_reach_it(tmp_path, monkeypatch):
    """With reduced vectors (``semantic_bound``) a search with a floor returns exactly the
    exhaustive search's hits at or above the floor (same names, order and cosines), reads
    the full vectors of only a few names, and caches the reduced form beside the vectors
    (read back, not fitted again; refitted when the vectors change)."""
    import numpy as np

    from kgcult.link.semantic import search as semantic
    from kgcult.link.semantic import bound as semantic_bound

    rng = np.random.default_rng(5)
    dim, n = 192, 3000
    scales = np.exp(-np.arange(dim) / 60.0)  # most of the energy on some axes, like USE
    base = rng.normal(size=(150, dim)) * scales
    v = (base[rng.integers(0, 150, n)] + 0.3 * rng.normal(size=(n, dim)) * scales).astype("float32")
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    np.save(tmp_path / "v.npy", v)
    mat = np.load(tmp_path / "v.npy", mmap_mode="r")
    rows = [(i // 3, "en", f"n{i}") for i in range(n)]
    q = (v[rng.integers(0, n, 40)] + 0.1 * rng.normal(size=(40, dim)).astype("float32") * scales)
    q = (q / np.linalg.norm(q, axis=1, keepdims=True)).astype("float32")
    floor = 0.8

    red = semantic_bound.reduced(mat, n, tmp_path / "v.npy")
    axes_file, rows_file = semantic_bound.paths(tmp_path / "v.npy")
    assert axes_file.exists() and rows_file.exists()
    read = []
    real = semantic_bound.read_rows
    monkeypatch.setattr(semantic_bound, "read_rows", lambda m, r: read.append(len(r)) or real(m, r))
    got = semantic.SemanticPool([(rows, mat, red)]).search(q, k=5, floor=floor)
    monkeypatch.setattr(semantic_bound, "read_rows", real)
    plain = semantic.SemanticPool([(rows, np.array(v))]).search(q, k=5)
    sims = q.astype(np.float64) @ v.T.astype(np.float64)
    assert sum(len(h) for h in got) >= 150  # hits above the floor do exist
    for qi in range(len(q)):
        want = [h for h in plain[qi] if h[0] >= floor]
        assert [h[1:] for h in got[qi]] == [h[1:] for h in want]
        assert [h[0] for h in got[qi]] == pytest.approx([h[0] for h in want], abs=1e-6)
        above = sorted((i for i in range(n) if sims[qi, i] >= floor), key=lambda i: (-sims[qi, i], i))
        assert [h[3] for h in got[qi]] == [rows[i][2] for i in above[:5]]
    assert 0 < sum(read) < n // 4  # the bound let most names go unread
    # read back from the cache, not fitted again; a changed part is reduced anew
    monkeypatch.setattr(semantic_bound, "fit_axes", lambda *a: pytest.fail("refitted"))
    again = semantic_bound.reduced(mat, n, tmp_path / "v.npy")
    # a search reads the cached axes without np.load: its header parsing compiles with ast,
    # and two threads compiling at once fail on CPython 3.11 (the stage searches in two)
    monkeypatch.setattr(np, "load", lambda *a, **k: pytest.fail("np.load while searching"))
    assert semantic.SemanticPool([(rows, mat, again)]).search(q, k=5, floor=floor) == got
    # without reduced vectors, the floor filters the exhaustive search
    assert semantic.SemanticPool([(rows, mat)]).search(q, k=5, floor=floor) == [
        [h for h in hits if h[0] >= floor] for hits in plain]
    monkeypatch.undo()
    np.save(tmp_path / "v.npy", v[:2000])
    short = np.load(tmp_path / "v.npy", mmap_mode="r")
    assert semantic_bound.reduced(short, 2000, tmp_path / "v.npy").rows.shape == (2000, semantic_bound.DIM + 1)


def test_build_without_persisting_is_removed(seed):
    ix = lx.build(seed, "h")
    d = ix.directory
    assert d.is_dir() and ix.exact["en"].get("paella") is not None
    ix.close()
    del ix
    import gc

    gc.collect()
    assert not d.exists()


@pytest.mark.slow
def test_dev_sample_candidates_match(standin_path, tmp_path):
    if not DEV.exists():
        pytest.skip(f"{DEV} not found")
    s = Store(tmp_path / "store")
    s.load([standin_path], graph="standin")
    hierarchy.ensure_closure(s)
    try:
        ix = lx.load_or_build(s)
        rows = [json.loads(line) for line in DEV.open()]
        rng = random.Random(3)
        sample = rng.sample(rows, 300)
        mentions = [(r["mention"].strip(), (r.get("lang") or "en").lower(), r.get("topic")) for r in sample]
        mentions += [(typo(m, rng), lang, t) for m, lang, t in mentions[:100]]
        langs = {lg for _m, lang, _t in mentions for lg in (lang, normalize.base_lang(lang), "en")}
        fuzzy, parts = {}, {}
        for topic in {t for _m, _l, t in mentions} | {None}:
            members = ([e for e, b in enumerate(ix.topic_bits) if b] if topic is None else ix.members(topic))
            for lg in langs:
                names = ix.names_of(members, {lg})
                fuzzy[(topic, lg)] = FuzzyPool(names)
                parts[(topic, lg)] = TokenPool.entries_of(names)
        assert compare(ix, s, mentions, fuzzy, parts) > 50
    finally:
        s.close()


def test_build_from_a_read_only_store_reads_through_short_lived_handles(seed, tmp_path, monkeypatch):
    """A read-only store is read step by step through handles of its own, each closed after
    its step; the index is the same as one built through a read-write store's handle."""
    import sqlite3

    import numpy as np

    opened = []
    real = ox.Store.read_only

    def spy(path):
        opened.append(path)
        return real(path)

    monkeypatch.setattr(build.ox.Store, "read_only", spy)
    joined = []  # a read-only store's aliases are read by a second process meanwhile
    real_join = build._AliasWorker.join
    monkeypatch.setattr(build._AliasWorker, "join", lambda self, con: joined.append(real_join(self, con)) or joined[-1])
    rw_dir, ro_dir = tmp_path / "rw", tmp_path / "ro"
    build.build_into(seed, rw_dir, "h")
    assert not opened  # a read-write store: read through its own handle
    ro = Store(seed.location, read_only=True)
    try:
        build.build_into(ro, ro_dir, "h")
    finally:
        ro.close()
    assert len(opened) >= 5  # one per step (the aliases in the second process)
    assert len(joined) == 1 and joined[0] > 0 and not list(ro_dir.glob("*.scratch*"))

    def dump(d):
        con = sqlite3.connect(d / layout.DB_NAME)
        try:
            return [line for line in con.iterdump() if "build_seconds" not in line]
        finally:
            con.close()

    assert dump(rw_dir) == dump(ro_dir)
    for name in ("qnum", "topic_bits", "sitelinks", "is_class", "kinds"):
        assert np.array_equal(np.load(rw_dir / f"{name}.npy"), np.load(ro_dir / f"{name}.npy")), name


def test_top_columns_is_a_sort_of_every_column():
    """The k best columns of each row, best first, ties by column: wide blocks (lower bound
    from column groups, a tail past the last whole group) and narrow ones."""
    import numpy as np

    from kgcult.link.semantic import search as semantic

    rng = np.random.default_rng(5)
    for m, r, k in [(7, 4096, 10), (3, 700, 10), (5, 100, 10), (4, 650, 10), (2, 10, 10), (6, 2048, 3)]:
        s = rng.normal(size=(m, r)).astype("float32").round(1)  # many ties
        vals, cols = semantic.top_columns(s, k)
        for i in range(m):
            want = sorted(range(r), key=lambda j: (-s[i, j], j))[:k]
            assert cols[i].tolist() == want and vals[i].tolist() == s[i, want].tolist(), (m, r, i)


def test_index_arrays_are_read_as_numpy_wrote_them(seed, tmp_path):
    """The index's arrays are mapped without numpy (``layout.load_array``): the same values
    as ``np.load``, a two-dimensional one by rows; a file that is no ``.npy`` array of
    the kinds the index holds is refused with its path."""
    import numpy as np

    from kgcult.errors import KgcultError

    ix = lx.load_or_build(seed)
    d = lx.index_path(seed, ix.content_hash, ix.topics)
    for name in ("qnum", "topic_bits", "sitelinks", "is_class", "kinds"):
        want = np.load(d / f"{name}.npy")
        got = layout.load_array(d, name)
        if want.ndim == 2:
            assert len(got) == want.shape[0] and [r.tolist() for r in got] == want.tolist(), name
        else:
            assert got.tolist() == want.tolist() and (np.asarray(got) == want).all(), name
    assert ix.eid_of.get(ix.qids[3]) == 3 and ix.eid_of.get("Q999999999") is None
    assert list(ix.is_class) == np.flatnonzero(np.load(d / "is_class.npy")).tolist()
    assert len(ix.is_class) == int(np.load(d / "is_class.npy").sum())

    layout.save_array(tmp_path, "floats", np.zeros(4, dtype=np.float64))
    with pytest.raises(KgcultError, match="floats.npy: dtype <f8 of 1 dimensions is not one a link index holds"):
        layout.load_array(tmp_path, "floats")
    layout.save_array(tmp_path, "fortran", np.zeros((2, 3), dtype=np.int64))
    np.save(tmp_path / "fortran.npy", np.asfortranarray(np.arange(6, dtype=np.int64).reshape(2, 3)))
    ident = json.loads((tmp_path / "fortran.npy.json").read_text())
    ident["sha256"] = layout._sha256(tmp_path / "fortran.npy")  # the identity of the file as it now is
    (tmp_path / "fortran.npy.json").write_text(json.dumps(ident))
    with pytest.raises(KgcultError, match="fortran.npy: an .npy header this reader does not take"):
        layout.load_array(tmp_path, "fortran")
    for cut in (b"\x93NUM", b"\x93NUMPY\x01\x00"):  # a file cut short, its identity recorded again
        (tmp_path / "short.npy").write_bytes(cut)
        (tmp_path / "short.npy.json").write_text(json.dumps({"name": "short", "dtype": "<i8", "shape": [0],
                                                             "sha256": layout._sha256(tmp_path / "short.npy")}))
        with pytest.raises(KgcultError, match="short.npy: not a .npy array"):
            layout.load_array(tmp_path, "short")
    layout.save_array(tmp_path, "cut", np.arange(10, dtype=np.int64))
    data = (tmp_path / "cut.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(b"NOTNUMPY" + data[8:])  # the identity is checked first
    with pytest.raises(KgcultError, match="not the 'cut' array"):
        layout.load_array(tmp_path, "cut")
