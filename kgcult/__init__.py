"""kgcult: a local Wikidata mirror for research on cultural knowledge in language models.

``kgcult.open(location)`` gives a :class:`KG`, the Python API over the same library
functions the ``kgcult`` command uses (see docs/python-api.md).

The package init stays light: ``open``, ``KG``, ``wd``, ``Store`` and ``open_store`` are
resolved on first use (PEP 562), so importing one subpackage (``kgcult.store``, or the
CLI for one command) does not import every feature.
"""
from __future__ import annotations

import importlib

from kgcult.errors import KgcultError
from kgcult.version import __version__

_LAZY = {"open": "kgcult.api", "KG": "kgcult.api", "wd": "kgcult.api",
         "Store": "kgcult.store", "open_store": "kgcult.store"}

__all__ = ["KG", "KgcultError", "Store", "__version__", "open", "open_store", "wd"]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'kgcult' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
