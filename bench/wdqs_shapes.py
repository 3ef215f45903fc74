"""The compatibility suite's query shapes (tests/fixtures/wdqs/compat) on the stand-in, for
bench/wdqs.py: each as the WDQS form and the same query with explicit label joins.
``ENTITIES`` in a query is replaced by a VALUES list of entities read from the store."""
from __future__ import annotations

WD = '"http://www.wikidata.org/entity/"'


def _label(var: str, out: str, langs: list[str], fallback: bool = True) -> str:
    opts = " ".join(f'OPTIONAL {{ ?{var} rdfs:label ?{out}_{i} FILTER(LANG(?{out}_{i}) = "{lang}") }}'
                    for i, lang in enumerate(langs))
    choices = [f"?{out}_{i}" for i in range(len(langs))] + ([f"STRAFTER(STR(?{var}), {WD})"] if fallback else [])
    return f"{opts} BIND(COALESCE({', '.join(choices)}) AS ?{out})"


SHAPES = {
    "capitals (WDQS example)": (
        """SELECT ?country ?countryLabel ?capital ?capitalLabel WHERE {
  ?country wdt:P31 wd:Q3624078 . OPTIONAL { ?country wdt:P36 ?capital } .
  SERVICE wikibase:label { bd:serviceParam wikibase:language "[AUTO_LANGUAGE],en" } . }""",
        f"""SELECT ?country ?countryLabel ?capital ?capitalLabel WHERE {{
  ?country wdt:P31 wd:Q3624078 . {_label("country", "countryLabel", ["en"])}
  OPTIONAL {{ ?country wdt:P36 ?capital {_label("capital", "capitalLabel", ["en"])} }} }}"""),
    "dishes and origins, ja then en": (
        """SELECT ?dish ?dishLabel ?dishDescription ?originLabel WHERE {
  ?dish wdt:P495 ?origin .
  SERVICE wikibase:label { bd:serviceParam wikibase:language "ja,en". } }""",
        f"""SELECT ?dish ?dishLabel ?dishDescription ?originLabel WHERE {{
  ?dish wdt:P495 ?origin . {_label("dish", "dishLabel", ["ja", "en"])}
  OPTIONAL {{ ?dish schema:description ?e1 FILTER(LANG(?e1) = "ja") }}
  OPTIONAL {{ ?dish schema:description ?e2 FILTER(LANG(?e2) = "en") }}
  BIND(COALESCE(?e1, ?e2) AS ?dishDescription) {_label("origin", "originLabel", ["ja", "en"])} }}"""),
    "MakiEval country of 200 entities": (
        """SELECT ?e ?countryLabel WHERE { VALUES ?e { ENTITIES }
  OPTIONAL { ?e wdt:P27 ?country. } OPTIONAL { ?e wdt:P495 ?country. } OPTIONAL { ?e wdt:P17 ?country. }
  SERVICE wikibase:label { bd:serviceParam wikibase:language "en". } }""",
        f"""SELECT ?e ?countryLabel WHERE {{
  {{ {{ VALUES ?e {{ ENTITIES }}
       OPTIONAL {{ ?e wdt:P27 ?country. }} OPTIONAL {{ ?e wdt:P495 ?country. }} OPTIONAL {{ ?e wdt:P17 ?country. }} }}
     FILTER(!BOUND(?country)) }}
  UNION
  {{ {{ VALUES ?e {{ ENTITIES }}
       OPTIONAL {{ ?e wdt:P27 ?country. }} OPTIONAL {{ ?e wdt:P495 ?country. }} OPTIONAL {{ ?e wdt:P17 ?country. }}
       FILTER(BOUND(?country)) }} {_label("country", "countryLabel", ["en"])} }} }}"""),
    "MakiEval info, own label beside the service": (
        """SELECT ?item ?itemLabel ?originLabel WHERE { VALUES ?item { ENTITIES }
  ?item rdfs:label ?itemLabel . FILTER(LANG(?itemLabel) = "en")
  OPTIONAL { ?item wdt:P495 ?origin }
  SERVICE wikibase:label { bd:serviceParam wikibase:language "en". } }""",
        f"""SELECT ?item ?itemLabel ?originLabel WHERE {{ VALUES ?item {{ ENTITIES }}
  ?item rdfs:label ?itemLabel . FILTER(LANG(?itemLabel) = "en")
  OPTIONAL {{ ?item wdt:P495 ?origin {_label("origin", "originLabel", ["en"])} }} }}"""),
    "DLAMA capitals, Arabic": (
        """SELECT DISTINCT ?subject ?subjectLabel ?object ?objectLabel WHERE {
  ?subject wdt:P31 wd:Q3624078 ; wdt:P36 ?object .
  SERVICE wikibase:label { bd:serviceParam wikibase:language "ar". } }""",
        f"""SELECT DISTINCT ?subject ?subjectLabel ?object ?objectLabel WHERE {{
  ?subject wdt:P31 wd:Q3624078 ; wdt:P36 ?object .
  {_label("subject", "subjectLabel", ["ar"])} {_label("object", "objectLabel", ["ar"])} }}"""),
    "aliases and descriptions": (
        """SELECT ?c ?cLabel ?cAltLabel ?cDescription WHERE { ?c wdt:P31 wd:Q3624078
  SERVICE wikibase:label { bd:serviceParam wikibase:language "en" } }""",
        f"""SELECT ?c ?cLabel ?cAltLabel ?cDescription WHERE {{ ?c wdt:P31 wd:Q3624078
  {_label("c", "cLabel", ["en"])}
  OPTIONAL {{ SELECT ?c (GROUP_CONCAT(?a; separator=", ") AS ?cAltLabel)
             WHERE {{ ?c wdt:P31 wd:Q3624078 . ?c skos:altLabel ?a FILTER(LANG(?a) = "en") }} GROUP BY ?c }}
  OPTIONAL {{ ?c schema:description ?cDescription FILTER(LANG(?cDescription) = "en") }} }}"""),
    "named subquery: dishes per origin": (
        """SELECT ?country ?countryLabel ?dishes
WITH { SELECT ?country (COUNT(?dish) AS ?dishes) WHERE { ?dish wdt:P495 ?country } GROUP BY ?country } AS %counts
WHERE { INCLUDE %counts SERVICE wikibase:label { bd:serviceParam wikibase:language "en". } }""",
        f"""SELECT ?country ?countryLabel ?dishes WHERE {{
  {{ SELECT ?country (COUNT(?dish) AS ?dishes) WHERE {{ ?dish wdt:P495 ?country }} GROUP BY ?country }}
  {_label("country", "countryLabel", ["en"])} }}"""),
    "hints, GROUP BY a label": (
        """SELECT ?originLabel (COUNT(?dish) AS ?n) WHERE { hint:Query hint:optimizer "None" .
  ?dish wdt:P495 ?origin . SERVICE wikibase:label { bd:serviceParam wikibase:language "en". } }
GROUP BY ?originLabel""",
        f"""SELECT ?originLabel (COUNT(?dish) AS ?n) WHERE {{ ?dish wdt:P495 ?origin .
  {_label("origin", "originLabel", ["en"])} }} GROUP BY ?originLabel"""),
}


def fill(query: str, entities: list[str]) -> str:
    return query.replace("ENTITIES", " ".join(f"<{e}>" for e in entities))
