"""Filter a Wikidata dump into the subgraphs: the same graphs and RDF as ``kgcult mirror``.

Two dump formats, plain or .gz/.bz2/.zst:

* the JSON dump (``latest-all.json.gz``): a ``[`` line, one entity per line ending in
  ``,``, a ``]`` line. Claims become WDQS truthy triples (``wdt:``, best rank: preferred
  statements if a property has any, else normal ones; deprecated never), labels
  ``rdfs:label``, aliases ``skos:altLabel``, descriptions ``schema:description``, the
  number of sitelinks ``wikibase:sitelinks``.
* the truthy N-Triples dump (``latest-truthy.nt.gz``): lines are kept as they are.

Pass 1 streams the dump and keeps only the edges of the properties the specs name
(integer-encoded arrays: memory grows with those edges and the id sets, not with the
dump). The same crawl as the endpoint path (:func:`kgcult.acquire.crawl.crawl`) then runs
against that in-memory index to select each subgraph's members. Pass 2 streams the dump
again and writes the members' statements into staging graphs, which replace the target
graphs atomically at the end (:mod:`kgcult.acquire.staging`), with provenance (dump path,
sha256, counts).
"""
from __future__ import annotations

import io
import json
import logging
import os
import re
import time
from array import array
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pyoxigraph as ox
from pyoxigraph import Literal, NamedNode, Quad

from kgcult import ids, vocab
from kgcult.acquire import subgraphs
from kgcult.acquire import staging
from kgcult.acquire.crawl import crawl
from kgcult.acquire.report import SubgraphReport
from kgcult.acquire.subgraphs import SubgraphSpec
from kgcult.errors import KgcultError
from kgcult.files import sha256_file
from kgcult.log import progress as progress_bar
from kgcult.store import rdfio
from kgcult.store.embedded import now_iso

log = logging.getLogger(__name__)

_XSD = vocab.XSD
_DEC = NamedNode(_XSD + "decimal")
_DT = NamedNode(_XSD + "dateTime")
_INT = NamedNode(_XSD + "integer")
_WKT = NamedNode("http://www.opengis.net/ont/geosparql#wktLiteral")
_SITELINKS = NamedNode(subgraphs.SITELINKS)
_WD_B = b"<" + vocab.WD.encode()
_WDT_B = b"<" + vocab.WDT.encode()


class IngestError(KgcultError):
    """A dump that cannot be read or parsed (names the file and line)."""


# -- ids as integers (memory) ------------------------------------------------------------

class Ids:
    """Entity id <-> int64: Q123 -> 123*4, P123 -> 123*4+1, L123 -> 123*4+2, others by table."""

    def __init__(self):
        self.other: dict[str, int] = {}
        self.other_rev: list[str] = []

    def enc(self, e: str) -> int:
        parts = ids.split(e)
        if parts:
            return parts[1] * 4 + "QPL".index(parts[0])
        n = self.other.get(e)
        if n is None:
            n = len(self.other_rev) * 4 + 3
            self.other[e] = n
            self.other_rev.append(e)
        return n

    def dec(self, n: int) -> str:
        n = int(n)
        k = n & 3
        if k == 3:
            return self.other_rev[n >> 2]
        return "QPL"[k] + str(n >> 2)


# -- dump reading -------------------------------------------------------------------------

def dump_format(path: str, fmt: str = "auto") -> str:
    if fmt != "auto":
        return fmt
    name = Path(path).name
    for suffix in rdfio.COMPRESSIONS:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    if name.endswith(".json"):
        return "json"
    if name.endswith(".nt"):
        return "ntriples"
    raise IngestError(f"{path}: cannot tell the dump format from the name (expected .json or .nt, "
                      "optionally .gz/.bz2/.zst); pass --format json|ntriples")


def _lines(path: str):
    """(line number, bytes) of a possibly compressed file."""
    try:
        with rdfio.open_binary(path) as raw:
            stream = io.BufferedReader(raw, 1 << 20) if not isinstance(raw, io.BufferedReader) else raw
            for i, line in enumerate(stream, 1):
                yield i, line
    except (EOFError, OSError, ValueError) as e:
        raise IngestError(f"{path}: cannot read: {e}") from None


_PEEK_ID = re.compile(rb'^\s*\{\s*"type"\s*:\s*"[a-z]+"\s*,\s*"id"\s*:\s*"([A-Z][0-9]+)"')


def json_entities(path: str, wanted=None):
    """(line number, entity dict) for each entity of a JSON dump. With ``wanted`` (a set
    of ids), lines whose leading id (the dump's layout) is not in it are not parsed."""
    for i, line in _lines(path):
        s = line.strip()
        if not s or s in (b"[", b"]"):
            continue
        if wanted is not None:
            m = _PEEK_ID.match(s)
            if m and m.group(1).decode() not in wanted:
                continue
        if s.endswith(b","):
            s = s[:-1]
        try:
            e = json.loads(s)
        except ValueError as ex:
            raise IngestError(f"{path}:{i}: not a JSON entity line: {ex}") from None
        if not isinstance(e, dict) or "id" not in e:
            raise IngestError(f"{path}:{i}: an entity line needs an \"id\"")
        yield i, e


def _value_term(snak: dict):
    """The WDQS truthy object of a value snak, or None (somevalue/novalue/unknown)."""
    if snak.get("snaktype") != "value":
        return None
    dv = snak.get("datavalue") or {}
    t, v = dv.get("type"), dv.get("value")
    dt = snak.get("datatype", "")
    if t == "wikibase-entityid":
        eid = v.get("id") if isinstance(v, dict) else None
        if not eid and isinstance(v, dict) and "numeric-id" in v:
            eid = {"item": "Q", "property": "P", "lexeme": "L"}.get(v.get("entity-type"), "Q") + str(v["numeric-id"])
        return NamedNode(vocab.WD + eid) if eid else None
    if t == "string":
        if dt == "commonsMedia":
            return NamedNode("http://commons.wikimedia.org/wiki/Special:FilePath/" + quote(v.replace(" ", "_")))
        if dt in ("geo-shape", "tabular-data"):
            return NamedNode("http://commons.wikimedia.org/data/main/" + quote(v.replace(" ", "_")))
        if dt == "url":
            try:
                return NamedNode(v)
            except ValueError:
                return Literal(v)
        return Literal(v)
    if t == "monolingualtext":
        return Literal(v["text"], language=v["language"].lower())
    if t == "quantity":
        return Literal(v["amount"].lstrip("+"), datatype=_DEC)
    if t == "time":
        s = v["time"].lstrip("+")
        s = re.sub(r"^(-?\d+)-00-00", r"\1-01-01", s)
        s = re.sub(r"^(-?\d+-\d\d)-00", r"\1-01", s)
        return Literal(s, datatype=_DT)
    if t == "globecoordinate":
        point = f"Point({v['longitude']} {v['latitude']})"
        globe = v.get("globe") or ""
        if globe and not globe.endswith("/Q2"):
            point = f"<{globe}> {point}"
        return Literal(point, datatype=_WKT)
    return None


def truthy_claims(entity: dict, props) -> list[tuple[str, object]]:
    """[(property id, object term)] of the entity's truthy claims for ``props`` (None: all)."""
    out = []
    for pid, stmts in (entity.get("claims") or {}).items():
        if props is not None and pid not in props:
            continue
        ranked = [s for s in stmts if s.get("rank") != "deprecated"]
        best = [s for s in ranked if s.get("rank") == "preferred"] or ranked
        for s in best:
            term = _value_term(s.get("mainsnak") or {})
            if term is not None:
                out.append((pid, term))
    return out


def entity_triples(entity: dict, *, props=None, languages=None, label_props=(), sitelinks=False) -> list:
    """The WDQS triples kgcult keeps for one JSON entity."""
    s = NamedNode(vocab.WD + entity["id"])
    out = []
    if props is None or props:
        for pid, term in truthy_claims(entity, props):
            out.append((s, NamedNode(vocab.WDT + pid), term))
    langs = set(languages or ())
    lp = set(label_props)
    if lp and langs:
        if vocab.RDFS + "label" in lp:
            for lang, d in (entity.get("labels") or {}).items():
                if lang.lower() in langs:
                    out.append((s, NamedNode(vocab.RDFS + "label"), Literal(d["value"], language=lang.lower())))
        if vocab.SKOS + "altLabel" in lp:
            for lang, items in (entity.get("aliases") or {}).items():
                if lang.lower() in langs:
                    for d in items:
                        out.append((s, NamedNode(vocab.SKOS + "altLabel"), Literal(d["value"], language=lang.lower())))
        if vocab.SCHEMA + "description" in lp:
            for lang, d in (entity.get("descriptions") or {}).items():
                if lang.lower() in langs:
                    out.append((s, NamedNode(vocab.SCHEMA + "description"), Literal(d["value"], language=lang.lower())))
    if sitelinks and "sitelinks" in entity:
        out.append((s, _SITELINKS, Literal(str(len(entity["sitelinks"] or {})), datatype=_INT)))
    return out


def json_to_ntriples(src: str, dst: str) -> int:
    """Convert a JSON dump to the N-Triples WDQS would serve (all truthy claims, every
    label, alias, description and the sitelink count). For tests and endpoints."""
    n = 0
    all_label_props = subgraphs.LABEL_PROPERTIES
    with open(dst, "w", encoding="utf-8") as out:
        for _, e in json_entities(src):
            langs = set((e.get("labels") or {})) | set((e.get("aliases") or {})) | set((e.get("descriptions") or {}))
            for t in entity_triples(e, props=None, languages=[x.lower() for x in langs],
                                    label_props=all_label_props, sitelinks=True):
                out.write(f"{t[0]} {t[1]} {t[2]} .\n")
                n += 1
    return n


# -- pass 1: the edge index ---------------------------------------------------------------

class EdgeIndex:
    def __init__(self, props: set[str]):
        self.props = set(props)
        self.ids = Ids()
        self._s = {p: array("q") for p in props}
        self._o = {p: array("q") for p in props}
        self.has_value: dict[str, set[int]] = {p: set() for p in props}  # non-item values
        self.subj: dict[str, np.ndarray] = {}
        self.obj: dict[str, np.ndarray] = {}

    def add(self, pid: str, s: str, o: str | None) -> None:
        si = self.ids.enc(s)
        if o is None:
            self.has_value[pid].add(si)
        else:
            self._s[pid].append(si)
            self._o[pid].append(self.ids.enc(o))

    def freeze(self) -> None:
        for p in self.props:
            self.subj[p] = np.frombuffer(self._s[p], dtype=np.int64) if len(self._s[p]) else np.zeros(0, np.int64)
            self.obj[p] = np.frombuffer(self._o[p], dtype=np.int64) if len(self._o[p]) else np.zeros(0, np.int64)

    def enc_all(self, ids) -> np.ndarray:
        return np.array(sorted(self.ids.enc(i) for i in ids), dtype=np.int64)

    def subjects_pointing_to(self, props, targets) -> set[str]:
        return self._other_ends(props, targets, self.obj, self.subj)

    def objects_of(self, props, sources) -> set[str]:
        return self._other_ends(props, sources, self.subj, self.obj)

    def _other_ends(self, props, ends, side: dict, other: dict) -> set[str]:
        """The entities at the ``other`` end of the ``props`` edges whose ``side`` end is in ``ends``."""
        e = self.enc_all(ends)
        out: set[str] = set()
        for p in props:
            out.update(self.ids.dec(x) for x in np.unique(other[p][np.isin(side[p], e)]))
        return out

    def subjects_with_any(self, props, sources) -> set[str]:
        s = self.enc_all(sources)
        sset = set(s.tolist())
        out: set[str] = set()
        for p in props:
            mask = np.isin(s, self.subj[p])
            out.update(self.ids.dec(x) for x in s[mask])
            out.update(self.ids.dec(x) for x in self.has_value[p] & sset)
        return out


def _index_json(path: str, index: EdgeIndex, tick) -> int:
    n = 0
    for _, e in json_entities(path):
        n += 1
        tick()
        eid = e["id"]
        for pid, term in truthy_claims(e, index.props):
            o = ids.entity_of_term(term)
            index.add(pid, eid, o)
    return n


def _split_nt(line: bytes):
    s = line.rstrip()
    if not s or s.startswith(b"#"):
        return None
    parts = s.split(b" ", 2)
    if len(parts) < 3 or not s.endswith(b"."):
        return None
    o = parts[2][:-1].rstrip()
    return parts[0], parts[1], o


def _nt_entity(term: bytes) -> str | None:
    if term.startswith(_WD_B) and term.endswith(b">"):
        local = term[len(_WD_B):-1].decode("ascii", "replace")
        if ids.is_entity(local):
            return local
    return None


def _index_nt(path: str, index: EdgeIndex, tick) -> int:
    preds = {(_WDT_B + p.encode() + b">"): p for p in index.props}
    n = 0
    for i, line in _lines(path):
        parts = _split_nt(line)
        if parts is None:
            if line.strip() and not line.lstrip().startswith(b"#"):
                raise IngestError(f"{path}:{i}: not an N-Triples line")
            continue
        n += 1
        if n % 100000 == 0:
            tick(100000)
        s, p, o = parts
        pid = preds.get(p)
        if pid is None:
            continue
        se = _nt_entity(s)
        if se is None:
            continue
        index.add(pid, se, _nt_entity(o))
    return n


class DumpBackend:
    """The crawl's backend for a dump: answers from the pass-1 edge index."""

    def __init__(self, index: EdgeIndex, specs: dict[str, SubgraphSpec]):
        self.index, self.specs = index, specs
        self.members: dict[str, set[str]] = {}

    def seeds(self, spec):
        out: set[str] = set()
        for name in spec.seed_from:
            dep, mem = self.specs[name], self.members.get(name, set())
            if spec.seed_all:
                if dep.is_labels:
                    out |= mem
                else:
                    out |= self.index.subjects_with_any(dep.properties, mem)
                    out |= self.index.objects_of(dep.properties, mem)
            else:
                out |= self.index.objects_of(set(spec.seed_properties) & set(dep.properties), mem)
        return out

    def down(self, spec, level, frontier):
        return self.index.subjects_pointing_to(spec.member_properties, frontier)

    def fetch(self, spec, level, ids):
        return self.index.objects_of(spec.follow_properties, ids)


# -- the command --------------------------------------------------------------------------

def _needed(specs: dict[str, SubgraphSpec], chosen: list[SubgraphSpec]) -> list[SubgraphSpec]:
    need: set[str] = set()
    stack = [s.name for s in chosen]
    while stack:
        n = stack.pop()
        if n in need:
            continue
        need.add(n)
        stack.extend(specs[n].seed_from)
    return [s for s in specs.values() if s.name in need]


def ingest(store, dump: str, names=None, *, specs=None, fmt: str = "auto", refresh: bool = False,
           progress: bool | None = None) -> list[SubgraphReport]:
    """Filter ``dump`` into the named subgraphs (all when none). ``progress``: a progress
    bar on stderr (None: when stderr is a terminal)."""
    if getattr(store, "remote", False) or getattr(store, "read_only", False):
        raise IngestError("ingest writes into an embedded, writable store (not a remote endpoint)")
    if not os.path.isfile(dump):
        raise IngestError(f"{dump}: no such file")
    kind = dump_format(dump, fmt)
    specs = specs or subgraphs.load_specs()
    chosen = subgraphs.select(specs, names)
    reports = {s.name: SubgraphReport(s.name, s.graph) for s in chosen}
    todo = []
    for s in chosen:
        existing = store.triple_count(s.graph)
        marker = staging.marker(store, s.graph)
        if staging.is_complete(marker) and not refresh:
            reports[s.name].skipped = "already in the store (use --refresh to replace it)"
            reports[s.name].triples = existing
            log.info("%s: %s", s.name, reports[s.name].skipped)
        elif existing and not refresh and marker is None:
            raise IngestError(f"{s.name}: graph {s.graph} already holds {existing} triples that neither "
                              "`kgcult mirror` nor `kgcult ingest` wrote; pass --refresh to replace it")
        else:
            todo.append(s)
    if not todo:
        return list(reports.values())
    needed = _needed(specs, todo)
    t0 = time.perf_counter()
    digest = sha256_file(dump)
    started = now_iso()

    bar = progress_bar(unit="entity" if kind == "json" else "line", desc="ingest pass 1", dynamic_ncols=True,
                       leave=True, disable=None if progress is None else not progress)

    def tick(n=1):
        bar.update(n)

    # pass 1
    struct_props = set()
    for s in needed:
        struct_props |= set(s.member_properties) | set(s.properties) | set(s.follow_properties) | set(s.seed_properties)
    index = EdgeIndex(struct_props)
    entities = _index_json(dump, index, tick) if kind == "json" else _index_nt(dump, index, tick)
    index.freeze()
    log.info("pass 1: %d %s, %d edges of %d properties indexed", entities, "entities" if kind == "json" else "lines",
             sum(len(a) for a in index.subj.values()), len(struct_props))

    # selection: the same crawl as the endpoint path
    backend = DumpBackend(index, specs)
    for s in needed:
        members, warnings = crawl(s, backend)
        backend.members[s.name] = members
        if s.name in reports:
            reports[s.name].members = len(members)
            reports[s.name].warnings = warnings

    # pass 2: into the (empty) target graph, marked partial until done; into a staging
    # graph swapped in atomically when the target has content to keep until then
    run_id = os.urandom(8).hex()
    write_to = {s.name: staging.begin(store, s, run_id) for s in todo}
    bar.reset()
    bar.set_description("ingest pass 2")
    writer = _Writer(store)
    if kind == "json":
        _emit_json(dump, todo, backend.members, writer, tick, write_to)
    else:
        _emit_nt(dump, todo, backend.members, writer, tick, write_to)
    writer.flush()
    bar.close()

    for s in todo:
        staging.finish(store, s, run_id, write_to[s.name])
        rep = reports[s.name]
        rep.triples = store.triple_count(s.graph)
        store.record_activity(kind="ingest", source=os.path.abspath(dump), sha256=digest, graph=s.graph,
                              triples=rep.triples,
                              extra={"subgraph": s.name, "specSha256": s.fingerprint(), "startedAt": started,
                                     "members": rep.members, "dumpFormat": kind, "runId": run_id})
        rep.seconds = time.perf_counter() - t0
        log.info("%s: %d triples in %s (%d members)", s.name, rep.triples, s.graph, rep.members)
    store.mark_closure_stale()
    store.flush()
    return list(reports.values())


class _Writer:
    def __init__(self, store, chunk: int = 50000):
        self.store, self.chunk, self.buf = store, chunk, []

    def add(self, quad: Quad) -> None:
        self.buf.append(quad)
        if len(self.buf) >= self.chunk:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            self.store.ox.extend(self.buf)
            self.buf = []


def _emit_json(path, todo, members, writer: _Writer, tick, write_to) -> None:
    plans = [(s, members[s.name], NamedNode(write_to[s.name])) for s in todo]
    wanted = set().union(*(p[1] for p in plans)) if plans else set()
    for _, e in json_entities(path, wanted):
        tick()
        eid = e["id"]
        for s, mem, g in plans:
            if eid not in mem:
                continue
            if s.is_labels:
                ts = entity_triples(e, props=(), languages=s.languages, label_props=s.label_properties,
                                    sitelinks=s.sitelinks)
            else:
                ts = entity_triples(e, props=set(s.properties))
            for t in ts:
                writer.add(Quad(t[0], t[1], t[2], g))


_LANG_TAIL = re.compile(rb'"@([A-Za-z0-9-]+)$')


def _emit_nt(path, todo, members, writer: _Writer, tick, write_to) -> None:
    plans = []
    for s in todo:
        mem = {b"<" + vocab.WD.encode() + m.encode() + b">" for m in members[s.name]}
        if s.is_labels:
            preds = {b"<" + p.encode() + b">" for p in s.label_properties}
            site = b"<" + subgraphs.SITELINKS.encode() + b">" if s.sitelinks else None
        else:
            preds, site = {_WDT_B + p.encode() + b">" for p in s.properties}, None
        plans.append((s, mem, preds, site, set(x.encode() for x in s.languages), NamedNode(write_to[s.name])))
    pending: dict[NamedNode, list[bytes]] = {}

    def drain(g):
        data = b"".join(pending.pop(g, []))
        if data:
            try:
                quads = list(ox.parse(data, format=ox.RdfFormat.N_TRIPLES))
            except SyntaxError as e:
                raise IngestError(f"{path}: a selected line is not valid N-Triples: {e}") from None
            for q in quads:
                writer.add(Quad(q.subject, q.predicate, q.object, g))

    n = 0
    for i, line in _lines(path):
        n += 1
        if n % 100000 == 0:
            tick(100000)
        parts = _split_nt(line)
        if parts is None:
            continue
        s_, p_, o_ = parts
        for s, mem, preds, site, langs, g in plans:
            if s_ not in mem:
                continue
            if p_ in preds:
                if s.is_labels:
                    m = _LANG_TAIL.search(o_)
                    if not m or m.group(1).lower() not in langs:
                        continue
            elif not (site is not None and p_ == site):
                continue
            buf = pending.setdefault(g, [])
            buf.append(line if line.endswith(b"\n") else line + b"\n")
            if len(buf) >= 20000:
                drain(g)
    for g in list(pending):
        drain(g)
