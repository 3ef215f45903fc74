"""The ``spectral-items`` view: per domain of ``ontology/spectral-domains.ttl``, the
exhaustive item list and the country x item ground-truth matrix (1 when the graph links
country and item)."""
from __future__ import annotations

import logging
import os
from collections import defaultdict
from pathlib import Path

from pyoxigraph import NamedNode

from kgcult import ids, ontology, resources, vocab
from kgcult.views.engine import ViewContext
from kgcult.views.output import Output, item_key
from kgcult.views.spec import ViewError

log = logging.getLogger(__name__)


def spectral_domains(path: str | os.PathLike | None = None) -> dict[str, dict]:
    """{domain name: {"label", "country_properties", "item_class", "item_country_properties"}}
    from ``ontology/spectral-domains.ttl`` (or ``path``)."""
    source = Path(path) if path else resources.ontology("spectral-domains.ttl")
    k = vocab.KGC
    out = {}
    for s, terms in ontology.of_type(source, k + "SpectralDomain").items():
        p = {pred: [o.value for o in objs] for pred, objs in terms.items()}
        if not p.get(k + "domainName"):
            raise ViewError(f"{source}: spectral domain {s.value} lacks kgc:domainName")
        name = p[k + "domainName"][0]
        d = {
            "label": (p.get(vocab.RDFS + "label") or [name])[0],
            "country_properties": sorted(p.get(k + "countryProperty", [])),
            "item_class": (p.get(k + "itemClass") or [None])[0],
            "item_country_properties": sorted(p.get(k + "itemCountryProperty", [])),
        }
        if not d["country_properties"] and not (d["item_class"] and d["item_country_properties"]):
            raise ViewError(f"{source}: spectral domain {name} needs kgc:countryProperty or "
                            "kgc:itemClass + kgc:itemCountryProperty")
        out[name] = d
    return dict(sorted(out.items()))


def process(ctx: ViewContext) -> list[Output]:
    langs = ctx.params["languages"]
    domains = spectral_domains()
    names = ctx.choose("domains", domains, "domain", resources.ontology("spectral-domains.ttl"))
    cclass = ids.node(ctx.params["country_class"])
    countries = sorted({r["country"] for r in ctx.select("countries", bindings={"countryClass": cclass})},
                       key=item_key)
    links: dict[str, dict[str, set[str]]] = {}          # domain -> item -> countries
    for n in names:
        d = domains[n]
        pairs: dict[str, set[str]] = defaultdict(set)
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
    short = ids.shorten
    item_rows, outputs = [], []
    for n in names:
        items = sorted(links[n], key=item_key)
        for i in items:
            item_rows.append({"domain": n, "item": short(i), "label": labels.get(i, {}),
                              "countries": sorted((short(c) for c in links[n][i]), key=item_key),
                              "n_countries": len(links[n][i])})
        matrix = []
        for c in countries:
            row: dict[str, str | int | None] = {
                "country": short(c), "country_label": labels.get(c, {}).get(langs[0]) if langs else None}
            for i in items:
                row[short(i)] = 1 if c in links[n][i] else 0
            matrix.append(row)
        outputs.append(Output(f"matrix/{n}.jsonl", matrix, ["country", "country_label"] + [short(i) for i in items]))
    outputs.insert(0, Output("spectral-items.jsonl", item_rows,
                             ["domain", "item", "label", "countries", "n_countries"], main=True))
    outputs.append(Output("countries.jsonl", [{"country": short(c), "label": labels.get(c, {})} for c in countries],
                          ["country", "label"]))
    log.info(f"spectral-items: {len(item_rows)} items in {len(names)} domains, {len(countries)} countries")
    return outputs
