"""``kgcult serve``: a SPARQL 1.1 Protocol endpoint over the store, with a query page.

``config`` (settings and their checks), ``protocol`` (SPARQL protocol requests, content
negotiation), ``endpoint`` (the logic: worker pool, deadlines, limits, updates, entity
cards), ``pages`` (the query page and entity pages), ``app`` (Werkzeug routing and the
cheroot server). :class:`Server` is the entry point.
"""
from __future__ import annotations

from kgcult.serve.app import Server
from kgcult.serve.config import ServeConfig

__all__ = ["ServeConfig", "Server"]
