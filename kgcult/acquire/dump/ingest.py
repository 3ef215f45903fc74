"""Filter a Wikidata dump into the subgraphs: the same graphs and RDF as ``kgcult mirror``.

Two dump formats, plain or .gz/.bz2/.zst:

* the JSON dump (``latest-all.json.gz``): a ``[`` line, one entity per line ending in
  ``,``, a ``]`` line; entities become WDQS truthy triples (:mod:`kgcult.acquire.dump.truthy`);
* the truthy N-Triples dump (``latest-truthy.nt.gz``): lines are kept as they are, but for
  the two forms WDQS changes: a somevalue blank node ``_:LABEL`` becomes WDQS's skolem IRI
  and a ``wikibase:sitelinks`` count on the full dump's ``data:`` node moves onto ``wd:``;
  the counts the truthy dump lacks come from ``--sitelinks FILE``
  (:mod:`kgcult.acquire.dump.sitelinks`), and their absence is reported.

The dump is read once (:mod:`kgcult.acquire.dump.reader`: a parallel decompressor when one is
installed, the sha256 from the same read) and parsed in worker processes
(:mod:`kgcult.acquire.dump.scan`) into the edges the crawl walks and a compact intermediate
of the lines the subgraphs could keep. The crawl (:func:`kgcult.acquire.crawl.crawl`, the
same as the endpoint path) runs over the edge index (:mod:`kgcult.acquire.dump.selection`),
then the members' lines are read back from the intermediate and bulk-loaded, while they
are read, into staging graphs (:class:`~kgcult.acquire.dump.emit.Writer`), which replace the
target graphs at the end, all in one journaled write (``Store.writing``), with
provenance (dump path, sha256, counts). ``engine="spark"`` runs the same selection with
pyspark (:mod:`kgcult.acquire.dump.spark`).
"""
from __future__ import annotations

import logging
import os
import tempfile
import time

from pyoxigraph import NamedNode

from kgcult.acquire import subgraphs
from kgcult.store import loading
from kgcult.acquire.dump import json_entity
from kgcult.acquire.dump import scan
from kgcult.acquire.dump import sitelinks as sitelink_file
from kgcult.acquire.dump import spark
from kgcult.acquire.dump.emit import FrameSource, Writer
from kgcult.acquire.dump.selection import EdgeIndex, needed_specs, select
from kgcult.acquire.dump.reader import DumpReader, IngestError, cpu_count, dump_format
from kgcult.acquire.outcome import SubgraphReport
from kgcult.acquire.dump.truthy import all_lines, entity_triples, parse_entity_line, truthy_claims
from kgcult.log import progress as progress_bar
from kgcult.store.embedded import now_iso

log = logging.getLogger(__name__)

__all__ = ["ingest", "json_entities", "json_to_ntriples", "truthy_claims", "entity_triples", "dump_format",
           "IngestError"]


def json_entities(path: str):
    """(line number, entity dict) for each entity of a JSON dump (one thread; for tools)."""
    i = 0
    with DumpReader(path, threads=1) as reader:
        for block in reader.blocks():
            for line in block.split(b"\n")[:-1]:
                i += 1
                try:
                    e = parse_entity_line(line, json_entity.loads)
                except ValueError as ex:
                    raise IngestError(f"{path}:{i}: not a JSON entity line: {ex}") from None
                if e is not None:
                    yield i, e


def json_to_ntriples(src: str, dst: str) -> int:
    """Convert a JSON dump to the N-Triples WDQS would serve (all truthy claims, every
    label, alias, description and the sitelink count). For tests and endpoints."""
    n = 0
    with open(dst, "w", encoding="utf-8") as out:
        for _, e in json_entities(src):
            for line in all_lines(e):
                out.write(line + "\n")
                n += 1
    return n


def ingest(store, dump: str, names=None, *, specs=None, fmt: str = "auto", refresh: bool = False,
           progress: bool | None = None, jobs: int | None = None, engine: str = "local",
           master: str | None = None, output: str | None = None,
           sitelinks: str | None = None) -> list[SubgraphReport]:
    """Filter ``dump`` into the named subgraphs (all when none). ``progress``: a progress
    bar on stderr (None: when stderr is a terminal). ``jobs``: worker processes (default:
    the usable cores). ``engine``: ``local`` or ``spark`` (``master``: the Spark master,
    default ``local[*]``; ``output``: a directory to keep Spark's output partitions in).
    ``sitelinks``: a file of sitelink counts for an N-Triples dump that has none
    (:mod:`kgcult.acquire.dump.sitelinks`). What the dump cannot give (the truthy dump's
    sitelink counts) is logged as a warning, put in the reports' ``warnings`` and recorded
    in the provenance (``notCarried``)."""
    if getattr(store, "remote", False) or getattr(store, "read_only", False):
        raise IngestError("ingest writes into an embedded, writable store (not a remote endpoint)")
    if engine not in ("local", "spark"):
        raise IngestError(f"--engine {engine!r}: expected local or spark")
    if not os.path.isfile(dump) and not (engine == "spark" and "://" in dump):
        raise IngestError(f"{dump}: no such file")
    kind = dump_format(dump, fmt)
    if sitelinks is not None:
        if kind != "ntriples":
            raise IngestError(f"--sitelinks {sitelinks}: the JSON dump carries its entities' sitelinks; "
                              "a sitelinks file goes with an N-Triples dump")
        if engine != "local":
            raise IngestError("--sitelinks goes with --engine local")
        if not os.path.isfile(sitelinks):
            raise IngestError(f"{sitelinks}: no such file")
    specs = specs or subgraphs.load_specs()
    chosen = subgraphs.select(specs, names)
    reports = {s.name: SubgraphReport(s.name, s.graph) for s in chosen}
    todo = []
    for s in chosen:
        existing = store.triple_count(s.graph)
        marker = loading.run_marker(store, s.graph)
        if marker is not None and not refresh:
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
    needed = needed_specs(specs, todo)
    plan = scan.ScanPlan.for_specs(kind, needed, todo)
    t0 = time.perf_counter()
    started = now_iso()
    carried = {"sitelinks": None}  # wikibase:sitelinks lines read (N-Triples, local engine)
    if engine == "spark":
        source = spark.run(dump, plan, specs, needed, todo, reports, master=master, output=output)
        digest = spark.local_sha256(dump)
    else:
        source, digest = _scan_local(store, dump, plan, specs, needed, reports, jobs, progress, sitelinks,
                                     carried)
    missing = _not_carried(kind, plan, todo, reports, carried, sitelinks)
    if getattr(source, "remote", False):
        for s in todo:
            reports[s.name].skipped = (f"written to {output}/subgraph={s.name}/ (not a local directory: "
                                       "load it with `kgcult load ... --graph`)")
        return list(reports.values())
    run_id = os.urandom(8).hex()
    try:
        write_to = {s.name: loading.run_target(store, s) for s in todo}
    except BaseException:
        source.remove()
        raise
    direct = [s.graph for s in todo if write_to[s.name] == s.graph]
    swaps = [(write_to[s.name], s.graph) for s in todo if write_to[s.name] != s.graph]
    # one journal entry for every subgraph: a failure or a kill leaves the store as before
    # (graphs written directly dropped, staging graphs dropped), a commit swaps them all in
    with store.writing("ingest", dump, creates=direct, swaps=swaps) as w:
        writer = Writer(store, _scratch_dir(store), loaders=2 if (jobs or cpu_count()) > 1 else 1)
        try:
            graphs = {s.name: NamedNode(write_to[s.name]) for s in todo}
            for name, chunk in source.emit(todo):
                writer.add_ntriples(chunk, graphs[name], dump)
            source.remove()  # the frames are spent: their disk space is free before the load
            writer.flush()
        finally:
            source.remove()
            writer.remove()
        for s in todo:
            rep = reports[s.name]
            rep.triples = store.triple_count(write_to[s.name])
            extra = {"subgraph": s.name, "specSha256": s.fingerprint(), "startedAt": started,
                     "members": rep.members, "dumpFormat": kind, "runId": run_id, "engine": engine}
            if s.name in missing:
                extra["notCarried"] = missing[s.name]
            if sitelinks is not None and s.is_labels and s.sitelinks:
                extra["sitelinksSource"] = os.path.abspath(sitelinks)
                extra["sitelinksSha256"] = carried.get("sitelinksSha256", "")
            w.ops += loading.run_ops(s.graph, run_id)
            w.record(kind="ingest", source=dump if "://" in dump else os.path.abspath(dump),
                     sha256=digest, graph=s.graph, triples=rep.triples, extra=extra)
    for s in todo:
        rep = reports[s.name]
        rep.seconds = time.perf_counter() - t0
        log.info("%s: %d triples in %s (%d members)", s.name, rep.triples, s.graph, rep.members)
    return list(reports.values())


def _not_carried(kind, plan, todo, reports, carried, sitelinks) -> dict[str, str]:
    """{subgraph name: what the source could not give it}, each also a warning (stderr and
    the report): the sitelink counts of a labels subgraph from an N-Triples dump that has
    none (the truthy dump never has: Wikibase writes them as page properties of the full
    dump only) and no ``--sitelinks`` file."""
    out: dict[str, str] = {}
    if kind != "ntriples" or not plan.sitelinks or carried.get("sitelinks") is None:
        return out
    if carried["sitelinks"] == 0 and sitelinks is None:
        for s in todo:
            if s.is_labels and s.sitelinks:
                out[s.name] = ("wikibase:sitelinks: the dump has no sitelink counts (the truthy dump never has: "
                               "Wikibase writes them only into the full dump, as page properties)")
                msg = (f"{s.name}: {out[s.name]}; DLAMA's subject ranking and the linker's popularity need them: "
                       "add them with --sitelinks FILE (QID<TAB>count lines, or the full dump's "
                       "wikibase:sitelinks lines; docs/mirror.md)")
                reports[s.name].warnings.append(msg)
                log.warning("%s", msg)
    return out


def _scan_local(store, dump, plan, specs, needed, reports, jobs, progress, sitelinks=None, carried=None):
    """The one read: edges into an index, kept lines into the intermediate (with the
    counts of a ``sitelinks`` file); then the crawl. Returns (the members' line source,
    the dump's sha256); ``carried["sitelinks"]``: the dump's wikibase:sitelinks lines."""
    carried = {} if carried is None else carried
    jobs = jobs or cpu_count()
    tmpdir = _scratch_dir(store)
    fd, tmp = tempfile.mkstemp(prefix="ingest-", suffix=".frames", dir=tmpdir)
    os.close(fd)
    inter = scan.Intermediate(tmp)
    index = EdgeIndex(set(plan.struct_props))
    bar = progress_bar(unit="B", unit_scale=True, desc="ingest", dynamic_ncols=True, leave=True,
                       disable=None if progress is None else not progress)
    records = site = 0
    try:
        scan.start_pool_note(jobs)
        with scan.Workers(plan, jobs) as workers, DumpReader(dump, threads=jobs) as reader:
            for r in workers.scan(dump, reader, bar.update):
                records += r.records
                site += r.sitelink_counts
                for pid, (so, hv) in r.edges.items():
                    index.add_coded(pid, so, hv)
                for pid, s, o in r.other_edges:
                    index.add(pid, s, o)
                inter.write(r.lines)
            digest = reader.sha256()
            reader.check_complete(plan.kind, records)
        if plan.kind == "ntriples":
            carried["sitelinks"] = site
        if sitelinks is not None:
            carried["sitelinksSha256"], n = _scan_sitelinks(sitelinks, plan, inter)
            log.info("%s: %d sitelink counts read", sitelinks, n)
        inter.close()
    except BaseException:
        inter.remove()
        raise
    finally:
        bar.close()
    edges = index.edge_count()
    index.freeze()
    log.info("read %d %s; %d edges of %d properties indexed; %.1f MB kept for the emission", records,
             "entities" if plan.kind == "json" else "triples", edges,
             len(plan.struct_props), inter.bytes / 1e6)
    backend = select(index, specs, needed, reports)
    log.info("the selection holds %.3f MB: edge index %.3f MB, member sets %.3f MB (%d memberships)",
             (index.nbytes() + backend.nbytes()) / 1e6, index.nbytes() / 1e6, backend.nbytes() / 1e6,
             sum(len(m) for m in backend.members.values()))
    return FrameSource(inter, backend, jobs), digest


def _scan_sitelinks(path: str, plan, inter) -> tuple[str, int]:
    """The counts of a ``--sitelinks`` file into the intermediate, through the dump's
    N-Triples scan: (the file's sha256, the counts read)."""
    n = 0
    for first, data in sitelink_file.ntriples_blocks(path):
        if first is None:
            return data, n
        if plan.sitelinks and data:
            r = scan.scan_nt_block(plan, first, data, terms=True)
            if r.error:
                raise IngestError(f"{path}:{r.error_line}: {r.error}")
            n += r.sitelink_counts
            if len(r.groups):
                inter.write(scan.pack_frame(r))
    return "", n


def _scratch_dir(store) -> str | None:
    """The store's directory (scratch files stay on its disk), or None: the system's."""
    path = getattr(store, "path", None)
    return str(path) if path and os.path.isdir(str(path)) else None
