"""The Python API: one object to hang a notebook or a script on.

    >>> import kgcult
    >>> kg = kgcult.open(".kgcult/store")           # or "sparql+https://host/sparql"
    >>> kg.sparql("SELECT ?l WHERE { wd:Q17 rdfs:label ?l FILTER(LANG(?l) = 'en') }")
    [{'l': 'Japan'}]

One store directory is opened once per process: a second ``kgcult.open()`` of it shares the
open store (RocksDB allows one writer), and the store closes when the last KG on it does.

:class:`KG` wraps a store (embedded or remote) and calls the same library functions as
the CLI: ``kg.show`` is ``kgcult show``, ``kg.build`` is ``kgcult build``, and so on.
docs/python-api.md shows every method with examples that the test suite runs.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any, Sequence

import pyoxigraph as ox

from kgcult import extras, inspection, spectral, views
from kgcult.acquire.dump.ingest import ingest
from kgcult.annotate import Annotator
from kgcult.annotate import parallel as annotate_parallel
from kgcult.acquire.endpoint.client import MirrorConfig
from kgcult.acquire.endpoint.mirror import mirror
from kgcult.acquire.outcome import SubgraphReport
from kgcult.errors import KgcultError
from kgcult.eval import linking as link_eval
from kgcult.ids import node as wd  # kgcult.wd("Q17"): an entity term to bind  # noqa: F401
from kgcult.link import Linker
from kgcult.link.index import reader as link_index
from kgcult.probe import pipeline as probe_pipeline
from kgcult.serve import Server, ServeConfig
from kgcult.store import hierarchy
from kgcult.store import open_store, resolve_location, snapshot
from kgcult.store.embedded import LoadReport
from kgcult.sparql.values import python_value
from kgcult.synth import pipeline as synth_pipeline
from kgcult.views import BuildResult


class Rows(list):
    """The rows of a SELECT: a list of ``{variable: value}`` dicts (typed values, see
    :mod:`kgcult.sparql.values`; unbound variables left out), with ``variables`` in the
    query's order and :meth:`to_pandas`."""

    def __init__(self, rows: list[dict], variables: list[str]):
        super().__init__(rows)
        self.variables = variables

    def to_pandas(self):
        """A pandas DataFrame with one column per variable (unbound: None); needs pandas
        (``pip install 'kgcult[hf]'``)."""
        pd = extras.require("pandas", "hf", "Rows.to_pandas()")
        return pd.DataFrame([[r.get(v) for v in self.variables] for r in self], columns=self.variables)


class _Shared:
    """The embedded stores open in this process, by directory: one open per directory."""

    lock = threading.Lock()
    stores: dict[str, list] = {}  # real path -> [store, number of KGs on it]

    @classmethod
    def acquire(cls, location, read_only: bool):
        loc = resolve_location(location)
        if loc.startswith(("sparql+http://", "sparql+https://")):
            return open_store(loc, read_only=read_only), None
        key = os.path.realpath(loc)
        with cls.lock:
            held = cls.stores.get(key)
            if held is not None:
                if held[0].read_only and not read_only:
                    raise KgcultError(
                        f"{loc} is open read-only in this process: close that KG "
                        "(kg.close()) before opening it for writing, or open it with read_only=True")
                held[1] += 1
                return held[0], key
            store = open_store(loc, read_only=read_only)
            cls.stores[key] = [store, 1]
            return store, key

    @classmethod
    def release(cls, key: str | None, store) -> None:
        with cls.lock:
            if not key or key not in cls.stores:
                store.close()
                return
            held = cls.stores[key]
            held[1] -= 1
            if held[1] == 0:
                del cls.stores[key]
                store.close()


class KG:
    """A kgcult store opened for reading and building: ``kgcult.open(location)``."""

    def __init__(self, location: str | os.PathLike | None = None, *, read_only: bool = False):
        self._store, self._key = _Shared.acquire(location, read_only)
        self.location = self._store.location

    @property
    def store(self):
        """The open store (:class:`kgcult.store.Store` or a remote one)."""
        if self._store is None:
            raise KgcultError(f"this KG on {self.location} is closed: open it again with kgcult.open()")
        return self._store

    @property
    def closed(self) -> bool:
        return self._store is None

    def __repr__(self) -> str:
        return f"<kgcult.KG {self.location}{' (closed)' if self.closed else ''}>"

    # -- querying -----------------------------------------------------------------

    def sparql(self, query: str, *, bindings: dict[str, Any] | None = None, graph: str | None = None):
        """Run a SPARQL query over all graphs; queries written for WDQS run unchanged
        (its prefixes, the label service, paths from the closure: docs/wdqs.md).

        SELECT gives :class:`Rows`, a list of ``{variable: value}`` dicts with typed values
        (numbers, booleans, dates; :class:`~kgcult.sparql.values.IRI` and
        :class:`~kgcult.sparql.values.LangString` are ``str`` with ``.qid`` / ``.lang``;
        unbound variables left out) and ``to_pandas()``; ASK a bool; CONSTRUCT/DESCRIBE a
        list of pyoxigraph triples. ``bindings`` binds values (never formatted into the query
        text): ``kg.sparql("SELECT ?l WHERE { ?x rdfs:label ?l }", bindings={"x": kgcult.wd("Q17")})``."""
        res = self.query(query, bindings=bindings, graph=graph)
        if isinstance(res, ox.QueryBoolean):
            return bool(res)
        if isinstance(res, ox.QueryTriples):
            return list(res)
        names = [v.value for v in res.variables]
        return Rows([{n: python_value(sol[n]) for n in names if sol[n] is not None} for sol in res], names)

    def query(self, query: str, *, bindings: dict[str, Any] | None = None, graph: str | None = None):
        """The same query, answered with pyoxigraph's own result objects (terms kept)."""
        if bindings is not None and not isinstance(bindings, dict):
            raise KgcultError("bindings must be a dict {variable: value}")
        return self.store.query(query, graph=graph, bindings=bindings or None)

    def show(self, qid: str, lang: str = "en") -> dict:
        """The entity card of ``kgcult show``: labels, claims with labels, ancestors."""
        hierarchy.ensure_closure(self.store)
        return inspection.show(self.store, qid, lang=lang)

    def stats(self) -> dict:
        """Triples per graph, entities per root class, labels per language."""
        return inspection.stats(self.store)

    # -- writing ------------------------------------------------------------------

    def load(self, paths: str | os.PathLike | Sequence[str | os.PathLike], graph: str | None = None
             ) -> list[LoadReport]:
        """Bulk-load RDF files, all or nothing (``kgcult load``)."""
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        return self.store.load(list(paths), graph=graph)

    def import_snapshot(self, directory: str | os.PathLike, *, replace: bool = False) -> dict:
        """Verify and import a snapshot directory (``kgcult snapshot import``); its manifest."""
        return snapshot.import_(self.store, directory, replace=replace)

    def export_snapshot(self, directory: str | os.PathLike) -> dict:
        """Write a snapshot of the store (``kgcult snapshot export``); its manifest."""
        return snapshot.export(self.store, directory)

    def verify_snapshot(self, directory: str | os.PathLike) -> dict:
        """Check a snapshot completely without loading it (``kgcult snapshot verify``); its
        manifest, or a :class:`~kgcult.store.snapshot.SnapshotError` naming what is wrong."""
        return snapshot.verify(directory)

    def mirror(self, subgraphs: Sequence[str] = (), *, config: MirrorConfig | None = None,
               specs=None, progress: bool | None = False, **settings) -> list[SubgraphReport]:
        """Pull subgraphs from a WDQS-compatible endpoint (``kgcult mirror``): all when none is
        named. ``settings`` are :class:`~kgcult.acquire.endpoint.client.MirrorConfig` fields
        (``endpoint=``, ``user_agent=``, ...), or pass a whole ``config``."""
        if config is not None and settings:
            raise KgcultError("give either config= or MirrorConfig fields, not both")
        return mirror(self.store, list(subgraphs), config=config or MirrorConfig(**settings),
                      specs=specs, progress=progress)

    def ingest(self, dump: str | os.PathLike, subgraphs: Sequence[str] = (), *, progress: bool | None = False,
               **options) -> list[SubgraphReport]:
        """Filter a Wikidata JSON or truthy N-Triples dump into the subgraphs (``kgcult
        ingest``); ``options`` as the command's (``fmt=``, ``refresh=``, ``jobs=``, ``engine=``,
        ``sitelinks=``: a file of sitelink counts for a truthy dump)."""
        return ingest(self.store, os.fspath(dump), list(subgraphs), progress=progress, **options)

    def content_hash(self) -> str:
        """The sha256 of the data graphs' content, as snapshots and manifests record it."""
        return snapshot.store_content_hash(self.store)

    def closure(self, force: bool = False) -> list[hierarchy.ClosureReport]:
        """(Re)build the derived hierarchy graphs (``kgcult closure``); graphs whose input
        is unchanged are kept unless ``force``."""
        return hierarchy.build(self.store, force=force)

    # -- datasets, linking, serving ------------------------------------------------

    def views(self) -> list[dict]:
        """The datasets ``build`` can materialize, with their parameters."""
        return views.views()

    def build(self, name: str, *, out: str | os.PathLike | None = None, **params) -> BuildResult:
        """Materialize a dataset view in memory (``r.rows``, ``r.outputs``, ``r.manifest``);
        ``r.write(directory)`` (or ``out=``) writes the files ``kgcult build`` writes,
        byte for byte. Parameters are the view's (``languages=["en"]``, ``countries=[...]``)."""
        return views.build(self.store, name, params, out=out)

    def linker(self, **options) -> Linker:
        """An entity linker over this store (``kgcult link``); ``linker.link("lemon",
        lang="en", topic="food")`` gives one result dict."""
        return Linker.open(self.store, **options)

    def annotator(self) -> Annotator:
        """The annotator over this store (``kgcult annotate``), opened once per KG."""
        ann = self.__dict__.get("_annotator")
        if ann is None:
            ann = self.__dict__["_annotator"] = Annotator.open(self.store)
        return ann

    def annotate(self, text: str, *, lang: str = "en", topic: str = "food",
                 country: str | None = None) -> list[dict]:
        """The entity spans of a raw text (``kgcult annotate``): start, end (code points,
        end exclusive), text, qid, label, match, evidence, granularity, country; in text
        order, never overlapping. ``country``: the prompt's country (a QID), context for
        choosing the entities."""
        return self.annotator().annotate(text, lang=lang, topic=topic, country=country)

    def annotate_many(self, rows: Sequence[dict]) -> list[dict]:
        """``{"id", "spans"}`` per row ``{"id", "text", "lang", "topic", "country"?}``, in
        order (a bad row raises naming its field)."""
        return list(self.annotator().annotate_many(rows))

    def link_index(self, *, rebuild: bool = False, all_caches: bool = False,
                   model: str | None = None) -> dict:
        """Build (or check) the label index beside the store and the caches a link with
        the default stages reads, but those built per part on first use (``kgcult link
        index``; ``all_caches``: those too, the semantic stage's name vectors of every
        (topic, language), and with ``model`` the embedding stage's), and the annotator's
        dictionaries; its summary: path, index key, entities, languages, names, seconds,
        bytes, topics, caches, annotate."""
        t0 = time.perf_counter()
        ix = link_index.load_or_build(self.store, rebuild=rebuild)
        out = link_index.summary(self.store, ix, time.perf_counter() - t0)
        location = getattr(self.store, "location", None)
        local = location is not None and "://" not in str(location)
        annotator = annotate_parallel.Preparing(location) if local else None  # beside the caches
        out["caches"] = Linker(ix, store=self.store, model=model, embeddings=all_caches and model is not None
                               ).build_caches(all_caches=all_caches)
        out["annotate"] = annotator.result() if annotator is not None else Annotator(ix).prepare()
        return out

    def link_eval(self, gold: str | os.PathLike, *, stage_gain: bool = True,
                  count_ambiguous: bool = True, makieval: bool = True, on_error: str = "fail",
                  **options) -> dict:
        """Score the linker against a gold JSONL file (``kgcult link eval``): ``{"report",
        "errors", "results"}``; ``options`` as for :meth:`linker` (stages, embeddings, model,
        thresholds)."""
        rows = link_eval.read_gold(gold, on_error=on_error)
        return link_eval.evaluate(self.linker(**options), rows, stage_gain=stage_gain,
                                  count_ambiguous=count_ambiguous, makieval=makieval)

    def probe(self, task: str, model: str, out: str | os.PathLike, *, dataset: Sequence[str | os.PathLike] = (),
              lang: str = "en", params: dict | Sequence[str] | None = None, **options) -> dict:
        """Probe a language model with FmLAMA or DLAMA (``kgcult probe fmlama|dlama``):
        ``task`` is ``"fmlama"`` or ``"dlama"``; the rows come from ``dataset`` files, else the
        view built from this store with ``params``; results go to ``out`` (resumable) and the
        report is returned. ``options`` as the command's (``kind=``, ``device=``,
        ``batch_size=``, ``limit=``, ``subject_lang=``, ``context=``, ``embeddings=``, ...)."""
        return probe_pipeline.probe(task, model, out, open_store=self._closed_store, location=str(self.location),
                                    dataset_files=list(dataset), lang=lang, params=params, **options)

    def spectral(self, out: str | os.PathLike, *, items: str | os.PathLike | None = None,
                 models: Sequence[str] = (), **options) -> dict:
        """Effective rank, spectral ratio and category of country × item matrices (``kgcult
        spectral``): the items from a file or the spectral-items view, the graph's own matrix
        and each model's; files written to ``out``; its result. ``options`` as the command's
        (``domains=``, ``ground_truth=``, ``templates_path=``, ``plot=``, ...)."""
        return spectral.spectral(out, items_file=items, open_store=self._closed_store, models=list(models),
                                 **options)

    def synth(self, topic: str, country: str, langs: Sequence[str] = ("en",), **options) -> list[dict]:
        """Questions with gold answers from the graph's facts (``kgcult synth``): one dict per
        question, as the command writes them. ``options`` as the command's (``setting=``,
        ``versus=``, ``keywords=``, ``limit=``, ``seed=``, ``check=``, ``generator=``, ...)."""
        return synth_pipeline.run(self.store, topic, country, langs, **options)

    def knowledge(self, keyword: str, lang: str = "en", **options) -> dict:
        """The knowledge point of a QID or free text (``kgcult synth knowledge``); ``options``:
        ``topic=``, ``country=``, ``embeddings=``."""
        return synth_pipeline.knowledge(self._closed_store(), keyword, lang, **options)

    def _closed_store(self):
        """The store with a fresh closure, as the probe and spectral views read it."""
        hierarchy.ensure_closure(self.store)
        return self.store

    def serve(self, *, port: int = 0, bind: str = "127.0.0.1", **options) -> Server:
        """A SPARQL endpoint over this store in a background thread, as a context manager:
        ``with kg.serve() as srv: SPARQLWrapper(srv.url) ...``."""
        return Server(self.store, ServeConfig(bind=bind, port=port, **options)).start()

    # -- lifetime -----------------------------------------------------------------

    def close(self) -> None:
        """Close this KG (the store itself closes with the last KG on it); closing twice is
        harmless, using a closed KG is an error."""
        if self._store is not None:
            store, self._store = self._store, None
            _Shared.release(self._key, store)

    def __enter__(self) -> "KG":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open(location: str | os.PathLike | None = None, *, read_only: bool = False) -> KG:  # noqa: A001
    """Open a store: a directory (created if missing, unless ``read_only``), the default
    ``.kgcult/store`` (or ``$KGCULT_STORE``) when omitted, or ``sparql+http(s)://...`` for a
    remote SPARQL endpoint (read-only)."""
    return KG(location, read_only=read_only)
