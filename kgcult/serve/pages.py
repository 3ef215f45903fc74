"""The HTML side of the server: the query page's files (``kgcult/serve/web/``), its
example queries, and the entity page (the card of ``kgcult show`` as HTML)."""
from __future__ import annotations

import html
from importlib.resources import files

from kgcult import ids
from kgcult.serve.protocol import HttpError, Reply

WEB_DIR = files("kgcult.serve") / "web"
_STATIC = {"index.html": "text/html; charset=utf-8", "app.js": "text/javascript; charset=utf-8",
           "style.css": "text/css; charset=utf-8"}

# Example queries of the query page. They read the kgc: closure graphs (built by
# `kgcult closure`); the WDQS-style one writes the path, which kgcult answers from them.
EXAMPLES = [
    {
        "id": "dishes-per-country",
        "title": "Dishes per country",
        "query": """# Dishes (anything typed as a dish through the closure) per country of origin
SELECT ?country (COUNT(DISTINCT ?dish) AS ?dishes) WHERE {
  ?dish kgc:typedAs wd:Q746549 ;
        wdt:P495 ?country .
}
GROUP BY ?country
ORDER BY DESC(?dishes) ?country
LIMIT 50""",
    },
    {
        "id": "wdqs-label-service",
        "title": "WDQS style: Japanese dishes with the label service",
        "query": """# A query as written for query.wikidata.org runs unchanged: WDQS prefixes are
# predeclared, the label service is answered locally (languages in order, the id last),
# and the (wdt:P31|wdt:P279)+ path is read from the closure graph (docs/wdqs.md)
SELECT ?dish ?dishLabel ?dishDescription WHERE {
  ?dish wdt:P495 wd:Q17 ;
        (wdt:P31|wdt:P279)+ wd:Q746549 .
  SERVICE wikibase:label { bd:serviceParam wikibase:language "[AUTO_LANGUAGE],ja". }
}
ORDER BY ?dishLabel
LIMIT 100""",
    },
    {
        "id": "dish-card",
        "title": "A dish card (sushi)",
        "query": """# Everything said about one dish (wd:Q46383 sushi): labels, origin, ingredients, types
SELECT ?property ?value WHERE {
  wd:Q46383 ?property ?value .
  FILTER(?property IN (rdfs:label, schema:description, wdt:P31, wdt:P279,
                       wdt:P495, wdt:P527, wdt:P2012, wdt:P361))
  FILTER(!isLiteral(?value) || LANG(?value) IN ("en", "ja", ""))
}
ORDER BY ?property ?value""",
    },
    {
        "id": "food-hierarchy",
        "title": "Food hierarchy under a class (dish)",
        "query": """# Subclasses of dish (wd:Q746549) at any depth, read from the closure graph;
# depth 1 = a direct subclass
SELECT ?class ?label (COUNT(DISTINCT ?above) + 1 AS ?depth) WHERE {
  ?class kgc:subclassOf wd:Q746549 .
  OPTIONAL { ?class rdfs:label ?label FILTER(LANG(?label) = "en") }
  OPTIONAL { ?class kgc:subclassOf ?above . ?above kgc:subclassOf wd:Q746549 }
}
GROUP BY ?class ?label
ORDER BY ?depth ?label
LIMIT 200""",
    },
    {
        "id": "labels-all-languages",
        "title": "Labels of an entity in all languages",
        "query": """# rdfs:label and skos:altLabel of wd:Q46383 (sushi) in every language
SELECT ?lang ?label ?kind WHERE {
  { wd:Q46383 rdfs:label ?label BIND("label" AS ?kind) }
  UNION
  { wd:Q46383 skos:altLabel ?label BIND("alias" AS ?kind) }
  BIND(LANG(?label) AS ?lang)
}
ORDER BY ?lang ?kind ?label""",
    },
]


def static(name: str) -> Reply:
    """One of the query page's files."""
    if name not in _STATIC:
        raise HttpError(404, f"no such file: {name}")
    try:
        data = WEB_DIR.joinpath(name).read_bytes()
    except OSError:
        raise HttpError(500, f"the query page is missing from the installation ({WEB_DIR.joinpath(name)})") from None
    return Reply(200, _STATIC[name], data, {"Cache-Control": "no-cache"})


def _entity_link(qid: str, label: str, lang: str) -> str:
    q = html.escape(qid)
    text = html.escape(f"{label} ({qid})" if label else qid)
    if ids.is_id(qid):
        return f'<a href="/entity/{q}?lang={html.escape(lang)}">{text}</a>'
    return text


def render_card(card: dict, lang: str) -> str:
    """The entity page: the card of ``kgcult show`` as HTML (every value escaped)."""
    e = html.escape
    title = f"{card['qid']} {card.get('label') or ''}".strip()
    out = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{e(title)} · kgcult</title><link rel='stylesheet' href='/static/style.css'></head><body>",
        "<header><a href='/'>kgcult</a> · entity</header><main class='card'>",
        f"<h1>{e(card.get('label') or card['qid'])} <span class='qid'>{e(card['qid'])}</span></h1>",
    ]
    desc = card["descriptions"].get(lang) or card["descriptions"].get("en")
    if desc:
        out.append(f"<p class='desc'>{e(desc)}</p>")
    out.append(f"<p class='iri'><a href='{e(card['iri'])}'>{e(card['iri'])}</a></p>")
    out.append("<h2>Labels</h2><table id='labels'><tr><th>language</th><th>label</th><th>aliases</th><th>description</th></tr>")
    langs = sorted(set(card["labels"]) | set(card["aliases"]) | set(card["descriptions"]))
    for l in langs:
        out.append(f"<tr><td>{e(l)}</td><td>{e(card['labels'].get(l, ''))}</td>"
                   f"<td>{e(' | '.join(card['aliases'].get(l, [])))}</td><td>{e(card['descriptions'].get(l, ''))}</td></tr>")
    out.append("</table>")
    if card.get("sitelinks") is not None:
        out.append(f"<p>sitelinks: {int(card['sitelinks'])}</p>")
    out.append("<h2>Claims</h2><table id='claims'><tr><th>property</th><th>value</th></tr>")
    for c in card["claims"]:
        prop = f"{c['property']} ({c['property_label']})" if c["property_label"] else c["property"]
        out.append(f"<tr><td>{e(prop)}</td><td>{_entity_link(c['value'], c.get('value_label', ''), lang)}</td></tr>")
    out.append("</table>")
    if card["ancestors"]:
        out.append("<h2>Ancestors <small>(from the closure graphs)</small></h2><dl id='ancestors'>")
        for k, ys in card["ancestors"].items():
            links = ", ".join(_entity_link(y["qid"], y["label"], lang) for y in ys)
            out.append(f"<dt>{e(k)}</dt><dd>{links}</dd>")
        out.append("</dl>")
    out.append("</main></body></html>\n")
    return "".join(out)

