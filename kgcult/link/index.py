"""The label index: every rdfs:label and skos:altLabel of the store, per language, under
exact and normalized keys, with the per-entity facts the linker needs on its hot path
(topic membership, labels, description, country, sitelinks, base hierarchy edges).

Built from the store by reading quads directly (no SPARQL, so no user text anywhere near
a query), persisted as a pickle beside the store (``<store>.link-index/``) under the
store's content hash (``kgcult.store.snapshot.store_content_hash``): a changed store gets
a new index. For read-only stores the content hash cannot be cached in the store; a
fingerprint (triple count + provenance records) remembers it in the index directory
instead. Progress goes to this module's logger.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyoxigraph as ox
from pyoxigraph import NamedNode

from kgcult import ids, vocab
from kgcult.errors import KgcultError
from kgcult.files import atomic_write
from kgcult.link import normalize
from kgcult.link.topics import Topic, load_topics
from kgcult.store.hierarchy import ensure_closure
from kgcult.store.snapshot import store_content_hash

log = logging.getLogger(__name__)

FORMAT = 5
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


def _add(d: dict, key, code: int) -> None:
    cur = d.get(key)
    if cur is None:
        d[key] = code
    elif isinstance(cur, int):
        if cur != code:
            d[key] = (cur, code)
    elif code not in cur:
        d[key] = cur + (code,)


def codes(v) -> tuple:
    if v is None:
        return ()
    if isinstance(v, int):
        return (v,)
    return v


@dataclass
class LabelIndex:
    content_hash: str
    topics: list[Topic]
    qids: list[str] = field(default_factory=list)
    eid_of: dict = field(default_factory=dict)
    langs: list[str] = field(default_factory=list)
    lang_id: dict = field(default_factory=dict)
    exact: dict = field(default_factory=dict)      # lang -> {label: code(s)}; code = eid<<1 | alias
    norm: dict = field(default_factory=dict)       # lang -> {stem key: code(s)}
    anyl: dict = field(default_factory=dict)       # fold/stem key -> code(s); code = (eid<<LANG_BITS|lang)<<1|alias
    labels: dict = field(default_factory=dict)     # lang -> {eid: rdfs:label}
    descriptions: dict = field(default_factory=dict)  # lang -> {eid: description}
    sitelinks: list = field(default_factory=list)  # eid -> sitelink count (wikibase:sitelinks, else articles)
    nlangs: list = field(default_factory=list)     # eid -> number of languages with a name
    topic_bits: list = field(default_factory=list)  # eid -> bitmask over topics
    kind_members: dict = field(default_factory=dict)  # (topic, order) -> frozenset of eids
    is_class: set = field(default_factory=set)     # eids with instances/subclasses/parts in the graph
    country: dict = field(default_factory=dict)    # eid -> tuple of QIDs
    edges: dict = field(default_factory=dict)      # QID -> tuple of (PID, QID) over P31/P279/P361 (+ topic via props)
    build_seconds: float = 0.0
    format: int = FORMAT

    # -- lookups -----------------------------------------------------------------------

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
        d = self.labels.get(lang)
        if d is not None:
            v = d.get(eid)
            if v is not None:
                return v
        b = normalize.base_lang(lang)
        if b != lang and b in self.labels:
            return self.labels[b].get(eid)
        return None

    def description(self, eid: int, lang: str) -> str | None:
        for lg in (lang, "en"):
            d = self.descriptions.get(lg)
            if d and eid in d:
                return d[eid]
        return None

    def names_of(self, eids, langs) -> list[tuple[int, str, str]]:
        """(eid, lang, name) for every label/alias of the given entities in ``langs``
        (all languages if None), sorted; used by the fuzzy and embedding stages."""
        want = set(eids)
        out = set()
        for lang, d in self.exact.items():
            if langs is not None and lang not in langs:
                continue
            for name, v in d.items():
                for c in codes(v):
                    e = c >> 1
                    if e in want:
                        out.add((e, lang, name))
        return sorted(out)

    def members(self, topic: str | None) -> list[int]:
        if topic is None:
            return list(range(len(self.qids)))
        bit = self.topic_bit(topic)
        return [e for e, b in enumerate(self.topic_bits) if b & bit]


# -- building ------------------------------------------------------------------------

_WD_LEN = len(vocab.WD)


def _local(term) -> str | None:
    """The local name of a ``wd:`` IRI term, unvalidated: a cheap key for the index's own
    id table (which holds valid item ids only, so nothing else finds an entry)."""
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


def build(store, content_hash: str, topics: list[Topic] | None = None) -> LabelIndex:
    """Read the store once and build the in-memory index."""
    t0 = time.perf_counter()
    topics = topics if topics is not None else load_topics()
    if len(topics) > 60:
        raise KgcultError("at most 60 topics are supported")
    ix = LabelIndex(content_hash=content_hash, topics=topics)
    eid_of = ix.eid_of
    qids = ix.qids

    def eid(q: str) -> int:
        e = eid_of.get(q)
        if e is None:
            e = eid_of[q] = len(qids)
            qids.append(q)
        return e

    def lid(lang: str) -> int:
        i = ix.lang_id.get(lang)
        if i is None:
            i = ix.lang_id[lang] = len(ix.langs)
            ix.langs.append(lang)
            if i >= (1 << LANG_BITS):
                raise KgcultError("more than 1024 label languages")
        return i

    entity_langs: dict[int, set] = {}
    key_cache: dict = {}
    n_names = 0
    for alias, pred in ((0, RDFS_LABEL), (1, SKOS_ALT)):
        for q in _data_quads(store, pred):
            qid = _local(q.subject)
            lit = q.object
            if qid is None or not isinstance(lit, ox.Literal) or (qid not in eid_of and not ids.is_item(qid)):
                continue
            lang = lit.language
            if not lang:
                continue
            lang = lang.lower()
            text = lit.value
            e = eid(qid)
            li = lid(lang)
            n_names += 1
            code = (e << 1) | alias
            _add(ix.exact.setdefault(lang, {}), text, code)
            if alias == 0:
                d = ix.labels.setdefault(lang, {})
                if e not in d or text < d[e]:
                    d[e] = text
            entity_langs.setdefault(e, set()).add(li)
            ck = (text, normalize.base_lang(lang) in normalize.STEM_LANGS and normalize.base_lang(lang))
            k = key_cache.get(ck)
            if k is None:
                _, f, s = normalize.keys(text, lang)
                k = key_cache[ck] = (f, s)
            f, s = k
            _add(ix.norm.setdefault(lang, {}), s, code)
            acode = (((e << LANG_BITS) | li) << 1) | alias
            _add(ix.anyl, f, acode)
            if s != f:
                _add(ix.anyl, s, acode)
    del key_cache
    if not qids:
        log.warning("the store at %s holds no rdfs:label or skos:altLabel: every mention will "
                    "stay unresolved (load data first)", getattr(store, "location", "?"))
    log.info("link index: %d names of %d entities in %d languages (%.1f s)",
             n_names, len(qids), len(ix.langs), time.perf_counter() - t0)

    n = len(qids)
    ix.nlangs = [len(entity_langs.get(e, ())) for e in range(n)]
    del entity_langs

    # sitelinks: wikibase:sitelinks where present, else the number of articles about it
    sl = [0] * n
    for q in _data_quads(store, SCHEMA_ABOUT):
        e = eid_of.get(_local(q.object))
        if e is not None:
            sl[e] += 1
    for q in _data_quads(store, SITELINKS):
        e = eid_of.get(_local(q.subject))
        if e is not None:
            try:
                sl[e] = int(q.object.value)
            except ValueError:
                pass
    ix.sitelinks = sl

    for q in _data_quads(store, SCHEMA_DESC):
        e = eid_of.get(_local(q.subject))
        lit = q.object
        if e is not None and isinstance(lit, ox.Literal) and lit.language:
            d = ix.descriptions.setdefault(lit.language.lower(), {})
            if e not in d or lit.value < d[e]:
                d[e] = lit.value

    # base hierarchy edges (for evidence paths and the class test) and country facts
    via_props = sorted({p for t in topics for p in t.via})
    edges: dict[str, set] = {}
    for pid in BASE_PROPS + tuple(p for p in via_props if p not in BASE_PROPS):
        for q in _data_quads(store, vocab.wdt(pid)):
            s, o = ids.of_term(q.subject, "Q"), ids.of_term(q.object, "Q")
            if s and o:
                edges.setdefault(s, set()).add((pid, o))
                if pid in ("P31", "P279"):
                    e = eid_of.get(o)
                    if e is not None:
                        ix.is_class.add(e)
    ix.edges = {k: tuple(sorted(v)) for k, v in edges.items()}
    country: dict[int, dict[str, set]] = {}
    for pid in COUNTRY_PROPS:
        for q in _data_quads(store, vocab.wdt(pid)):
            e = eid_of.get(_local(q.subject))
            o = ids.of_term(q.object, "Q")
            if e is not None and o:
                country.setdefault(e, {}).setdefault(pid, set()).add(o)
    for e, by in country.items():
        for pid in COUNTRY_PROPS:  # origin beats country beats nationality
            if pid in by:
                ix.country[e] = tuple(sorted(by[pid], key=ids.sort_key))
                break

    # topic membership from the closure (kgc:broader = (P31|P279|P361)+)
    bits = [0] * n
    under_cache: dict[str, set] = {}

    def under(root: str) -> set:
        if root not in under_cache:
            out = set()
            r = eid_of.get(root)
            if r is not None:
                out.add(r)
            for q in store.ox.quads_for_pattern(None, BROADER, ids.node(root), NamedNode(TOPIC_GRAPH)):
                e = eid_of.get(_local(q.subject))
                if e is not None:
                    out.add(e)
            under_cache[root] = out
        return under_cache[root]

    for i, t in enumerate(topics):
        bit = 1 << i
        members = set()
        for r in t.roots:
            members |= under(r)
        for pid in t.via:
            for q in _data_quads(store, vocab.wdt(pid)):
                e = eid_of.get(_local(q.subject))
                if e is not None:
                    members.add(e)
        for e in members:
            bits[e] |= bit
        for k in t.kinds:
            ix.kind_members[(t.name, k.order)] = frozenset(under(k.root))
    ix.topic_bits = bits
    ix.build_seconds = time.perf_counter() - t0
    log.info("link index built in %.1f s", ix.build_seconds)
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
    prov = store.provenance()
    h = hashlib.sha256(json.dumps([len(store.ox), prov], sort_keys=True).encode())
    return h.hexdigest()


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
    return index_dir(store) / f"labels-{chash[:16]}-{topics_hash(topics)}-v{FORMAT}.pkl"


def load_or_build(store, *, rebuild: bool = False, topics: list[Topic] | None = None,
                  persist: bool = True) -> LabelIndex:
    """The store's label index: read from disk when it matches the store's content hash,
    else built (and written beside the store)."""
    ensure_closure(store)
    topics = topics if topics is not None else load_topics()
    chash = content_hash(store)
    path = index_path(store, chash, topics)
    if not rebuild and path.exists():
        try:
            with open(path, "rb") as f:
                ix = pickle.load(f)
            if isinstance(ix, LabelIndex) and ix.format == FORMAT and ix.content_hash == chash:
                return ix
        except Exception:  # a truncated or foreign file: rebuild it
            pass
    ix = build(store, chash, topics)
    if persist:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, pickle.dumps(ix, protocol=pickle.HIGHEST_PROTOCOL))
            for old in path.parent.glob("labels-*.pkl"):
                if old != path:
                    old.unlink(missing_ok=True)
            for old in path.parent.glob("emb-*.npy"):  # name vectors of an older store
                if not old.name.startswith(f"emb-{chash[:16]}-"):
                    old.unlink(missing_ok=True)
        except OSError as e:
            log.info("link index not persisted (%s); it is rebuilt next time", e)
    return ix
