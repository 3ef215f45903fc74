"""The store layer: the embedded Oxigraph store and a remote SPARQL endpoint behind one
read interface (:class:`StoreReads`), bulk loading, RDF input, snapshots and the
hierarchy closure. ``open_store(location)`` picks the backend from the location."""
from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING

from kgcult.store.base import DEFAULT_GRAPH, DEFAULT_LOCATION, StoreReads, resolve_location
from kgcult.errors import QuerySyntaxError

if TYPE_CHECKING:
    from kgcult.store.embedded import LoadInterrupted, LoadReport, Store
    from kgcult.store.remote import RemoteStore


def open_store(location: str | os.PathLike | None = None, *, read_only: bool = False):
    """Open the store at ``location``: a directory (embedded Oxigraph) or, for
    ``sparql+http(s)://...``, a remote SPARQL 1.1 endpoint used read-only."""
    loc = resolve_location(location)
    if loc.startswith(("sparql+http://", "sparql+https://")):
        return __getattr__("RemoteStore")(loc[len("sparql+"):])
    from kgcult.store.embedded import Store
    return Store(loc, read_only=read_only)


def __getattr__(name: str):
    # the HTTP client stack (urllib3, ssl: ~45 ms and ~5 MB) is imported only by a remote
    # store, not by every command that opens the embedded one
    if name == "RemoteStore":
        return importlib.import_module("kgcult.store.remote").RemoteStore
    # the embedded store (rdflib, the load and recovery code: ~0.1 s) is imported when a
    # store is opened or named, not by a command that reads only a built label index
    if name in ("LoadInterrupted", "LoadReport", "Store"):
        return getattr(importlib.import_module("kgcult.store.embedded"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DEFAULT_GRAPH", "DEFAULT_LOCATION", "LoadInterrupted", "LoadReport", "QuerySyntaxError", "RemoteStore", "Store", "StoreReads", "open_store",
           "resolve_location"]
