"""Parameters checked against the store before a view runs: a language no label of the store
is in (nor in any language of its fallback chain: variants, ``mul``), or an item the store
does not hold, would give an empty dataset with exit 0 (and replace the previous build), so
they are refused with what the store does hold.

Only values the user gave are checked (a default may name what a small store lacks), and
only on an embedded store (listing a remote endpoint's label languages could take minutes).
The store's label languages are computed once per change of its data (:mod:`kgcult.store.sidefiles`).
"""
from __future__ import annotations

import difflib

from pyoxigraph import NamedNode

from kgcult import ids, langtags
from kgcult.inspection import label_languages
from kgcult.views.spec import PARAMS_KEY, View, ViewError

MAX_LIST_VALUES = 500  # a list parameter longer than this is a mistake, not a request


def given_names(params) -> set[str]:
    """The parameter names the caller gave (``["k=v"]`` or a dict)."""
    if isinstance(params, dict):
        return set(params)
    return {item.split("=", 1)[0].strip() for item in params or [] if "=" in item}


def check(store, view: View, resolved: dict, given: set[str]) -> None:
    """Refuse given values the store cannot answer (see the module docstring)."""
    for name in sorted(given):
        p = view.parameters.get(name)
        value = resolved.get(name)
        if p is None or value in (None, "", []):
            continue
        values = value if isinstance(value, list) else [value]
        where = f"{view.path}:{view.line_of(PARAMS_KEY)}: view {view.name}: parameter {name}"
        if len(values) > MAX_LIST_VALUES:
            raise ViewError(f"{where}: {len(values)} values (at most {MAX_LIST_VALUES})")
        if getattr(store, "remote", False):
            continue
        if p.type in ("lang", "langs"):
            present = label_languages(store)
            # a language is answered when any language of its fallback chain is (zh-tw, mul: docs/views.md)
            missing = [v for v in values if not any(x in present for x in langtags.fallback_chain(v))]
            if missing:
                hints = {m: difflib.get_close_matches(m, present, n=3) for m in missing}
                said = "; ".join(f"{m!r}" + (f" (did you mean {', '.join(hints[m])}?)" if hints[m] else "")
                                 for m in missing)
                raise ViewError(f"{where}: no label of the store is in {said}; the store's label languages "
                                f"include {', '.join(present[:20])}{' ...' if len(present) > 20 else ''}")
        elif p.type in ("qid", "qids"):
            absent = [v for v in values if not store.query("ASK { ?x ?p ?o }", bindings={"x": NamedNode(ids.iri(v))})]
            if absent:
                raise ViewError(f"{where}: the store holds nothing about {', '.join(absent)}")
