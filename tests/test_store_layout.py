"""The store's write side stays inside ``kgcult/store`` (issue 38): no module outside it
imports pyoxigraph's ``Store`` to open a store, reaches for the engine (``.ox``), the
default graph's set machinery (``setgraph``, ``recovery``) or a bulk
loader (``bulk_load``, ``bulk_extend``). Outside code reads through the store's query and
quad API and writes through its methods and its gateway (``Store.writing``)."""
from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "kgcult"
STORE = PKG / "store"
PRIVATE_MODULES = {"kgcult.store.setgraph", "kgcult.store.recovery", "kgcult.store.provenance"}
ENGINE_ATTRS = {"ox", "_ox", "bulk_load", "bulk_extend"}


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    where = path.relative_to(PKG.parent)
    out = []
    pyox_names = {"pyoxigraph"}  # what pyoxigraph is called in this module
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "pyoxigraph":
                    pyox_names.add(a.asname or a.name)
                if a.name in PRIVATE_MODULES:
                    out.append(f"{where}:{node.lineno}: imports {a.name}")
        elif isinstance(node, ast.ImportFrom):
            names = {a.name for a in node.names}
            if node.module == "pyoxigraph" and "Store" in names:
                out.append(f"{where}:{node.lineno}: imports pyoxigraph's Store")
            if node.module == "kgcult.store":
                out += [f"{where}:{node.lineno}: imports kgcult.store.{n}" for n in names
                        if f"kgcult.store.{n}" in PRIVATE_MODULES]
            if node.module in PRIVATE_MODULES:
                out.append(f"{where}:{node.lineno}: imports {node.module}")
        elif isinstance(node, ast.Attribute):
            if node.attr in ENGINE_ATTRS:
                out.append(f"{where}:{node.lineno}: touches the engine (.{node.attr})")
            elif (node.attr == "Store" and isinstance(node.value, ast.Name) and node.value.id in pyox_names):
                out.append(f"{where}:{node.lineno}: uses pyoxigraph's Store")
    return out


def _in_memory_parser(path: Path) -> set[int]:
    """Lines where a module builds an empty in-memory pyoxigraph store to parse query text
    (``ox.Store()``, no path: it never reads or writes a kgcult store)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == "Store" and not n.args and not n.keywords}


def test_no_module_outside_the_store_touches_its_engine():
    found = []
    for path in sorted(PKG.rglob("*.py")):
        if STORE in path.parents:
            continue
        allowed = _in_memory_parser(path)
        found += [v for v in _violations(path) if int(v.split(":")[1]) not in allowed]
    assert not found, "outside kgcult/store (read through its query/quad API, write through it):\n" + \
        "\n".join(found)


def test_the_check_sees_what_it_looks_for(tmp_path):
    """The rule fires on each thing it forbids (a check that finds nothing proves nothing)."""
    bad = tmp_path / "kgcult" / "views" / "bad.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("import pyoxigraph as ox\nfrom kgcult.store import setgraph\n"
                   "def f(store):\n    store.ox.bulk_load(path='x')\n    return ox.Store.read_only('x')\n")
    global PKG
    saved, PKG = PKG, tmp_path / "kgcult"
    try:
        found = _violations(bad)
    finally:
        PKG = saved
    assert len(found) == 4, found  # setgraph, .ox, .bulk_load, ox.Store
