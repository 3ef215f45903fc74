"""CultureSynth on the local graph: knowledge points, template QA synthesis, an optional
generator that rewrites template questions (verified against the gold facts), and scoring
of a model's free-text answers with the entity linker.

The paper (CultureSynth §3.2) retrieves Wikipedia pages for LLM-made keywords, extracts
knowledge points with an LLM and has an LLM write questions and answers. Here:

* keywords are graph entities under a topic's anchors (``taxonomy.keywords``);
* a knowledge point is the set of facts the graph holds about a keyword, with labels in the
  target language (``knowledge_point``);
* questions come from per-language templates (``ontology/synth-templates/<lang>.json``, data)
  for the "unique knowledge" setting (one country) and the "different knowledge" setting
  (a contrast with another country's entity of the same class, or with another country);
  every question carries its gold QIDs and the triples it rests on, so each answer is
  checkable against the graph;
* a generator (any causal LM, ``CausalLMGenerator``) may rewrite a template question into a
  natural one; it then answers its own question from the knowledge (the paper's Figure 17)
  and the rewrite is kept only when that answer names a gold entity and no distractor.
"""
from __future__ import annotations

import hashlib
import json
import random
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Protocol

from pyoxigraph import NamedNode

from kgcult import inspection as kinspect
from kgcult import vocab
from kgcult import resources as resources
from kgcult.synth import taxonomy
from kgcult.errors import KgcultError
from kgcult.files import iter_jsonl

SETTINGS = ("unique", "different")
KINDS = ("fact", "name_one", "inverse", "which_from", "fact_diff", "inverse_diff")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_PLACEHOLDERS = {"subject", "other", "class", "country", "other_country"}
MAX_CONTRASTS = 2   # other countries per (country, property) in the "different" setting


# -- templates (data) -----------------------------------------------------------------

@dataclass(frozen=True)
class Template:
    id: str
    kind: str
    setting: str
    question: str
    lang: str
    property: str | None = None

    def render(self, **labels: str) -> str:
        """Fill the placeholders; every placeholder of the template must be given."""
        missing = [n for n in _PLACEHOLDER.findall(self.question) if not labels.get(n)]
        if missing:
            raise KgcultError(f"template {self.lang}/{self.id}: no value for {{{missing[0]}}}")
        return _PLACEHOLDER.sub(lambda m: labels[m.group(1)], self.question)


def templates_dir() -> Path:
    return resources.ontology("synth-templates")


def template_langs(directory: str | Path | None = None) -> list[str]:
    d = Path(directory) if directory else templates_dir()
    return sorted(p.stem for p in d.glob("*.json"))


def load_templates(lang: str, directory: str | Path | None = None) -> list[Template]:
    """The templates of one language, validated (kind, setting, property, placeholders)."""
    d = Path(directory) if directory else templates_dir()
    path = d / f"{lang}.json"
    if not path.is_file():
        raise KgcultError(f"no question templates for language {lang!r} ({path} missing; "
                          f"available: {', '.join(template_langs(d))})")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise KgcultError(f"{path}:{e.lineno}: invalid JSON: {e.msg}") from None
    out = []
    for i, t in enumerate(doc.get("templates", [])):
        where = f"{path}: templates[{i}]"
        for key in ("id", "kind", "setting", "question"):
            if not isinstance(t.get(key), str) or not t[key]:
                raise KgcultError(f"{where}: missing field {key!r}")
        if t["kind"] not in KINDS:
            raise KgcultError(f"{where} ({t['id']}): unknown kind {t['kind']!r} (one of {', '.join(KINDS)})")
        if t["setting"] not in SETTINGS:
            raise KgcultError(f"{where} ({t['id']}): unknown setting {t['setting']!r}")
        needs_prop = t["kind"] in ("fact", "inverse", "fact_diff", "inverse_diff")
        prop = t.get("property")
        if needs_prop and not (isinstance(prop, str) and re.fullmatch(r"P\d+", prop)):
            raise KgcultError(f"{where} ({t['id']}): kind {t['kind']} needs a property such as P495")
        bad = set(_PLACEHOLDER.findall(t["question"])) - _PLACEHOLDERS
        if bad:
            raise KgcultError(f"{where} ({t['id']}): unknown placeholder {{{sorted(bad)[0]}}}")
        out.append(Template(t["id"], t["kind"], t["setting"], t["question"], lang, prop if needs_prop else None))
    if not out:
        raise KgcultError(f"{path}: no templates")
    return out


# -- graph access ---------------------------------------------------------------------

def _iri(qid: str) -> str:
    return qid if qid.startswith("http") else vocab.WD + qid


def _qid(iri: str) -> str:
    return vocab.qid_of(iri) or iri


def _pid(iri: str) -> str:
    return iri[len(vocab.WDT):] if iri.startswith(vocab.WDT) else iri


class GraphCache:
    """Claims, labels, aliases and descriptions of the entities a synthesis touches,
    fetched in batches (VALUES rows), never with property paths."""

    def __init__(self, store):
        self.store = store
        self.claims: dict[str, dict[str, set[str]]] = {}
        self.labels: dict[str, dict[str, str]] = {}
        self.aliases: dict[str, dict[str, list[str]]] = {}
        self.descriptions: dict[str, dict[str, str]] = {}

    def fetch_claims(self, iris: Iterable[str]) -> None:
        todo = sorted({i for i in iris if i not in self.claims})
        for chunk in _chunks(todo, 400):
            for i in chunk:
                self.claims[i] = {}
            rows = self.store.select(
                "SELECT ?x ?p ?o WHERE { ?x ?p ?o . FILTER(isIRI(?o) && STRSTARTS(STR(?p), "
                "\"http://www.wikidata.org/prop/direct/\")) }",
                rows=(["x"], [[NamedNode(i)] for i in chunk]))
            for r in rows:
                self.claims[r["x"].value].setdefault(_pid(r["p"].value), set()).add(r["o"].value)

    def fetch_names(self, iris: Iterable[str]) -> None:
        todo = sorted({i for i in iris if i not in self.labels})
        for chunk in _chunks(todo, 400):
            for i in chunk:
                self.labels[i] = {}
                self.aliases[i] = {}
                self.descriptions[i] = {}
            rows = self.store.select(
                "SELECT ?x ?k ?l WHERE { { ?x rdfs:label ?l BIND(1 AS ?k) } UNION "
                "{ ?x skos:altLabel ?l BIND(2 AS ?k) } UNION { ?x schema:description ?l BIND(3 AS ?k) } }",
                rows=(["x"], [[NamedNode(i)] for i in chunk]))
            for r in rows:
                x, k, l = r["x"].value, r["k"].value, r["l"]
                lang = getattr(l, "language", None) or ""
                if k == "1":
                    cur = self.labels[x].get(lang)
                    if cur is None or l.value < cur:  # deterministic if a language has two
                        self.labels[x][lang] = l.value
                elif k == "2":
                    self.aliases[x].setdefault(lang, []).append(l.value)
                else:
                    self.descriptions[x].setdefault(lang, l.value)
        for i in todo:
            for v in self.aliases[i].values():
                v.sort()

    def label(self, iri: str, lang: str) -> str | None:
        return self.labels.get(iri, {}).get(lang)

    def objects(self, iri: str, pid: str) -> set[str]:
        return self.claims.get(iri, {}).get(pid, set())

    def surface_forms(self, iri: str) -> set[str]:
        """Every label and alias of an entity, any language."""
        forms = set(self.labels.get(iri, {}).values())
        for vs in self.aliases.get(iri, {}).values():
            forms.update(vs)
        return {f for f in forms if f.strip()}


def _chunks(seq: list, n: int):
    for i in range(0, len(seq), n):
        yield seq[i:i + n]


# -- knowledge points -----------------------------------------------------------------

def knowledge_point(store, qid: str, lang: str = "en", cache: GraphCache | None = None) -> dict:
    """The facts the graph holds about one entity, in ``lang``: label, aliases, description,
    and claims with object labels (``value_label_lang`` says which language the object label
    is in: ``lang``, else English, else none). Raises KgcultError if the entity is absent."""
    iri = kinspect.entity_iri(qid)
    c = cache or GraphCache(store)
    c.fetch_claims([iri])
    c.fetch_names([iri])
    if not c.claims[iri] and not c.labels[iri]:
        raise KgcultError(f"{_qid(iri)}: not in the store")
    objs = sorted({o for os_ in c.claims[iri].values() for o in os_})
    c.fetch_names(objs)
    facts = []
    for pid in sorted(c.claims[iri], key=_pnum):
        for o in sorted(c.claims[iri][pid], key=lambda x: _pnum(_qid(x))):
            lab = c.label(o, lang)
            llang = lang if lab else ("en" if c.label(o, "en") else "")
            facts.append({
                "property": pid, "property_label": kinspect.property_label(vocab.WDT + pid),
                "value": _qid(o), "value_label": lab or c.label(o, "en") or "",
                "value_label_lang": llang,
            })
    label = c.label(iri, lang)
    desc = c.descriptions[iri].get(lang)
    return {
        "qid": _qid(iri), "lang": lang,
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
        linker = _open_linker(store, embeddings=embeddings)
    res = linker.link(text, lang=lang, topic=topic, country=country)
    if not res.get("qid"):
        raise KgcultError(f"{text!r}: the linker found no entity ({res.get('status')})")
    kp = knowledge_point(store, res["qid"], lang)
    kp["link"] = {k: res.get(k) for k in ("qid", "status", "match", "lang_used", "tied")}
    return kp


def _open_linker(store, embeddings: bool = False):
    try:
        from kgcult.link import Linker
    except ImportError as e:  # pragma: no cover - the linker ships with kgcult
        raise KgcultError(f"the entity linker (kgcult.link) is not available: {e}") from None
    return Linker.open(store, embeddings=embeddings)


def _pnum(pid: str) -> int:
    return int(pid[1:]) if pid[1:].isdigit() else 1 << 30


# -- synthesis ------------------------------------------------------------------------

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
    c_iri = taxonomy._country_iri(country).value
    versus_iris = [taxonomy._country_iri(v).value for v in (versus or [])]
    if keywords is None:
        kws = taxonomy.keywords(store, tax, topic, c_iri, lang="en")
    else:
        kws = _given_keywords(store, tax, topic, c_iri, keywords)
    cache = GraphCache(store)
    kw_iris = [_iri(k["qid"]) for k in kws]
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
    for a, (b, cls, oc) in partners.items():
        needed |= {b, cls, oc}
        needed |= {o for os_ in cache.claims.get(b, {}).values() for o in os_}
    for pid in inverse_props:
        needed |= cache.objects(c_iri, pid)
        for n in neighbours:
            needed |= cache.objects(n, pid)
    anchor_classes = sorted({_iri(a) for k in kws for a in k["anchors"]})
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
    qids = [kinspect.entity_iri(q) for q in qids]
    targets = [tax.topics[c] for c in topic.children] if topic.primary else [topic]
    target = next((t for t in targets if t.anchored), targets[0] if targets else topic)
    graph = {_iri(k["qid"]): k for k in taxonomy.keywords(store, tax, topic, country, lang="en")}
    out = []
    for q in dict.fromkeys(qids):
        if q in graph:
            out.append(graph[q])
        else:
            out.append({"qid": _qid(q), "label": "", "label_lang": "", "topics": [target.notation],
                        "anchors": [], "via": ["given"]})
    return out


def link_keywords(store, texts: Iterable[str], lang: str = "en", country: str | None = None,
                  linker=None, embeddings: bool = False) -> tuple[list[str], list[dict]]:
    """Link free-text keywords (the paper's LLM-made keywords, say) to QIDs with the entity
    linker; a text that is already a QID is kept. Returns (QIDs, unresolved link results)."""
    out, missed = [], []
    for t in texts:
        t = t.strip()
        if not t:
            continue
        if re.fullmatch(r"Q\d+", t):
            out.append(t)
            continue
        if linker is None:
            linker = _open_linker(store, embeddings=embeddings)
        res = linker.link(t, lang=lang, country=country)
        if res.get("qid"):
            out.append(res["qid"])
        else:
            missed.append({"mention": t, "status": res.get("status")})
    return out, missed


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
    depths: dict = None

    def __post_init__(self):
        self.depths = {}


def _pair_partners(store, cache: GraphCache, kws: list[dict], country: str, versus: list[str],
                   seed: int) -> dict[str, tuple[str, str, str]]:
    """For each keyword with a direct origin (P495) in the country, another entity of one of
    its direct classes (P31) whose origin is another country and not this one."""
    out = {}
    wanted = []
    for k in kws:
        a = _iri(k["qid"])
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
        cands = sorted(set(by_cls.get(cls, [])), key=lambda bo: (_pnum(_qid(bo[0])), bo[1]))
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
    gold = sorted(set(gold), key=lambda i: _pnum(_qid(i)))
    answers = sorted({c.label(g, lang) for g in gold if c.label(g, lang)})
    if not gold or not answers:
        return None
    facts = sorted(set(facts), key=lambda f: (_pnum(_qid(f[0])), _pnum(f[1]), _pnum(_qid(f[2]))))
    key = "|".join([t.id, lang, subject, other or "", other_country or "", ctx.country])
    topic_of = _topic_of(ctx, subject, t.property if t.kind in ("inverse", "inverse_diff") else None)
    rec = {
        "id": hashlib.sha256(key.encode()).hexdigest()[:16],
        "setting": t.setting, "template": t.id, "kind": t.kind, "lang": lang,
        "topic": topic_of.notation, "topic_label": topic_of.label(lang),
        "primary": topic_of.notation.split(".")[0],
        "country": _qid(ctx.country), "country_label": c.label(ctx.country, lang),
        "keyword": _qid(subject), "keyword_label": c.label(subject, lang) or "",
        "question": question,
        "answers": answers,
        "gold_qids": [_qid(g) for g in gold],
        "distractor_qids": sorted({_qid(d) for d in distractors} - {_qid(g) for g in gold}, key=_pnum),
        "facts": [[_qid(s), p, _qid(o)] for s, p, o in facts],
        "fact_labels": [[c.label(s, lang) or c.label(s, "en") or _qid(s),
                         kinspect.property_label(vocab.WDT + p) or p,
                         c.label(o, lang) or c.label(o, "en") or _qid(o)] for s, p, o in facts],
        "mentions": mentions,
        "source": "template",
    }
    if other:
        rec["other"] = _qid(other)
    if other_country:
        rec["other_country"] = _qid(other_country)
    return rec


def _topic_of(ctx: _Ctx, subject: str, prop: str | None = None) -> taxonomy.Topic:
    """The secondary topic a question belongs to: the (first) topic of its keyword; for a
    country-level question, of the keyword reached through the property; for a class
    question, the topic anchored on the class."""
    notation = None
    for k in ctx.keywords:
        if _iri(k["qid"]) == subject and k["topics"]:
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
        x = _iri(k["qid"])
        objs = c.objects(x, t.property)
        s_label = c.label(x, lang)
        if not objs or not s_label:
            continue
        q = t.render(subject=s_label)
        r = _record(ctx, t, lang, subject=x, question=q, gold=objs,
                    facts=[(x, t.property, o) for o in objs], mentions=[s_label])
        if r:
            yield r


def _gen_name_one(ctx: _Ctx, t: Template, lang: str):
    c = ctx.cache
    by_anchor: dict[str, list[tuple[str, str]]] = {}
    for k in ctx.keywords:
        x = _iri(k["qid"])
        if "direct" not in k["via"]:
            continue
        for p in ("P495", "P17"):
            if ctx.country in c.objects(x, p):
                for a in k["anchors"]:
                    by_anchor.setdefault(_iri(a), []).append((x, p))
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
            r["keyword"], r["keyword_label"] = _qid(anchor), cls_label
            yield r


def _depth(ctx: _Ctx, cls: str) -> int:
    """Number of superclasses of a class (kgc:subclassOf), cached on the context."""
    d = ctx.depths.get(cls)
    if d is None:
        rows = ctx.cache.store.select("SELECT (COUNT(DISTINCT ?y) AS ?n) WHERE { ?c kgc:subclassOf ?y }",
                                      bindings={"c": NamedNode(cls)})
        d = ctx.depths[cls] = int(rows[0]["n"].value) if rows else 0
    return d


def _gen_inverse(ctx: _Ctx, t: Template, lang: str):
    if t.property not in ctx.inverse_props:
        return
    c = ctx.cache
    objs = c.objects(ctx.country, t.property)
    label = c.label(ctx.country, lang)
    if not objs or not label:
        return
    q = t.render(country=label)
    r = _record(ctx, t, lang, subject=ctx.country, question=q, gold=objs,
                facts=[(ctx.country, t.property, o) for o in objs], mentions=[label])
    if r:
        yield r


def _gen_inverse_diff(ctx: _Ctx, t: Template, lang: str):
    if t.property not in ctx.inverse_props:
        return
    c = ctx.cache
    mine = c.objects(ctx.country, t.property)
    label = c.label(ctx.country, lang)
    n = 0
    for other in ctx.neighbours:
        theirs = c.objects(other, t.property)
        gold = mine - theirs
        o_label = c.label(other, lang)
        if not theirs or not gold or not label or not o_label:
            continue
        q = t.render(country=label, other_country=o_label)
        facts = [(ctx.country, t.property, g) for g in gold] + [(other, t.property, h) for h in theirs]
        r = _record(ctx, t, lang, subject=ctx.country, question=q, gold=gold, facts=facts,
                    mentions=[label, o_label], distractors=theirs, other_country=other)
        if r:
            n += 1
            yield r
        if n >= MAX_CONTRASTS:
            break


def _gen_which_from(ctx: _Ctx, t: Template, lang: str):
    c = ctx.cache
    for k in ctx.keywords:
        a = _iri(k["qid"])
        if a not in ctx.partners:
            continue
        b, cls, oc = ctx.partners[a]
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
    for k in ctx.keywords:
        a = _iri(k["qid"])
        if a not in ctx.partners:
            continue
        b, cls, oc = ctx.partners[a]
        mine, theirs = c.objects(a, t.property), c.objects(b, t.property)
        gold = mine - theirs
        la, lb = c.label(a, lang), c.label(b, lang)
        if not gold or not theirs or not la or not lb or la == lb:
            continue
        q = t.render(subject=la, other=lb)
        facts = [(a, t.property, g) for g in gold] + [(b, t.property, h) for h in theirs]
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
                "s": NamedNode(_iri(s)), "p": NamedNode(vocab.WDT + p), "o": NamedNode(_iri(o))})
            if not bool(ok):
                problems.append(f"{qid}: fact {s} {p} {o} is not in the graph")
        in_facts = {x for f in q.get("facts", []) for x in (f[0], f[2])}
        for g in q.get("gold_qids", []):
            has = store.query("ASK { ?g rdfs:label ?l }", bindings={"g": NamedNode(_iri(g))})
            if not bool(has):
                problems.append(f"{qid}: gold {g} has no label in the graph")
            if g not in in_facts:
                problems.append(f"{qid}: gold {g} is in none of the question's facts")
    return problems


# -- generator: rewriting template questions, verified --------------------------------

class Generator(Protocol):
    """Anything that continues a prompt: ``generate(prompt) -> text``."""

    def generate(self, prompt: str) -> str: ...


LANG_NAMES = {"en": "English", "zh": "Chinese", "ja": "Japanese", "ko": "Korean", "ar": "Arabic",
              "es": "Spanish", "fr": "French", "pt": "Portuguese", "ru": "Russian", "he": "Hebrew",
              "de": "German", "it": "Italian"}


class CausalLMGenerator:
    """A causal LM from a local directory (or a hub id when the weights are cached),
    loaded with transformers' AutoModelForCausalLM; greedy decoding, deterministic.
    ``gguf_file`` loads a GGUF checkpoint from that directory (needs ``gguf``)."""

    def __init__(self, path: str, gguf_file: str | None = None, max_new_tokens: int = 64,
                 device: str | None = None):
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as e:  # pragma: no cover
            raise KgcultError(f"--generator needs transformers and torch: {e}") from None
        kw = {"gguf_file": gguf_file} if gguf_file else {}
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path, **kw)
            self.model = AutoModelForCausalLM.from_pretrained(path, **kw)
        except (OSError, ValueError) as e:
            raise KgcultError(f"cannot load a causal LM from {path}: {e}") from None
        self.model.eval()
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model.to(self.device)
        self.max_new_tokens = max_new_tokens
        self._torch = torch

    def generate(self, prompt: str) -> str:
        tok = self.tokenizer
        text = prompt
        if getattr(tok, "chat_template", None):
            text = tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                           add_generation_prompt=True)
        enc = tok(text, return_tensors="pt").to(self.device)
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        with self._torch.no_grad():
            out = self.model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=False,
                                      pad_token_id=pad)
        return tok.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True)


def knowledge_text(q: dict) -> str:
    return "\n".join(f"- {s} — {p} — {o}" for s, p, o in q.get("fact_labels", []))


def question_prompt(q: dict) -> str:
    """The paper's Figures 16 (unique) and 15 (different), adapted to rewriting a question."""
    lang = LANG_NAMES.get(q["lang"], q["lang"])
    if q["setting"] == "different":
        head = (f"Assuming you are an expert in the field of {q['primary']}, rewrite the question below as a "
                f"natural, situational question in {lang} that involves the knowledge points from two countries.")
    else:
        head = (f"Consider the following cultural knowledge and rewrite the question below as a natural question "
                f"in {lang} that seeks expert advice.")
    return (f"{head}\n# Cultural Knowledge\n{knowledge_text(q)}\n# Question\n{q['question']}\n"
            "# Requirements\n- The question must not contain any offensive or discriminatory content.\n"
            "- Keep every name that the question mentions; do not reveal the answer.\n"
            "- Directly output the question, do not provide other contents.\n"
            f"- Use {lang}.\n")


def answer_prompt(q: dict, question: str) -> str:
    """The paper's Figure 17 (answer generation), asking for a short answer."""
    lang = LANG_NAMES.get(q["lang"], q["lang"])
    return (f"You are an expert in the field of {q['topic_label']} in {q.get('country_label') or q['country']}. "
            "Please refer to the following cultural knowledge to answer the question.\n"
            f"# Cultural Knowledge\n{knowledge_text(q)}\n# Question\n{question}\n"
            "# Requirements\n- Closely follow the cultural knowledge provided.\n"
            "- Directly output the answer; do not provide other contents.\n"
            f"- Use {lang}.\n")


def normalize_text(s: str) -> str:
    return unicodedata.normalize("NFKC", s).casefold().strip()


_SPACED = re.compile(r"^[\w\s'’\-.]+$")


def mentions(text: str, form: str) -> bool:
    """Does ``text`` contain the surface form? Whole words for scripts written with
    spaces between words (Latin, Cyrillic, Greek); plain substring otherwise (CJK, Hangul
    with particles, Arabic and Hebrew with clitics)."""
    t, f = normalize_text(text), normalize_text(form)
    if not f:
        return False
    if all(ord(ch) < 0x0590 for ch in f) and _SPACED.match(f):
        return re.search(r"(?<!\w)" + re.escape(f) + r"(?!\w)", t) is not None
    return f in t


def verify(q: dict, new_question: str, answer: str, gold_forms: set[str],
           distractor_forms: set[str]) -> tuple[bool, str]:
    """Accept a rewrite only if (1) the new question is one non-empty line that keeps every
    name the template question mentioned, (2) it does not give away a gold answer the
    template question did not contain, and (3) the generator's answer to it names a gold
    entity and no distractor (an entity the gold facts contrast it with)."""
    nq = new_question.strip()
    if not nq:
        return False, "empty question"
    if "\n" in nq:
        return False, "question spans several lines"
    for m in q.get("mentions", []):
        if not mentions(nq, m):
            return False, f"question lost the name {m!r}"
    leaked = [f for f in gold_forms if mentions(nq, f) and not mentions(q["question"], f)
              and not any(mentions(f, m) for m in q.get("mentions", []))]
    if leaked:
        return False, f"question gives away the answer {sorted(leaked)[0]!r}"
    hit_gold = sorted(f for f in gold_forms if mentions(answer, f))
    hit_bad = sorted(f for f in distractor_forms if mentions(answer, f) and f not in gold_forms
                     and not any(mentions(g, f) for g in hit_gold))
    if hit_bad:
        return False, f"answer names a distractor {hit_bad[0]!r}"
    if not hit_gold:
        return False, "answer names no gold entity"
    return True, f"answer names {hit_gold[0]!r}"


def rewrite(store, questions: list[dict], generator: Generator, keep_rejected: bool = True) -> list[dict]:
    """Rewrite each question with the generator, verify it, and keep the rewrite only when
    verified. Rejected rewrites leave the template question in place (``rewrite.status`` =
    "rejected") or, with ``keep_rejected=False``, drop the question."""
    cache = GraphCache(store)
    cache.fetch_names({_iri(x) for q in questions for x in q["gold_qids"] + q.get("distractor_qids", [])})
    out = []
    for q in questions:
        gold_forms = set().union(*(cache.surface_forms(_iri(g)) for g in q["gold_qids"]))
        bad_forms = set().union(*(cache.surface_forms(_iri(d)) for d in q.get("distractor_qids", [])), set())
        new_q = _first_line(generator.generate(question_prompt(q)))
        ans = generator.generate(answer_prompt(q, new_q)).strip() if new_q else ""
        ok, reason = verify(q, new_q, ans, gold_forms, bad_forms)
        r = dict(q)
        r["rewrite"] = {"status": "accepted" if ok else "rejected", "question": new_q,
                        "answer": ans, "reason": reason}
        if ok:
            r["template_question"] = q["question"]
            r["question"] = new_q
            r["source"] = "generator"
        elif not keep_rejected:
            continue
        out.append(r)
    return out


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        line = line.strip().strip('"').strip()
        if line:
            return line
    return ""


# -- scoring answers ------------------------------------------------------------------

MATCH_CLASSES = ("exact", "alias", "ancestor", "miss")
_SPLIT = re.compile(r"\s*(?:[,;/、，；]|\band\b|\bor\b|\n)\s*")


def read_jsonl(path: str | Path, what: str) -> list[dict]:
    """Records of a questions/answers file, each with its line number (``_line``)."""
    if not Path(path).is_file():
        raise KgcultError(f"{path}: cannot read {what}: no such file")
    return [dict(rec, _line=n) for n, rec in iter_jsonl(path)]


def _answer_text(rec: dict, path, n) -> str:
    for k in ("answer", "prediction", "response", "output"):
        if isinstance(rec.get(k), str):
            return rec[k]
    raise KgcultError(f"{path}:{n}: no answer text (field 'answer', 'prediction', 'response' or 'output')")


def _spans(text: str) -> list[str]:
    t = text.strip().strip(".。!！?？").strip()
    parts = [p.strip().strip(".。!！?？\"'«»「」“”").strip() for p in _SPLIT.split(t)]
    spans = [t] + [p for p in parts if p and p != t]
    return list(dict.fromkeys(spans))


def score_answers(store, questions: list[dict], answers: list[dict], linker=None,
                  answers_path: str = "answers", log=None) -> dict:
    """Link each free-text answer (the whole answer, then its comma/and-separated parts) and
    compare with the question's gold QIDs:

    * exact: a span resolves to a gold QID and is one of its labels (any language; case,
      width and punctuation ignored);
    * alias: a span resolves to a gold QID otherwise (an alias, a fuzzy or token match the
      linker accepted);
    * ancestor: a span resolves to an ancestor of a gold QID in the closure graphs
      (kgc:broader (P31|P279|P361)+, kgc:locatedIn P131+), e.g. "noodle soup" for a ramen;
    * miss: none of these. Unanswered questions count as misses.

    Returns overall figures and the same per topic, language and country."""
    by_id = {}
    for q in questions:
        if "id" not in q or "gold_qids" not in q:
            raise KgcultError(f"questions line {q.get('_line', '?')}: missing 'id' or 'gold_qids'")
        by_id[q["id"]] = q
    if linker is None:
        linker = _open_linker(store)
    results = {}
    cache = GraphCache(store)
    for rec in answers:
        qid = rec.get("id")
        if qid not in by_id:
            raise KgcultError(f"{answers_path}:{rec.get('_line', '?')}: id {qid!r} is not in the questions file")
        text = _answer_text(rec, answers_path, rec.get("_line", "?"))
        q = by_id[qid]
        results[qid] = _classify(store, linker, q, text, cache)
    per = {}
    for qid, q in by_id.items():
        r = results.get(qid, {"class": "miss", "linked": [], "answered": False})
        per[qid] = r
    report = {"questions": len(by_id), "answered": sum(1 for r in per.values() if r["answered"]),
              "overall": _tally(per.values())}
    for key, field_ in (("by_topic", "topic"), ("by_lang", "lang"), ("by_country", "country")):
        groups: dict[str, list] = {}
        for qid, q in by_id.items():
            groups.setdefault(str(q.get(field_, "")), []).append(per[qid])
        report[key] = {g: _tally(rs) for g, rs in sorted(groups.items())}
    report["items"] = [{"id": qid, **per[qid]} for qid in sorted(per)]
    return report


def _surface_key(s: str) -> str:
    return re.sub(r"[\s\W_]+", " ", normalize_text(s)).strip()


def _classify(store, linker, q: dict, text: str, cache: GraphCache) -> dict:
    gold = set(q["gold_qids"])
    cache.fetch_names(_iri(g) for g in gold)
    linked = []
    best = "miss"
    for span in _spans(text):
        res = linker.link(span, lang=q.get("lang", "en"))
        cands = []
        if res.get("qid"):
            cands.append(res["qid"])
        cands += [t for t in (res.get("tied") or []) if t != res.get("qid")]
        for c in cands:
            linked.append({"span": span, "qid": c, "match": res.get("match"), "status": res.get("status")})
            if c in gold:
                key = _surface_key(span)
                labels = {_surface_key(v) for v in cache.labels.get(_iri(c), {}).values()}
                cls = "exact" if key in labels else "alias"
            elif _is_ancestor(store, c, gold):
                cls = "ancestor"
            else:
                continue
            if MATCH_CLASSES.index(cls) < MATCH_CLASSES.index(best):
                best = cls
        if best == "exact":
            break
    return {"class": best, "linked": linked, "answered": bool(text.strip())}


def _is_ancestor(store, candidate: str, gold: set[str]) -> bool:
    rows = [(NamedNode(_iri(g)), NamedNode(_iri(candidate))) for g in sorted(gold)]
    res = store.query("ASK { { ?g kgc:broader ?c } UNION { ?g kgc:locatedIn ?c } UNION { ?g kgc:partOf ?c } }",
                      rows=(["g", "c"], rows))
    return bool(res)


def _tally(rs) -> dict:
    rs = list(rs)
    n = len(rs)
    counts = {c: sum(1 for r in rs if r["class"] == c) for c in MATCH_CLASSES}
    d = {"n": n, **counts}
    d["exact_rate"] = round(counts["exact"] / n, 4) if n else 0.0
    d["alias_rate"] = round(counts["alias"] / n, 4) if n else 0.0
    d["ancestor_rate"] = round(counts["ancestor"] / n, 4) if n else 0.0
    d["accuracy"] = round((counts["exact"] + counts["alias"]) / n, 4) if n else 0.0
    d["lenient_accuracy"] = round((counts["exact"] + counts["alias"] + counts["ancestor"]) / n, 4) if n else 0.0
    return d


def format_report(report: dict) -> str:
    out = [f"{report['questions']} questions, {report['answered']} answered"]
    head = f"{'':<14} {'n':>4} {'exact':>6} {'alias':>6} {'ancest':>6} {'miss':>5} {'acc':>6} {'lenient':>7}"

    def row(name, d):
        return (f"{name:<14} {d['n']:>4} {d['exact']:>6} {d['alias']:>6} {d['ancestor']:>6} {d['miss']:>5} "
                f"{d['accuracy']:>6.3f} {d['lenient_accuracy']:>7.3f}")
    out.append(head)
    out.append(row("overall", report["overall"]))
    for key, title in (("by_topic", "topic"), ("by_lang", "language"), ("by_country", "country")):
        out.append(f"-- per {title}")
        for g, d in report[key].items():
            out.append(row(g, d))
    return "\n".join(out) + "\n"
