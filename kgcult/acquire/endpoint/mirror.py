"""Mirror Wikidata subgraphs from a WDQS-compatible SPARQL endpoint into the store.

For each subgraph spec (``ontology/subgraphs.ttl``, see :mod:`kgcult.acquire.subgraphs`), the
crawl (:mod:`kgcult.acquire.crawl`) asks this module's backend to:

0. plan: count every spec's first level before anything is fetched, and refuse specs too
   large for an endpoint (:mod:`kgcult.acquire.endpoint.plan`);
1. select members: the roots, then level by level the entities one step below them
   (``?x wdt:P31 ?c``, one bound predicate per query, ``?c`` bound by VALUES batches; each
   batch counted first and its enumeration cut into queries of at most ``page_size``
   rows: by scope value, then by the IRI's last digits; no property path, no sorting,
   no paging), plus seeds read from the graphs of subgraphs mirrored before;
2. fetch their truthy claims (or labels) in batches: CONSTRUCT + VALUES over at most
   ``batch_size`` ids, restricted to the spec's properties;
3. follow the objects of ``followProperty`` claims to a fixpoint, up to ``followDepth``.

Lossless and resumable: every response is parsed completely before anything is kept
(:mod:`kgcult.acquire.endpoint.client`); each finished batch is staged as a file and memoized in the
checkpoint (:mod:`kgcult.acquire.endpoint.checkpoint`), so a re-run after a crash or ``kill -9``
skips finished work and ends with the same triples; a complete subgraph reaches the store
in one journaled write (``Store.writing``: a kill rolls it back, the re-run writes it again)
with its provenance record (:func:`kgcult.store.loading.run_target`); the closure is marked
stale. A query that exhausts its retries (or the run's retry budget) fails the
run, naming the batch.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from pyoxigraph import Literal, NamedNode

from kgcult import ids, vocab
from kgcult.acquire import subgraphs
from kgcult.store import loading
from kgcult.acquire.endpoint.checkpoint import Checkpoint, default_path, load_batches, staging_dir, staging_root, write_batch
from kgcult.acquire.crawl import crawl
from kgcult.acquire.endpoint.client import EndpointClient, MirrorConfig, MirrorError
from kgcult.sparql.client import BadResponse, Reply, json_answer
from kgcult.acquire.endpoint.plan import DEFAULT_MAX_MEMBERS, Estimate, Planner, refuse
from kgcult.acquire.endpoint.queries import NAMES, Requested, labels_query, sha, statements_query, template
from kgcult.acquire.outcome import SubgraphReport
from kgcult.acquire.subgraphs import SubgraphSpec
from kgcult.log import progress as progress_bar
from kgcult.sparql.query_text import bind_values
from kgcult.store.embedded import now_iso

log = logging.getLogger(__name__)
_META = NamedNode(vocab.META_GRAPH)


def chunks(items: list, n: int) -> list[list]:
    return [items[i:i + n] for i in range(0, len(items), n)]


def seeds_from_store(store, spec: SubgraphSpec, specs: dict[str, SubgraphSpec]) -> set[str]:
    """Seeds of ``spec`` read from the local graphs of the subgraphs it names."""
    out: set[str] = set()
    for name in spec.seed_from:
        g = NamedNode(specs[name].graph) if name in specs else NamedNode(vocab.graph_iri(name))
        if spec.seed_all:
            rows = store.query(bind_values(
                "SELECT DISTINCT ?e WHERE { GRAPH ?g { { ?e ?p ?o } UNION { ?s ?p ?e } } "
                f"FILTER(isIRI(?e) && STRSTARTS(STR(?e), {Literal(vocab.WD)})) }}", {"g": g}))
            terms = (r["e"] for r in rows)
        else:
            terms = (q.object for p in spec.seed_properties
                     for q in store.quads_for_pattern(None, vocab.wdt(p), None, g))
        out.update(e for e in map(ids.entity_of_term, terms) if e)
    return out


def grouped_counts(client: EndpointClient, query: str, what: str) -> dict[str, int]:
    """{entity id of ?c: ?n} from a grouped count (count.rq)."""
    def check(reply: Reply) -> dict[str, int]:
        if "json" not in reply.content_type:
            raise BadResponse(f"expected SPARQL JSON results, got {reply.content_type or 'no content type'}")
        try:
            out = {}
            for r in json_answer(reply.body, client.http.endpoint)["results"]["bindings"]:
                c = ids.entity_of_iri(r["c"]["value"])
                if c:
                    out[c] = int(r["n"]["value"])
            return out
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
            raise BadResponse(f"malformed SPARQL JSON counts: {e}") from None

    return client._ask(query, "application/sparql-results+json", check, what)


class EndpointBackend:
    """The crawl's backend for an endpoint: enumeration pages and CONSTRUCT batches run on
    a pool of workers, each finished batch staged and memoized in the checkpoint."""

    def __init__(self, store, specs, client: EndpointClient, checkpoint: Checkpoint, pool: ThreadPoolExecutor,
                 config: MirrorConfig, bar, max_members: int = DEFAULT_MAX_MEMBERS):
        self.store, self.specs, self.client, self.cp = store, specs, client, checkpoint
        self.pool, self.config, self.bar = pool, config, bar
        self.tpl = {n: template(n) for n in NAMES}
        self.planner = Planner(self.tpl, config.page_size, max_members)
        self.counts: dict[str, int | dict[str, int]] = {}   # count query sha -> answer, for the whole run
        self.spec: SubgraphSpec | None = None
        self.memo: dict[str, str] = {}
        self.keys: list[str] = []
        self.queries = 0
        self.resumed = 0
        self.triples = 0
        self.dropped = 0

    def begin(self, spec: SubgraphSpec, staged: Path) -> None:
        self.staging = staged
        self.spec = spec
        staged.mkdir(parents=True, exist_ok=True)
        self.memo = {k: v for k, v in self.cp.results(spec.name).items()
                     if not k.startswith("construct:") or self.batch_file(k).exists()}
        self.keys, self.queries, self.resumed, self.triples, self.dropped = [], 0, 0, 0, 0

    def batch_file(self, key: str) -> Path:
        return self.staging / (key.split(":", 1)[1] + ".nt")

    def batch_files(self) -> list[Path]:
        return [self.batch_file(k) for k in sorted(set(self.keys)) if k.startswith("construct:")]

    def _tick(self, n_triples: int = 0) -> None:
        self.triples += max(n_triples, 0)
        self.bar.update(1)
        self.bar.set_postfix(triples=self.triples, MB=round(self.client.bytes / 1e6, 1),
                             retries=self.client.retries, refresh=False)

    def _add_total(self, n: int) -> None:
        self.bar.total = (self.bar.total or 0) + n
        self.bar.refresh()

    def seeds(self, spec: SubgraphSpec) -> set[str]:
        return seeds_from_store(self.store, spec, self.specs)

    # -- counts (the plan's and the walk's), memoized in the checkpoint ---------------------
    def count(self, query: str, what: str) -> int:
        key = "count:" + sha(query)
        if key not in self.counts:
            memo = self.memo.get(key)
            self.counts[key] = json.loads(memo) if memo is not None else self.client.count(query, what)
            self.queries += memo is None
        self._remember(key)
        n = self.counts[key]
        assert isinstance(n, int)  # a count query's answer (count_rows' are dicts)
        return n

    def count_rows(self, query: str, what: str) -> dict[str, int]:
        key = "count:" + sha(query)
        if key not in self.counts:
            memo = self.memo.get(key)
            self.counts[key] = json.loads(memo) if memo is not None else grouped_counts(self.client, query, what)
            self.queries += memo is None
        self._remember(key)
        rows = self.counts[key]
        assert isinstance(rows, dict)  # a grouped count query's answer
        return rows

    def _remember(self, key: str) -> None:
        if self.spec is not None and key not in self.memo:
            self.memo[key] = json.dumps(self.counts[key])
            self.cp.put(self.spec.name, key, self.counts[key])

    def down(self, spec: SubgraphSpec, level: int, frontier: list[str]) -> set[str]:
        units = []
        for prop in spec.member_properties:
            for i, chunk in enumerate(chunks(frontier, self.config.class_batch_size)):
                what = f"{spec.name}: enumeration level {level + 1}, class batch {i + 1}"
                counts = self.planner.class_counts(spec, prop, chunk, level, self.count, self.count_rows,
                                                   f"{what} ({prop} counts, {chunk[0]}..{chunk[-1]})")
                units += self.planner.units(spec, prop, counts, chunk, self.count, what)
        self._add_total(len(units))
        result: set[str] = set()
        pending = {}
        for u in units:
            key = "members:" + sha(u.query)
            self.keys.append(key)
            if key in self.memo:
                result.update(json.loads(self.memo[key]))
                self.resumed += 1
                self._tick()
            else:
                pending[self.pool.submit(self._enumerate, u)] = key
        for fut in _as_completed(pending):
            found = fut.result()
            self.queries += 1
            self.cp.put(spec.name, pending[fut], found)
            result.update(found)
            self._tick()
        return result

    def _enumerate(self, unit) -> list[str]:
        iris = self.client.select_iris(unit.query, "x", unit.what)
        return sorted({e for e in map(ids.entity_of_iri, iris) if e}, key=ids.sort_key)

    def fetch(self, spec: SubgraphSpec, level: int, members: list[str]) -> set[str]:
        jobs = []
        batches = chunks(members, self.config.batch_size)
        for i, batch in enumerate(batches):
            where = f"{spec.name}: level {level}, batch {i + 1}/{len(batches)} ({batch[0]}..{batch[-1]}, {len(batch)} ids)"
            asked = Requested.of(spec, batch)
            if spec.is_labels:
                jobs.append((labels_query(self.tpl["labels"], batch, list(spec.label_properties),
                                          list(spec.languages), spec.sitelinks), where + " labels", asked))
            else:
                jobs.append((statements_query(self.tpl["statements"], batch, list(spec.properties)), where, asked))
        self._add_total(len(jobs))
        follow = {vocab.WDT + p for p in spec.follow_properties}
        objects: set[str] = set()
        pending = {}
        for q, what, asked in jobs:
            key = "construct:" + sha(q)
            self.keys.append(key)
            if key in self.memo:
                memo = json.loads(self.memo[key])
                objects.update(memo["objects"])
                self.dropped += memo.get("dropped", 0)
                self.resumed += 1
                self._tick()
            else:
                pending[self.pool.submit(self._fetch_one, q, what, self.batch_file(key), follow, asked)] = key
        for fut in _as_completed(pending):
            n, objs, dropped = fut.result()
            # the batch file is complete (written, fsynced, renamed) before the checkpoint says so
            self.cp.put(spec.name, pending[fut], {"triples": n, "objects": objs, "dropped": dropped})
            self.queries += 1
            self.dropped += dropped
            objects.update(objs)
            self._tick(n)
        return objects

    def _fetch_one(self, q: str, what: str, path: Path, follow: set[str],
                   asked: Requested) -> tuple[int, list[str], int]:
        """In a worker thread: fetch one batch, parse it completely, keep what it asked
        for, stage that as a file."""
        triples, dropped = asked.split(self.client.construct(q, what))
        if dropped:
            log.info("%s: dropped %d triple(s) the endpoint added (subjects or properties not asked for)",
                     what, dropped)
        objs = sorted({e for t in triples if t.predicate.value in follow
                       for e in [ids.entity_of_term(t.object)] if e}, key=ids.sort_key)
        write_batch(path, triples)
        return len(triples), objs, dropped


def _as_completed(futures: dict):
    try:
        yield from as_completed(futures)
    except BaseException:
        for f in futures:
            f.cancel()
        raise


# -- the command --------------------------------------------------------------------------

def mirror(store, names=None, *, config: MirrorConfig | None = None, specs=None,
           progress: bool | None = None, max_members: int = DEFAULT_MAX_MEMBERS,
           plan_only: bool = False, plan_out: list | None = None) -> list[SubgraphReport]:
    """Mirror the named subgraphs (all when none) from ``config.endpoint`` into ``store``.
    ``progress``: a progress bar on stderr (None: when stderr is a terminal).

    The run plans first: every spec's first level is counted at the endpoint
    (:mod:`kgcult.acquire.endpoint.plan`) and, before anything is fetched, specs larger
    than ``max_members`` are refused (:class:`~kgcult.acquire.endpoint.plan.PlanRefused`).
    ``plan_only``: stop after the plan (nothing is written). The estimates are appended to
    ``plan_out`` when given."""
    config = config or MirrorConfig()
    config.validate()
    if getattr(store, "remote", False) or getattr(store, "read_only", False):
        raise MirrorError("mirror writes into an embedded, writable store (not a remote endpoint)")
    specs = specs or subgraphs.load_specs()
    chosen = subgraphs.select(specs, names)
    cp = Checkpoint(config.checkpoint or default_path(store))
    client = EndpointClient(config)
    bar = progress_bar(total=0, unit="query", desc="mirror", dynamic_ncols=True, leave=True,
                       disable=None if progress is None else not progress)
    reports: list[SubgraphReport] = []
    try:
        with ThreadPoolExecutor(max_workers=config.concurrency, thread_name_prefix="kgcult-mirror") as pool:
            backend = EndpointBackend(store, specs, client, cp, pool, config, bar, max_members)
            estimates = plan(store, chosen, backend, config)
            if plan_out is not None:
                plan_out.extend(estimates)
            refuse(estimates)
            if plan_only:
                return reports
            changed: set[str] = set()
            for spec in chosen:
                bar.set_description(f"mirror {spec.name}")
                # a subgraph seeded from graphs this run changed is re-pulled, too
                force = bool(set(spec.seed_from) & changed)
                rep = _mirror_one(store, spec, backend, cp, config, client, force=force)
                if not rep.skipped:
                    changed.add(spec.name)
                reports.append(rep)
    finally:
        bar.close()
        client.close()
        cp.close()
        store.flush()
    return reports


def plan(store, chosen: list[SubgraphSpec], backend: EndpointBackend, config: MirrorConfig) -> list[Estimate]:
    """Every chosen spec's size estimate, counted at the endpoint before anything is
    fetched (specs already mirrored, that this run will skip, are not counted)."""
    backend.spec = None  # plan counts belong to no subgraph's checkpoint (yet)
    out = []
    for spec in chosen:
        if loading.run_marker(store, spec.graph) is not None and not config.refresh:
            continue
        est = backend.planner.estimate(spec, backend.count)
        log.debug("plan: %s: %s", spec.name, "seeded from " + ", ".join(spec.seed_from) + " (counted when they are done)"
                 if est.first_level is None else f"{est.first_level:,} members at its first level"
                 + (f" ({est.partitions} partitions)" if est.partitions else ""))
        out.append(est)
    return out


def _mirror_one(store, spec, backend: EndpointBackend, cp: Checkpoint, config, client,
                force: bool = False) -> SubgraphReport:
    t0 = time.perf_counter()
    rep = SubgraphReport(spec.name, spec.graph)
    fp = spec.fingerprint()
    run = cp.run(spec.name)
    if run and (run["fingerprint"] != fp or run["endpoint"] != config.endpoint):
        log.info("%s: the checkpoint is for another spec or endpoint; starting over", spec.name)
        run = None
    if run is None:
        existing = store.triple_count(spec.graph)
        refresh = config.refresh or force
        marker = loading.run_marker(store, spec.graph)
        if marker is not None and not refresh:
            rep.skipped = "already mirrored (use --refresh to re-pull and replace it)"
            rep.triples = existing
            log.info("%s: %s", spec.name, rep.skipped)
            return rep
        if existing and not refresh and marker is None:
            raise MirrorError(f"{spec.name}: graph {spec.graph} already holds {existing} triples that "
                              "`kgcult mirror` did not write; pass --refresh to replace it")
        run = {"run_id": os.urandom(8).hex(), "started": now_iso()}
        shutil.rmtree(staging_root(cp.path) / spec.name, ignore_errors=True)
        cp.start(spec.name, run["run_id"], fp, config.endpoint, run["started"])
    else:
        log.info("%s: resuming run %s from the checkpoint", spec.name, run["run_id"])
    missing = [d for d in spec.seed_from
               if not store.triple_count(backend.specs[d].graph if d in backend.specs else vocab.graph_iri(d))]
    if missing:
        log.warning("%s is seeded from %s, which the store does not hold (yet): mirror them first, "
                    "or together with it", spec.name, ", ".join(missing))
    retries_before = client.retries
    sdir = staging_dir(cp.path, spec.name, run["run_id"])
    backend.begin(spec, sdir)
    members, rep.warnings = crawl(spec, backend)  # all memoized when resuming a finished crawl
    rep.members = len(members)
    rep.queries, rep.resumed_queries, rep.dropped = backend.queries, backend.resumed, backend.dropped
    if rep.dropped:
        rep.warnings.append(f"{spec.name}: dropped {rep.dropped} triple(s) the endpoint sent about subjects, "
                            "properties or languages its queries did not ask for")
        log.warning("%s", rep.warnings[-1])
    rep.retries = client.retries - retries_before
    if loading.run_marker(store, spec.graph) != run["run_id"]:  # else: killed after the commit
        target = loading.run_target(store, spec)
        direct = target == spec.graph
        with store.writing("mirror", spec.name, creates=[target] if direct else [],
                           swaps=[] if direct else [(target, spec.graph)]) as w:
            load_batches(store, target, backend.batch_files())
            rep.triples = store.triple_count(target)  # what the graph holds once committed
            w.ops += loading.run_ops(spec.graph, run["run_id"])
            _record(w, spec, config, run, rep, sorted(set(backend.keys)), backend, fp)
    rep.triples = store.triple_count(spec.graph)
    cp.finish(spec.name)
    shutil.rmtree(sdir.parent, ignore_errors=True)
    rep.seconds = time.perf_counter() - t0
    log.info("%s: %d triples in %s (%d queries, %d resumed from the checkpoint, %d retries, %.1f s)",
             spec.name, rep.triples, spec.graph, rep.queries, rep.resumed_queries, rep.retries, rep.seconds)
    return rep


def _record(w, spec, config, run, rep, keys, backend, fp) -> None:
    w.record(
        kind="mirror", source=config.endpoint, sha256=sha("\n".join(keys)), graph=spec.graph,
        triples=rep.triples,
        extra={
            "subgraph": spec.name, "specSha256": fp, "queryCount": len(keys),
            "templateSha256": sha("".join(backend.tpl[n] for n in sorted(backend.tpl))),
            "startedAt": run["started"], "members": rep.members, "userAgent": config.user_agent,
            "droppedTriples": rep.dropped,
            "runId": run["run_id"],
        },
    )
