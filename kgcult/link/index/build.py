"""Building the link index from a store (see :mod:`kgcult.link.index.reader` for what it holds and
where it lives): names read from the store's quads directly (no SPARQL), streamed into an
SQLite database whose tables SQLite sorts and indexes (spilling to temporary files), and
one numpy array per per-entity fact. The fuzzy and token pools (:mod:`kgcult.link.index.name_pools`)
are a second database of the index directory, built from it when first needed
(``LabelIndex.ensure_pools``: by ``kgcult link index``, or by the first mention that reaches a
loose stage), so a first link that an exact name settles does not wait for them. Memory
stays bounded by the batch sizes, not by the number of names."""
from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import logging
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pyoxigraph as ox
from pyoxigraph import NamedNode

from kgcult import ids, lazy, vocab
from kgcult import log as kglog
from kgcult.errors import KgcultError
from kgcult.link import normalize
from kgcult.link.index import layout
from kgcult.link.index.encoding import FORMAT, LANG_BITS, qnum_of
from kgcult.link.topics import Topic, load_topics
from kgcult import store as stores
from kgcult.store import DEFAULT_GRAPH

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy.module("numpy")

log = logging.getLogger(__name__)

RDFS_LABEL = NamedNode(vocab.RDFS + "label")
SKOS_ALT = NamedNode(vocab.SKOS + "altLabel")
SCHEMA_DESC = NamedNode(vocab.SCHEMA + "description")
SCHEMA_ABOUT = NamedNode(vocab.SCHEMA + "about")
SITELINKS = NamedNode(vocab.WIKIBASE + "sitelinks")
BROADER = NamedNode(vocab.KGC + "broader")
BASE_PROPS = ("P31", "P279", "P361")
COUNTRY_PROPS = ("P495", "P17", "P27")  # origin, country, nationality (in this order)
BATCH = 5_000        # quads or rows per batch while building
# rows of one page read from a remote store. The stand-in's 608,078 labels on Virtuoso, at a
# load average of 5: 86 s and 76 MiB of peak RSS in pages of 100,000 (17 MB of JSON each; the
# engine sorts for each page), against 63 s and 241 MiB as one answer
REMOTE_PAGE = 100_000
KEY_CACHE_MAX = 4_096  # normalized keys remembered while building (names repeat across languages)

# -- building ------------------------------------------------------------------------

_WD_LEN = len(vocab.WD)


def _local(term) -> str | None:
    """The local name of a ``wd:`` IRI term, unvalidated."""
    if type(term) is ox.NamedNode:
        v = term.value
        if v.startswith(vocab.WD):
            return v[_WD_LEN:]
    return None


def _data_quads(store, pred):
    """Quads of ``pred`` in the data: the default graph, the set of the data graphs (each
    triple once, see docs/store.md; a remote endpoint's default graph)."""
    if getattr(store, "remote", False):
        # a remote endpoint: its default graph (kgcult's set, as the views read it: docs/serve.md),
        # the subject and object only, REMOTE_PAGE rows at a time (one page held here)
        rows = store.pages(f"SELECT ?s ?o WHERE {{ ?s {pred} ?o }}", ["s", "o"], REMOTE_PAGE)
        yield from (ox.Quad(r["s"], pred, r["o"], DEFAULT_GRAPH) for r in rows
                    if r["s"] is not None and r["o"] is not None)
        return
    yield from store.quads_for_pattern(None, pred, None, DEFAULT_GRAPH)


def _batched(it, n: int = BATCH):
    buf = []
    for x in it:
        buf.append(x)
        if len(buf) >= n:
            yield buf
            buf = []
    if buf:
        yield buf


RAW_COLUMNS = "qnum INTEGER, lang TEXT, alias INTEGER, text TEXT, f TEXT, s TEXT"
SCHEMA = f"""
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE scratch.raw({RAW_COLUMNS});
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
"""

_JOIN = "FROM raw r JOIN ent e ON e.qnum = r.qnum JOIN lang l ON l.name = r.lang"


class _Reads:
    """The store's quads for one step of a build (``data``: outside derived graphs)."""

    def __init__(self, handle):
        self.handle = handle

    def data(self, pred):
        return _data_quads(self.handle, pred)

    def pattern(self, *spo_g):
        return self.handle.quads_for_pattern(*spo_g)

    def closure(self, pred: NamedNode, obj: NamedNode):
        """The subjects of closure triples ``?x pred obj``, read where queries read them:
        the default graph (a kgcult store keeps the closure there only), or a remote
        endpoint's default graph."""
        h = self.handle
        if not getattr(h, "remote", False):
            return (q.subject for q in h.quads_for_pattern(None, pred, obj, DEFAULT_GRAPH))
        # a remote endpoint's default graph (terms parsed as IRIs: str() is a valid IRI reference)
        return (r["x"] for r in h.query(f"SELECT ?x WHERE {{ ?x {pred} {obj} }}"))


def _hand_back_freed_memory() -> None:
    """Return the heap's free pages to the OS (glibc; nothing elsewhere)."""
    gc.collect()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _stage_names(reading, pred: NamedNode, alias: int, con) -> int:
    """Every name of predicate ``pred`` (labels: alias 0, aliases: 1) read from the store
    (``reading()``: one read handle) into table ``raw`` of ``con``, with its folded and
    stemmed keys; how many."""
    key_cache: dict = {}  # (text, stemming language or "") -> (folded, stemmed)
    stem_of: dict = {}    # label language -> its stemming language, "" for none
    basic, strip, stem = normalize.basic, normalize.strip_diacritics, normalize.stem
    literal, iri, wd = ox.Literal, ox.NamedNode, vocab.WD
    n_names = 0
    insert = "INSERT INTO raw VALUES (?,?,?,?,?,?)"
    with reading() as reads:
        rows: list = []
        add = rows.append
        for q in reads.data(pred):
            lit = q.object
            if type(lit) is not literal:
                continue
            lang = lit.language
            subj = q.subject
            if not lang or type(subj) is not iri:
                continue
            v = subj.value
            n = qnum_of(v[_WD_LEN:]) if v.startswith(wd) else None
            if n is None:
                continue
            sl = stem_of.get(lang)
            if sl is None:
                b = normalize.base_lang(lang.lower())
                sl = stem_of[lang] = b if b in normalize.STEM_LANGS else ""
            text = lit.value
            k = key_cache.get((text, sl))
            if k is None:
                if len(key_cache) > KEY_CACHE_MAX:
                    key_cache.clear()
                f = strip(basic(text))
                k = key_cache[text, sl] = (f, stem(f, sl) if sl else f)
            add((n, lang.lower(), alias, text, k[0], k[1]))
            if len(rows) >= BATCH:
                n_names += len(rows)
                con.executemany(insert, rows)
                rows.clear()
        n_names += len(rows)
        con.executemany(insert, rows)
    return n_names


def stage_aliases(location: str, out: str) -> None:
    """A second process's share of a build (:class:`_AliasWorker`): the store's aliases
    (skos:altLabel) staged into table ``raw`` of a new database ``out``."""
    con = sqlite3.connect(out, isolation_level=None)
    con.execute("PRAGMA journal_mode=OFF")
    con.execute("PRAGMA synchronous=OFF")
    con.execute(f"CREATE TABLE raw({RAW_COLUMNS})")
    con.execute("BEGIN")

    @contextlib.contextmanager
    def reading():
        store = stores.Store(location, read_only=True)
        try:
            yield _Reads(store)
        finally:
            store.close()

    n = _stage_names(reading, SKOS_ALT, 1, con)
    con.execute("INSERT INTO raw(qnum, lang, alias, text) VALUES (-1, '', ?, '')", (n,))  # complete: the count
    con.execute("COMMIT")
    con.close()


class _AliasWorker:
    """A second process reading the store's aliases while this one reads its labels (each
    read is mostly this process's CPU: on two cores the names are read in about 2/3 of
    the time). Used for a read-only store on disk only, which a second read-only handle
    sees as this one does."""

    def __init__(self, location: str, directory: Path):
        self.path = directory / "aliases.scratch.sqlite"
        self.path.unlink(missing_ok=True)
        code = "import sys; from kgcult.link.index.build import stage_aliases; stage_aliases(sys.argv[1], sys.argv[2])"
        self.proc = subprocess.Popen([sys.executable, "-c", code, location, str(self.path)],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def join(self, con) -> int | None:
        """Its rows added to ``con``'s ``raw`` table, and how many (None when it failed:
        the caller reads the aliases itself)."""
        try:
            _out, err = self.proc.communicate()
            if self.proc.returncode:
                log.debug("link index: the alias reader failed (%s); reading them here", err.decode()[-500:])
                return None
            con.execute("COMMIT")
            con.execute("ATTACH DATABASE ? AS aliases", (layout.read_only_uri(self.path),))
            con.execute("BEGIN")
            done = con.execute("SELECT alias FROM aliases.raw WHERE qnum = -1").fetchone()
            if done is None:
                n = None
            else:
                con.execute("INSERT INTO raw SELECT * FROM aliases.raw WHERE qnum != -1")
                n = done[0]
            con.execute("COMMIT")
            con.execute("DETACH DATABASE aliases")
            con.execute("BEGIN")
            return n
        finally:
            self.path.unlink(missing_ok=True)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.path.unlink(missing_ok=True)


class _Builder:
    def __init__(self, store, directory: Path, topics: list[Topic]):
        self.store = store
        self.dir = directory
        self.topics = topics
        self.workers: list[_AliasWorker] = []
        self.con = layout.connect(directory, write=True)
        layout.script(self.con, SCHEMA)

    @contextlib.contextmanager
    def reading(self):
        """The store's quads for one step. A read-only store on disk is opened again for
        the step and closed after it: Oxigraph's block cache fills as the step reads (about
        60 MB after every label of the 1x stand-in) and would otherwise stay beside the
        SQLite sorts of the next steps; closed, its memory goes back to the OS. Any other
        store (read-write, in memory, remote) is read through its own handle."""
        loc = getattr(self.store, "location", None)
        embedded = not getattr(self.store, "remote", False) and loc and Path(str(loc)).is_dir()
        if not (embedded and getattr(self.store, "read_only", False)):
            yield _Reads(self.store)
            return
        reads = _Reads(stores.Store(str(loc), read_only=True))
        try:
            yield reads
        finally:
            reads.handle.close()
            reads.handle = None
            _hand_back_freed_memory()

    def _alt_labels_worker(self) -> "_AliasWorker | None":
        """A second process reading the aliases, where the store is a read-only one on disk
        and this machine has a second core; else None (read here)."""
        loc = getattr(self.store, "location", None)
        if (getattr(self.store, "remote", False) or not loc or not getattr(self.store, "read_only", False)
                or not Path(str(loc)).is_dir() or (os.cpu_count() or 1) < 2):
            return None
        try:
            w = _AliasWorker(str(loc), self.dir)
        except OSError as e:
            log.debug("link index: no alias reader (%s)", e)
            return None
        self.workers.append(w)
        return w

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
        worker = self._alt_labels_worker()  # the aliases read by a second process meanwhile
        n_names = _stage_names(self.reading, RDFS_LABEL, 0, con)
        if worker is not None:
            n_alt = worker.join(con)
            if n_alt is None:
                worker = None
            else:
                n_names += n_alt
        if worker is None:
            n_names += _stage_names(self.reading, SKOS_ALT, 1, con)
        con.execute("INSERT INTO ent SELECT qnum, ROW_NUMBER() OVER (ORDER BY qnum) - 1 "
                    "FROM (SELECT DISTINCT qnum FROM raw)")
        self.langs = [lg for (lg,) in con.execute("SELECT DISTINCT lang FROM raw ORDER BY lang")]
        if len(self.langs) > (1 << LANG_BITS):
            raise KgcultError("more than 1024 label languages")
        con.executemany("INSERT INTO lang VALUES (?,?)", [(lg, i) for i, lg in enumerate(self.langs)])
        self.qnum = np.fromiter((n for (n,) in con.execute("SELECT qnum FROM ent ORDER BY qnum")), dtype=np.int64)
        layout.script(con, f"""
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
        layout.save_array(self.dir, "qnum", self.qnum)
        return n_names

    def sitelinks(self) -> None:
        sl = np.zeros(len(self.qnum), dtype=np.int64)
        # wikibase:sitelinks where present, else the number of articles about the entity
        with self.reading() as reads:
            for batch in _batched(reads.data(SCHEMA_ABOUT)):
                e = self.eids([qnum_of(_local(q.object)) for q in batch])
                np.add.at(sl, e[e >= 0], 1)
            for batch in _batched(reads.data(SITELINKS)):
                e = self.eids([qnum_of(_local(q.subject)) for q in batch])
                for ei, q in zip(e.tolist(), batch):
                    count = ids.sitelink_count(q.object) if ei >= 0 else None
                    if count is not None:  # else the articles counted above stand
                        sl[ei] = count
        layout.save_array(self.dir, "sitelinks", sl)

    def descriptions(self) -> list[str]:
        con = self.con
        with self.reading() as reads:
            for batch in _batched(reads.data(SCHEMA_DESC)):
                e = self.eids([qnum_of(_local(q.subject)) for q in batch])
                rows = [(ei, q.object.language.lower(), q.object.value) for ei, q in zip(e.tolist(), batch)
                        if ei >= 0 and isinstance(q.object, ox.Literal) and q.object.language]
                con.executemany("INSERT INTO descr_raw VALUES (?,?,?)", rows)
        layout.script(con, """
            INSERT INTO descr SELECT eid, lang, MIN(text) FROM descr_raw GROUP BY eid, lang ORDER BY 1, 2;
            DROP TABLE descr_raw;
        """)
        return [lg for (lg,) in con.execute("SELECT DISTINCT lang FROM descr ORDER BY lang")]

    def edges(self) -> None:
        """Base hierarchy edges (evidence paths, the class test) and country facts."""
        con = self.con
        is_class = np.zeros(len(self.qnum), dtype=bool)
        via = sorted({p for t in self.topics for p in t.via})
        with self.reading() as reads:
            for pid in BASE_PROPS + tuple(p for p in via if p not in BASE_PROPS):
                for batch in _batched(reads.data(vocab.wdt(pid))):
                    rows: list[tuple] = []
                    for q in batch:
                        s, o = qnum_of(_local(q.subject)), _local(q.object)
                        if s is not None and qnum_of(o) is not None:
                            rows.append((s, pid, o))
                    con.executemany("INSERT INTO edges_raw VALUES (?,?,?)", rows)
                    if pid in ("P31", "P279"):
                        e = self.eids([qnum_of(o) for _s, _p, o in rows])
                        is_class[e[e >= 0]] = True
            for pid in sorted({p for t in self.topics for p in t.via_inverse}):
                # stored reversed, "^P527" from the object: what makes a dish's ingredient valid
                # for a name match (GraphFacts.inverse_typed) and its evidence path
                for batch in _batched(reads.data(vocab.wdt(pid))):
                    rows = []
                    for q in batch:
                        subj, obj = _local(q.subject), qnum_of(_local(q.object))
                        if obj is not None and qnum_of(subj) is not None:
                            rows.append((obj, "^" + pid, subj))
                    con.executemany("INSERT INTO edges_raw VALUES (?,?,?)", rows)
        layout.script(con, """
            INSERT OR IGNORE INTO edges SELECT s, pid, o FROM edges_raw ORDER BY 1, 2, 3;
            DROP TABLE edges_raw;
        """)
        layout.save_array(self.dir, "is_class", is_class)
        with self.reading() as reads:
            for rank, pid in enumerate(COUNTRY_PROPS):
                for batch in _batched(reads.data(vocab.wdt(pid))):
                    e = self.eids([qnum_of(_local(q.subject)) for q in batch])
                    rows = [(ei, rank, o) for ei, q in zip(e.tolist(), batch)
                            if ei >= 0 and qnum_of(o := _local(q.object)) is not None]
                    con.executemany("INSERT INTO country_raw VALUES (?,?,?)", rows)
        layout.script(con, """
            INSERT OR IGNORE INTO country SELECT eid, o FROM (
                SELECT eid, o, rank, MIN(rank) OVER (PARTITION BY eid) AS r FROM country_raw)
                WHERE rank = r ORDER BY 1, 2;
            DROP TABLE country_raw;
        """)

    def topic_membership(self) -> list:
        """Topic bits from the closure (kgc:broader = (P31|P279|P361)+), and the kinds."""
        with self.reading() as reads:
            return self._topic_membership(reads)

    def _topic_membership(self, reads: _Reads) -> list:
        n = len(self.qnum)
        bits = np.zeros(n, dtype=np.int64)
        under_cache: dict = {}

        def under(root: str) -> np.ndarray:
            if root not in under_cache:
                parts = [self.eids([qnum_of(root)])]
                for batch in _batched(reads.closure(BROADER, ids.node(root))):
                    parts.append(self.eids([qnum_of(_local(x)) for x in batch]))
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
                for batch in _batched(reads.data(vocab.wdt(pid))):
                    e = self.eids([qnum_of(_local(q.subject)) for q in batch])
                    bits[e[e >= 0]] |= bit
            for k in t.kinds:
                flags = np.zeros(n, dtype=bool)
                flags[under(k.root)] = True
                kind_keys.append([t.name, k.order])
                kinds.append(flags)
        layout.save_array(self.dir, "topic_bits", bits)
        layout.save_array(self.dir, "kinds", np.array(kinds, dtype=bool).reshape(len(kinds), n))
        return kind_keys

    def finish(self, meta: dict) -> None:
        con = self.con
        meta["names_per_lang"] = {self.langs[i]: c for i, c in con.execute(
            "SELECT lang, COUNT(DISTINCT text) FROM names GROUP BY lang")}
        meta["keys_per_lang"] = {self.langs[i]: c for i, c in con.execute(
            "SELECT lang, COUNT(DISTINCT key) FROM norm GROUP BY lang")}
        meta["any_keys"] = con.execute("SELECT COUNT(DISTINCT key) FROM anyl").fetchone()[0]
        con.execute("INSERT INTO meta VALUES ('meta', ?)", (json.dumps(meta, sort_keys=True),))
        layout.finish_build(con, self.dir)


def _topic_meta(t: Topic) -> dict:
    return {"name": t.name, "roots": list(t.roots), "via": list(t.via), "via_inverse": list(t.via_inverse),
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
    try:
        _build(b, store, directory, content_hash, topics, t0)
    finally:
        for w in b.workers:
            w.kill()


def _build(b: "_Builder", store, directory: Path, content_hash: str, topics: list[Topic], t0: float) -> None:
    # each step reads the store or sorts in SQLite without a word: a line every 10 s (a bar
    # on a terminal) names the step under way
    with kglog.progress(total=len(STEPS), desc="link index", unit=" steps") as bar:
        step = _Steps(bar, t0)
        step("names")
        n_names = b.names()
        if not len(b.qnum):
            log.warning("the store at %s holds no rdfs:label or skos:altLabel: every mention will "
                        "stay unresolved (load data first)", getattr(store, "location", "?"))
        log.info("link index: %d names of %d entities in %d languages (%.1f s)",
                 n_names, len(b.qnum), len(b.langs), time.perf_counter() - t0)
        step("sitelinks")
        b.sitelinks()
        step("descriptions")
        desc_langs = b.descriptions()
        step("hierarchy edges and countries")
        b.edges()
        step("topics")
        kind_keys = b.topic_membership()
        step("finishing")
        b.finish({"format": FORMAT, "content_hash": content_hash, "topics": [_topic_meta(t) for t in topics],
                  "langs": b.langs, "kinds": kind_keys, "description_langs": desc_langs, "names": n_names,
                  "build_seconds": round(time.perf_counter() - t0, 3)})
        step(None)
    log.info("link index built in %.1f s", time.perf_counter() - t0)


STEPS = ("names", "sitelinks", "descriptions", "hierarchy edges and countries", "topics", "finishing")


class _Steps:
    """Marks the build's steps on its progress bar (one unit each, the step named) and logs
    each finished step's seconds at debug level."""

    def __init__(self, bar, t0: float):
        self.bar, self.t = bar, t0
        self.name: str | None = None

    def __call__(self, name: str | None) -> None:
        now = time.perf_counter()
        if self.name is not None:
            log.debug("link index: %s (%.1f s)", self.name, now - self.t)
            self.bar.update(1)
        self.name, self.t = name, now
        if name is not None:
            self.bar.set_postfix_str(name)


