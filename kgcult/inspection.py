"""Looking at the graph: ``show`` (an entity card) and ``stats`` (what the store holds).

Queries see each triple once however many graphs hold it (``kgcult.store.setgraph``), so
two sources that agree print once. Where they disagree on a value Wikidata holds once
(an entity's label or description in one language, its sitelink count), ``show`` and
``stats`` say which graphs hold which value instead of keeping one silently."""
from __future__ import annotations

import re
from typing import Any

from pyoxigraph import Literal, NamedNode

from kgcult import ids, langtags, ontology, vocab
from kgcult.acquire import subgraphs
from kgcult.errors import KgcultError
from kgcult.store import health, hierarchy, sidefiles

# values Wikidata holds at most once per entity (and language): several are a disagreement
SINGLE_VALUED = {vocab.RDFS + "label": "label", vocab.SCHEMA + "description": "description",
                 vocab.WIKIBASE + "sitelinks": "sitelinks"}


def property_label(iri: str) -> str:
    return ontology.labels("properties.ttl").get(iri, "")


def stats_roots() -> list[tuple[str, str]]:
    """(IRI, label) of the classes ``stats`` counts, from ``ontology/roots.ttl``."""
    return sorted(ontology.labels("roots.ttl").items(), key=lambda kv: kv[1])


def entity_iri(qid: str) -> str:
    """The entity IRI of a user-given id (Q123, P123, wd:Q123 or the IRI)."""
    return ids.iri(ids.parse(qid, "QP", field="entity"))


def _chain(lang: str) -> tuple[str, ...]:
    """``lang``'s fallback chain (variants, ``mul``), then English."""
    chain = langtags.fallback_chain(lang)
    return chain + tuple(x for x in langtags.fallback_chain("en") if x not in chain)


def _in_chain(by_lang: dict, lang: str):
    return next((by_lang[x] for x in _chain(lang) if x in by_lang), None)


def label_languages(store) -> list[str]:
    """Every language tag of an rdfs:label in the store (computed once per data version:
    :mod:`kgcult.store.sidefiles`)."""
    def compute() -> list[str]:
        rows = store.query("SELECT DISTINCT (LANG(?l) AS ?lang) WHERE { ?x rdfs:label ?l }")
        return sorted({r["lang"].value for r in rows if r["lang"] is not None and r["lang"].value})
    return sidefiles.cached(store, "labelLanguages", compute)


def labels_in(store, iris: list[str], lang: str) -> dict[str, str]:
    """rdfs:label of each IRI in ``lang`` through its fallback chain (variants, ``mul``:
    :func:`kgcult.langtags.fallback_chain`), else in English."""
    if not iris:
        return {}
    chain = _chain(lang)
    order = {x: i for i, x in enumerate(chain)}
    rows = store.query(
        """SELECT ?x ?l WHERE { ?x rdfs:label ?l . FILTER(LANG(?l) = ?lang) }""",
        rows=(["x", "lang"], [(NamedNode(i), Literal(x)) for i in sorted(set(iris)) for x in chain]),
    )
    best: dict[str, tuple[int, str]] = {}
    for r in rows:
        rank = order.get(r["l"].language, len(order))
        x = r["x"].value
        if x not in best or (rank, r["l"].value) < best[x]:
            best[x] = (rank, r["l"].value)
    return {x: v for x, (_, v) in best.items()}


def show(store, qid: str, lang: str = "en") -> dict:
    """An entity card: labels, aliases and descriptions by language, claims with object
    labels, and ancestors read from the closure."""
    iri = entity_iri(qid)
    node = NamedNode(iri)
    card: dict[str, Any] = {"qid": ids.shorten(iri), "iri": iri, "labels": {}, "aliases": {},
            "descriptions": {}, "claims": [], "ancestors": {}, "sitelinks": None}
    rows = store.query("SELECT ?p ?o WHERE { ?x ?p ?o }", bindings={"x": node})
    objects = []
    for r in rows:
        p, o = r["p"].value, r["o"]
        if p == vocab.RDFS + "label":
            card["labels"][o.language or ""] = o.value
        elif p == vocab.SKOS + "altLabel":
            card["aliases"].setdefault(o.language or "", []).append(o.value)
        elif p == vocab.SCHEMA + "description":
            card["descriptions"][o.language or ""] = o.value
        elif p == vocab.WIKIBASE + "sitelinks":
            card["sitelinks"] = ids.sitelink_count(o)  # None for a value that is not a count
        elif p.startswith(vocab.WDT):
            card["claims"].append({"property": p[len(vocab.WDT):], "property_label": property_label(p),
                                   "value": o.value})
            if isinstance(o, NamedNode):
                objects.append(o.value)
    if not (card["labels"] or card["claims"]):
        raise KgcultError(f"{card['qid']}: not in the store")
    # every mapping sorted by key: the card's bytes do not depend on the engine's row order
    card["aliases"] = {k: sorted(v) for k, v in sorted(card["aliases"].items())}
    card["disagreements"] = disagreements(store, node)
    for d in card["disagreements"]:  # the card shows the first value; the rest are listed
        field = {"label": "labels", "description": "descriptions"}.get(d["field"])
        if field:
            card[field][d["lang"]] = d["values"][0]["value"]
    card["labels"] = dict(sorted(card["labels"].items()))
    card["descriptions"] = dict(sorted(card["descriptions"].items()))
    card["label"] = _in_chain(card["labels"], lang)
    closures = {"typedAs": "kgc:typedAs", "locatedIn": "kgc:locatedIn", "partOf": "kgc:partOf"}
    for key, pred in closures.items():
        rows = store.query(f"SELECT DISTINCT ?y WHERE {{ ?x {pred} ?y }}", bindings={"x": node})
        ys = sorted(r["y"].value for r in rows)
        if ys:
            card["ancestors"][key] = ys
            objects.extend(ys)
    names = labels_in(store, objects, lang)
    for c in card["claims"]:
        c["value_label"] = names.get(c["value"], "")
        c["value"] = ids.shorten(c["value"])
    card["claims"].sort(key=lambda c: (int(c["property"][1:]) if c["property"][1:].isdigit() else 0,
                                       c["property"], c["value"]))
    card["ancestors"] = {
        k: [{"qid": ids.shorten(y), "label": names.get(y, "")} for y in ys]
        for k, ys in card["ancestors"].items()
    }
    return card


def _graph_name(iri: str) -> str:
    return iri[len(vocab.GRAPH):] if iri.startswith(vocab.GRAPH) else iri


def disagreements(store, node: NamedNode) -> list[dict]:
    """Single-valued fields of one entity with several values in the data graphs:
    ``[{field, lang, values: [{value, graphs}]}]`` sorted, values in order."""
    rows = store.query(
        "SELECT ?p ?o ?g WHERE { VALUES ?p { rdfs:label schema:description wikibase:sitelinks } "
        "GRAPH ?g { ?x ?p ?o } }", bindings={"x": node})
    found: dict[tuple[str, str], dict[str, set]] = {}
    for r in rows:
        g = r["g"].value
        if not vocab.is_data_graph(g):
            continue
        o = r["o"]
        key = (SINGLE_VALUED[r["p"].value], getattr(o, "language", None) or "")
        found.setdefault(key, {}).setdefault(o.value, set()).add(_graph_name(g))
    return [{"field": field, "lang": lang,
             "values": [{"value": v, "graphs": sorted(gs)} for v, gs in sorted(values.items())]}
            for (field, lang), values in sorted(found.items()) if len(values) > 1]


def format_card(card: dict, lang: str = "en") -> str:
    out = [f"{card['qid']}  {card.get('label') or ''}".rstrip()]
    desc = _in_chain(card["descriptions"], lang)
    if desc:
        out.append(f"  {desc}")
    out.append("labels:")
    for l, v in card["labels"].items():
        out.append(f"  {l:<6} {v}")
    if card["aliases"]:
        out.append("aliases:")
        for l, vs in sorted(card["aliases"].items()):
            out.append(f"  {l:<6} {' | '.join(vs)}")
    if card["sitelinks"] is not None:
        out.append(f"sitelinks: {card['sitelinks']}")
    out.append("claims:")
    for c in card["claims"]:
        name = f" ({c['property_label']})" if c["property_label"] else ""
        val = f"{c['value']} {c['value_label']}".rstrip()
        out.append(f"  {c['property']}{name}: {val}")
    if card.get("disagreements"):
        out.append("graphs disagree (the first value is shown above):")
        for d in card["disagreements"]:
            where = f"{d['field']}@{d['lang']}" if d["lang"] else d["field"]
            said = "; ".join(f"{v['value']!r} in {', '.join(v['graphs'])}" for v in d["values"])
            out.append(f"  {where}: {said}")
    if card["ancestors"]:
        out.append("ancestors (from the closure):")
        for k, ys in card["ancestors"].items():
            shown = ", ".join(f"{y['qid']} {y['label']}".rstrip() for y in ys)
            out.append(f"  {k}: {shown}")
    return "\n".join(out) + "\n"


def stats(store) -> dict:
    """Triples per graph, entities per root class (through the closure), labels per language."""
    result = {"store": getattr(store, "location", ""), "graphs": store.graph_counts()}
    result["triples"] = sum(n for g, n in result["graphs"].items() if vocab.is_data_graph(g))
    roots = stats_roots()
    values = " ".join(f"<{iri}>" for iri, _ in roots)
    counts = {iri: 0 for iri, _ in roots}
    for r in store.query(
        f"""SELECT ?root (COUNT(DISTINCT ?x) AS ?n) WHERE {{
              VALUES ?root {{ {values} }} ?x kgc:typedAs ?root }} GROUP BY ?root"""
    ):
        counts[r["root"].value] = int(r["n"].value)
    result["entities_per_root"] = {
        f"{ids.shorten(iri)} {label}": counts[iri] for iri, label in roots
    }
    langs = {}
    for r in store.query(
        "SELECT ?lang (COUNT(*) AS ?n) WHERE { ?x rdfs:label ?l BIND(LANG(?l) AS ?lang) } GROUP BY ?lang"
    ):
        langs[r["lang"].value] = int(r["n"].value)
    result["labels_per_language"] = dict(sorted(langs.items(), key=lambda kv: (-kv[1], kv[0])))
    result["closure_stale"] = bool(getattr(store, "closure_stale", False))
    result["closure"] = hierarchy.closure_sizes(store)  # per spec: its derived property's triples
    result["partial_graphs"] = health.partial_graphs(store)
    result["disagreements"] = graph_disagreements(store, result["graphs"])
    return result


def graph_disagreements(store, counts: dict[str, int]) -> list[dict]:
    """Per pair of data graphs and single-valued field: how many (entity, language) pairs
    the two hold different values for, with one example. The smaller graph of a pair is
    read first; a store with one data graph has nothing to compare."""
    graphs = sorted((g for g in counts if vocab.is_data_graph(g)), key=lambda g: (counts[g], g))
    out = []
    for i, small in enumerate(graphs):
        for big in graphs[i + 1:]:
            for pred, field in SINGLE_VALUED.items():
                rows = store.query(
                    "SELECT (COUNT(DISTINCT ?pair) AS ?n) (MIN(?pair) AS ?example) WHERE { "
                    "GRAPH ?a { ?x ?p ?v } GRAPH ?b { ?x ?p ?w } "
                    "FILTER(LANG(?v) = LANG(?w) && ?v != ?w) "
                    "BIND(CONCAT(STR(?x), \" \", LANG(?v)) AS ?pair) }",
                    bindings={"a": NamedNode(small), "b": NamedNode(big), "p": NamedNode(pred)})
                r = next(iter(rows), None)
                n = int(r["n"].value) if r is not None and r["n"] is not None else 0
                if n and r is not None:
                    x, _, lang = r["example"].value.partition(" ")
                    names = sorted([_graph_name(small), _graph_name(big)])
                    out.append({"graphs": names, "field": field, "entities": n,
                                "example": ids.shorten(x) + (f" ({lang})" if lang else "")})
    return sorted(out, key=lambda d: (d["graphs"], d["field"]))


def format_stats(s: dict) -> str:
    out = [f"store: {s['store']}", f"data triples: {s['triples']}", "", "triples per graph:"]
    for g, n in s["graphs"].items():
        out.append(f"  {n:>10}  {g or '(default graph)'}")
    if s.get("closure"):
        out += ["", "closure triples per spec (in the default graph, by derived property):"]
        for name, n in s["closure"].items():
            out.append(f"  {n:>10}  {name}")
    out += ["", "entities per root class (through kgc:typedAs):"]
    for k, n in s["entities_per_root"].items():
        out.append(f"  {n:>10}  {k}")
    langs = s["labels_per_language"]
    out += ["", f"rdfs:label per language ({len(langs)} languages):"]
    for l, n in list(langs.items())[:20]:
        out.append(f"  {n:>10}  {l}")
    if len(langs) > 20:
        out.append(f"  … {len(langs) - 20} more")
    if s.get("disagreements"):
        out += ["", "graphs that disagree (values Wikidata holds once; `kgcult show QID` lists them):"]
        for d in s["disagreements"]:
            out.append(f"  {d['entities']:>10}  {d['field']}: {' vs '.join(d['graphs'])} (e.g. {d['example']})")
    if s["closure_stale"]:
        out += ["", "note: the closure is stale; run `kgcult closure` for up-to-date root counts"]
    for g in s.get("partial_graphs", []):
        out += ["", f"note: {g} is partial: its mirror, ingest or load was interrupted (or a load is running); "
                    "run the mirror or ingest again (a load is rolled back by the next writable open)"]
    return "\n".join(out) + "\n"


# -- finding what the user means ------------------------------------------------------------

def _looks_like_id(text: str) -> bool:
    try:
        ids.parse(text, "QP", field="entity")
    except KgcultError:
        return False
    return True


def find_by_name(store, name: str, lang: str = "en", limit: int = 10) -> list[dict]:
    """Entities whose label or alias is exactly ``name`` (as typed, or lower-cased) in
    ``lang``, English or one of the mirrored label languages: ``[{"qid", "label",
    "description"}]`` sorted by id. Bound as literals, so an index answers it."""
    mirrored = [lg for spec in subgraphs.load_specs().values() for lg in spec.languages]
    langs = list(dict.fromkeys([lang, "en", *mirrored]))
    texts = list(dict.fromkeys([name.strip(), name.strip().lower()]))
    rows = store.query(
        "SELECT DISTINCT ?x WHERE { { ?x rdfs:label ?name } UNION { ?x skos:altLabel ?name } "
        "FILTER(STRSTARTS(STR(?x), \"http://www.wikidata.org/entity/\")) }",
        rows=(["name"], [(Literal(t, language=lg),) for t in texts for lg in langs]))
    found = sorted({r["x"].value for r in rows}, key=lambda i: ids.sort_key(ids.shorten(i)))[:limit]
    labels = labels_in(store, found, lang)
    descs = {r["x"].value: r["d"].value for r in store.query(
        "SELECT ?x ?d WHERE { ?x schema:description ?d FILTER(LANG(?d) = ?lang) }",
        rows=(["x", "lang"], [(NamedNode(i), Literal(lg)) for i in found for lg in (lang, "en")]))}
    return [{"qid": ids.shorten(i), "label": labels.get(i, ""), "description": descs.get(i, "")} for i in found]


def resolve(store, text: str, lang: str = "en") -> str:
    """What ``kgcult show TEXT`` shows: an id or IRI as it is, else the one entity named
    ``text``; several or none is an error that lists them."""
    if _looks_like_id(text):
        return text
    found = find_by_name(store, text, lang)
    if len(found) == 1:
        return found[0]["qid"]
    if not found and re.match(r"(wd:|https?://)?[QPqp]\d", text.strip()):
        ids.parse(text, "QP", field="entity")  # meant as an id: say why it is not one
    if not found:
        raise KgcultError(f"{text!r}: no entity has this label or alias in {lang if lang == 'en' else lang + ', en'} or the mirrored "
                          "languages (give a QID, e.g. Q46383)")
    listed = "; ".join(f"{f['qid']} {f['label']}" + (f" ({f['description']})" if f["description"] else "")
                       for f in found)
    raise KgcultError(f"{text!r} names {len(found)} entities: {listed}; show one by its id")


def property_card(store, pid: str, lang: str = "en", examples: int = 5) -> dict:
    """What the store holds of a property: its label (ontology/properties.ttl), how many
    ``wdt:`` statements use it, and a few of them."""
    iri = vocab.WDT + pid
    count = store.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", bindings={"p": NamedNode(iri)})
    n = int(next(iter(count))["n"].value)
    rows = list(store.query("SELECT ?s ?o WHERE { ?s ?p ?o } ORDER BY ?s ?o LIMIT " + str(int(examples)),
                            bindings={"p": NamedNode(iri)})) if n else []
    names = labels_in(store, [r["s"].value for r in rows] +
                      [r["o"].value for r in rows if isinstance(r["o"], NamedNode)], lang)
    return {"pid": pid, "label": property_label(iri), "statements": n,
            "examples": [{"subject": ids.shorten(r["s"].value), "subject_label": names.get(r["s"].value, ""),
                          "value": ids.shorten(r["o"].value) if isinstance(r["o"], NamedNode) else r["o"].value,
                          "value_label": names.get(r["o"].value, "")} for r in rows]}


def format_property_card(card: dict) -> str:
    out = [f"{card['pid']}  {card['label']}".rstrip(), f"statements in the store: {card['statements']}"]
    if card["examples"]:
        out.append("for example:")
        out += [f"  {e['subject']} {e['subject_label']} -> {e['value']} {e['value_label']}".rstrip()
                for e in card["examples"]]
    return "\n".join(out) + "\n"
