"""A view's declaration, ``queries/views/<name>.json``, read into a :class:`View`, and its
parameters resolved from ``--param NAME=VALUE`` text or Python values, each value checked
by its declared type.

Parameter types: ``str``, ``list`` (comma-separated), ``qid``/``qids`` (Wikidata items,
read by :func:`kgcult.ids.parse`), ``lang``/``langs`` (language tags), ``int`` and
``bool``. A ``str`` or ``list`` parameter may declare ``"values"``: the only values it
accepts (an enumeration).
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from kgcult import ids, langtags, resources
from kgcult.errors import KgcultError

PARAM_TYPES = ("str", "list", "qid", "qids", "lang", "langs", "int", "bool")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_SINGLE_NOUN = {"qid": "QID", "lang": "language tag"}
NAME_KEY = '"name"'
PARAMS_KEY = '"parameters"'


class ViewError(KgcultError):
    """A view could not be declared, parameterized, queried or built."""


@dataclass
class Param:
    name: str
    type: str
    default: str
    description: str = ""
    line: int = 0                      # the declaration file's line that declares it
    values: tuple[str, ...] = ()       # the accepted values, when an enumeration


@dataclass
class View:
    name: str
    description: str
    path: Path                         # the declaration file
    processor: str
    queries: dict[str, Path]
    parameters: dict[str, Param]
    fields: list[str]
    outputs: dict[str, str] = field(default_factory=dict)
    closure: bool = False
    config: dict = field(default_factory=dict)
    text: str = ""

    def rel(self, p: Path) -> str:
        """How a manifest names one of the view's files (the same from any install)."""
        return resources.recorded_path(p)

    def line_of(self, needle: str) -> int:
        """The declaration's first line containing ``needle`` (1 if none)."""
        return line_of(self.text, needle)


def line_of(text: str, needle: str) -> int:
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    return 1


def views_dir() -> Path:
    """kgcult's own view declarations: ``queries/views/``."""
    return resources.queries("views")


def read_view(path: str | os.PathLike) -> View:
    """Read and check one declaration (all but its processor, which the registry knows);
    errors name the file and the line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ViewError(f"{path}: cannot read the view declaration: {e}") from None
    try:
        decl = json.loads(text)
    except json.JSONDecodeError as e:
        raise ViewError(f"{path}:{e.lineno}: malformed view declaration: {e.msg}") from None
    if not isinstance(decl, dict):
        raise ViewError(f"{path}:1: a view declaration is a JSON object")

    def need(key, kind):
        if key not in decl:
            raise ViewError(f"{path}:1: view declaration lacks {key!r}")
        if not isinstance(decl[key], kind):
            raise ViewError(f"{path}:{line_of(text, json.dumps(key))}: {key!r} must be a {kind.__name__}")
        return decl[key]

    name = need("name", str)
    if not _NAME.match(name):
        raise ViewError(f"{path}:{line_of(text, NAME_KEY)}: invalid view name {name!r}")
    if path.stem != name:
        raise ViewError(f"{path}:{line_of(text, NAME_KEY)}: view {name!r} must be declared in {name}.json")
    queries = {}
    for key, rq in need("queries", dict).items():
        qp = path.parent / rq
        if not qp.is_file():
            raise ViewError(f"{path}:{line_of(text, rq)}: view {name}: query file {rq} not found")
        queries[key] = qp
    params = {pname: _param(path, text, name, pname, spec)
              for pname, spec in decl.get("parameters", {}).items()}
    view = View(
        name=name,
        description=decl.get("description", ""),
        path=path,
        processor=decl.get("processor", "table"),
        queries=queries,
        parameters=params,
        fields=list(decl.get("fields", [])),
        outputs=dict(decl.get("outputs", {})),
        closure=bool(decl.get("closure", False)),
        config=dict(decl.get("config", {})),
        text=text,
    )
    # Check defaults now, so a bad declaration fails when listed, not half-way in a build.
    for p in params.values():
        _convert(view, p, p.default)
    return view


def _param(path: Path, text: str, view: str, pname: str, spec) -> Param:
    line = line_of(text, json.dumps(pname) + ":")
    where = f"{path}:{line}: view {view}: parameter {pname!r}"
    if not isinstance(spec, dict):
        raise ViewError(f"{where} must be an object")
    ptype = spec.get("type", "str")
    if ptype not in PARAM_TYPES:
        raise ViewError(f"{where} has unknown type {ptype!r}")
    values = spec.get("values", [])
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ViewError(f"{where}: 'values' must be a list of strings")
    if values and ptype not in ("str", "list"):
        raise ViewError(f"{where}: 'values' applies to str and list parameters, not {ptype}")
    return Param(pname, ptype, str(spec.get("default", "")), spec.get("description", ""), line, tuple(values))


# -- parameters -----------------------------------------------------------------------

def parse_params(view: View, given: Iterable[str] | dict | None = None) -> dict:
    """Resolve parameters: ``given`` is ``["k=v", ...]`` (from --param) or a dict of text or
    Python values (lists for list types: ``{"languages": ["en", "ja"]}``); the rest take
    their declared defaults. Returns {name: converted value}."""
    raw = param_items(view, given)
    return {p.name: _convert(view, p, raw.get(p.name, p.default)) for p in view.parameters.values()}


def param_items(view: View, given: Iterable[str] | dict | None = None) -> dict[str, str]:
    """The parameters given, as text and unconverted: ``["k=v", ...]`` (the one parser of
    ``--param NAME=VALUE``, for ``kgcult build`` and ``kgcult probe``) or a dict (lists
    joined with commas). A malformed item or a name the view does not declare is refused."""
    raw: dict[str, str] = {}
    if isinstance(given, dict):
        raw = {k: (",".join(v) if isinstance(v, (list, tuple)) else str(v)) for k, v in given.items()}
    else:
        for item in given or []:
            if "=" not in item:
                raise ViewError(f"{view.path}:{view.line_of(PARAMS_KEY)}: view {view.name}: malformed --param "
                                f"{item!r}: expected NAME=VALUE (parameters: {', '.join(view.parameters) or 'none'})")
            k, v = item.split("=", 1)
            raw[k.strip()] = v
    for k in raw:
        if k not in view.parameters:
            raise ViewError(f"{view.path}:{view.line_of(PARAMS_KEY)}: view {view.name}: unknown parameter "
                            f"{k!r} (declared: {', '.join(view.parameters) or 'none'})")
    return raw


def param_text(value) -> str:
    """A resolved value as the manifest records it (the ``--param`` syntax)."""
    if isinstance(value, list):
        return ",".join(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _convert(view: View, p: Param, raw: str):
    where = f"{view.path}:{p.line}: view {view.name}: parameter {p.name}"
    raw = raw.strip()
    if p.type == "int":
        try:
            return int(raw)
        except ValueError:
            raise ViewError(f"{where}: {raw!r} is not an integer") from None
    if p.type == "bool":
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off", ""):
            return False
        raise ViewError(f"{where}: {raw!r} is not a boolean (true/false)")
    if p.type == "str":
        _check_values(p, [raw] if raw else [], where)
        return raw
    check = {"list": lambda x, _: x, "qid": _item, "qids": _item, "lang": _lang, "langs": _lang}[p.type]
    values = [check(x.strip(), where) for x in raw.split(",") if x.strip()]
    _check_values(p, values, where)
    if p.type in _SINGLE_NOUN:
        if len(values) != 1:
            raise ViewError(f"{where}: expected exactly one {_SINGLE_NOUN[p.type]}, got {raw!r}")
        return values[0]
    return values


def _item(text: str, where: str) -> str:
    try:
        return ids.parse(text, kinds="Q", field=where)
    except KgcultError:
        raise ViewError(f"{where}: {text!r} is not a Wikidata item id (Q followed by digits)") from None


def _lang(text: str, where: str) -> str:
    return langtags.parse(text, where, ViewError)


def _check_values(p: Param, values: list[str], where: str) -> None:
    for v in values:
        if p.values and v not in p.values:
            raise ViewError(f"{where}: {v!r} is not one of {', '.join(p.values)}")
