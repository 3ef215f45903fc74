"""Knowledge points (CultureSynth §3.2, step 2): the facts the graph holds about a keyword,
with labels in the target language; free-text keywords are linked to entities first."""
from __future__ import annotations

from typing import Iterable

from kgcult import ids, vocab
from kgcult import inspection
from kgcult.errors import KgcultError
from kgcult.link import Linker
from kgcult.synth.graph import GraphCache


def knowledge_point(store, qid: str, lang: str = "en", cache: GraphCache | None = None) -> dict:
    """The facts the graph holds about one entity, in ``lang``: label, aliases, description,
    and claims with object labels (``value_label_lang`` says which language the object label
    is in: ``lang``, else English, else none). Raises KgcultError if the entity is absent."""
    iri = inspection.entity_iri(qid)
    c = cache or GraphCache(store)
    c.fetch_claims([iri])
    c.fetch_names([iri])
    if not c.claims[iri] and not c.labels[iri]:
        raise KgcultError(f"{ids.shorten(iri)}: not in the store")
    objs = sorted({o for os_ in c.claims[iri].values() for o in os_})
    c.fetch_names(objs)
    facts = []
    for pid in sorted(c.claims[iri], key=ids.sort_key):
        for o in sorted(c.claims[iri][pid], key=ids.sort_key):
            lab = c.label(o, lang)
            llang = lang if lab else ("en" if c.label(o, "en") else "")
            facts.append({
                "property": pid, "property_label": inspection.property_label(vocab.WDT + pid),
                "value": ids.shorten(o), "value_label": lab or c.label(o, "en") or "",
                "value_label_lang": llang,
            })
    label = c.label(iri, lang)
    desc = c.descriptions[iri].get(lang)
    return {
        "qid": ids.shorten(iri), "lang": lang,
        "label": label or c.label(iri, "en") or "",
        "label_lang": lang if label else ("en" if c.label(iri, "en") else ""),
        "aliases": c.aliases[iri].get(lang, []),
        "description": desc or c.descriptions[iri].get("en") or "",
        "description_lang": lang if desc else ("en" if c.descriptions[iri].get("en") else ""),
        "facts": facts,
        "facts_in_lang": sum(1 for f in facts if f["value_label_lang"] == lang),
    }


def knowledge_point_for_text(store, text: str, lang: str = "en", topic: str | None = None,
                             country: str | None = None, linker=None, embeddings: bool = False) -> dict:
    """Link a free-text keyword with the entity linker (``embeddings=True`` adds its
    nearest-neighbour stage over the embedding index), then return its knowledge point (with
    the linking result under ``"link"``). Unresolved text raises KgcultError."""
    if linker is None:
        linker = Linker.open(store, embeddings=embeddings)
    res = linker.link(text, lang=lang, topic=topic, country=country)
    if not res.get("qid"):
        raise KgcultError(f"{text!r}: the linker found no entity ({res.get('status')})")
    kp = knowledge_point(store, res["qid"], lang)
    kp["link"] = {k: res.get(k) for k in ("qid", "status", "match", "lang_used", "tied")}
    return kp


def link_keywords(store, texts: Iterable[str], lang: str = "en", country: str | None = None,
                  linker=None, embeddings: bool = False) -> tuple[list[str], list[dict]]:
    """Link free-text keywords (the paper's LLM-made keywords, say) to QIDs with the entity
    linker; a text that is already a QID is kept. Returns (QIDs, unresolved link results)."""
    out, missed = [], []
    for t in texts:
        t = t.strip()
        if not t:
            continue
        if ids.is_item(t):
            out.append(t)
            continue
        if linker is None:
            linker = Linker.open(store, embeddings=embeddings)
        res = linker.link(t, lang=lang, country=country)
        if res.get("qid"):
            out.append(res["qid"])
        else:
            missed.append({"mention": t, "status": res.get("status")})
    return out, missed
