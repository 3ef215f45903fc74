"""Every on-disk cache a link reads, built ahead (``kgcult link index``, and any command
that builds the label index): one loop over the stage registry (``pipeline.REGISTRY``),
each stage saying which caches it reads (``Stage.caches``) and building one
(``Stage.build_cache``), so that a first link after it reads them as the hundredth does
instead of building them (the semantic stage's name vectors and their reduced form, the
model's converted copy, the stem and compound pools), after the label index's own fuzzy
and token pools (``LabelIndex.ensure_pools``).

A stage whose caches are built on first use by design (``Stage.lazy_cache``: the opt-in
embedding stage, whose vectors depend on the model a run names) is only reported, unless
``all_caches``. Progress: one log line per stage when it starts and when it is done, and
``kgcult.log.progress`` meanwhile (a bar on a terminal, else a line every few seconds).
"""
from __future__ import annotations

import logging
import time

from kgcult import log as kglog
from kgcult.link import pipeline

log = logging.getLogger(__name__)

def build(linker, *, all_caches: bool = False) -> dict:
    """Make the caches of ``linker``'s stages ready beside its label index (with
    ``all_caches``, their lazy ones too: the semantic stage's; an opt-in stage's, such as
    the embedding stage's, when the linker runs it). Per stage:
    ``{"caches": n, "built": k, "names": m, "seconds": s}``, or ``{"lazy": why}`` /
    ``{"missing": extra}`` for one left alone."""
    out: dict = {}
    linker.ix.ensure_pools()  # the label index's fuzzy and token pools (the stages' part listings read them)
    if linker.cache_dir is None:
        log.info("link index: no cache directory (an in-memory index): caches are built on use")
        return out
    index_only = []
    for cls in pipeline.REGISTRY:
        name = cls.name
        if name not in linker.stages:  # an opt-in stage the linker does not run (embedding)
            if cls.lazy_cache and cls.available():
                out[name] = {"lazy": cls.lazy_cache}
                log.info("link index: %s: not built (%s); --all-caches --model M builds them", name,
                         cls.lazy_cache)
            continue
        if not cls.available():
            out[name] = {"missing": cls.extra}
            log.info("link index: %s: not installed (pip install 'kgcult[%s]'): no caches", name, cls.extra)
            continue
        if cls.lazy_cache and not all_caches:
            out[name] = {"lazy": cls.lazy_cache}
            log.info("link index: %s: not built (%s); --all-caches builds them", name, cls.lazy_cache)
            continue
        stage = linker.stage(name)
        items = stage.caches()
        if not items:
            index_only.append(name)
            continue
        out[name] = _build_stage(stage, items)
    if index_only:
        log.info("link index: %s: read the label index itself (nothing more to build)", ", ".join(index_only))
    return out


def _build_stage(stage, items: list) -> dict:
    name = stage.name
    total = sum(n for _key, n in items)
    log.info("link index: %s: %d caches over %s names", name, len(items), f"{total:,}")
    t0 = time.perf_counter()
    stage.prepare()
    built = 0
    with kglog.progress(total=total, unit=" names", desc=f"link index: {name}") as bar:
        for key, n in items:
            built += bool(stage.build_cache(key))
            bar.update(n)
    secs = time.perf_counter() - t0
    log.info("link index: %s: %d caches ready, %d built now (%.1f s)", name, len(items), built, secs)
    return {"caches": len(items), "built": built, "names": total, "seconds": round(secs, 2)}
