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
    return __getattr__("Store")(loc, read_only=read_only)


# Each backend's module, imported when first named: the HTTP client stack (urllib3, ssl:
# ~45 ms and ~5 MB) only by a remote store, and the embedded store's (its recovery,
# provenance and set-graph layers bring rdflib: ~100 ms) only by a command that opens it,
# not by every module that reads one of the store's side files (kgcult annotate).
_LAZY = {"RemoteStore": "kgcult.store.remote", "Store": "kgcult.store.embedded",
         "LoadInterrupted": "kgcult.store.embedded", "LoadReport": "kgcult.store.embedded"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DEFAULT_GRAPH", "DEFAULT_LOCATION", "LoadInterrupted", "LoadReport", "QuerySyntaxError", "RemoteStore", "Store", "StoreReads", "open_store",
           "resolve_location"]
