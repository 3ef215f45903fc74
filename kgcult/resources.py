"""kgcult's own data, read through :mod:`importlib.resources`: ``ontology/``,
``queries/`` and the seed snapshot (``dumps/seed/`` in the repository).

The package carries them as ``kgcult/data/{ontology,queries,seed}``: symbolic links to
the top-level directories in a checkout (editable install), copies in a wheel. Every
module finds them here, so a wheel installed anywhere works like the checkout.
"""
from __future__ import annotations

from functools import lru_cache
from importlib.resources import files
from pathlib import Path

# name inside the package -> the path a manifest records (the repository layout)
_RECORDED_AS = {"ontology": "ontology", "queries": "queries", "seed": "dumps/seed"}


@lru_cache(maxsize=None)
def _root(name: str) -> Path:
    return Path(str(files("kgcult.data") / name))


def ontology(*parts: str) -> Path:
    """A file of ``ontology/`` (vocabulary, specs, cultures, topics, taxonomy)."""
    return _root("ontology").joinpath(*parts)


def queries(*parts: str) -> Path:
    """A file of ``queries/`` (mirror, views, checks, templates)."""
    return _root("queries").joinpath(*parts)


def seed(*parts: str) -> Path:
    """The seed snapshot (``dumps/seed/`` in the repository)."""
    return _root("seed").joinpath(*parts)


def recorded_path(path: str | Path) -> str:
    """How a manifest names one of kgcult's data files: its path in the repository layout
    (``queries/views/fmlama.rq``), the same from a checkout and from an installed wheel.
    A file outside kgcult's data is named by its file name."""
    full = Path(path).resolve()
    for name, shown in _RECORDED_AS.items():
        try:
            return f"{shown}/{full.relative_to(_root(name).resolve()).as_posix()}"
        except ValueError:
            continue
    return full.name
