"""Reading the probing datasets: JSONL files, or the views built from the store.

FmLAMA rows (the shape of the released FmLAMA files and of ``kgcult build fmlama``):
``{"url", "origin", "origin_name", "lang", "sub_label", "obj_label": [ingredient labels]}``.

DLAMA rows: ``{"subject", "predicate", "objects": [labels], "culture", "lang"}``; optional
``subject_uri`` / ``url`` (a stable key), the aliases ``sub_label`` / ``obj_label``, and
what the dlama view adds: ``pair`` (the DLAMA-v1 pair; candidates are per pair and
predicate), ``group`` (``v1``, ``dlama-code`` or ``kgcult``) and ``obj_uri`` (the objects'
QIDs, from which the report computes DLAMA's entropy).
"""
from __future__ import annotations

from pathlib import Path
from typing import overload

from kgcult import views
from kgcult.errors import KgcultError
from kgcult.files import iter_jsonl


def read_jsonl(path: str | Path) -> list[dict]:
    """Dataset rows, each remembering where it came from (``_where``: file:line)."""
    path = Path(path)
    if not path.is_file():
        raise KgcultError(f"dataset file not found: {path}")
    return [dict(row, _where=f"{path}:{n}") for n, row in iter_jsonl(path)]


def _labels(v, where: str, field: str) -> list[str]:
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise KgcultError(f"{where}: field {field!r} must be a list of strings")
    return [x.strip() for x in v if x.strip()]


def fmlama_rows(rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        where = r.get("_where", "dataset")
        for f in ("url", "sub_label", "obj_label"):
            if f not in r:
                raise KgcultError(f"{where}: FmLAMA row lacks field {f!r} (needs url, origin, lang, "
                                  f"sub_label, obj_label)")
        if not isinstance(r["sub_label"], str) or not r["sub_label"].strip():
            raise KgcultError(f"{where}: field 'sub_label' must be a non-empty string")
        golds = list(dict.fromkeys(_labels(r["obj_label"], where, "obj_label")))
        if not golds:
            continue
        origin = r.get("origin") or ""
        out.append({
            "url": str(r["url"]), "origin": str(origin),
            "origin_name": str(r.get("origin_name") or origin), "lang": str(r.get("lang") or ""),
            "sub_label": r["sub_label"].strip(), "obj_label": golds, "_where": where,
            "origin_uri": str(r.get("origin_uri") or ""),
            "continent": [str(c) for c in r["continent"]] if isinstance(r.get("continent"), list) else [],
        })
    return out


def dlama_rows(rows: list[dict], lang: str | None = None) -> list[dict]:
    """Rows of the given language. The dlama view's rows carry labels per language
    (``sub_label: {lang: label}``, ``obj_label: {lang: [labels]}``) and no ``lang``."""
    out = []
    for r in rows:
        where = r.get("_where", "dataset")
        subj = r.get("subject", r.get("sub_label"))
        objs = r.get("objects", r.get("obj_label"))
        if isinstance(subj, dict) or isinstance(objs, dict):
            if lang is None:
                raise KgcultError(f"{where}: per-language labels need a language")
            subj, objs = _pick(subj, lang), _pick(objs, lang)
            if subj is None or objs is None:
                continue
            r = dict(r, lang=lang)
        if not isinstance(subj, str) or not subj.strip():
            raise KgcultError(f"{where}: DLAMA row needs a string 'subject'")
        if not r.get("predicate"):
            raise KgcultError(f"{where}: DLAMA row needs 'predicate' (e.g. P17)")
        if objs is None:
            raise KgcultError(f"{where}: DLAMA row needs 'objects' (the valid object labels)")
        objs = list(dict.fromkeys(_labels(objs, where, "objects")))
        if not objs:
            continue
        pred = str(r["predicate"]).rsplit("/", 1)[-1]
        key = r.get("subject_uri") or r.get("url") or r.get("sub_uri") or subj.strip()
        pair = str(r.get("pair") or "")
        ids = r.get("obj_uri")
        out.append({
            "key": f"{pair}|{pred}|{key}" if pair else f"{pred}|{key}", "subject": subj.strip(),
            "predicate": pred, "objects": objs, "pair": pair, "group": str(r.get("group") or ""),
            "object_ids": [str(x) for x in ids] if isinstance(ids, list) else [],
            "culture": str(r.get("culture") or ""), "lang": str(r.get("lang") or ""),
            "country": r["country"] if isinstance(r.get("country"), str) else "", "_where": where,
        })
    return out


@overload
def from_store(store, view: str, params: dict) -> list[dict]: ...
@overload
def from_store(store, view: str, params: dict, extra: tuple[str, ...]) -> list[dict] | tuple: ...
def from_store(store, view: str, params: dict, extra: tuple[str, ...] = ()) -> list[dict] | tuple:
    """Build a view in memory (:func:`kgcult.views.build`) and give its main output's rows
    (and, when ``extra`` names other outputs, ``(rows, {name: rows})``, [] for an output the
    view did not produce). Each row remembers where it came from (``_where``)."""
    res = views.build(store, view, params)

    def located(name: str) -> list[dict]:
        return [dict(row, _where=f"view {view}: {name}:{n}") for n, row in enumerate(res.outputs.get(name, []), 1)]

    rows = located(res.manifest["output"])
    if extra:
        return rows, {name: located(name) for name in extra}
    return rows


def _pick(v, lang: str):
    """A per-language value ({lang: x}) or a plain one."""
    if isinstance(v, dict):
        return v.get(lang)
    return v
