"""CultureSynth question synthesis on the local graph (§3.2, steps 3-4 without an LLM).

Questions come from per-language templates (:mod:`kgcult.synth.templates`) for the "unique
knowledge" setting (one country) and the "different knowledge" setting (a contrast with
another country's entity of the same class, or with another country). Every question
carries its gold QIDs and the triples it rests on, so each answer is checkable against the
graph (:func:`check_questions`).
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Iterable

from pyoxigraph import NamedNode

from kgcult import ids, vocab
from kgcult import inspection
from kgcult.errors import KgcultError
from kgcult.synth import taxonomy
from kgcult.synth.graph import GraphCache
from kgcult.synth.templates import SETTINGS, Template, load_templates

MAX_CONTRASTS = 2   # other countries per (country, property) in the "different" setting


def synthesize(store, tax: taxonomy.Taxonomy, topic, country: str, langs: Iterable[str],
               settings: Iterable[str] = SETTINGS, versus: Iterable[str] | None = None,
               limit: int | None = None, seed: int = 0, templates_directory=None,
               keywords: Iterable[str] | None = None) -> list[dict]:
    """Template questions about ``topic`` (a Topic or a name) for ``country`` (QID) in each
    language of ``langs``. Deterministic for the same store, arguments and seed.

    ``versus``: countries to contrast with in the "different" setting (default: the
    country's neighbours, P47, for country-level properties; any other origin for entity
    pairs). ``limit``: at most this many questions per language (after sorting).
    ``keywords``: QIDs to ask about instead of the topic's keywords from the graph (e.g.
    free-text keywords linked with ``link_keywords``); the questions are filed under
    ``topic`` (its first anchored secondary topic when it is a primary one)."""
    if isinstance(topic, str):
        topic = tax.resolve(topic)
    settings = tuple(settings)
    for s in settings:
        if s not in SETTINGS:
            raise KgcultError(f"unknown setting {s!r}: one of {', '.join(SETTINGS)}")
    langs = list(dict.fromkeys(langs))
    if not langs:
        raise KgcultError("no language given (--lang)")
    tmpl = {lang: [t for t in load_templates(lang, templates_directory) if t.setting in settings]
            for lang in langs}
    c_iri = taxonomy.country_iri(country)
    versus_iris = [taxonomy.country_iri(v) for v in (versus or [])]
    if keywords is None:
        kws = taxonomy.keywords(store, tax, topic, c_iri, lang="en")
    else:
        kws = _given_keywords(store, tax, topic, c_iri, keywords)
    cache = GraphCache(store)
    kw_iris = [ids.iri(k["qid"]) for k in kws]
    cache.fetch_claims(kw_iris + [c_iri] + versus_iris)
    inverse_props = sorted({v.split(":", 1)[1] for k in kws for v in k["via"] if v.startswith("inverse:")})
    neighbours = versus_iris or sorted(cache.objects(c_iri, "P47"))
    cache.fetch_claims(neighbours)

    # Contrast partners for entity pairs (chosen once, independently of the language).
    partners = _pair_partners(store, cache, kws, c_iri, versus_iris, seed) if "different" in settings else {}

    cache.fetch_claims(b for b, _, _ in partners.values())
    needed = set(kw_iris) | {c_iri} | set(neighbours)
    for k in kw_iris:
        for os_ in cache.claims.get(k, {}).values():
            needed |= os_
    for b, cls, oc in partners.values():
        needed |= {b, cls, oc}
        needed |= {o for os_ in cache.claims.get(b, {}).values() for o in os_}
    for pid in inverse_props:
        needed |= cache.objects(c_iri, pid)
        for n in neighbours:
            needed |= cache.objects(n, pid)
    anchor_classes = sorted({ids.iri(a) for k in kws for a in k["anchors"]})
    needed |= set(anchor_classes)
    cache.fetch_names(needed)

    ctx = _Ctx(cache, topic, tax, c_iri, kws, partners, inverse_props, neighbours)
    out: list[dict] = []
    for lang in langs:
        qs: dict[str, dict] = {}
        for t in tmpl[lang]:
            for q in _GENERATORS[t.kind](ctx, t, lang):
                qs.setdefault(q["id"], q)
        ordered = sorted(qs.values(), key=lambda q: (q["setting"] != "unique", q["template"],
                                                    q["keyword_label"].casefold(), q["id"]))
        out.extend(ordered[:limit] if limit else ordered)
    return out


def _given_keywords(store, tax, topic, country: str, qids: Iterable[str]) -> list[dict]:
    """Keyword records for QIDs the caller chose, with the anchors and country ties the
    graph gives them (so every template kind applies as for graph keywords)."""
    qids = [inspection.entity_iri(q) for q in qids]
    targets = [tax.topics[c] for c in topic.children] if topic.primary else [topic]
    target = next((t for t in targets if t.anchored), targets[0] if targets else topic)
    graph = {ids.iri(k["qid"]): k for k in taxonomy.keywords(store, tax, topic, country, lang="en")}
    out = []
    for q in dict.fromkeys(qids):
        if q in graph:
            out.append(graph[q])
        else:
            out.append({"qid": ids.shorten(q), "label": "", "label_lang": "", "topics": [target.notation],
                        "anchors": [], "via": ["given"]})
    return out


@dataclass
class _Ctx:
    cache: GraphCache
    topic: taxonomy.Topic
    tax: taxonomy.Taxonomy
    country: str
    keywords: list[dict]
    partners: dict
    inverse_props: list[str]
    neighbours: list[str]
    depths: dict = field(default_factory=dict)  # class IRI -> number of superclasses


def _pair_partners(store, cache: GraphCache, kws: list[dict], country: str, versus: list[str],
                   seed: int) -> dict[str, tuple[str, str, str]]:
    """For each keyword with a direct origin (P495) in the country, another entity of one of
    its direct classes (P31) whose origin is another country and not this one."""
    out: dict[str, tuple[str, str, str]] = {}
    wanted = []
    for k in kws:
        a = ids.iri(k["qid"])
        if country not in cache.objects(a, "P495"):
            continue
        for cls in sorted(cache.objects(a, "P31")):
            wanted.append((a, cls))
    classes = sorted({cls for _, cls in wanted})
    if not classes:
        return out
    rows = store.select(
        "SELECT DISTINCT ?cls ?b ?oc WHERE { ?b wdt:P31 ?cls . ?b wdt:P495 ?oc . "
        "FILTER(?oc != ?country) FILTER NOT EXISTS { ?b wdt:P495 ?country } }",
        rows=(["cls", "country"], [[NamedNode(c), NamedNode(country)] for c in classes]))
    by_cls: dict[str, list[tuple[str, str]]] = {}
    for r in rows:
        by_cls.setdefault(r["cls"].value, []).append((r["b"].value, r["oc"].value))
    for a, cls in wanted:
        if a in out:
            continue
        cands = sorted(set(by_cls.get(cls, [])), key=lambda bo: (ids.sort_key(bo[0]), bo[1]))
        if versus:
            cands = [c for c in cands if c[1] in versus]
        if not cands:
            continue
        rng = random.Random(f"{seed}|{a}|{cls}")
        b, oc = cands[rng.randrange(len(cands))]
        out[a] = (b, cls, oc)
    return out


def _record(ctx: _Ctx, t: Template, lang: str, *, subject: str, question: str, gold: Iterable[str],
            facts: list[tuple[str, str, str]], mentions: list[str], distractors: Iterable[str] = (),
            other: str | None = None, other_country: str | None = None) -> dict | None:
    c = ctx.cache
    gold = sorted(set(gold), key=ids.sort_key)
    answers = sorted({a for g in gold if (a := c.label(g, lang))})
    if not gold or not answers:
        return None
    facts = sorted(set(facts), key=lambda f: (ids.sort_key(f[0]), ids.sort_key(f[1]), ids.sort_key(f[2])))
    key = "|".join([t.id, lang, subject, other or "", other_country or "", ctx.country])
    topic_of = _topic_of(ctx, subject, t.property if t.kind in ("inverse", "inverse_diff") else None)
    rec = {
        "id": hashlib.sha256(key.encode()).hexdigest()[:16],
        "setting": t.setting, "template": t.id, "kind": t.kind, "lang": lang,
        "topic": topic_of.notation, "topic_label": topic_of.label(lang),
        "primary": topic_of.notation.split(".")[0],
        "country": ids.shorten(ctx.country), "country_label": c.label(ctx.country, lang),
        "keyword": ids.shorten(subject), "keyword_label": c.label(subject, lang) or "",
        "question": question,
        "answers": answers,
        "gold_qids": [ids.shorten(g) for g in gold],
        "distractor_qids": sorted({ids.shorten(d) for d in distractors} - {ids.shorten(g) for g in gold},
                                  key=ids.sort_key),
        "facts": [[ids.shorten(s), p, ids.shorten(o)] for s, p, o in facts],
        "fact_labels": [[c.label(s, lang) or c.label(s, "en") or ids.shorten(s),
                         inspection.property_label(vocab.WDT + p) or p,
                         c.label(o, lang) or c.label(o, "en") or ids.shorten(o)] for s, p, o in facts],
        "mentions": mentions,
        "source": "template",
    }
    if other:
        rec["other"] = ids.shorten(other)
    if other_country:
        rec["other_country"] = ids.shorten(other_country)
    return rec


def _topic_of(ctx: _Ctx, subject: str, prop: str | None = None) -> taxonomy.Topic:
    """The secondary topic a question belongs to: the (first) topic of its keyword; for a
    country-level question, of the keyword reached through the property; for a class
    question, the topic anchored on the class."""
    notation = None
    for k in ctx.keywords:
        if ids.iri(k["qid"]) == subject and k["topics"]:
            notation = k["topics"][0]
            break
    if notation is None and prop:
        for k in ctx.keywords:
            if f"inverse:{prop}" in k["via"] and k["topics"]:
                notation = k["topics"][0]
                break
    if notation is not None:
        for t in ctx.tax:
            if t.notation == notation:
                return t
    targets = [ctx.tax.topics[c] for c in ctx.topic.children] if ctx.topic.primary else [ctx.topic]
    for t in targets:
        if subject in t.anchor_classes or subject in t.anchor_entities:
            return t
    return targets[0] if targets else ctx.topic


def _gen_fact(ctx: _Ctx, t: Template, lang: str):
    c = ctx.cache
    for k in ctx.keywords:
        x = ids.iri(k["qid"])
        objs = c.objects(x, t.pid())
        s_label = c.label(x, lang)
        if not objs or not s_label:
            continue
        q = t.render(subject=s_label)
        r = _record(ctx, t, lang, subject=x, question=q, gold=objs,
                    facts=[(x, t.pid(), o) for o in objs], mentions=[s_label])
        if r:
            yield r


def _gen_name_one(ctx: _Ctx, t: Template, lang: str):
    c = ctx.cache
    by_anchor: dict[str, list[tuple[str, str]]] = {}
    for k in ctx.keywords:
        x = ids.iri(k["qid"])
        if "direct" not in k["via"]:
            continue
        for p in ("P495", "P17"):
            if ctx.country in c.objects(x, p):
                for a in k["anchors"]:
                    by_anchor.setdefault(ids.iri(a), []).append((x, p))
                break
    country_label = c.label(ctx.country, lang)
    seen: set[frozenset] = set()
    # most specific anchor first (fewest members, then the one the others are above), so
    # that "a dish" wins over "a food" when both name the same entities
    order = sorted(by_anchor.items(), key=lambda kv: (len(kv[1]), -_depth(ctx, kv[0]), kv[0]))
    for anchor, members in order:
        key = frozenset(x for x, _ in members)
        if key in seen:
            continue
        seen.add(key)
        cls_label = c.label(anchor, lang)
        if not cls_label or not country_label:
            continue
        q = t.render(**{"class": cls_label, "country": country_label})
        r = _record(ctx, t, lang, subject=anchor, question=q, gold=[x for x, _ in members],
                    facts=[(x, p, ctx.country) for x, p in members], mentions=[country_label])
        if r:
            r["keyword"], r["keyword_label"] = ids.shorten(anchor), cls_label
            yield r


def _depth(ctx: _Ctx, cls: str) -> int:
    """Number of superclasses of a class (kgc:subclassOf), cached on the context."""
    d = ctx.depths.get(cls)
    if d is None:
        rows = ctx.cache.store.select("SELECT (COUNT(DISTINCT ?y) AS ?n) WHERE { ?c kgc:subclassOf ?y }",
                                      bindings={"c": NamedNode(cls)})
        d = ctx.depths[cls] = int(rows[0]["n"].value) if rows else 0
    return d


def _own_values(ctx: _Ctx, t: Template, lang: str) -> tuple[set[str], str | None]:
    """The country's values of an inverse template's property (none when the topic has no
    such property) and the country's label."""
    if t.property not in ctx.inverse_props:
        return set(), None
    return ctx.cache.objects(ctx.country, t.pid()), ctx.cache.label(ctx.country, lang)


def _gen_inverse(ctx: _Ctx, t: Template, lang: str):
    objs, label = _own_values(ctx, t, lang)
    if not objs or not label:
        return
    q = t.render(country=label)
    r = _record(ctx, t, lang, subject=ctx.country, question=q, gold=objs,
                facts=[(ctx.country, t.pid(), o) for o in objs], mentions=[label])
    if r:
        yield r


def _gen_inverse_diff(ctx: _Ctx, t: Template, lang: str):
    mine, label = _own_values(ctx, t, lang)
    if not mine or not label:
        return
    c = ctx.cache
    n = 0
    for other in ctx.neighbours:
        theirs = c.objects(other, t.pid())
        gold = mine - theirs
        o_label = c.label(other, lang)
        if not theirs or not gold or not o_label:
            continue
        q = t.render(country=label, other_country=o_label)
        facts = [(ctx.country, t.pid(), g) for g in gold] + [(other, t.pid(), h) for h in theirs]
        r = _record(ctx, t, lang, subject=ctx.country, question=q, gold=gold, facts=facts,
                    mentions=[label, o_label], distractors=theirs, other_country=other)
        if r:
            n += 1
            yield r
        if n >= MAX_CONTRASTS:
            break


def _pairs(ctx: _Ctx):
    """(keyword, partner, their shared class, the partner's origin) for each keyword that
    has a contrast partner."""
    for k in ctx.keywords:
        a = ids.iri(k["qid"])
        if a in ctx.partners:
            yield (a, *ctx.partners[a])


def _gen_which_from(ctx: _Ctx, t: Template, lang: str):
    c = ctx.cache
    for a, b, cls, oc in _pairs(ctx):
        la, lb, lc, lcountry = c.label(a, lang), c.label(b, lang), c.label(cls, lang), c.label(ctx.country, lang)
        if not (la and lb and lc and lcountry) or la == lb:
            continue
        q = t.render(subject=la, other=lb, **{"class": lc, "country": lcountry})
        facts = [(a, "P495", ctx.country), (b, "P495", oc), (a, "P31", cls), (b, "P31", cls)]
        r = _record(ctx, t, lang, subject=a, question=q, gold=[a], facts=facts,
                    mentions=[la, lb], distractors=[b], other=b, other_country=oc)
        if r:
            yield r


def _gen_fact_diff(ctx: _Ctx, t: Template, lang: str):
    c = ctx.cache
    for a, b, _, oc in _pairs(ctx):
        mine, theirs = c.objects(a, t.pid()), c.objects(b, t.pid())
        gold = mine - theirs
        la, lb = c.label(a, lang), c.label(b, lang)
        if not gold or not theirs or not la or not lb or la == lb:
            continue
        q = t.render(subject=la, other=lb)
        facts = [(a, t.pid(), g) for g in gold] + [(b, t.pid(), h) for h in theirs]
        r = _record(ctx, t, lang, subject=a, question=q, gold=gold, facts=facts,
                    mentions=[la, lb], distractors=theirs - mine, other=b, other_country=oc)
        if r:
            yield r


_GENERATORS = {
    "fact": _gen_fact, "name_one": _gen_name_one, "inverse": _gen_inverse,
    "which_from": _gen_which_from, "fact_diff": _gen_fact_diff, "inverse_diff": _gen_inverse_diff,
}


# -- checking questions against the graph ---------------------------------------------

def check_questions(store, questions: Iterable[dict]) -> list[str]:
    """Problems with questions' grounding: a fact triple missing from the graph, a gold QID
    without any label, or a gold QID no fact mentions. Empty list: all grounded."""
    problems = []
    for q in questions:
        qid = q.get("id", "?")
        for s, p, o in q.get("facts", []):
            ok = store.query("ASK { ?s ?p ?o }", bindings={
                "s": NamedNode(ids.iri(s)), "p": NamedNode(vocab.WDT + p), "o": NamedNode(ids.iri(o))})
            if not bool(ok):
                problems.append(f"{qid}: fact {s} {p} {o} is not in the graph")
        in_facts = {x for f in q.get("facts", []) for x in (f[0], f[2])}
        for g in q.get("gold_qids", []):
            has = store.query("ASK { ?g rdfs:label ?l }", bindings={"g": NamedNode(ids.iri(g))})
            if not bool(has):
                problems.append(f"{qid}: gold {g} has no label in the graph")
            if g not in in_facts:
                problems.append(f"{qid}: gold {g} is in none of the question's facts")
    return problems
