"""The Python API: one object to hang a notebook or a script on.

    >>> import kgcult
    >>> kg = kgcult.open(".kgcult/store")           # or "sparql+https://host/sparql"
    >>> kg.sparql("SELECT ?l WHERE { wd:Q17 rdfs:label ?l FILTER(LANG(?l) = 'en') }")
    [{'l': 'Japan'}]

:class:`KG` wraps a store (embedded or remote) and calls the same library functions as
the CLI: ``kg.show`` is ``kgcult show``, ``kg.build`` is ``kgcult build``, and so on.
docs/python-api.md shows every method with examples that the test suite runs.
"""
from __future__ import annotations

import os
from typing import Sequence

import pyoxigraph as ox

from kgcult import inspection, views
from kgcult.ids import node as wd  # kgcult.wd("Q17"): an entity term to bind  # noqa: F401
from kgcult.link import Linker
from kgcult.serve import Server, ServeConfig
from kgcult.store import hierarchy
from kgcult.store import open_store, snapshot
from kgcult.store.embedded import LoadReport


class KG:
    """A kgcult store opened for reading and building: ``kgcult.open(location)``."""

    def __init__(self, location: str | os.PathLike | None = None, *, read_only: bool = False):
        self.store = open_store(location, read_only=read_only)
        self.location = self.store.location

    def __repr__(self) -> str:
        return f"<kgcult.KG {self.location}>"

    # -- querying -----------------------------------------------------------------

    def sparql(self, query: str, *, graph: str | None = None, **bindings):
        """Run a SPARQL query over the union of all graphs; queries written for WDQS run unchanged
        (its prefixes, the label service, paths from the closure: docs/wdqs.md).

        SELECT gives a list of ``{variable: value}`` dicts (values as strings, unbound
        variables left out), ASK a bool, CONSTRUCT/DESCRIBE a list of pyoxigraph triples.
        Keyword arguments are bound as values (never formatted into the query text):
        ``kg.sparql("SELECT ?l WHERE { ?x rdfs:label ?l }", x=kgcult.wd("Q17"))``."""
        res = self.query(query, graph=graph, **bindings)
        if isinstance(res, ox.QueryBoolean):
            return bool(res)
        if isinstance(res, ox.QueryTriples):
            return list(res)
        names = [v.value for v in res.variables]
        return [{n: sol[n].value for n in names if sol[n] is not None} for sol in res]

    def query(self, query: str, *, graph: str | None = None, **bindings):
        """The same query, answered with pyoxigraph's own result objects (terms kept)."""
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

    def build(self, name: str, *, out: str | os.PathLike | None = None, **params) -> views.BuildResult:
        """Materialize a dataset view in memory (``r.rows``, ``r.outputs``, ``r.manifest``);
        ``r.write(directory)`` (or ``out=``) writes the files ``kgcult build`` writes,
        byte for byte. Parameters are the view's (``languages=["en"]``, ``countries=[...]``)."""
        return views.build(self.store, name, params, out=out)

    def linker(self, **options) -> Linker:
        """An entity linker over this store (``kgcult link``); ``linker.link("lemon",
        lang="en", topic="food")`` gives one result dict."""
        return Linker.open(self.store, **options)

    def serve(self, *, port: int = 0, bind: str = "127.0.0.1", **options) -> Server:
        """A SPARQL endpoint over this store in a background thread, as a context manager:
        ``with kg.serve() as srv: SPARQLWrapper(srv.url) ...``."""
        return Server(self.store, ServeConfig(bind=bind, port=port, **options)).start()

    # -- lifetime -----------------------------------------------------------------

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> "KG":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open(location: str | os.PathLike | None = None, *, read_only: bool = False) -> KG:  # noqa: A001
    """Open a store: a directory (created if missing, unless ``read_only``), the default
    ``.kgcult/store`` (or ``$KGCULT_STORE``) when omitted, or ``sparql+http(s)://...`` for a
    remote SPARQL endpoint (read-only)."""
    return KG(location, read_only=read_only)
