"""Materializing views: :func:`build` runs one view over a store and gives a
:class:`~kgcult.views.output.BuildResult` in memory, written to ``out/<name>/`` when
``out`` is given; :func:`build_all` builds every view with its defaults."""
from __future__ import annotations

import logging
import os
from typing import Iterable

from kgcult.store.hierarchy import ensure_closure
from kgcult.views.engine import ViewContext
from kgcult.views import param_checks
from kgcult.views.output import BuildResult, result, snapshot_content_hash
from kgcult.views.registry import PROCESSORS, get_view, registry
from kgcult.views.spec import ViewError, parse_params

log = logging.getLogger(__name__)
DEFAULT_OUT = os.path.join("build", "views")


def build(store, name: str, params: Iterable[str] | dict | None = None, *, out: str | os.PathLike | None = None,
          csv_out: bool = False, card: bool = False, directory: str | os.PathLike | None = None,
          snapshot_hash: str | None = None) -> BuildResult:
    """Build view ``name`` over ``store`` (embedded or remote) with ``params`` (``["k=v"]``
    as from --param, or a dict of text or Python values; the rest take their defaults).

    The result holds the rows, files and manifest in memory; with ``out`` it is also
    written to ``out/<name>/`` (``result.write(out)``). ``directory`` reads the view from
    another declarations directory; ``card`` writes a Hugging Face dataset card
    (README.md, :mod:`kgcult.views.hf`) beside the files; ``snapshot_hash`` is the store's content hash when the
    caller already has it."""
    view = get_view(name, directory)
    resolved = parse_params(view, params)
    param_checks.check(store, view, resolved, param_checks.given_names(params))
    if view.closure:
        ensure_closure(store)
    ctx = ViewContext(store, view, resolved)
    outputs = PROCESSORS[view.processor](ctx)
    if not any(o.main for o in outputs):
        raise ViewError(f"view {name}: processor {view.processor} produced no main output")
    res = result(view, resolved, ctx.query_text, outputs, csv_out=csv_out,
                 snapshot=snapshot_hash if snapshot_hash is not None else snapshot_content_hash(store),
                 conversions=ctx.conversions)
    res.card = card
    if out is not None:
        res.write(out)
    return res


def build_all(store, *, out: str | os.PathLike | None = None, csv_out: bool = False, card: bool = False,
              directory: str | os.PathLike | None = None) -> list[BuildResult]:
    """Build every view with its default parameters (written to ``out`` when given)."""
    snap = snapshot_content_hash(store)
    results = []
    for name in registry(directory):
        log.info(f"building {name}")
        results.append(build(store, name, out=out, csv_out=csv_out, card=card, directory=directory,
                             snapshot_hash=snap))
    return results
