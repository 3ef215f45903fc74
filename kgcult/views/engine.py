"""Datasets as SPARQL views.

A view is a declaration ``queries/views/<name>.json`` plus the ``.rq`` files it names:

.. code-block:: json

    {
      "name": "fmlama",
      "description": "one line",
      "processor": "fmlama",              // post-processing (see PROCESSORS); "table" = generic
      "closure": true,                    // needs the kgc:typedAs/... closure graphs
      "queries": {"origins": "fmlama-origins.rq", "labels": "labels.rq"},
      "parameters": {"languages": {"type": "list", "default": "en,zh",
                                   "description": "..."}},
      "fields": ["url", "origin", ...],   // fields of the main output, in this order
      "outputs": {"fmlama.jsonl": "what it holds", ...},
      "config": {...}                     // processor-specific, optional
    }

``build(store, name, params, out)`` runs the queries (parameter values are bound with
VALUES blocks by :mod:`kgcult.sparqlutil`, never formatted into the query text), post-
processes the solutions in Python (grouping lists, joins, the paper's filters), and writes
sorted JSONL (and CSV on request) plus ``MANIFEST.json``: the snapshot content hash, the
sha256 of the declaration and of every query, the parameters, row counts and the sha256 of
every output. Same store and parameters -> byte-identical files.

The view code only calls ``store.select`` so that it runs unchanged against a remote SPARQL
endpoint (``--store sparql+http://...``).
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import re
import shutil
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import pyoxigraph as ox
from pyoxigraph import Literal, NamedNode

from kgcult import vocab
from kgcult.version import __version__
from kgcult import resources as resources
from kgcult.errors import KgcultError

DEFAULT_OUT = os.path.join("build", "views")
MANIFEST = "MANIFEST.json"
PARAM_TYPES = ("str", "list", "qid", "qids", "int", "bool")
_QID = re.compile(r"^Q[1-9][0-9]*$")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
NAME_KEY = '"name"'
PROC_KEY = '"processor"'
PRED_KEY = '"predicates"'
PARAMS_KEY = '"parameters"'


class ViewError(KgcultError):
    """A view could not be declared, parameterized, queried or built."""


# -- declarations ---------------------------------------------------------------------

@dataclass
class Param:
    name: str
    type: str
    default: str
    description: str = ""
    line: int = 0  # line of the declaration file where it is declared


@dataclass
class View:
    name: str
    description: str
    path: Path                        # the declaration file
    processor: str
    queries: dict[str, Path]
    parameters: dict[str, Param]
    fields: list[str]
    outputs: dict[str, str] = field(default_factory=dict)
    closure: bool = False
    config: dict = field(default_factory=dict)
    text: str = ""

    def rel(self, p: Path) -> str:
        """A path relative to the kgcult home (stable across checkouts, for manifests)."""
        return resources.recorded_path(p)

    def line_of(self, needle: str) -> int:
        for i, line in enumerate(self.text.splitlines(), 1):
            if needle in line:
                return i
        return 1


def views_dir() -> Path:
    return resources.queries("views")


def _line_of(text: str, needle: str) -> int:
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    return 1


def load_view(path: str | os.PathLike) -> View:
    """Read and check one declaration; errors name the file and the line."""
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
            raise ViewError(f"{path}:{_line_of(text, json.dumps(key))}: {key!r} must be a {kind.__name__}")
        return decl[key]

    name = need("name", str)
    if not _NAME.match(name):
        raise ViewError(f"{path}:{_line_of(text, NAME_KEY)}: invalid view name {name!r}")
    if path.stem != name:
        raise ViewError(f"{path}:{_line_of(text, NAME_KEY)}: view {name!r} must be declared in {name}.json")
    processor = decl.get("processor", "table")
    if processor not in PROCESSORS:
        raise ViewError(f"{path}:{_line_of(text, PROC_KEY)}: view {name}: unknown processor "
                        f"{processor!r} (known: {', '.join(sorted(PROCESSORS))})")
    queries = {}
    for key, rq in need("queries", dict).items():
        qp = path.parent / rq
        if not qp.is_file():
            raise ViewError(f"{path}:{_line_of(text, rq)}: view {name}: query file {rq} not found")
        queries[key] = qp
    params = {}
    for pname, spec in decl.get("parameters", {}).items():
        line = _line_of(text, json.dumps(pname) + ":")
        if not isinstance(spec, dict):
            raise ViewError(f"{path}:{line}: view {name}: parameter {pname!r} must be an object")
        ptype = spec.get("type", "str")
        if ptype not in PARAM_TYPES:
            raise ViewError(f"{path}:{line}: view {name}: parameter {pname!r} has unknown type {ptype!r}")
        params[pname] = Param(pname, ptype, str(spec.get("default", "")), spec.get("description", ""), line)
    view = View(
        name=name,
        description=decl.get("description", ""),
        path=path,
        processor=processor,
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


def registry(directory: str | os.PathLike | None = None) -> dict[str, View]:
    """Every view declared under ``queries/views/`` (or ``directory``), by name."""
    d = Path(directory) if directory else views_dir()
    out = {}
    for p in sorted(d.glob("*.json")):
        v = load_view(p)
        out[v.name] = v
    return out


def get_view(name: str, directory: str | os.PathLike | None = None) -> View:
    reg = registry(directory)
    if name not in reg:
        d = Path(directory) if directory else views_dir()
        known = ", ".join(sorted(reg)) or "none"
        raise ViewError(f"unknown view {name!r}: no {d / (name + '.json')} (views: {known})")
    return reg[name]


def views(directory: str | os.PathLike | None = None) -> list[dict]:
    """The views as plain dicts (what `kgcult views` prints)."""
    out = []
    for v in registry(directory).values():
        out.append({
            "name": v.name,
            "description": v.description,
            "declaration": v.rel(v.path),
            "queries": {k: v.rel(p) for k, p in v.queries.items()},
            "parameters": {p.name: {"type": p.type, "default": p.default, "description": p.description}
                           for p in v.parameters.values()},
            "fields": v.fields,
            "outputs": v.outputs,
        })
    return out


# -- parameters -----------------------------------------------------------------------

def _convert(view: View, p: Param, raw: str):
    where = f"{view.path}:{p.line}: view {view.name}: parameter {p.name}"
    raw = raw.strip()
    if p.type == "str":
        return raw
    if p.type == "list":
        return [x.strip() for x in raw.split(",") if x.strip()]
    if p.type in ("qid", "qids"):
        items = [x.strip() for x in raw.split(",") if x.strip()]
        for x in items:
            if not _QID.match(x):
                raise ViewError(f"{where}: {x!r} is not a Wikidata item id (Q followed by digits)")
        if p.type == "qid":
            if len(items) != 1:
                raise ViewError(f"{where}: expected exactly one QID, got {raw!r}")
            return items[0]
        return items
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
    raise ViewError(f"{where}: unknown type {p.type}")  # pragma: no cover


def parse_params(view: View, given: Iterable[str] | dict | None = None) -> dict:
    """Resolve parameters: ``given`` is ``["k=v", ...]`` (from --param) or a dict; the rest
    take their declared defaults. Returns {name: converted value}."""
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
    return {
        p.name: _convert(view, p, raw.get(p.name, p.default)) for p in view.parameters.values()
    }


def _param_text(value) -> str:
    if isinstance(value, list):
        return ",".join(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# -- running queries ------------------------------------------------------------------

def wd(qid: str) -> NamedNode:
    return NamedNode(vocab.WD + qid)


def qid(iri: str) -> str:
    """``http://www.wikidata.org/entity/Q42`` -> ``Q42`` (other IRIs unchanged)."""
    return iri[len(vocab.WD):] if iri.startswith(vocab.WD) else iri


def qid_key(q: str):
    """Sort key putting Q2 before Q10 (DLAMA and FmLAMA order ids naturally)."""
    m = re.match(r"^(?:http://www\.wikidata\.org/entity/)?Q(\d+)$", q)
    return (0, int(m.group(1)), "") if m else (1, 0, q)


def _value(term):
    if isinstance(term, NamedNode):
        return term.value
    if isinstance(term, Literal):
        return term.value
    return str(term)


class ViewContext:
    """What a processor gets: the store, the view, resolved parameters and ``select``."""

    def __init__(self, store, view: View, params: dict, log: Callable[[str], None] | None = None):
        self.store = store
        self.view = view
        self.params = params
        self.log = log or (lambda m: None)
        self.query_text = {k: p.read_text(encoding="utf-8") for k, p in view.queries.items()}

    def select(self, key: str, *, bindings: dict | None = None, rows: tuple | None = None,
               chunk: int = 5000) -> list[dict]:
        """Run the view's query ``key``; solutions as {var: str} (IRIs as full IRIs,
        literals as their lexical value; language tags under ``<var>@lang``).

        ``rows`` larger than ``chunk`` are sent in several queries (remote endpoints limit
        the request size); results are concatenated."""
        if key not in self.view.queries:
            raise ViewError(f"view {self.view.name}: {self.view.path} names no query {key!r}")
        if rows is not None:
            variables, values = rows
            values = list(values)
            if not values:
                return []
            out = []
            for i in range(0, len(values), chunk):
                out.extend(self._run(key, rows=(variables, values[i:i + chunk])))
            return out
        return self._run(key, bindings=bindings)

    def _run(self, key, bindings=None, rows=None) -> list[dict]:
        path = self.view.queries[key]
        where = f"view {self.view.name}: {self.view.rel(path)}"
        try:
            res = self.store.select(self.query_text[key], bindings=bindings, rows=rows)
        except KgcultError as e:
            line = getattr(e, "line", None)
            col = getattr(e, "column", None)
            if line:
                raise ViewError(f"{where}:{line}:{col}: {e}") from None
            raise ViewError(f"{where}:1: query failed: {e}") from None
        except (OSError, RuntimeError, ValueError, TypeError) as e:
            raise ViewError(f"{where}:1: query failed: {e}") from None
        out = []
        for sol in res:
            row = {}
            for k, t in sol.items():
                row[k] = _value(t)
                if isinstance(t, Literal) and t.language:
                    row[k + "@lang"] = t.language
            out.append(row)
        return out

    def labels(self, entities: Iterable[str], langs: list[str], key: str = "labels") -> dict[str, dict[str, str]]:
        """{entity IRI: {lang: label}}; several labels in a language -> the smallest string."""
        ents = sorted(set(entities))
        res: dict[str, dict[str, str]] = defaultdict(dict)
        if not ents or not langs:
            return res
        for r in self.select(key, rows=(["entity", "lang"], [[NamedNode(e), lang] for e in ents for lang in langs])):
            cur = res[r["entity"]].get(r["lang"])
            text = r.get("label", r.get("description"))
            if cur is None or text < cur:
                res[r["entity"]][r["lang"]] = text
        return res


# -- outputs --------------------------------------------------------------------------

@dataclass
class Output:
    path: str                  # relative to the view's output directory
    rows: list[dict]
    fields: list[str]
    main: bool = False


def _jsonl(rows: list[dict], fields: list[str]) -> bytes:
    buf = io.StringIO()
    for r in rows:
        ordered = {f: r[f] for f in fields if f in r}
        ordered.update({k: r[k] for k in sorted(r) if k not in ordered})
        buf.write(json.dumps(ordered, ensure_ascii=False, sort_keys=False))
        buf.write("\n")
    return buf.getvalue().encode("utf-8")


def _csv(rows: list[dict], fields: list[str]) -> bytes:
    cols = list(fields)
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        cells = []
        for c in cols:
            v = r.get(c)
            if v is None:
                cells.append("")
            elif isinstance(v, (list, dict)):
                cells.append(json.dumps(v, ensure_ascii=False))
            else:
                cells.append(v)
        w.writerow(cells)
    return buf.getvalue().encode("utf-8")


def sha256_bytes(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _snapshot_hash(store) -> str | None:
    """The store's snapshot content hash. A remote endpoint is not dumped to compute it:
    its metadata graph may name it (a served kgcult store does), else None."""
    if getattr(store, "remote", False):
        for name in ("contentSha256", "snapshotContentSha256"):
            try:
                value = store.get_state(name)
            except (KgcultError, AttributeError, OSError):
                value = None
            if value:
                return value
        return None
    from kgcult.store.snapshot import store_content_hash

    return store_content_hash(store)


@dataclass
class BuildResult:
    view: str
    directory: Path
    manifest: dict


def build(store, name: str, params=None, out: str | os.PathLike | None = None, *, csv_out: bool = False,
          log: Callable[[str], None] | None = None, directory: str | os.PathLike | None = None,
          snapshot_hash: str | None = None) -> BuildResult:
    """Materialize one view into ``out/<name>/`` (default ``build/views/<name>/``)."""
    view = get_view(name, directory)
    resolved = parse_params(view, params)
    if view.closure and not getattr(store, "remote", False):
        from kgcult.store import closure as hierarchy

        hierarchy.ensure_closure(store, log=log)
    ctx = ViewContext(store, view, resolved, log)
    outputs = PROCESSORS[view.processor](ctx)
    if not outputs or not any(o.main for o in outputs):
        raise ViewError(f"view {name}: processor {view.processor} produced no main output")
    files: list[tuple[str, bytes, int, bool]] = []
    for o in outputs:
        files.append((o.path, _jsonl(o.rows, o.fields), len(o.rows), o.main))
        if csv_out:
            files.append((re.sub(r"\.jsonl$", ".csv", o.path), _csv(o.rows, o.fields), len(o.rows), False))
    main_path, main_bytes, main_rows, _ = next(f for f in files if f[3])
    manifest = {
        "view": view.name,
        "description": view.description,
        "kgcult_version": __version__,
        "snapshot_content_sha256": snapshot_hash if snapshot_hash is not None else _snapshot_hash(store),
        "declaration": {"file": view.rel(view.path), "sha256": sha256_bytes(view.text.encode("utf-8"))},
        "queries": {k: {"file": view.rel(p), "sha256": sha256_bytes(ctx.query_text[k].encode("utf-8"))}
                    for k, p in sorted(view.queries.items())},
        "parameters": {k: _param_text(v) for k, v in sorted(resolved.items())},
        "output": main_path,
        "rows": main_rows,
        "sha256": sha256_bytes(main_bytes),
        "outputs": [{"file": p, "rows": n, "sha256": sha256_bytes(b)} for p, b, n, _ in sorted(files, key=lambda f: f[0])],
    }
    target = Path(out or DEFAULT_OUT) / view.name
    _write_atomically(target, files, manifest)
    return BuildResult(view.name, target, manifest)


def _write_atomically(target: Path, files, manifest: dict) -> None:
    """Write into a sibling temporary directory, then swap it in: a failed build never
    leaves a half-written dataset behind, and a re-run replaces the old one whole."""
    if target.exists() and any(target.iterdir()) and not (target / MANIFEST).is_file():
        raise ViewError(f"{target}: exists and is not a kgcult view output (no {MANIFEST}); refusing to overwrite it")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    try:
        for rel, data, _, _ in files:
            p = tmp / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        if target.exists():
            old = target.with_name(f".{target.name}.old-{os.getpid()}")
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old)
        else:
            os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def build_all(store, out=None, *, csv_out=False, log=None, directory=None) -> list[BuildResult]:
    """Build every view with its default parameters."""
    snap = _snapshot_hash(store)
    results = []
    for name in registry(directory):
        if log:
            log(f"building {name}")
        results.append(build(store, name, None, out, csv_out=csv_out, log=log, directory=directory,
                             snapshot_hash=snap))
    return results


# -- processors -----------------------------------------------------------------------

def _process_table(ctx: ViewContext) -> list[Output]:
    """Generic: the ``main`` query's solutions, optionally grouped.

    config: {"group_by": [vars], "lists": [vars]}: one row per distinct group_by tuple, the
    ``lists`` variables collected into sorted lists of distinct values. IRIs under wd: are
    written as QIDs when config "qids" is true."""
    v = ctx.view
    bindings = {}
    for name, p in v.parameters.items():
        value = ctx.params[name]
        if p.type == "qid":
            bindings[name] = wd(value)
        elif p.type in ("str", "int", "bool"):
            bindings[name] = value
    rows = ctx.select("main", bindings=bindings or None)
    if v.config.get("qids"):
        rows = [{k: qid(x) for k, x in r.items()} for r in rows]
    group_by = v.config.get("group_by")
    lists = v.config.get("lists", [])
    fields = v.fields or sorted({k for r in rows for k in r if not k.endswith("@lang")})
    if group_by:
        groups: dict[tuple, dict] = {}
        for r in rows:
            key = tuple(r.get(k) for k in group_by)
            g = groups.setdefault(key, {k: r.get(k) for k in fields if k not in lists and k in r})
            for lk in lists:
                g.setdefault(lk, set())
                if r.get(lk) is not None:
                    g[lk].add(r[lk])
        rows = []
        for key in sorted(groups, key=lambda t: [qid_key(x or "") for x in t]):
            g = groups[key]
            for lk in lists:
                g[lk] = sorted(g[lk], key=qid_key)
            rows.append(g)
    else:
        rows = [{k: r[k] for k in fields if k in r} for r in rows]
        rows.sort(key=lambda r: [qid_key(str(r.get(k, ""))) for k in fields])
    return [Output(f"{v.name}.jsonl", rows, fields, main=True)]


PROCESSORS: dict[str, Callable[[ViewContext], list[Output]]] = {"table": _process_table}


def processor(name: str):
    def deco(fn):
        PROCESSORS[name] = fn
        return fn
    return deco


# -- culture groups and spectral domains (ontology data) -----------------------------

def _parse_ttl(path: Path) -> list:
    try:
        return list(ox.parse(path=str(path), format=ox.RdfFormat.TURTLE))
    except SyntaxError as e:
        from kgcult.store.rdfio import syntax_error

        raise syntax_error(str(path), e) from None
    except OSError as e:
        raise ViewError(f"{path}: cannot read: {e}") from None


def culture_groups(path: str | os.PathLike | None = None) -> dict[str, list[str]]:
    """{culture name: [member QIDs]} from ``ontology/cultures.ttl``."""
    path = Path(path) if path else resources.ontology("cultures.ttl")
    k = vocab.KGC
    names: dict[str, str] = {}
    members: dict[str, list[str]] = defaultdict(list)
    typed = set()
    for q in _parse_ttl(path):
        s, p, o = q.subject.value, q.predicate.value, q.object.value
        if p == vocab.RDF + "type" and o == k + "CultureGroup":
            typed.add(s)
        elif p == k + "cultureName":
            names[s] = o
        elif p == k + "member":
            members[s].append(qid(o))
    out = {}
    for s in typed:
        if s not in names:
            raise ViewError(f"{path}: culture group {s} lacks kgc:cultureName")
        out[names[s]] = sorted(set(members[s]), key=qid_key)
    return dict(sorted(out.items()))


def spectral_domains(path: str | os.PathLike | None = None) -> dict[str, dict]:
    """{domain name: {"label", "country_properties", "item_class", "item_country_properties"}}."""
    path = Path(path) if path else resources.ontology("spectral-domains.ttl")
    k = vocab.KGC
    props: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for q in _parse_ttl(path):
        props[q.subject.value][q.predicate.value].append(q.object.value)
    out = {}
    for s, p in props.items():
        if k + "SpectralDomain" not in p.get(vocab.RDF + "type", []):
            continue
        if not p.get(k + "domainName"):
            raise ViewError(f"{path}: spectral domain {s} lacks kgc:domainName")
        name = p[k + "domainName"][0]
        d = {
            "label": (p.get(vocab.RDFS + "label") or [name])[0],
            "country_properties": sorted(p.get(k + "countryProperty", [])),
            "item_class": (p.get(k + "itemClass") or [None])[0],
            "item_country_properties": sorted(p.get(k + "itemCountryProperty", [])),
        }
        if not d["country_properties"] and not (d["item_class"] and d["item_country_properties"]):
            raise ViewError(f"{path}: spectral domain {name} needs kgc:countryProperty or "
                            "kgc:itemClass + kgc:itemCountryProperty")
        out[name] = d
    return dict(sorted(out.items()))




# =====================================================================================
# Dataset processors
# =====================================================================================

def _lang_order(langs: list[str]):
    order = {l: i for i, l in enumerate(langs)}
    return lambda l: (order.get(l, len(order)), l)


def _count_rows(rows: list[dict], key: str = "origin") -> list[dict]:
    """FmLAMA's <lang>_count.jsonl: "All" first, then countries by count (desc), name."""
    c = Counter(r[key] for r in rows)
    out = [{"origin": "All", "count": len(rows)}]
    out += [{"origin": o, "count": n} for o, n in sorted(c.items(), key=lambda t: (-t[1], t[0]))]
    return out


@processor("fmlama")
def _process_fmlama(ctx: ViewContext) -> list[Output]:
    """FmLAMA §3 (and its released construction scripts), over the local graph.

    1. dishes: kgc:typedAs dish; candidate origins from fmlama-origins.rq (P495, or the
       P17/P495 country of a P2012/P361 cuisine; a dish whose P495 names another value is
       not a dish of that country); origins restricted to P31 country items with an English
       label (FmLAMA keys its countries by English label), minus `exclude_countries`;
    2. per language L: a (dish, country) row exists when the dish, the country and at least
       one P527 ingredient have an rdfs:label in L (FmLAMA joins them with
       FILTER(LANG(..) = LANG(?dishLabel)));
    3. per language, dishes found under more than one origin country are dropped (FmLAMA's
       language split keeps only URLs that occur once);
    4. `countries` (optional) restricts the output to those origin countries (FmLAMA's
       data_lang step keeps 14 countries); the aligned subset keeps the dishes present in
       every requested language (FmLAMA's data_filter step).
    """
    p = ctx.params
    langs: list[str] = p["languages"]
    if not langs:
        raise ViewError(f"{ctx.view.path}: view fmlama: parameter languages is empty")
    dish_class, country_class = wd(p["dish_class"]), wd(p["country_class"])
    excluded = {vocab.WD + q for q in p["exclude_countries"]}
    wanted = {vocab.WD + q for q in p["countries"]}

    pairs = [(r["dish"], r["country"]) for r in ctx.select(
        "origins", bindings={"dishClass": dish_class, "countryClass": country_class})]
    pairs = [(d, c) for d, c in pairs if c not in excluded]
    dishes = sorted({d for d, _ in pairs})
    countries = sorted({c for _, c in pairs})
    ctx.log(f"fmlama: {len(dishes)} dishes with a candidate origin among {len(countries)} countries")

    label_langs = sorted(set(langs) | {"en"})
    country_labels = ctx.labels(countries, label_langs)
    pairs = [(d, c) for d, c in pairs if "en" in country_labels.get(c, {})]
    ingredients: dict[str, set[str]] = defaultdict(set)
    for r in ctx.select("ingredients", bindings={"dishClass": dish_class}):
        ingredients[r["dish"]].add(r["ingredient"])
    # Only dishes with a candidate origin and an ingredient can make a row.
    pairs = [(d, c) for d, c in pairs if d in ingredients]
    dish_labels = ctx.labels({d for d, _ in pairs}, langs)
    ing_labels = ctx.labels({i for d, _ in pairs for i in ingredients[d]}, langs)

    per_lang: dict[str, list[dict]] = {}
    for lang in langs:
        cand = []
        for d, c in pairs:
            sub = dish_labels.get(d, {}).get(lang)
            origin_name = country_labels.get(c, {}).get(lang)
            objs = sorted({ing_labels[i][lang] for i in ingredients.get(d, ()) if lang in ing_labels.get(i, {})})
            if sub is None or origin_name is None or not objs:
                continue
            cand.append({"url": d, "origin": country_labels[c]["en"], "origin_name": origin_name,
                         "lang": lang, "sub_label": sub, "obj_label": objs, "_country": c})
        n_origins = Counter(r["url"] for r in cand)
        kept = [r for r in cand if n_origins[r["url"]] == 1]
        if wanted:
            kept = [r for r in kept if r["_country"] in wanted]
        per_lang[lang] = kept

    kept_dishes = sorted({r["url"] for rows in per_lang.values() for r in rows})
    # Optional fields: description (in L), P186 materials (labels in L), P18 images.
    extras: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    if kept_dishes:
        for r in ctx.select("extras", rows=(["dish"], [[NamedNode(d)] for d in kept_dishes])):
            extras[r["dish"]][qid(r["property"].replace(vocab.WDT, vocab.WD))].add(r["value"])
    material_labels = ctx.labels({m for e in extras.values() for m in e.get("P186", ())}, langs)
    descriptions = ctx.labels(kept_dishes, langs, key="descriptions")
    for lang, rows in per_lang.items():
        for r in rows:
            d = r["url"]
            desc = descriptions.get(d, {}).get(lang)
            if desc is not None:
                r["description"] = desc
            mats = sorted({material_labels[m][lang] for m in extras[d].get("P186", ())
                           if lang in material_labels.get(m, {})})
            if mats:
                r["materials"] = mats
            imgs = sorted(extras[d].get("P18", ()))
            if imgs:
                r["image"] = imgs
        rows.sort(key=lambda r: (r["origin"], qid_key(r["url"])))

    fields = ctx.view.fields
    by_lang = _lang_order(langs)
    all_rows = [r for lang in sorted(per_lang, key=by_lang) for r in per_lang[lang]]
    aligned_ids = set.intersection(*[{r["url"] for r in per_lang[l]} for l in langs]) if langs else set()

    outputs: list[Output] = []
    # Per-country counts over all requested languages (FmLAMA's Dish_Count.json counts
    # (dish, language) rows per country).
    count_rows = []
    by_country: dict[str, dict] = {}
    for r in all_rows:
        c = by_country.setdefault(r["_country"], {"country": qid(r["_country"]), "origin": r["origin"],
                                                   "rows": 0, "dishes": set(), "aligned": set(),
                                                   "languages": Counter()})
        c["rows"] += 1
        c["dishes"].add(r["url"])
        c["languages"][r["lang"]] += 1
        if r["url"] in aligned_ids:
            c["aligned"].add(r["url"])
    for c in sorted(by_country.values(), key=lambda c: (-c["rows"], c["origin"], qid_key(c["country"]))):
        count_rows.append({"country": c["country"], "origin": c["origin"], "rows": c["rows"],
                           "dishes": len(c["dishes"]), "aligned_dishes": len(c["aligned"]),
                           "languages": {l: c["languages"][l] for l in langs if c["languages"][l]}})
    strip = lambda rows: [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]  # noqa: E731
    outputs.append(Output("fmlama.jsonl", strip(all_rows), fields, main=True))
    outputs.append(Output("counts.jsonl", count_rows,
                          ["country", "origin", "rows", "dishes", "aligned_dishes", "languages"]))
    for lang in langs:
        rows = strip(per_lang[lang])
        outputs.append(Output(f"data_lang/{lang}/{lang}_dishes.jsonl", rows, fields))
        outputs.append(Output(f"data_lang/{lang}/{lang}_count.jsonl", _count_rows(rows), ["origin", "count"]))
        arows = [r for r in rows if r["url"] in aligned_ids]
        outputs.append(Output(f"data_filter/{lang}/{lang}_dishes.jsonl", arows, fields))
        outputs.append(Output(f"data_filter/{lang}/{lang}_count.jsonl", _count_rows(arows), ["origin", "count"]))
    ctx.log(f"fmlama: {len(all_rows)} rows, {len(kept_dishes)} dishes, {len(aligned_ids)} aligned")
    return outputs


# -- DLAMA ----------------------------------------------------------------------------

def entropy(object_lists: list[list[str]]) -> tuple[float, str | None]:
    """DLAMA §5: for each triple keep only its most frequent valid object (counts over all
    the triples' object lists; ties -> the smallest QID), then the entropy (log base 2) of
    the distribution of those objects. Returns (entropy, most common object)."""
    if not object_lists:
        return 0.0, None
    counts = Counter(o for objs in object_lists for o in objs)
    picked = [min(objs, key=lambda o: (-counts[o], qid_key(o))) for objs in object_lists if objs]
    dist = Counter(picked)
    n = sum(dist.values())
    h = -sum((k / n) * math.log2(k / n) for k in dist.values())
    most = min(counts, key=lambda o: (-counts[o], qid_key(o)))
    return (0.0 if abs(h) < 1e-12 else h), most


@processor("dlama")
def _process_dlama(ctx: ViewContext) -> list[Output]:
    """DLAMA §4.1 steps 1-5 (App. B) and the §5 entropy over the local graph.

    Per predicate and culture: (1) triples whose subject (or object, or the subject's
    P17/P495 country, per the predicate's `culture` mode) is one of the culture's
    countries; (2) subjects ranked by sitelink count (desc; ties by QID); (3) all objects
    of each subject, whatever their country; (4) (subject, object) pairs dropped when
    either lacks a label in any requested language, subjects with no object left dropped,
    the first `max_subjects` subjects kept; (5) objects augmented with their P279
    ancestors among the predicate's objects (App. B), and for place predicates with the
    P131 territories they lie in (countries excepted) that have all labels.
    """
    p = ctx.params
    langs: list[str] = p["languages"]
    cap: int = p["max_subjects"]
    specs: dict = ctx.view.config.get("predicates", {})
    groups = culture_groups()
    preds = p["predicates"] or list(specs)
    for pid in preds:
        if pid not in specs:
            raise ViewError(f"{ctx.view.path}:{ctx.view.line_of(PRED_KEY)}: view dlama: "
                            f"predicate {pid!r} is not configured (configured: {', '.join(specs)})")
    cultures = p["cultures"] or list(groups)
    for c in cultures:
        if c not in groups:
            raise ViewError(f"view dlama: unknown culture {c!r}; {resources.ontology('cultures.ttl')} "
                            f"defines {', '.join(groups)}")

    # Step 1 -------------------------------------------------------------------------
    triples: dict[tuple[str, str], dict[str, set[str]]] = {}   # (pid, culture) -> subject -> countries
    for pid in preds:
        spec = specs[pid]
        mode = spec.get("culture", "subject")
        prop = NamedNode(vocab.WDT + pid)
        for culture in cultures:
            members = [wd(q) for q in groups[culture]]
            subj_countries: dict[str, set[str]] = defaultdict(set)
            if mode == "subject":
                for r in ctx.select("by-subject", rows=(["p", "country"], [[prop, c] for c in members])):
                    subj_countries[r["country"]].add(r["country"])
            elif mode == "object":
                for r in ctx.select("by-object", rows=(["p", "country"], [[prop, c] for c in members])):
                    subj_countries[r["s"]].add(r["country"])
            elif mode.startswith("subject-"):
                via = NamedNode(vocab.WDT + mode.split("-", 1)[1])
                for r in ctx.select("by-subject-country",
                                    rows=(["p", "via", "country"], [[prop, via, c] for c in members])):
                    subj_countries[r["s"]].add(r["country"])
            else:
                raise ViewError(f"{ctx.view.path}:{ctx.view.line_of(pid)}: view dlama: predicate {pid}: "
                                f"unknown culture mode {mode!r} (subject, object, subject-<P>)")
            triples[(pid, culture)] = subj_countries

    all_subjects = sorted({s for d in triples.values() for s in d})
    # Step 2: sitelink counts (wikibase:sitelinks; else the number of sitelink articles).
    rank: dict[str, int] = {}
    if all_subjects:
        for r in ctx.select("sitelinks", rows=(["s"], [[NamedNode(s)] for s in all_subjects])):
            n = r.get("sitelinks")
            rank[r["s"]] = int(float(n)) if n not in (None, "") else int(r.get("articles", 0) or 0)
    # Step 3: all objects of each selected subject.
    objects: dict[tuple[str, str], set[str]] = defaultdict(set)     # (pid, subject) -> objects
    for pid in preds:
        subs = sorted({s for (pp, _), d in triples.items() if pp == pid for s in d})
        prop = NamedNode(vocab.WDT + pid)
        for r in ctx.select("objects", rows=(["s", "p"], [[NamedNode(s), prop] for s in subs])):
            objects[(pid, r["s"])].add(r["o"])
    # Step 4: labels in every language.
    ents = set(all_subjects) | {o for objs in objects.values() for o in objs}
    labels = ctx.labels(ents, langs)
    has_all = lambda e: all(l in labels.get(e, {}) for l in langs)  # noqa: E731

    selected: dict[tuple[str, str], list[tuple[str, list[str]]]] = {}
    for (pid, culture), subj_countries in triples.items():
        ordered = sorted(subj_countries, key=lambda s: (-rank.get(s, 0), qid_key(s)))
        keep = []
        for s in ordered:
            if not has_all(s):
                continue
            objs = sorted((o for o in objects.get((pid, s), ()) if has_all(o)), key=qid_key)
            if not objs:
                continue
            keep.append((s, objs))
            if len(keep) >= cap:
                break
        selected[(pid, culture)] = keep

    # Step 5: augmentation.
    augmented: dict[tuple[str, str], list[str]] = {}
    for pid in preds:
        spec = specs[pid]
        aug = spec.get("augment", ["P279"])
        pred_objects = sorted({o for (pp, _), keep in selected.items() if pp == pid for _, objs in keep for o in objs},
                              key=qid_key)
        anc: dict[str, set[str]] = {o: {o} for o in pred_objects}
        if "P279" in aug and pred_objects:
            obj_set = set(pred_objects)
            for r in ctx.select("superclasses", rows=(["sub"], [[NamedNode(o)] for o in pred_objects])):
                if r["super"] in obj_set:
                    anc[r["sub"]].add(r["super"])
        if "P131" in aug and pred_objects:
            terr: dict[str, set[str]] = defaultdict(set)
            for r in ctx.select("territories", rows=(["place"], [[NamedNode(o)] for o in pred_objects])):
                terr[r["place"]].add(r["territory"])
            tlabels = ctx.labels({t for ts in terr.values() for t in ts} - set(labels), langs)
            for k, v in tlabels.items():
                labels.setdefault(k, {}).update(v)
            for o, ts in terr.items():
                anc[o] |= {t for t in ts if has_all(t)}
        for (pp, culture), keep in selected.items():
            if pp != pid:
                continue
            for s, objs in keep:
                augmented[(pid, s)] = sorted(set().union(*(anc[o] for o in objs)), key=qid_key)

    rows, per_lang, entropy_rows, candidate_rows = [], defaultdict(list), [], []
    for pid in preds:
        pred_candidates: set[str] = set()
        for culture in cultures:
            keep = selected[(pid, culture)]
            lists = []
            for i, (s, objs) in enumerate(keep, 1):
                aug = augmented[(pid, s)]
                lists.append(aug)
                pred_candidates |= set(aug)
                rows.append({
                    "predicate": pid, "culture": culture, "rank": i, "sub_uri": qid(s),
                    "obj_uri": [qid(o) for o in aug], "raw_obj_uri": [qid(o) for o in objs],
                    "sub_label": {l: labels[s][l] for l in langs},
                    "obj_label": {l: [labels[o][l] for o in aug] for l in langs},
                    "country": sorted((qid(c) for c in triples[(pid, culture)][s]), key=qid_key),
                    "sitelinks": rank.get(s, 0),
                })
                for l in langs:
                    per_lang[(l, pid, culture)].append({
                        "sub_uri": qid(s), "obj_uri": [qid(o) for o in aug],
                        "sub_label": labels[s][l], "obj_label": [labels[o][l] for o in aug]})
            h, most = entropy(lists)
            entropy_rows.append({"predicate": pid, "culture": culture, "triples": len(keep),
                                 "entropy": round(h, 6), "most_common": qid(most) if most else None})
        cands = sorted(pred_candidates, key=qid_key)
        candidate_rows.append({"predicate": pid, "obj_uri": [qid(o) for o in cands],
                               "obj_label": {l: [labels[o][l] for o in cands] for l in langs}})
    outputs = [Output("dlama.jsonl", rows, ctx.view.fields, main=True),
               Output("candidates.jsonl", candidate_rows, ["predicate", "obj_uri", "obj_label"]),
               Output("entropy.jsonl", entropy_rows, ["predicate", "culture", "triples", "entropy", "most_common"])]
    for (l, pid, culture), prow in sorted(per_lang.items()):
        outputs.append(Output(f"{l}/{pid}_{culture}.jsonl", prow, ["sub_uri", "obj_uri", "sub_label", "obj_label"]))
    ctx.log(f"dlama: {len(rows)} triples over {len(preds)} predicates x {len(cultures)} cultures")
    return outputs


# -- spectral items -------------------------------------------------------------------

@processor("spectral-items")
def _process_spectral(ctx: ViewContext) -> list[Output]:
    """Per domain of ontology/spectral-domains.ttl: the exhaustive item list and the
    country x item ground-truth matrix (1 when the graph links country and item)."""
    p = ctx.params
    langs = p["languages"]
    domains = spectral_domains()
    names = p["domains"] or list(domains)
    for n in names:
        if n not in domains:
            raise ViewError(f"view spectral-items: unknown domain {n!r}; "
                            f"{resources.ontology('spectral-domains.ttl')} defines {', '.join(domains)}")
    cclass = wd(p["country_class"])
    countries = sorted({r["country"] for r in ctx.select("countries", bindings={"countryClass": cclass})},
                       key=qid_key)
    links: dict[str, dict[str, set[str]]] = {}
    for n in names:
        d = domains[n]
        pairs: dict[str, set[str]] = defaultdict(set)   # item -> countries
        if d["country_properties"]:
            for r in ctx.select("country-items", rows=(["p", "countryClass"],
                                                       [[NamedNode(x), cclass] for x in d["country_properties"]])):
                pairs[r["item"]].add(r["country"])
        if d["item_class"] and d["item_country_properties"]:
            for r in ctx.select("item-countries", rows=(["itemClass", "p", "countryClass"],
                                                        [[NamedNode(d["item_class"]), NamedNode(x), cclass]
                                                         for x in d["item_country_properties"]])):
                pairs[r["item"]].add(r["country"])
        links[n] = pairs
    labels = ctx.labels(set(countries) | {i for pr in links.values() for i in pr}, langs)
    item_rows, outputs = [], []
    for n in names:
        items = sorted(links[n], key=qid_key)
        for i in items:
            item_rows.append({"domain": n, "item": qid(i), "label": labels.get(i, {}),
                              "countries": sorted((qid(c) for c in links[n][i]), key=qid_key),
                              "n_countries": len(links[n][i])})
        matrix = []
        for c in countries:
            row = {"country": qid(c), "country_label": labels.get(c, {}).get(langs[0]) if langs else None}
            for i in items:
                row[qid(i)] = 1 if c in links[n][i] else 0
            matrix.append(row)
        outputs.append(Output(f"matrix/{n}.jsonl", matrix, ["country", "country_label"] + [qid(i) for i in items]))
    outputs.insert(0, Output("spectral-items.jsonl", item_rows,
                             ["domain", "item", "label", "countries", "n_countries"], main=True))
    outputs.append(Output("countries.jsonl", [{"country": qid(c), "label": labels.get(c, {})} for c in countries],
                          ["country", "label"]))
    ctx.log(f"spectral-items: {len(item_rows)} items in {len(names)} domains, {len(countries)} countries")
    return outputs


# -- entity metadata ------------------------------------------------------------------

COUNTRY_SOURCES = ("P495", "P27", "creator-P27", "P17")


@processor("entity-metadata")
def _process_entity_metadata(ctx: ViewContext) -> list[Output]:
    """QID -> labels, descriptions, country (of origin P495, else nationality P27, else the
    P27 of its author/performer P50/P175, else P17), and the topic roots it falls under
    (kgc:broader, i.e. (P31|P279|P361)+, the MakiEval typing)."""
    p = ctx.params
    langs = p["languages"]
    roots = [wd(q) for q in p["roots"]]
    members: dict[str, set[str]] = defaultdict(set)
    if p["entities"]:
        for q in p["entities"]:
            members[vocab.WD + q]
        for r in ctx.select("roots-of", rows=(["entity", "root"],
                                              [[wd(q), rt] for q in p["entities"] for rt in roots])):
            members[r["entity"]].add(r["root"])
    else:
        for r in ctx.select("members", rows=(["root"], [[rt] for rt in roots])):
            members[r["entity"]].add(r["root"])
        for rt in roots:  # a root is its own topic
            members[rt.value].add(rt.value)
    ents = sorted(members, key=qid_key)
    labels = ctx.labels(ents, langs)
    descs = ctx.labels(ents, langs, key="descriptions")
    countries: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    if ents:
        for r in ctx.select("countries", rows=(["entity"], [[NamedNode(e)] for e in ents])):
            countries[r["entity"]][r["source"]].add(r["country"])
    rows = []
    for e in ents:
        src = next((s for s in COUNTRY_SOURCES if countries[e].get(s)), None)
        rows.append({
            "qid": qid(e),
            "labels": labels.get(e, {}),
            "descriptions": descs.get(e, {}),
            "country": sorted((qid(c) for c in countries[e][src]), key=qid_key) if src else [],
            "country_source": src,
            "topic_roots": sorted((qid(r) for r in members[e]), key=qid_key),
        })
    ctx.log(f"entity-metadata: {len(rows)} entities")
    return [Output("entity-metadata.jsonl", rows, ctx.view.fields, main=True)]


__all__ = [
    "View", "Param", "Output", "ViewContext", "ViewError", "BuildResult", "registry", "get_view",
    "views", "parse_params", "build", "build_all", "load_view", "culture_groups", "spectral_domains",
    "PROCESSORS", "processor", "qid", "wd", "qid_key",
]
