"""Subgraph specs: which Wikidata entities and statements a subgraph holds, as data.

Specs live in ``ontology/subgraphs.ttl`` (the comments there explain each field). Every
value that ends up in a query (roots, properties, languages) is validated here, strictly,
and later bound into queries as RDF terms through :mod:`kgcult.sparql.query_text`; a root such as
``Q1 } DROP ALL #`` or a language such as ``en") } DROP ALL #`` is rejected with an error
naming the spec and the field, never sent anywhere.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kgcult import ids, langtags, ontology, resources, vocab
from kgcult.errors import KgcultError

LABEL_PROPERTIES = (vocab.RDFS + "label", vocab.SKOS + "altLabel", vocab.SCHEMA + "description")
SITELINKS = vocab.WIKIBASE + "sitelinks"

CULTURES = "cultures.ttl"  # where kgc:scopeMembersOf looks (ontology/cultures.ttl)
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


class SpecError(KgcultError):
    """A subgraph spec with a missing or invalid field."""


@dataclass(frozen=True)
class SubgraphSpec:
    name: str
    graph: str
    roots: tuple[str, ...] = ()              # entity ids, e.g. Q746549
    member_properties: tuple[str, ...] = ()  # property ids walked downwards (P31, P279)
    member_depth: int = 0
    seed_from: tuple[str, ...] = ()          # names of other subgraphs
    seed_properties: tuple[str, ...] = ()    # property ids whose objects there are seeds
    seed_all: bool = False                   # every entity of those graphs is a seed
    properties: tuple[str, ...] = ()         # property ids fetched (wdt:)
    follow_properties: tuple[str, ...] = ()  # property ids whose objects are followed
    follow_depth: int = 0
    scope_property: str = ""                 # property id: walked members must have it ...
    scope_values: tuple[str, ...] = ()       # ... with one of these entity ids as object
    scope_member_properties: tuple[str, ...] = ()  # the member properties it scopes (all when empty)
    label_properties: tuple[str, ...] = ()   # full IRIs (rdfs:label, ...)
    languages: tuple[str, ...] = ()
    sitelinks: bool = False
    order: int = 100
    comment: str = ""
    source: str = ""                         # where the spec was read from

    @property
    def is_labels(self) -> bool:
        return bool(self.label_properties or self.sitelinks)

    @property
    def scoped_properties(self) -> tuple[str, ...]:
        """The member properties whose finds must meet the scope (none without a scope)."""
        if not self.scope_property:
            return ()
        return self.scope_member_properties or self.member_properties

    @property
    def staging_graph(self) -> str:
        return vocab.STAGING_GRAPH + self.name

    def fingerprint(self) -> str:
        """sha256 of everything that decides the selection (not the comment/source)."""
        d = {k: v for k, v in self.__dict__.items() if k not in ("comment", "source", "order")
             and not (k.startswith("scope_") and not v)}  # unscoped specs keep their fingerprint
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()

    def as_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


# -- validation ---------------------------------------------------------------------------

def check_entity(value: str, where: str) -> str:
    """A bare entity id (Q42) from an id or a wd: IRI; anything else is rejected."""
    v = value[len(vocab.WD):] if isinstance(value, str) and value.startswith(vocab.WD) else value
    if not ids.is_entity(v):
        raise SpecError(f"{where}: {value!r} is not a Wikidata entity id (Q123) or wd: IRI")
    return v


def check_property(value: str, where: str) -> str:
    v = value
    if isinstance(v, str):
        for prefix in (vocab.WDT, vocab.WD):
            if v.startswith(prefix):
                v = v[len(prefix):]
                break
    if not ids.is_id(v, "P"):
        raise SpecError(f"{where}: {value!r} is not a Wikidata property id (P31) or wdt: IRI")
    return v


def check_language(value: str, where: str) -> str:
    return langtags.parse(value, where, SpecError)


def check_label_property(value: str, where: str) -> str:
    allowed = LABEL_PROPERTIES + (vocab.SCHEMA + "name", vocab.SKOS + "prefLabel")
    if value not in allowed:
        raise SpecError(f"{where}: {value!r} is not a label property ({', '.join(allowed)})")
    return value


def check_name(value: str, where: str) -> str:
    if not isinstance(value, str) or not _NAME.match(value):
        raise SpecError(f"{where}: {value!r} is not a subgraph name (lower-case letters, digits, '-', '_')")
    return value


def validate(spec: SubgraphSpec) -> SubgraphSpec:
    """Return the spec with every field checked and normalized; raise SpecError otherwise."""
    w = f"{spec.source or 'subgraph spec'}: {spec.name}"
    name = check_name(spec.name, f"{w}: kgc:name")
    graph = spec.graph
    if not isinstance(graph, str) or not re.match(r"^[a-z][a-z0-9+.-]*:[^\s<>\"{}|\\^`]+$", graph):
        raise SpecError(f"{w}: kgc:graph {graph!r} is not an IRI")
    for d, field_name in ((spec.member_depth, "memberDepth"), (spec.follow_depth, "followDepth")):
        if not isinstance(d, int) or not 0 <= d <= 100:
            raise SpecError(f"{w}: kgc:{field_name} {d!r} must be an integer from 0 to 100")
    spec = replace(
        spec,
        name=name,
        roots=tuple(sorted({check_entity(r, f"{w}: kgc:root") for r in spec.roots}, key=ids.sort_key)),
        member_properties=tuple(sorted({check_property(p, f"{w}: kgc:memberProperty") for p in spec.member_properties})),
        seed_properties=tuple(sorted({check_property(p, f"{w}: kgc:seedProperty") for p in spec.seed_properties})),
        properties=tuple(sorted({check_property(p, f"{w}: kgc:property") for p in spec.properties})),
        follow_properties=tuple(sorted({check_property(p, f"{w}: kgc:followProperty") for p in spec.follow_properties})),
        label_properties=tuple(sorted({check_label_property(p, f"{w}: kgc:labelProperty") for p in spec.label_properties})),
        # with their fallback chains (zh -> zh-hans, zh-tw, ...; mul): what the views read
        languages=langtags.with_fallbacks({check_language(x, f"{w}: kgc:labelLanguage") for x in spec.languages}),
        seed_from=tuple(sorted({check_name(s, f"{w}: kgc:seedFrom") for s in spec.seed_from})),
        scope_property=check_property(spec.scope_property, f"{w}: kgc:scopeProperty") if spec.scope_property else "",
        scope_values=tuple(sorted({check_entity(v, f"{w}: kgc:scopeValue") for v in spec.scope_values},
                                  key=ids.sort_key)),
        scope_member_properties=tuple(sorted({check_property(p, f"{w}: kgc:scopeMemberProperty")
                                              for p in spec.scope_member_properties})),
    )
    if spec.is_labels:
        if spec.label_properties and not spec.languages:
            raise SpecError(f"{w}: a labels spec needs at least one kgc:labelLanguage")
        if spec.properties or spec.follow_properties:
            raise SpecError(f"{w}: a labels spec cannot also have kgc:property/kgc:followProperty")
    elif not spec.properties:
        raise SpecError(f"{w}: no kgc:property: nothing to fetch")
    if not spec.roots and not spec.seed_from:
        raise SpecError(f"{w}: needs kgc:root or kgc:seedFrom (otherwise it selects nothing)")
    if spec.seed_from and not (spec.seed_properties or spec.seed_all):
        raise SpecError(f"{w}: kgc:seedFrom needs kgc:seedProperty or kgc:seedAll true")
    if spec.member_properties and not spec.roots:
        raise SpecError(f"{w}: kgc:memberProperty walks down from kgc:root, but there is none")
    if spec.scope_property and not spec.scope_values:
        raise SpecError(f"{w}: kgc:scopeProperty needs kgc:scopeValue or kgc:scopeMembersOf (it would select nothing)")
    if (spec.scope_values or spec.scope_member_properties) and not spec.scope_property:
        raise SpecError(f"{w}: kgc:scopeValue/kgc:scopeMemberProperty need a kgc:scopeProperty")
    if spec.scope_property and not spec.member_properties:
        raise SpecError(f"{w}: kgc:scopeProperty restricts the member walk, but there is no kgc:memberProperty")
    stray = set(spec.scope_member_properties) - set(spec.member_properties)
    if stray:
        raise SpecError(f"{w}: kgc:scopeMemberProperty {sorted(stray)} must also be a kgc:memberProperty")
    missing = set(spec.follow_properties) - set(spec.properties)
    if missing:
        raise SpecError(f"{w}: kgc:followProperty {sorted(missing)} must also be a kgc:property "
                        "(objects are followed from the fetched claims)")
    return spec


# -- loading ------------------------------------------------------------------------------

# SubgraphSpec fields read from kgc: properties of a spec, by kind
_LIST_FIELDS = {"roots": "root", "member_properties": "memberProperty", "seed_from": "seedFrom",
                "seed_properties": "seedProperty", "properties": "property", "follow_properties": "followProperty",
                "label_properties": "labelProperty", "languages": "labelLanguage",
                "scope_values": "scopeValue", "scope_member_properties": "scopeMemberProperty"}
_INT_FIELDS = {"member_depth": ("memberDepth", 0), "follow_depth": ("followDepth", 0), "order": ("order", 100)}
_FLAG_FIELDS = {"seed_all": "seedAll", "sitelinks": "sitelinks"}


def load_specs(path: str | Path | None = None) -> dict[str, SubgraphSpec]:
    """Read and validate subgraph specs from Turtle (default ``ontology/subgraphs.ttl``).
    Returns {name: spec} in dependency order (seeds before the specs that read them)."""
    path = Path(path) if path else resources.ontology("subgraphs.ttl")
    if not path.is_file():
        raise SpecError(f"{path}: no such subgraph spec file")
    node_names: dict[str, str] = {}
    raw = []
    for node, props in sorted(ontology.of_type(path, vocab.KGC + "SubgraphSpec").items(), key=lambda kv: kv[0].value):
        d = _fields(f"{path}: spec <{node.value}>", props)
        node_names[node.value] = d["name"]
        raw.append((d["name"], dict(d, source=str(path))))
    specs = {}
    for name, d in raw:
        if name in specs:
            raise SpecError(f"{path}: two specs are named {name!r}")
        d["seed_from"] = tuple(node_names.get(s, s) for s in d["seed_from"])
        specs[name] = validate(SubgraphSpec(**d))
    for s in specs.values():
        for dep in s.seed_from:
            if dep not in specs:
                raise SpecError(f"{path}: {s.name}: kgc:seedFrom names {dep!r}, which is not a spec here")
    return order_specs(specs)


def _fields(where: str, props: dict) -> dict:
    """The SubgraphSpec fields of one spec, from its {property IRI: [terms]}."""
    def one(field_name, default=None):
        vals = props.get(vocab.KGC + field_name, [])
        if len(vals) > 1:
            raise SpecError(f"{where}: kgc:{field_name} given {len(vals)} times")
        return vals[0].value if vals else default

    def integer(field_name, default):
        v = one(field_name)
        if v is None:
            return default
        try:
            return int(v)
        except ValueError:
            raise SpecError(f"{where}: kgc:{field_name} {v!r} is not an integer") from None

    name = one("name")
    if name is None:
        raise SpecError(f"{where}: lacks kgc:name")
    d = {f: tuple(o.value for o in props.get(vocab.KGC + p, [])) for f, p in _LIST_FIELDS.items()}
    d.update({f: integer(p, default) for f, (p, default) in _INT_FIELDS.items()})
    d.update({f: one(p, "false") == "true" for f, p in _FLAG_FIELDS.items()})
    comment = next((o.value for o in props.get(vocab.RDFS + "comment", [])), "")
    d["scope_values"] += scope_members_of(where, [o.value for o in props.get(vocab.KGC + "scopeMembersOf", [])])
    return dict(d, name=name, graph=one("graph") or vocab.graph_iri(name), comment=comment,
                scope_property=one("scopeProperty", ""))


def scope_members_of(where: str, classes: list[str]) -> tuple[str, ...]:
    """The ``kgc:member`` objects of every resource of these classes in
    ``ontology/cultures.ttl`` (``kgc:scopeMembersOf kgc:CultureGroup``: every country of
    every culture group), so that a spec scoped by them follows the culture groups."""
    out: list[str] = []
    for c in classes:
        groups = ontology.of_type(CULTURES, c)
        if not groups:
            raise SpecError(f"{where}: kgc:scopeMembersOf <{c}>: {CULTURES} has no resource of that class")
        out += [o.value for props in groups.values() for o in props.get(vocab.KGC + "member", [])]
    return tuple(out)


def order_specs(specs: dict[str, SubgraphSpec]) -> dict[str, SubgraphSpec]:
    """Dependency order (seedFrom first), ties by kgc:order then name; cycles are an error."""
    out: dict[str, SubgraphSpec] = {}
    pending = dict(specs)
    while pending:
        ready = [s for s in pending.values() if all(d in out or d not in specs for d in s.seed_from)]
        if not ready:
            raise SpecError(f"subgraph specs seed from each other in a cycle: {sorted(pending)}")
        for s in sorted(ready, key=lambda s: (s.order, s.name)):
            out[s.name] = s
            del pending[s.name]
    return out


def select(specs: dict[str, SubgraphSpec], names: list[str] | tuple[str, ...] | None) -> list[SubgraphSpec]:
    """The specs named (all when none), in dependency order."""
    if not names:
        return list(specs.values())
    unknown = [n for n in names if n not in specs]
    if unknown:
        raise SpecError(f"unknown subgraph(s) {', '.join(unknown)}; known: {', '.join(specs)}")
    return [s for s in specs.values() if s.name in set(names)]


def override(specs: dict[str, SubgraphSpec], *, languages=None, roots: dict | None = None,
             depth: int | None = None) -> dict[str, SubgraphSpec]:
    """Apply command-line overrides (validated like the spec file)."""
    out = {}
    for name, s in specs.items():
        changes: dict[str, Any] = {}
        if languages and s.label_properties:
            changes["languages"] = tuple(languages)
        if roots and name in roots:
            changes["roots"] = tuple(roots[name])
        if depth is not None:
            if s.member_properties:
                changes["member_depth"] = depth
            if s.follow_properties:
                changes["follow_depth"] = depth
        out[name] = validate(replace(s, source="command line", **changes)) if changes else s
    unknown = set(roots or {}) - set(specs)
    if unknown:
        raise SpecError(f"--root names unknown subgraph(s) {sorted(unknown)}")
    return out
