"""A whole ``kgcult probe fmlama|dlama`` run as one call: the dataset rows (files, or the
view built from the store) with their provenance, the model loaded, the probe run into its
resumable output directory, and the result tables written. The CLI and :class:`kgcult.KG`
both call these."""
from __future__ import annotations

import logging
import os
from typing import Callable, Sequence

from kgcult import extras, files, views
from kgcult.probe import datasets as ds
from kgcult.probe import models, report, run

log = logging.getLogger(__name__)

# The view each probe builds from the store when no dataset file is given.
VIEW = {"fmlama": "fmlama", "dlama": "dlama"}


def require_model_stack() -> None:
    """Say which extra is missing before any heavy work (reading the store, loading a model)."""
    for module in ("torch", "transformers"):
        extras.require(module, "probe", "model probing")


def view_params(view: str, given: Sequence[str] | dict | None, base: dict | None = None) -> dict:
    """The view parameters a probe builds with: ``base`` (the probe's own, e.g. FmLAMA's
    languages) updated with ``given`` (``["NAME=VALUE", ...]`` from ``--param``, or a dict),
    parsed and checked against the view's declaration by :func:`kgcult.views.param_items`."""
    params = dict(base or {})
    params.update(views.param_items(views.get_view(view), given))
    return params


def dataset(dataset_files: Sequence[str | os.PathLike], view: str, params: dict, *,
            open_store: Callable, location: str) -> tuple[list[dict], dict]:
    """The rows to probe and where they came from (recorded in the output's ``run.json``):
    the files' paths and sha256, or the view, store, parameters and the store's content hash.
    ``open_store()`` gives the store (with a fresh closure); it is called only without files."""
    if dataset_files:
        rows = []
        for f in dataset_files:
            rows.extend(ds.read_jsonl(os.fspath(f)))
        return rows, {"dataset": [{"path": str(f), "sha256": files.sha256_file(f)} for f in dataset_files]}
    store = open_store()
    rows = ds.from_store(store, view, params)
    src = {"view": view, "store": str(location), "params": params}
    snapshot = views.snapshot_content_hash(store)  # what the view's manifest records (cached)
    if snapshot:
        src["store_content_sha256"] = snapshot
    return rows, src


def probe(task: str, model: str, out_dir: str | os.PathLike, *, open_store: Callable, location: str,
          dataset_files: Sequence[str | os.PathLike] = (), lang: str = "en", params: Sequence[str] | dict | None = None,
          kind: str = "auto", gguf_file: str | None = None, device: str = "cpu", embeddings: str = "auto",
          plot: bool = True, **options) -> dict:
    """Probe ``model`` with the ``fmlama`` or ``dlama`` dataset into ``out_dir`` and write its
    result tables (``results.md``, ``results.json``); returns the report. ``options`` are
    :func:`kgcult.probe.run.probe_fmlama` / ``probe_dlama``'s (``subject_lang``, ``context``,
    ``templates_path``, ``predicates``, ``scoring``, ``batch_size``, ``span``, ``limit``,
    ``max_tokens``, ``progress``, ``overwrite``); ``params`` the view's (``--param``)."""
    out_dir = os.fspath(out_dir)
    if task not in VIEW:
        raise ValueError(f"probe: unknown task {task!r} (fmlama or dlama)")
    require_model_stack()
    if task == "fmlama":
        lang_ = options.get("subject_lang") or lang
        base = {"languages": ",".join(dict.fromkeys([lang, lang_]))}
        pv = view_params("fmlama", params, base)  # checked even when files are given
    else:
        pv = view_params("dlama", params)
    rows, src = dataset(dataset_files, VIEW[task], pv, open_store=open_store, location=location)
    loaded = models.load(model, kind=kind, device=device, gguf_file=gguf_file)
    if task == "fmlama":
        stats = run.probe_fmlama(loaded, rows, lang=lang, out_dir=out_dir, source=src, **options)
        log.info("%s: %d queries scored, %d already there; %d candidates", out_dir,
                 stats["queries_scored"], stats["queries_skipped"], stats["n_candidates"])
        return report.fmlama_report(out_dir, embeddings=embeddings, plot=plot)
    stats = run.probe_dlama(loaded, rows, lang=lang, out_dir=out_dir, source=src, **options)
    log.info("%s: %d queries scored, %d already there", out_dir, stats["queries_scored"], stats["queries_skipped"])
    return report.dlama_report(out_dir, plot=plot)
