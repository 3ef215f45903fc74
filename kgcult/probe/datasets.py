"""Reading the probing datasets: JSONL files, or the views built from the store.

FmLAMA rows (the shape of the released FmLAMA files and of ``kgcult build fmlama``):
``{"url", "origin", "origin_name", "lang", "sub_label", "obj_label": [ingredient labels]}``.

DLAMA rows: ``{"subject", "predicate", "objects": [labels], "culture", "lang"}``; optional
``subject_uri`` / ``url`` (a stable key), and the aliases ``sub_label`` / ``obj_label``.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import KgcultError


def read_jsonl(path: str | Path) -> list[dict]:
    path = Path(path)
    if not path.is_file():
        raise KgcultError(f"dataset file not found: {path}")
    rows = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise KgcultError(f"{path}:{n}: not JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise KgcultError(f"{path}:{n}: expected a JSON object")
            row["_where"] = f"{path}:{n}"
            rows.append(row)
    return rows


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
        })
    return out


def dlama_rows(rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        where = r.get("_where", "dataset")
        subj = r.get("subject", r.get("sub_label"))
        objs = r.get("objects", r.get("obj_label"))
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
        out.append({
            "key": f"{pred}|{key}", "subject": subj.strip(), "predicate": pred, "objects": objs,
            "culture": str(r.get("culture") or ""), "lang": str(r.get("lang") or ""),
            "country": str(r.get("country") or ""), "_where": where,
        })
    return out


def from_store(store, view: str, params: dict) -> list[dict]:
    """Build a dataset with the views module (kgcult.views), imported lazily."""
    try:
        from .. import views  # noqa: F401
    except ImportError:
        raise KgcultError(f"no --dataset given and kgcult.views (which builds {view!r} from the "
                          f"store) is not available; build it with `kgcult build {view} --out DIR` "
                          f"and pass --dataset DIR/<file>.jsonl") from None
    import inspect as _inspect
    import tempfile

    for name in ("rows", "build_rows", "materialize_rows"):
        fn = getattr(views, name, None)
        if callable(fn):
            return list(fn(store, view, params=params))
    fn = getattr(views, "build", None)
    if not callable(fn):
        raise KgcultError("kgcult.views has no build function; pass --dataset FILE")
    with tempfile.TemporaryDirectory(prefix="kgcult-probe-") as tmp:
        kwargs = {}
        sig = _inspect.signature(fn)
        if "params" in sig.parameters:
            kwargs["params"] = params
        if "out" in sig.parameters:
            kwargs["out"] = tmp
        elif "out_dir" in sig.parameters:
            kwargs["out_dir"] = tmp
        res = fn(store, view, **kwargs)
        files = sorted(Path(tmp).rglob("*.jsonl"))
        if not files and isinstance(res, (list, tuple)):
            return [dict(r) for r in res]
        rows = []
        for f in files:
            rows.extend(read_jsonl(f))
        return rows
