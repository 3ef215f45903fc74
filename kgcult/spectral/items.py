"""The spectral items: (domain, country, item) label rows, from a JSONL file or from the
spectral-items view's output."""
from __future__ import annotations

from pathlib import Path

from kgcult.errors import KgcultError
from kgcult.probe.datasets import read_jsonl


def items_from_view(rows: list[dict], countries: list[dict], lang: str = "en") -> list[dict]:
    """(domain, country, item) label rows from the spectral-items view's output
    (``{domain, item, label: {lang: ..}, countries: [QID]}`` + countries.jsonl)."""
    clabel = {}
    for c in countries:
        lab = c.get("label")
        clabel[c.get("country")] = (lab.get(lang) if isinstance(lab, dict) else lab) or c.get("country")
    out = []
    for r in rows:
        lab = r.get("label")
        item = (lab.get(lang) if isinstance(lab, dict) else lab) or r.get("item")
        for c in r.get("countries") or []:
            out.append({"domain": r["domain"], "country": clabel.get(c, c), "item": item})
    return out


def read_items(path) -> list[dict]:
    """The spectral-items rows: {domain, country, item} labels, or the spectral-items view's
    own output file (then countries.jsonl beside it gives the country labels)."""
    rows = read_jsonl(path)
    if rows and isinstance(rows[0].get("countries"), list):
        side = Path(path).with_name("countries.jsonl")
        return items_from_view(rows, read_jsonl(side) if side.is_file() else [])
    out = []
    for r in rows:
        for f in ("domain", "country", "item"):
            if not isinstance(r.get(f), str) or not r[f].strip():
                raise KgcultError(f"{r['_where']}: spectral-items row needs a string {f!r}")
        out.append({"domain": r["domain"].strip(), "country": r["country"].strip(), "item": r["item"].strip()})
    if not out:
        raise KgcultError(f"{path}: no spectral items")
    return out
