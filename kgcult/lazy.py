"""Modules imported at their first use, not when a module that names them is imported.

numpy takes 60-80 ms to import: a third of what a fresh ``kgcult annotate`` or
``kgcult link`` spends importing, where reading the link index needs none of it (its
arrays are mapped as memoryviews, :func:`kgcult.link.index.layout.load_array`) and
only the stages that compute with vectors (semantic, embedding) and the builders use
it. Those modules name it as ``np = lazy.module("numpy")``; the first attribute read
imports it.

The stand-in is a module object of its own: nothing is put in ``sys.modules``, and any
thread may touch it first (``importlib``'s module lock serializes the import itself). The
standard library's ``importlib.util.LazyLoader`` is not used: it resets the module's class
before its names are filled in, so another thread reading a name meanwhile fails
(CPython gh-114763, fixed in 3.12 and 3.13 by gh-114781; this package runs on 3.11).
"""
from __future__ import annotations

import importlib
import sys
import types


class _Deferred(types.ModuleType):
    """A module imported at the first attribute read, whose names are then copied in
    (later reads are plain attribute lookups)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.__dict__["_deferred_name"] = name

    def __getattr__(self, attr: str):
        # only called for names not found: before the import, or a name the module lacks
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        real = importlib.import_module(self.__dict__["_deferred_name"])
        self.__dict__.update({k: v for k, v in vars(real).items()
                              if k not in ("__name__", "__spec__", "__loader__")})
        return getattr(real, attr)

    def __repr__(self) -> str:
        return f"<module {self.__dict__['_deferred_name']!r} (imported at first use)>"


def module(name: str) -> types.ModuleType:
    """``name``, imported now if it already is, else at the first attribute read."""
    return sys.modules.get(name) or _Deferred(name)


def loaded(name: str) -> bool:
    """Whether module ``name`` has been imported in this process."""
    return name in sys.modules
