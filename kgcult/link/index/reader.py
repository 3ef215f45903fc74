"""The label index: every rdfs:label and skos:altLabel of the store, per language, under
exact and normalized keys, with the per-entity facts the linker needs on its hot path
(topic membership, labels, description, country, sitelinks, base hierarchy edges) and the
fuzzy and token pools (``index/name_pools.py``). This module opens one (:class:`LabelIndex`) and
decides where it lives and when it is rebuilt (:func:`load_or_build`);
:mod:`kgcult.link.index.build` builds it from the store in bounded memory, and
:mod:`kgcult.link.index.encoding` holds what both sides share (codes, column views).

The index is a directory beside the store (``<store>.link-index/labels-<hash>-<topics>-v<FORMAT>/``,
see ``index/layout.py``) named by the store's content hash
(``kgcult.store.snapshot.store_content_hash``): a changed store gets a new index. A
process opens it read-only and memory-mapped; lookups read only the pages they touch.
For read-only stores the content hash cannot be cached in the store; a fingerprint
(the store's file listing + provenance records) remembers it in the index directory
instead. A read-only open also records the store's file listing with its content hash
(``listings.json``), so that the next process whose store lists the same files opens the
index without opening the store (:func:`open_unopened`). Progress goes to the
``kgcult.link.index.build`` logger.

Entity ids (``eid``) are positions in the sorted array of QID numbers.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
import weakref
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from kgcult import ids, langtags, lazy
from kgcult.errors import KgcultError
from kgcult.files import atomic_write, cache_root, remove_dead_scratch, scratch_prefix
from kgcult.link import normalize
from kgcult.link.index import name_pools as pools
from kgcult.link.index import layout as storage
from kgcult.link.index.build import build_into
from kgcult.link.index.encoding import (FORMAT, Cached, Column, EidMap, EntitySet, EntityText, KeyTable, is_eid,
                                      Lookup, PerLang, QidList, code_value, qnum_of)
from kgcult.link.topics import Kind, Topic, load_topics
from kgcult.store.hierarchy import ensure_closure
from kgcult.store.sidefiles import data_version
from kgcult.store.sidefiles import store_files as _files
from kgcult.store.snapshot import store_content_hash

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy.module("numpy")

log = logging.getLogger(__name__)


@lru_cache(maxsize=256)
def label_chain(lang: str) -> tuple[str, ...]:
    """The languages a label or name in ``lang`` is looked up in, best first: ``lang``, its
    base language, then the rest of its fallback chain (variants, ``mul``)."""
    return tuple(dict.fromkeys((lang, normalize.base_lang(lang)) + langtags.fallback_chain(lang)[1:]))


class LabelIndex:
    """An index directory opened read-only (``fresh``: built by the call that opened it).
    Attributes keep the shape the in-memory index
    had (``exact[lang].get(name)`` -> code(s), ``qids[eid]``, ``topic_bits[eid]``, ...);
    codes: exact/norm ``eid<<1 | alias``, anyl ``(eid<<LANG_BITS | lang)<<1 | alias``."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.fresh = False
        con = self.db = storage.connect(self.directory)
        meta = json.loads(con.execute("SELECT value FROM meta WHERE key = 'meta'").fetchone()[0])
        self.format = meta["format"]
        self.content_hash = meta["content_hash"]
        self.build_seconds = meta["build_seconds"]
        self.topics = [Topic(name=t["name"], roots=t["roots"], via=t["via"],
                             kinds=[Kind(**k) for k in t["kinds"]],
                             via_inverse=t.get("via_inverse", [])) for t in meta["topics"]]
        self.topics_key = topics_hash(self.topics)  # in the stages' cache file names
        self.langs = meta["langs"]
        self.lang_id = {lg: i for i, lg in enumerate(self.langs)}
        d = self.directory
        self.qnum = storage.load_array(d, "qnum")
        self.qids = QidList(self.qnum)
        self.qnums = Column(self.qnum)
        self.eid_of = EidMap(self.qnum)
        self.topic_bits = Column(storage.load_array(d, "topic_bits"))
        self.sitelinks = Column(storage.load_array(d, "sitelinks"))
        self.is_class = EntitySet(storage.load_array(d, "is_class"))
        kinds = storage.load_array(d, "kinds")
        self.kind_members = {(t, o): EntitySet(kinds[i]) for i, (t, o) in enumerate(map(tuple, meta["kinds"]))}

        exact = Cached(self._exact)
        norm = Cached(self._norm)
        self.exact = PerLang({lg: KeyTable(lambda k, i=i: exact(i, k), meta["names_per_lang"][lg])
                               for lg, i in self.lang_id.items() if meta["names_per_lang"].get(lg)})
        self.norm = PerLang({lg: KeyTable(lambda k, i=i: norm(i, k), meta["keys_per_lang"][lg])
                              for lg, i in self.lang_id.items() if meta["keys_per_lang"].get(lg)})
        self.anyl = KeyTable(Cached(self._anyl), meta["any_keys"])
        self._label = Cached(self._label_of)
        self._desc = Cached(self._description_of)
        self.labels = PerLang({lg: EntityText(self._label, lg) for lg in self.lang_id})
        self.descriptions = PerLang({lg: EntityText(self._desc, lg) for lg in meta["description_langs"]})
        self.country = Lookup(Cached(self._country_of))
        self.edges = Lookup(Cached(self._edges_of))
        self.names_count = meta.get("names", 0)
        self._pools: Path | None = None  # the pools database attached to ``db``

    # -- the fuzzy and token pools -------------------------------------------------------

    @property
    def pool_db(self):
        """The index database with the fuzzy and token pools attached (their tables read
        unqualified): built beside the index when it has none yet (:meth:`ensure_pools`)."""
        if self._pools is None:
            with _POOLS_LOCK:
                if self._pools is None:
                    path = self.ensure_pools()
                    self.db.execute("ATTACH DATABASE ? AS pools", (storage.read_only_uri(path),))
                    self._pools = path
        return self.db

    def ensure_pools(self) -> Path:
        """The index's pools database (``pools.sqlite`` in its directory), built now when
        there is none: the first mention that reaches a loose stage (fuzzy, tokens, the
        stage caches' part listings) or ``kgcult link index`` builds it, once, saying so."""
        path = self.directory / pools.POOLS_DB
        if path.is_file():
            return path
        return _build_pools(self, path)

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
        """The entity's label in ``lang``, else in its base language (``pt-br`` -> ``pt``), else
        along its fallback chain (:func:`kgcult.langtags.fallback_chain`: ``zh`` -> ``zh-hans``,
        ``zh-hant``, ``zh-cn``, ...; then ``mul``)."""
        for lg in label_chain(lang):
            v = self._label(eid, lg)
            if v is not None:
                return v
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

    def one_word_labels(self, langs) -> list[tuple[int, str, str]]:
        """(eid, lang, label) of every one-word rdfs:label in ``langs``, of any entity (a
        class valid for a topic only through its instances too)."""
        lids = sorted(self.lang_id[lg] for lg in langs if lg in self.lang_id)
        if not lids:
            return []
        q = (f"SELECT eid, lang, text FROM names WHERE lang IN ({','.join('?' * len(lids))})"
             " AND alias = 0 AND instr(text, ' ') = 0 ORDER BY eid, lang, text")
        return [(e, self.langs[li], t) for e, li, t in self.db.execute(q, lids)]

    def members(self, topic: str | None) -> list[int]:
        if topic is None:
            return list(range(len(self.qnum)))
        bit = self.topic_bit(topic)
        return np.flatnonzero(np.asarray(self.topic_bits.arr) & bit).tolist()

    def part_names(self, topic: str | None, lang: str) -> list[tuple[int, str, str]]:
        """(eid, lang, name) of the names in ``lang`` of the topic's entities (None: of
        the entities of any topic), by entity then name: what the pools hold."""
        return pools.part_names(self.pool_db, topic, lang)

    def parts(self, topic: str | None) -> list[tuple[str, int]]:
        """(language, number of names) of the topic's parts (None: of any topic's), by
        language: every part a loose stage may search."""
        return pools.parts(self.pool_db, topic)

    def part_rows(self, topic: str | None, lang: str) -> pools.PartRows:
        """``part_names`` as a lazy sequence (rows read when indexed)."""
        return pools.PartRows(self.pool_db, topic, lang)

    def fuzzy_pool(self, topic: str | None, lang: str) -> pools.StoredFuzzyPool:
        return pools.StoredFuzzyPool(self.pool_db, topic, lang)

    def token_pool(self, topic: str, lang: str) -> pools.StoredTokenPool:
        return pools.StoredTokenPool(self.pool_db, topic, lang)

    # -- the queries behind the views --------------------------------------------------

    def _exact(self, lid: int, text: str):
        return code_value([(e << 1) | a for e, a in self.db.execute(
            "SELECT eid, alias FROM names WHERE lang = ? AND text = ?", (lid, text))])

    def _norm(self, lid: int, key: str):
        return code_value([c for (c,) in self.db.execute(
            "SELECT code FROM norm WHERE lang = ? AND key = ?", (lid, key))])

    def _anyl(self, key: str):
        return code_value([c for (c,) in self.db.execute("SELECT code FROM anyl WHERE key = ?", (key,))])

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
        if not is_eid(eid):
            return None
        os_ = [o for (o,) in self.db.execute("SELECT o FROM country WHERE eid = ?", (int(eid),))]
        return tuple(sorted(os_, key=ids.sort_key)) if os_ else None

    def _edges_of(self, qid):
        n = qnum_of(qid) if isinstance(qid, str) else None
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


_POOLS_LOCK = threading.Lock()
# seconds of a pools build per name of the index: the 1x stand-in's 0.94 M names took 12.5
# CPU s on a busy 2-core Xeon (load ~5)
POOL_SECONDS_PER_NAME = 1.2e-5


def _build_pools(ix: LabelIndex, path: Path) -> Path:
    """Build ``ix``'s pools database at ``path`` (a scratch file renamed when complete),
    else, where the index directory cannot be written, in a temporary directory removed
    with ``ix``."""
    secs = max(1.0, ix.names_count * POOL_SECONDS_PER_NAME)
    took = "a few seconds" if secs < 10 else f"about {secs:.0f} s" if secs < 90 else f"about {secs / 60:.0f} min"
    log.info("link index: building its fuzzy and token pools (read by the stages that match loosely: "
             "fuzzy, tokens, and the stage caches), once, %s for %s names on a quiet machine; "
             "`kgcult link index` builds them ahead", took, f"{ix.names_count:,}")
    t0 = time.perf_counter()
    topics = [t.name for t in ix.topics]
    bits = np.asarray(ix.topic_bits.arr)
    try:
        remove_dead_scratch(ix.directory)
        tmp = ix.directory / (scratch_prefix(pools.POOLS_DB) + "build")
        pools.build_file(ix.directory, tmp, topics, ix.langs, bits)
        os.replace(tmp, path)
    except OSError as e:
        log.info("link index: pools not kept beside the index (%s); built for this process", e)
        d = Path(tempfile.mkdtemp(prefix="kgcult-link-pools-"))
        weakref.finalize(ix, shutil.rmtree, str(d), True)
        path = d / pools.POOLS_DB
        pools.build_file(ix.directory, path, topics, ix.langs, bits)
    log.info("link index: fuzzy and token pools built (%.1f s)", time.perf_counter() - t0)
    return path


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
        cache = cache_root()
        key = hashlib.sha256(str(store.location).encode()).hexdigest()[:16]
        return cache / "link-index" / key
    return index_dir_of(Path(store.location))


def index_dir_of(location) -> Path:
    """:func:`index_dir` of the embedded store at ``location`` (a path), without opening it."""
    loc = Path(location).resolve()
    return loc.parent / (loc.name + ".link-index")


def remote_key(store) -> str:
    """The key of a remote store's content, read in a few aggregate queries instead of the
    whole endpoint: the engine's own triple count of each named graph and of the default
    graph (:meth:`RemoteStore.graph_counts`, :meth:`RemoteStore.triple_count`; the engine's
    system graphs left out), and the records kgcult's export carries in the metadata graph
    (``kgc:dataVersion``, ``kgc:contentSha256`` where a store computed it, every provenance
    record). ``rk`` and 62 hex digits. A change that keeps every count and every record as
    they were (a label edited in place with the engine's own tools) keeps the key: pass
    ``kgcult link index --rebuild`` then (docs/link.md)."""
    state = {name: store.get_state(name) for name in ("dataVersion", "contentSha256")}
    key = {"graphs": store.graph_counts(), "default": store.triple_count(), "state": state,
           "provenance": store.provenance()}
    return "rk" + hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:62]


# Store file listings (sha256) a read-only open saw with a fresh closure, and the content
# hash the store had then: a later process whose store directory lists the same files opens
# the index of that content without opening the store (``open_unopened``).
LISTINGS = "listings.json"
LISTINGS_MAX = 8


def _listing_key(location: Path) -> str | None:
    files = _files(location)
    return None if files is None else hashlib.sha256(json.dumps(files).encode()).hexdigest()


def _remember_listing(store, chash: str) -> None:
    """Record the store's file listing with its content hash (read-only embedded stores
    only: a read-write handle may still change its files when it closes)."""
    if not store.read_only or getattr(store, "remote", False):
        return
    loc = Path(str(store.location))
    key = _listing_key(loc) if loc.is_dir() else None
    if key is None:
        return
    f = index_dir_of(loc) / LISTINGS
    known = _read_json(f)
    if known.get(key) == chash:
        return
    known.pop(key, None)
    known[key] = chash
    while len(known) > LISTINGS_MAX:  # the oldest first (insertion order)
        known.pop(next(iter(known)))
    try:
        atomic_write(f, json.dumps(known, indent=1).encode())
    except OSError:
        pass


def _read_json(f: Path) -> dict:
    try:
        v = json.loads(f.read_text())
    except (OSError, ValueError):
        return {}
    return v if isinstance(v, dict) else {}


def open_unopened(location, topics: list[Topic] | None = None) -> "LabelIndex | None":
    """The label index of the embedded store at ``location``, found without opening the
    store: when the store directory lists exactly the files a read-only open saw (with the
    closure fresh), the index of the content it had then. None when that is not known (or
    the index is gone): open the store and use :func:`load_or_build`."""
    loc = Path(location)
    if not loc.is_dir():
        return None
    key = _listing_key(loc)
    chash = _read_json(index_dir_of(loc) / LISTINGS).get(key) if key else None
    if not isinstance(chash, str):
        return None
    topics = topics if topics is not None else load_topics()
    path = index_dir_of(loc) / _index_name(chash, topics)
    return _open(path, chash) if path.is_dir() else None


def content_hash(store) -> str:
    """The key the store's index is kept under. An embedded store: its data version
    (``kgc:dataVersion``, new with every write: :func:`kgcult.store.sidefiles.data_version`),
    read in a moment, where the content hash costs a sorted read of every quad (38 s for
    the 1x stand-in on a busy 2-core machine, twice its load); the key says which it is
    (``dv`` + 62 hex digits). A remote store: :func:`remote_key` (``rk`` + 62 hex digits),
    the engine's triple counts per graph and kgcult's records, where its content hash meant
    reading every quad of the endpoint (about 14 min for the stand-in on Virtuoso)."""
    if not getattr(store, "remote", False):
        version = data_version(store)
        if version:
            return "dv" + hashlib.sha256(version.encode()).hexdigest()[:62]
        return store_content_hash(store)
    return remote_key(store)


def topics_hash(topics: list[Topic]) -> str:
    return hashlib.sha256(repr(topics).encode()).hexdigest()[:12]


def index_path(store, chash: str, topics: list[Topic]) -> Path:
    """The index directory of this store content and these topics."""
    return index_dir(store) / _index_name(chash, topics)


def _index_name(chash: str, topics: list[Topic]) -> str:
    return f"labels-{chash[:16]}-{topics_hash(topics)}-v{FORMAT}"


def disk_bytes(path: str | Path) -> int | None:
    """Bytes on disk of an index directory (None when there is none)."""
    path = Path(path)
    if not path.is_dir():
        return None
    return sum(p.stat().st_size for p in path.iterdir() if p.is_file())


def _open(path: Path, chash: str) -> LabelIndex | None:
    try:
        ix = LabelIndex(path)
    except KgcultError as e:  # an array that is not what the index was built with: said, rebuilt
        log.warning("%s; rebuilding it", e)
        return None
    except Exception:  # noqa: BLE001 - a foreign or damaged directory: rebuild it
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
            _remember_listing(store, chash)
            return ix
    announce(store)
    if not persist:
        return build(store, chash, topics)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_dead_scratch(path.parent)  # the scratch of builds killed before their cleanup
        tmp = Path(tempfile.mkdtemp(prefix=scratch_prefix(path.name), dir=path.parent))
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
    for kind in ("emb", "sem", "morph"):  # name vectors and morphology pools of an older store
        for old in path.parent.glob(f"{kind}-*"):
            if old.is_file() and not old.name.startswith(f"{kind}-{chash[:16]}-") and ".tmp-" not in old.name:
                old.unlink(missing_ok=True)
    _remember_listing(store, chash)
    ix = LabelIndex(path)
    ix.fresh = True
    return ix


# seconds of a build per MB of the store on disk (its names, entity facts; the pools follow
# when first needed): the 1x stand-in (559 MB, 0.94 M names) took about 20 CPU s in the
# building process on a busy 2-core Xeon (load ~4), its aliases read by a second one
SECONDS_PER_STORE_MB = 0.035


def announce(store) -> None:
    """Say, before a build, what it builds and about how long it takes (from the store's
    size on disk; a remote store: no estimate)."""
    loc = getattr(store, "location", None)
    files = None if getattr(store, "remote", False) or loc is None else _files(Path(str(loc)))
    if files:
        mb = sum(size for _name, size, _mtime in files) / 1e6
        secs = max(1.0, mb * SECONDS_PER_STORE_MB)
        took = ("a few seconds" if secs < 10 else f"about {secs:.0f} s" if secs < 90
                else f"about {secs / 60:.0f} min")
        log.info("link index: none for this store's data yet: building it beside the store (its names "
                 "and entity facts; its fuzzy and token pools when a mention first needs them), %s for a "
                 "%.0f MB store on a quiet machine; a line every 10 s names the step", took, mb)
    else:
        log.info("link index: none for this store's data yet: building it (its names and entity facts; "
                 "its fuzzy and token pools when a mention first needs them); a line every 10 s names "
                 "the step")


def summary(store, ix: LabelIndex, open_seconds: float | None = None) -> dict:
    """What ``kgcult link index`` prints of the store's index ``ix``: where it is, the key
    it is kept under (:func:`content_hash`), entities, languages, distinct names, build and
    open seconds, bytes on disk, entities per topic."""
    path = index_path(store, ix.content_hash, ix.topics)
    return {"path": str(path), "key": ix.content_hash, "entities": len(ix.qids),
            "languages": len(ix.langs), "distinct_names": sum(len(d) for d in ix.exact.values()),
            "build_seconds": round(ix.build_seconds, 2),
            "open_seconds": None if open_seconds is None else round(open_seconds, 2),
            "bytes": disk_bytes(path),
            "topics": {t.name: sum(1 for b in ix.topic_bits if b & (1 << i))
                       for i, t in enumerate(ix.topics)}}
