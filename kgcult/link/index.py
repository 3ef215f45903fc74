"""The label index: every rdfs:label and skos:altLabel of the store, per language, under
exact and normalized keys, with the per-entity facts the linker needs on its hot path
(topic membership, labels, description, country, sitelinks, base hierarchy edges) and the
fuzzy and token pools (``pools.py``).

Built from the store by reading quads directly (no SPARQL, so no user text anywhere near
a query), in bounded memory: names stream out of the store into an SQLite database whose
tables are then sorted and indexed by SQLite (spilling to temporary files), and the
per-entity facts are numpy arrays of one value per entity. The result is a directory
beside the store (``<store>.link-index/labels-<hash>-<topics>-v<FORMAT>/``, see
``storage.py``) named by the store's content hash
(``kgcult.store.snapshot.store_content_hash``): a changed store gets a new index. A
process opens it read-only and memory-mapped; lookups read only the pages they touch.
For read-only stores the content hash cannot be cached in the store; a fingerprint
(triple count + provenance records) remembers it in the index directory instead.
Progress goes to this module's logger.

Entity ids (``eid``) are positions in the sorted array of QID numbers.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
import weakref
from pathlib import Path

import numpy as np
import pyoxigraph as ox
from pyoxigraph import NamedNode

from kgcult import ids, vocab
from kgcult.errors import KgcultError
from kgcult.files import atomic_write
from kgcult.link import normalize, pools, storage
from kgcult.link.topics import Kind, Topic, load_topics
from kgcult.store.hierarchy import ensure_closure
from kgcult.store.snapshot import store_content_hash

log = logging.getLogger(__name__)

FORMAT = 7
LANG_BITS = 10
RDFS_LABEL = NamedNode(vocab.RDFS + "label")
SKOS_ALT = NamedNode(vocab.SKOS + "altLabel")
SCHEMA_DESC = NamedNode(vocab.SCHEMA + "description")
SCHEMA_ABOUT = NamedNode(vocab.SCHEMA + "about")
SITELINKS = NamedNode(vocab.WIKIBASE + "sitelinks")
BROADER = NamedNode(vocab.KGC + "broader")
BASE_PROPS = ("P31", "P279", "P361")
COUNTRY_PROPS = ("P495", "P17", "P27")  # origin, country, nationality (in this order)
TOPIC_GRAPH = vocab.CLOSURE_GRAPH + "topic"
BATCH = 10_000       # quads or rows per batch while building
CACHE_MAX = 200_000  # entries of each lookup cache of an open index
KEY_CACHE_MAX = 16_384  # normalized keys remembered while building (names repeat across languages)


def codes(v) -> tuple:
    if v is None:
        return ()
    if isinstance(v, int):
        return (v,)
    return v


def _code_value(cs: list):
    """Codes as the in-memory index held them: None, one int, or a tuple."""
    if not cs:
        return None
    return cs[0] if len(cs) == 1 else tuple(cs)


# -- read-only views over the stored tables (the attributes the linker reads) ---------------

class _Cached:
    """A bounded memo of one lookup function."""

    def __init__(self, fn):
        self.fn = fn
        self.memo: dict = {}

    def __call__(self, *key):
        v = self.memo.get(key, self)
        if v is self:
            if len(self.memo) > CACHE_MAX:
                self.memo.clear()
            v = self.memo[key] = self.fn(*key)
        return v


class Column:
    """One int per entity, memory-mapped; indexing gives Python ints."""

    def __init__(self, arr: np.ndarray):
        self.arr = arr

    def __len__(self) -> int:
        return len(self.arr)

    def __getitem__(self, i):
        return int(self.arr[i])

    def __iter__(self):
        for i in range(0, len(self.arr), 65536):
            yield from self.arr[i:i + 65536].tolist()


class QidList(Column):
    """eid -> QID string."""

    def __getitem__(self, i) -> str:
        return f"Q{self.arr[i]}"

    def __iter__(self):
        for n in super().__iter__():
            yield f"Q{n}"


class EidMap:
    """QID string -> eid (a binary search in the sorted QID numbers)."""

    def __init__(self, qnum: np.ndarray):
        self.qnum = qnum

    def get(self, qid, default=None):
        n = _qnum_of(qid) if isinstance(qid, str) else None
        if n is None or not len(self.qnum):
            return default
        i = int(np.searchsorted(self.qnum, n))
        return i if i < len(self.qnum) and self.qnum[i] == n else default

    def __getitem__(self, qid) -> int:
        e = self.get(qid)
        if e is None:
            raise KeyError(qid)
        return e

    def __contains__(self, qid) -> bool:
        return self.get(qid) is not None

    def __len__(self) -> int:
        return len(self.qnum)


class EntitySet:
    """``eid in s`` over a boolean column."""

    def __init__(self, flags: np.ndarray):
        self.flags = flags

    def __contains__(self, eid) -> bool:
        return isinstance(eid, (int, np.integer)) and 0 <= eid < len(self.flags) and bool(self.flags[eid])

    def __len__(self) -> int:
        return int(np.count_nonzero(self.flags))

    def __iter__(self):
        return iter(np.flatnonzero(self.flags).tolist())


class _KeyTable:
    """text key -> code(s), as the in-memory dicts answered ``get``."""

    def __init__(self, lookup, size: int):
        self._lookup = lookup
        self._size = size

    def get(self, key, default=None):
        v = self._lookup(key) if isinstance(key, str) else None
        return default if v is None else v

    def __getitem__(self, key):
        v = self.get(key)
        if v is None:
            raise KeyError(key)
        return v

    def __contains__(self, key) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        return self._size


class _PerLang:
    """lang -> a per-language view (``exact``, ``norm``, ``labels``, ``descriptions``)."""

    def __init__(self, views: dict):
        self._views = views

    def get(self, lang, default=None):
        return self._views.get(lang, default)

    def __getitem__(self, lang):
        return self._views[lang]

    def __contains__(self, lang) -> bool:
        return lang in self._views

    def __iter__(self):
        return iter(self._views)

    def __len__(self) -> int:
        return len(self._views)

    def keys(self):
        return self._views.keys()

    def values(self):
        return self._views.values()

    def items(self):
        return self._views.items()


class _EntityText:
    """eid -> text of one language (a label or a description)."""

    def __init__(self, lookup, lang):
        self._lookup = lookup
        self._lang = lang

    def get(self, eid, default=None):
        v = self._lookup(int(eid), self._lang)
        return default if v is None else v

    def __getitem__(self, eid):
        v = self.get(eid)
        if v is None:
            raise KeyError(eid)
        return v

    def __contains__(self, eid) -> bool:
        return self.get(eid) is not None


class _Lookup:
    """key -> value through a function (``country``, ``edges``), ``get``-compatible."""

    def __init__(self, fn):
        self._fn = fn

    def get(self, key, default=None):
        v = self._fn(key)
        return default if v is None else v

    def __getitem__(self, key):
        v = self._fn(key)
        if v is None:
            raise KeyError(key)
        return v

    def __contains__(self, key) -> bool:
        return self._fn(key) is not None


class LabelIndex:
    """An index directory opened read-only. Attributes keep the shape the in-memory index
    had (``exact[lang].get(name)`` -> code(s), ``qids[eid]``, ``topic_bits[eid]``, ...);
    codes: exact/norm ``eid<<1 | alias``, anyl ``(eid<<LANG_BITS | lang)<<1 | alias``."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        con = self.db = storage.connect(self.directory)
        meta = json.loads(con.execute("SELECT value FROM meta WHERE key = 'meta'").fetchone()[0])
        self.format = meta["format"]
        self.content_hash = meta["content_hash"]
        self.build_seconds = meta["build_seconds"]
        self.topics = [Topic(name=t["name"], roots=t["roots"], via=t["via"],
                             kinds=[Kind(**k) for k in t["kinds"]]) for t in meta["topics"]]
        self.langs = meta["langs"]
        self.lang_id = {lg: i for i, lg in enumerate(self.langs)}
        d = self.directory
        self.qnum = storage.load_array(d, "qnum")
        self.qids = QidList(self.qnum)
        self.qnums = Column(self.qnum)
        self.eid_of = EidMap(self.qnum)
        self.topic_bits = Column(storage.load_array(d, "topic_bits"))
        self.sitelinks = Column(storage.load_array(d, "sitelinks"))
        self.nlangs = Column(storage.load_array(d, "nlangs"))
        self.is_class = EntitySet(storage.load_array(d, "is_class"))
        kinds = storage.load_array(d, "kinds")
        self.kind_members = {(t, o): EntitySet(kinds[i]) for i, (t, o) in enumerate(map(tuple, meta["kinds"]))}

        exact = _Cached(self._exact)
        norm = _Cached(self._norm)
        self.exact = _PerLang({lg: _KeyTable(lambda k, i=i: exact(i, k), meta["names_per_lang"][lg])
                               for lg, i in self.lang_id.items() if meta["names_per_lang"].get(lg)})
        self.norm = _PerLang({lg: _KeyTable(lambda k, i=i: norm(i, k), meta["keys_per_lang"][lg])
                              for lg, i in self.lang_id.items() if meta["keys_per_lang"].get(lg)})
        self.anyl = _KeyTable(_Cached(self._anyl), meta["any_keys"])
        self._label = _Cached(self._label_of)
        self._desc = _Cached(self._description_of)
        self.labels = _PerLang({lg: _EntityText(self._label, lg) for lg in self.lang_id})
        self.descriptions = _PerLang({lg: _EntityText(self._desc, lg) for lg in meta["description_langs"]})
        self.country = _Lookup(_Cached(self._country_of))
        self.edges = _Lookup(_Cached(self._edges_of))

    # -- lookups ------------------------------------------------------------------------

    def topic_bit(self, name: str) -> int:
        for i, t in enumerate(self.topics):
            if t.name == name:
                return 1 << i
        raise KgcultError(f"unknown topic {name!r}: one of {', '.join(t.name for t in self.topics)}")

    def topic(self, name: str) -> Topic:
        for t in self.topics:
            if t.name == name:
                return t
        raise KgcultError(f"unknown topic {name!r}: one of {', '.join(t.name for t in self.topics)}")

    def label(self, eid: int, lang: str) -> str | None:
        v = self._label(eid, lang)
        if v is not None:
            return v
        b = normalize.base_lang(lang)
        if b != lang:
            return self._label(eid, b)
        return None

    def description(self, eid: int, lang: str) -> str | None:
        for lg in (lang, "en"):
            v = self._desc(eid, lg)
            if v is not None:
                return v
        return None

    def names_of(self, eids, langs) -> list[tuple[int, str, str]]:
        """(eid, lang, name) for every label/alias of the given entities in ``langs``
        (all languages if None), sorted."""
        want = sorted({int(e) for e in eids})
        lids = None if langs is None else {self.lang_id[lg] for lg in langs if lg in self.lang_id}
        out = set()
        for ch in storage.chunks(want):
            q = f"SELECT eid, lang, text FROM names WHERE eid IN ({','.join('?' * len(ch))})"
            for e, li, text in self.db.execute(q, ch):
                if lids is None or li in lids:
                    out.add((e, self.langs[li], text))
        return sorted(out)

    def members(self, topic: str | None) -> list[int]:
        if topic is None:
            return list(range(len(self.qnum)))
        bit = self.topic_bit(topic)
        return np.flatnonzero(self.topic_bits.arr & bit).tolist()

    def part_names(self, topic: str | None, lang: str) -> list[tuple[int, str, str]]:
        """(eid, lang, name) of the names in ``lang`` of the topic's entities (None: of
        the entities of any topic), by entity then name: what the pools hold."""
        return pools.part_names(self.db, topic, lang)

    def fuzzy_pool(self, topic: str | None, lang: str) -> pools.StoredFuzzyPool:
        return pools.StoredFuzzyPool(self.db, topic, lang)

    def token_pool(self, topic: str, lang: str) -> pools.StoredTokenPool:
        return pools.StoredTokenPool(self.db, topic, lang)

    # -- the queries behind the views --------------------------------------------------

    def _exact(self, lid: int, text: str):
        return _code_value([(e << 1) | a for e, a in self.db.execute(
            "SELECT eid, alias FROM names WHERE lang = ? AND text = ?", (lid, text))])

    def _norm(self, lid: int, key: str):
        return _code_value([c for (c,) in self.db.execute(
            "SELECT code FROM norm WHERE lang = ? AND key = ?", (lid, key))])

    def _anyl(self, key: str):
        return _code_value([c for (c,) in self.db.execute("SELECT code FROM anyl WHERE key = ?", (key,))])

    def _label_of(self, eid: int, lang: str):
        lid = self.lang_id.get(lang)
        if lid is None:
            return None
        r = self.db.execute("SELECT text FROM label WHERE eid = ? AND lang = ?", (int(eid), lid)).fetchone()
        return r[0] if r else None

    def _description_of(self, eid: int, lang: str):
        r = self.db.execute("SELECT text FROM descr WHERE eid = ? AND lang = ?", (int(eid), lang)).fetchone()
        return r[0] if r else None

    def _country_of(self, eid):
        if not isinstance(eid, (int, np.integer)):
            return None
        os_ = [o for (o,) in self.db.execute("SELECT o FROM country WHERE eid = ?", (int(eid),))]
        return tuple(sorted(os_, key=ids.sort_key)) if os_ else None

    def _edges_of(self, qid):
        n = _qnum_of(qid) if isinstance(qid, str) else None
        if n is None:
            return None
        rows = self.db.execute("SELECT pid, o FROM edges WHERE s = ? ORDER BY pid, o", (n,)).fetchall()
        return tuple(rows) if rows else None

    def inbound(self, pid: str) -> dict[str, int]:
        """{QID: how many entities have a ``pid`` edge pointing at it} (one scan, cached)."""
        cache = self.__dict__.setdefault("_inbound", {})
        if pid not in cache:
            cache[pid] = dict(self.db.execute("SELECT o, COUNT(*) FROM edges WHERE pid = ? GROUP BY o", (pid,)))
        return cache[pid]

    def close(self) -> None:
        self.db.close()


# -- building ------------------------------------------------------------------------

_WD_LEN = len(vocab.WD)


def _qnum_of(qid: str | None) -> int | None:
    """``Q42`` -> 42; anything that is not an item id -> None."""
    if qid and qid[0] == "Q" and qid[1:].isdigit() and qid[1] != "0" and qid.isascii():
        return int(qid[1:])
    return None


def _local(term) -> str | None:
    """The local name of a ``wd:`` IRI term, unvalidated."""
    if type(term) is ox.NamedNode:
        v = term.value
        if v.startswith(vocab.WD):
            return v[_WD_LEN:]
    return None


def _data_quads(store, pred):
    for q in store.ox.quads_for_pattern(None, pred, None, None):
        g = q.graph_name
        if isinstance(g, NamedNode) and (vocab.is_derived_graph(g.value) or g.value == vocab.META_GRAPH):
            continue
        yield q


def _batched(it, n: int = BATCH):
    buf = []
    for x in it:
        buf.append(x)
        if len(buf) >= n:
            yield buf
            buf = []
    if buf:
        yield buf


SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE scratch.raw(qnum INTEGER, lang TEXT, alias INTEGER, text TEXT, f TEXT, s TEXT);
CREATE TABLE ent(qnum INTEGER PRIMARY KEY, eid INTEGER NOT NULL);
CREATE TABLE lang(name TEXT PRIMARY KEY, id INTEGER NOT NULL);
CREATE TABLE names(lang INTEGER, text TEXT, eid INTEGER, alias INTEGER,
                   PRIMARY KEY (lang, text, eid, alias)) WITHOUT ROWID;
CREATE TABLE norm(lang INTEGER, key TEXT, code INTEGER, PRIMARY KEY (lang, key, code)) WITHOUT ROWID;
CREATE TABLE anyl(key TEXT, code INTEGER, PRIMARY KEY (key, code)) WITHOUT ROWID;
CREATE TABLE label(eid INTEGER, lang INTEGER, text TEXT, PRIMARY KEY (eid, lang)) WITHOUT ROWID;
CREATE TABLE scratch.descr_raw(eid INTEGER, lang TEXT, text TEXT);
CREATE TABLE descr(eid INTEGER, lang TEXT, text TEXT, PRIMARY KEY (eid, lang)) WITHOUT ROWID;
CREATE TABLE scratch.edges_raw(s INTEGER, pid TEXT, o TEXT);
CREATE TABLE edges(s INTEGER, pid TEXT, o TEXT, PRIMARY KEY (s, pid, o)) WITHOUT ROWID;
CREATE TABLE scratch.country_raw(eid INTEGER, rank INTEGER, o TEXT);
CREATE TABLE country(eid INTEGER, o TEXT, PRIMARY KEY (eid, o)) WITHOUT ROWID;
CREATE TABLE scratch.ebits(eid INTEGER PRIMARY KEY, bits INTEGER NOT NULL);
"""

_JOIN = "FROM raw r JOIN ent e ON e.qnum = r.qnum JOIN lang l ON l.name = r.lang"


class _Builder:
    def __init__(self, store, directory: Path, topics: list[Topic]):
        self.store = store
        self.dir = directory
        self.topics = topics
        self.con = storage.connect(directory, write=True)
        storage.script(self.con, SCHEMA)

    def eids(self, qnums: list) -> np.ndarray:
        """eid per QID number (-1 where the index has no such entity)."""
        a = np.array([-1 if n is None else n for n in qnums], dtype=np.int64)
        qn = self.qnum
        if not len(qn):
            return np.full(len(a), -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(qn, a), len(qn) - 1)
        return np.where(qn[pos] == a, pos, -1)

    def names(self) -> int:
        con = self.con
        key_cache: dict = {}
        n_names = 0
        for alias, pred in ((0, RDFS_LABEL), (1, SKOS_ALT)):
            rows = []
            for q in _data_quads(self.store, pred):
                lit = q.object
                if not isinstance(lit, ox.Literal):
                    continue
                n = _qnum_of(_local(q.subject))
                lang = lit.language
                if n is None or not lang:
                    continue
                lang = lang.lower()
                text = lit.value
                ck = (text, normalize.base_lang(lang) in normalize.STEM_LANGS and normalize.base_lang(lang))
                k = key_cache.get(ck)
                if k is None:
                    if len(key_cache) > KEY_CACHE_MAX:
                        key_cache.clear()
                    _, f, s = normalize.keys(text, lang)
                    k = key_cache[ck] = (f, s)
                rows.append((n, lang, alias, text, k[0], k[1]))
                if len(rows) >= BATCH:
                    n_names += len(rows)
                    con.executemany("INSERT INTO raw VALUES (?,?,?,?,?,?)", rows)
                    rows = []
            n_names += len(rows)
            con.executemany("INSERT INTO raw VALUES (?,?,?,?,?,?)", rows)
        del key_cache
        con.execute("INSERT INTO ent SELECT qnum, ROW_NUMBER() OVER (ORDER BY qnum) - 1 "
                    "FROM (SELECT DISTINCT qnum FROM raw)")
        self.langs = [lg for (lg,) in con.execute("SELECT DISTINCT lang FROM raw ORDER BY lang")]
        if len(self.langs) > (1 << LANG_BITS):
            raise KgcultError("more than 1024 label languages")
        con.executemany("INSERT INTO lang VALUES (?,?)", [(lg, i) for i, lg in enumerate(self.langs)])
        self.qnum = np.fromiter((n for (n,) in con.execute("SELECT qnum FROM ent ORDER BY qnum")), dtype=np.int64)
        storage.script(con, f"""
            INSERT OR IGNORE INTO names SELECT l.id, r.text, e.eid, r.alias {_JOIN} ORDER BY 1, 2, 3, 4;
            INSERT OR IGNORE INTO norm SELECT l.id, r.s, (e.eid << 1) | r.alias {_JOIN} ORDER BY 1, 2, 3;
            INSERT OR IGNORE INTO anyl SELECT key, code FROM (
                SELECT r.f AS key, (((e.eid << {LANG_BITS}) | l.id) << 1) | r.alias AS code {_JOIN}
                UNION ALL
                SELECT r.s, (((e.eid << {LANG_BITS}) | l.id) << 1) | r.alias {_JOIN} WHERE r.s != r.f)
                ORDER BY 1, 2;
            INSERT INTO label SELECT e.eid, l.id, MIN(r.text) {_JOIN} WHERE r.alias = 0
                GROUP BY e.eid, l.id ORDER BY 1, 2;
            DROP TABLE raw;
            CREATE INDEX names_by_eid ON names(eid);
        """)
        n = len(self.qnum)
        nl = np.zeros(n, dtype=np.int32)
        for e, c in con.execute("SELECT eid, COUNT(DISTINCT lang) FROM names GROUP BY eid"):
            nl[e] = c
        storage.save_array(self.dir, "nlangs", nl)
        storage.save_array(self.dir, "qnum", self.qnum)
        return n_names

    def sitelinks(self) -> None:
        sl = np.zeros(len(self.qnum), dtype=np.int64)
        # wikibase:sitelinks where present, else the number of articles about the entity
        for batch in _batched(_data_quads(self.store, SCHEMA_ABOUT)):
            e = self.eids([_qnum_of(_local(q.object)) for q in batch])
            np.add.at(sl, e[e >= 0], 1)
        for batch in _batched(_data_quads(self.store, SITELINKS)):
            e = self.eids([_qnum_of(_local(q.subject)) for q in batch])
            for ei, q in zip(e.tolist(), batch):
                if ei >= 0:
                    try:
                        sl[ei] = int(q.object.value)
                    except ValueError:
                        pass
        storage.save_array(self.dir, "sitelinks", sl)

    def descriptions(self) -> list[str]:
        con = self.con
        for batch in _batched(_data_quads(self.store, SCHEMA_DESC)):
            e = self.eids([_qnum_of(_local(q.subject)) for q in batch])
            rows = [(ei, q.object.language.lower(), q.object.value) for ei, q in zip(e.tolist(), batch)
                    if ei >= 0 and isinstance(q.object, ox.Literal) and q.object.language]
            con.executemany("INSERT INTO descr_raw VALUES (?,?,?)", rows)
        storage.script(con, """
            INSERT INTO descr SELECT eid, lang, MIN(text) FROM descr_raw GROUP BY eid, lang ORDER BY 1, 2;
            DROP TABLE descr_raw;
        """)
        return [lg for (lg,) in con.execute("SELECT DISTINCT lang FROM descr ORDER BY lang")]

    def edges(self) -> None:
        """Base hierarchy edges (evidence paths, the class test) and country facts."""
        con = self.con
        is_class = np.zeros(len(self.qnum), dtype=bool)
        via = sorted({p for t in self.topics for p in t.via})
        for pid in BASE_PROPS + tuple(p for p in via if p not in BASE_PROPS):
            for batch in _batched(_data_quads(self.store, vocab.wdt(pid))):
                rows = []
                for q in batch:
                    s, o = _qnum_of(_local(q.subject)), _local(q.object)
                    if s is not None and _qnum_of(o) is not None:
                        rows.append((s, pid, o))
                con.executemany("INSERT INTO edges_raw VALUES (?,?,?)", rows)
                if pid in ("P31", "P279"):
                    e = self.eids([_qnum_of(o) for _s, _p, o in rows])
                    is_class[e[e >= 0]] = True
        storage.script(con, """
            INSERT OR IGNORE INTO edges SELECT s, pid, o FROM edges_raw ORDER BY 1, 2, 3;
            DROP TABLE edges_raw;
        """)
        storage.save_array(self.dir, "is_class", is_class)
        for rank, pid in enumerate(COUNTRY_PROPS):
            for batch in _batched(_data_quads(self.store, vocab.wdt(pid))):
                e = self.eids([_qnum_of(_local(q.subject)) for q in batch])
                rows = [(ei, rank, o) for ei, q in zip(e.tolist(), batch)
                        if ei >= 0 and _qnum_of(o := _local(q.object)) is not None]
                con.executemany("INSERT INTO country_raw VALUES (?,?,?)", rows)
        storage.script(con, """
            INSERT OR IGNORE INTO country SELECT c.eid, c.o FROM country_raw c
                JOIN (SELECT eid, MIN(rank) AS r FROM country_raw GROUP BY eid) m
                ON m.eid = c.eid AND m.r = c.rank ORDER BY 1, 2;
            DROP TABLE country_raw;
        """)

    def topic_membership(self) -> list:
        """Topic bits from the closure (kgc:broader = (P31|P279|P361)+), and the kinds."""
        n = len(self.qnum)
        bits = np.zeros(n, dtype=np.int64)
        under_cache: dict = {}

        def under(root: str) -> np.ndarray:
            if root not in under_cache:
                parts = [self.eids([_qnum_of(root)])]
                quads = self.store.ox.quads_for_pattern(None, BROADER, ids.node(root), NamedNode(TOPIC_GRAPH))
                for batch in _batched(quads):
                    parts.append(self.eids([_qnum_of(_local(q.subject)) for q in batch]))
                e = np.concatenate(parts)
                under_cache[root] = np.unique(e[e >= 0])
            return under_cache[root]

        kind_keys = []
        kinds = []
        for i, t in enumerate(self.topics):
            bit = 1 << i
            for r in t.roots:
                bits[under(r)] |= bit
            for pid in t.via:
                for batch in _batched(_data_quads(self.store, vocab.wdt(pid))):
                    e = self.eids([_qnum_of(_local(q.subject)) for q in batch])
                    bits[e[e >= 0]] |= bit
            for k in t.kinds:
                flags = np.zeros(n, dtype=bool)
                flags[under(k.root)] = True
                kind_keys.append([t.name, k.order])
                kinds.append(flags)
        storage.save_array(self.dir, "topic_bits", bits)
        storage.save_array(self.dir, "kinds", np.array(kinds, dtype=bool).reshape(len(kinds), n))
        nz = np.flatnonzero(bits)
        for i in range(0, len(nz), BATCH):
            sel = nz[i:i + BATCH]
            self.con.executemany("INSERT INTO ebits VALUES (?,?)", zip(sel.tolist(), bits[sel].tolist()))
        return kind_keys

    def finish(self, meta: dict) -> None:
        con = self.con
        meta["names_per_lang"] = {self.langs[i]: c for i, c in con.execute(
            "SELECT lang, COUNT(DISTINCT text) FROM names GROUP BY lang")}
        meta["keys_per_lang"] = {self.langs[i]: c for i, c in con.execute(
            "SELECT lang, COUNT(DISTINCT key) FROM norm GROUP BY lang")}
        meta["any_keys"] = con.execute("SELECT COUNT(DISTINCT key) FROM anyl").fetchone()[0]
        con.execute("INSERT INTO meta VALUES ('meta', ?)", (json.dumps(meta, sort_keys=True),))
        storage.finish_build(con, self.dir)


def _topic_meta(t: Topic) -> dict:
    return {"name": t.name, "roots": list(t.roots), "via": list(t.via),
            "kinds": [{"order": k.order, "root": k.root, "item_name": k.item_name,
                       "category_name": k.category_name, "score": k.score} for k in t.kinds]}


def build_into(store, directory: str | Path, content_hash: str, topics: list[Topic] | None = None) -> None:
    """Read the store once and write the index into ``directory`` (created; must not
    exist yet)."""
    t0 = time.perf_counter()
    topics = topics if topics is not None else load_topics()
    if len(topics) > 60:
        raise KgcultError("at most 60 topics are supported")
    directory = Path(directory)
    directory.mkdir(parents=True)
    b = _Builder(store, directory, topics)
    n_names = b.names()
    if not len(b.qnum):
        log.warning("the store at %s holds no rdfs:label or skos:altLabel: every mention will "
                    "stay unresolved (load data first)", getattr(store, "location", "?"))
    log.info("link index: %d names of %d entities in %d languages (%.1f s)",
             n_names, len(b.qnum), len(b.langs), time.perf_counter() - t0)
    b.sitelinks()
    desc_langs = b.descriptions()
    b.edges()
    kind_keys = b.topic_membership()
    pools.build(b.con, [t.name for t in topics], b.langs)
    log.info("link index: fuzzy and token pools built (%.1f s)", time.perf_counter() - t0)
    b.finish({"format": FORMAT, "content_hash": content_hash, "topics": [_topic_meta(t) for t in topics],
              "langs": b.langs, "kinds": kind_keys, "description_langs": desc_langs, "names": n_names,
              "build_seconds": round(time.perf_counter() - t0, 3)})
    log.info("link index built in %.1f s", time.perf_counter() - t0)


def build(store, content_hash: str, topics: list[Topic] | None = None) -> LabelIndex:
    """An index of ``store`` in a temporary directory, removed with the returned object
    (``load_or_build`` persists one beside the store instead)."""
    tmp = Path(tempfile.mkdtemp(prefix="kgcult-link-index-"))
    try:
        build_into(store, tmp / "index", content_hash, topics)
        ix = LabelIndex(tmp / "index")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    weakref.finalize(ix, shutil.rmtree, str(tmp), True)
    return ix


# -- persistence ---------------------------------------------------------------------

def index_dir(store) -> Path:
    """Beside an embedded store (``<store>.link-index``); for a remote endpoint, under
    ``$KGCULT_CACHE`` (default ``~/.cache/kgcult``), one directory per endpoint URL."""
    if getattr(store, "remote", False):
        cache = Path(os.environ.get("KGCULT_CACHE") or Path.home() / ".cache" / "kgcult")
        key = hashlib.sha256(str(store.location).encode()).hexdigest()[:16]
        return cache / "link-index" / key
    loc = Path(store.location).resolve()
    return loc.parent / (loc.name + ".link-index")


def _fingerprint(store) -> str:
    """What identifies the store's content without reading it: for an embedded store the
    listing of its files (RocksDB never rewrites a file in place: any write adds to the
    log or adds a table file; a read-only open changes nothing but LOG files), else the
    triple count; plus the provenance records."""
    prov = store.provenance()
    loc = Path(str(store.location))
    if not getattr(store, "remote", False) and loc.is_dir():
        files = sorted((p.name, st.st_size, st.st_mtime_ns) for p in loc.iterdir()
                       if not p.name.startswith(("LOG", "LOCK")) and (st := p.stat()))
        key = ["files", files, prov]
    else:
        key = [len(store.ox), prov]
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def content_hash(store) -> str:
    """The store's content hash; for read-only stores remembered per fingerprint."""
    if not store.read_only:
        return store_content_hash(store)
    cached = store.get_state("contentSha256")
    if cached:
        return cached
    d = index_dir(store)
    fp = _fingerprint(store)
    f = d / "fingerprints.json"
    known = {}
    if f.exists():
        try:
            known = json.loads(f.read_text())
        except (OSError, ValueError):
            known = {}
    if fp in known:
        return known[fp]
    log.info("computing the store's content hash (read-only store; remembered afterwards)")
    h = store_content_hash(store)
    known[fp] = h
    try:
        d.mkdir(parents=True, exist_ok=True)
        atomic_write(f, json.dumps(known, indent=1, sort_keys=True).encode())
    except OSError:
        pass
    return h


def topics_hash(topics: list[Topic]) -> str:
    return hashlib.sha256(repr(topics).encode()).hexdigest()[:12]


def index_path(store, chash: str, topics: list[Topic]) -> Path:
    """The index directory of this store content and these topics."""
    return index_dir(store) / f"labels-{chash[:16]}-{topics_hash(topics)}-v{FORMAT}"


def disk_bytes(path: str | Path) -> int | None:
    """Bytes on disk of an index directory (None when there is none)."""
    path = Path(path)
    if not path.is_dir():
        return None
    return sum(p.stat().st_size for p in path.iterdir() if p.is_file())


def _open(path: Path, chash: str) -> LabelIndex | None:
    try:
        ix = LabelIndex(path)
    except Exception:  # a foreign or damaged directory: rebuild it
        return None
    if ix.format == FORMAT and ix.content_hash == chash:
        return ix
    ix.close()
    return None


def load_or_build(store, *, rebuild: bool = False, topics: list[Topic] | None = None,
                  persist: bool = True) -> LabelIndex:
    """The store's label index: opened from disk when it matches the store's content
    hash, else built (and written beside the store)."""
    ensure_closure(store)
    topics = topics if topics is not None else load_topics()
    chash = content_hash(store)
    path = index_path(store, chash, topics)
    if not rebuild and path.is_dir():
        ix = _open(path, chash)
        if ix is not None:
            return ix
    if not persist:
        return build(store, chash, topics)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=path.name + ".tmp-", dir=path.parent))
    except OSError as e:
        log.info("link index not persisted (%s); it is rebuilt next time", e)
        return build(store, chash, topics)
    try:
        build_into(store, tmp / "index", chash, topics)
        if path.exists():
            shutil.rmtree(path)
        try:
            os.replace(tmp / "index", path)
        except OSError:  # another process put the same index there meanwhile
            if not path.is_dir():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for old in path.parent.glob("labels-*"):  # indexes of an older store content
        if old != path and ".tmp-" not in old.name:  # not another process's build
            if old.is_dir():
                shutil.rmtree(old, ignore_errors=True)
            else:
                old.unlink(missing_ok=True)
    for old in path.parent.glob("emb-*.npy"):  # name vectors of an older store
        if not old.name.startswith(f"emb-{chash[:16]}-"):
            old.unlink(missing_ok=True)
    return LabelIndex(path)
