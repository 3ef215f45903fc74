"""Which views exist and which code processes each: the declarations under
``queries/views/`` (or another directory) and :data:`PROCESSORS`, the processor a
declaration's ``"processor"`` names."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from kgcult.views import dlama, entity_metadata, fmlama, spectral_items, table
from kgcult.views.engine import ViewContext
from kgcult.views.output import Output
from kgcult.views.spec import View, ViewError, read_view, views_dir

PROCESSORS: dict[str, Callable[[ViewContext], list[Output]]] = {
    "table": table.process,
    "fmlama": fmlama.process,
    "dlama": dlama.process,
    "spectral-items": spectral_items.process,
    "entity-metadata": entity_metadata.process,
}
PROC_KEY = '"processor"'


def load_view(path: str | os.PathLike) -> View:
    """Read and check one declaration, its processor included; errors name the file and
    the line."""
    view = read_view(path)
    if view.processor not in PROCESSORS:
        raise ViewError(f"{view.path}:{view.line_of(PROC_KEY)}: view {view.name}: unknown processor "
                        f"{view.processor!r} (known: {', '.join(sorted(PROCESSORS))})")
    return view


def registry(directory: str | os.PathLike | None = None) -> dict[str, View]:
    """Every view declared under ``queries/views/`` (or ``directory``), by name."""
    d = Path(directory) if directory else views_dir()
    return {v.name: v for v in map(load_view, sorted(d.glob("*.json")))}


def get_view(name: str, directory: str | os.PathLike | None = None) -> View:
    reg = registry(directory)
    if name not in reg:
        d = Path(directory) if directory else views_dir()
        known = ", ".join(sorted(reg)) or "none"
        raise ViewError(f"unknown view {name!r}: no {d / (name + '.json')} (views: {known})")
    return reg[name]


def views(directory: str | os.PathLike | None = None) -> list[dict]:
    """The views as plain dicts (what `kgcult views` prints)."""
    return [{
        "name": v.name,
        "description": v.description,
        "declaration": v.rel(v.path),
        "queries": {k: v.rel(p) for k, p in v.queries.items()},
        "parameters": {p.name: {"type": p.type, "default": p.default, "description": p.description}
                       | ({"values": list(p.values)} if p.values else {})
                       for p in v.parameters.values()},
        "fields": v.fields,
        "outputs": v.outputs,
    } for v in registry(directory).values()]
