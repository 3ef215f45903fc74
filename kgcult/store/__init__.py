"""The store layer: the embedded Oxigraph store and a remote SPARQL endpoint behind one
read interface (:class:`StoreReads`), bulk loading, RDF input, snapshots and the
hierarchy closure. ``open_store(location)`` picks the backend from the location."""
from __future__ import annotations

import importlib
import os

from kgcult.store.base import DEFAULT_GRAPH, DEFAULT_LOCATION, StoreReads, resolve_location
from kgcult.errors import QuerySyntaxError
from kgcult.store.embedded import LoadInterrupted, LoadReport, Store


def open_store(location: str | os.PathLike | None = None, *, read_only: bool = False):
    """Open the store at ``location``: a directory (embedded Oxigraph) or, for
    ``sparql+http(s)://...``, a remote SPARQL 1.1 endpoint used read-only."""
    loc = resolve_location(location)
    if loc.startswith(("sparql+http://", "sparql+https://")):
        return __getattr__("RemoteStore")(loc[len("sparql+"):])
    return Store(loc, read_only=read_only)


def __getattr__(name: str):
    # the HTTP client stack (urllib3, ssl: ~45 ms and ~5 MB) is imported only by a remote
    # store, not by every command that opens the embedded one
    if name == "RemoteStore":
        return importlib.import_module("kgcult.store.remote").RemoteStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DEFAULT_GRAPH", "DEFAULT_LOCATION", "LoadInterrupted", "LoadReport", "QuerySyntaxError", "RemoteStore", "Store", "StoreReads", "open_store",
           "resolve_location"]
