"""The annotator: names found in a text (``finder``), the entity of each span chosen in
the text's context (``choose``), the span's record built with the linker's fields
(``kgcult.link.record.Records``: label, evidence, granularity, country, description)."""
from __future__ import annotations

import os
import time
from typing import Iterable, Iterator

from kgcult.annotate import across, qualified
from kgcult.annotate import grammar as gram
from kgcult.annotate.choose import choose
from kgcult.annotate.finder import Finder, select
from kgcult.annotate.names import Names, load_or_build
from kgcult.annotate.wordlists import lang_words, lexicon
from kgcult.annotate.names import path_of as names_file
from kgcult.annotate.rows import MAX_TEXT_CHARS, TextRow, check
from kgcult.annotate.names import decode
from kgcult.annotate.text import fold, title_runs
from kgcult.errors import KgcultError
from kgcult.link.disambiguate import GraphFacts, containers
from kgcult.link.index.reader import LabelIndex
from kgcult.link.index.reader import load_or_build as load_index
from kgcult.link.index.reader import open_unopened
from kgcult.link import affixes, scripts
from kgcult.link.record import Records
from kgcult.store import open_store


class Annotator:
    """Spans and QIDs in raw texts over one label index. ``Annotator.open(store)``."""

    def __init__(self, index: LabelIndex, *, max_chars: int = MAX_TEXT_CHARS, location=None):
        self.ix = index
        self.location = location
        self._across: across.Across | None = None
        self.max_chars = max_chars
        self.facts = GraphFacts(index)
        self.records = Records(self.facts)
        self._finders: dict[tuple[str, str], Finder] = {}
        self.topics = [t.name for t in index.topics]
        self.langs = frozenset(index.langs) | frozenset(gram.languages())

    @classmethod
    def open(cls, store, *, opener=None, **options) -> "Annotator":
        """An annotator on ``store`` (an open store, or the location of an embedded one:
        its label index is opened without opening the store when it is known; else the
        store is opened, by ``opener`` or read-only, and its index built if missing)."""
        if isinstance(store, (str, os.PathLike)):
            ix = open_unopened(store)
            if ix is not None:
                return cls(ix, location=store, **options)
            location = store
            store = opener() if opener is not None else open_store(store, read_only=True)
            return cls(load_index(store), location=location, **options)
        return cls(load_index(store), location=getattr(store, "location", None), **options)

    def prepare(self) -> dict:
        """What a first text needs, made ready on disk (``kgcult link index`` runs it): the
        dictionaries of the topics the grammar file describes, the word lists of its
        languages and the segmenters' lexicons; what was built now and the seconds taken."""
        t0 = time.perf_counter()
        before = {t: names_file(self.ix, t).exists() for t in gram.topics() if t in self.topics}
        for t in before:
            self.names(t)
        langs = gram.languages()
        for lg in langs:
            g = gram.grammar(lg)
            lang_words(str(self.ix.directory), lg)
            if g.segmenter == "lexicon":
                lexicon(lg)
        return {"topics": sorted(before), "built": sorted(t for t, had in before.items() if not had),
                "languages": langs, "seconds": round(time.perf_counter() - t0, 2)}

    def names(self, topic: str) -> Names:
        if topic not in self.topics:
            raise KgcultError(f"unknown topic {topic!r}: one of {', '.join(sorted(self.topics))}")
        return load_or_build(self.ix, topic)

    def finder(self, topic: str, lang: str) -> Finder:
        k = (topic, lang)
        f = self._finders.get(k)
        if f is None:
            g = gram.grammar(lang)
            spec = gram.topic_spec(topic)
            f = self._finders[k] = Finder(self.names(topic), g, lang, bool(spec.get("coherent_common")),
                                          bool(spec.get("modifiers")))
        return f

    def annotate(self, text: str, lang: str = "en", topic: str = "food",
                 country: str | None = None) -> list[dict]:
        """The spans of ``text`` (start, end in code points, end exclusive; text, qid, label,
        match, evidence, granularity, ...), in text order, never overlapping."""
        row = check({"id": 0, "text": text, "lang": lang, "topic": topic, "country": country},
                    topics=self.topics, langs=self.langs, max_chars=self.max_chars)
        return self._spans(row)

    def annotate_many(self, rows: Iterable[dict | TextRow]) -> Iterator[dict]:
        """``{"id", "spans"}`` per row (dicts are checked as :func:`rows.check` does), in order."""
        for r in rows:
            if not isinstance(r, TextRow):
                r = check(r, topics=self.topics, langs=self.langs, max_chars=self.max_chars)
            yield self.annotate_row(r)

    def annotate_row(self, row: TextRow) -> dict:
        """``{"id", "spans"}`` of a checked row."""
        return {"id": row.id, "spans": self._spans(row)}

    def _spans(self, row: TextRow) -> list[dict]:
        fd = self.finder(row.topic, row.lang)
        found = [k for f in fd.find(row.text) if (k := fd.kept(row.text, f)) is not None]
        spans = select(found + fd.compounds(row.text, found))
        spans = [f for f in spans if not _invented_compound(row.text, f.start, found)]
        if fd.g.compound_suffixes:
            spans = _without_compounds(row.text, spans, fd.g.compound_suffixes)
        spec = gram.topic_spec(row.topic)
        named_runs: list[tuple[int, int]] = []  # runs of capitals holding a name of the topic
        if fd.g.title_names:
            everyday = fd.names.everyday(row.lang)
            runs = title_runs(row.text, everyday=lambda w: fold(w) in everyday, conjunctions=fd.g.conjunctions)
            named_runs = [r for r in runs if any(_inside_run(f, r) for f in spans)]
            spans = [f for f in spans if not any(_inside_run(f, r) for r in runs)]
        if fd.g.number or fd.g.adjective_endings or fd.g.adjective_endings_before:
            spans = _without_modifiers(row.text, spans, fd, affixes.head_first(row.lang, row.topic))
        langs = fd.names.langs
        inner = bool(fd.g.namesake) and bool(spec.get("inner_namesake"))
        # entities named without doubt are the context the others are chosen in
        chosen: list = [None] * len(spans)
        context: list[int] = []
        for i, f in enumerate(spans):
            eid, tier, steps = choose(f.codes, langs, row.lang, facts=self.facts, topic=row.topic,
                                      country=row.country, context=[])
            if not steps:
                chosen[i] = (eid, tier, steps)
                context.append(eid)
        out = []
        about = {row.country} if row.country else set()
        for i, f in enumerate(spans):
            if not f.weak and chosen[i] is not None:
                about.update(self.records.entity(chosen[i][0], row.lang, row.topic)["country"] or ())
        for i, f in enumerate(spans):
            if chosen[i] is None:
                chosen[i] = choose(f.codes, langs, row.lang, facts=self.facts, topic=row.topic,
                                   country=row.country, context=context)
            eid, tier, steps = chosen[i]
            if inner:
                eid = self._inner_namesake(eid, row.text[f.start:f.end], fd)
            kind = _designator_kind(row.text, f.start, f.end, fd.g)
            if kind:
                eid = _namesake_of_kind(self.ix, eid, {decode(c)[0] for c in f.codes}, kind)
                if kind == "settlement" and self._holds_places(eid):
                    eid = self._settlement_across(row, f, fd, eid)
            ent = self.records.entity(eid, row.lang, row.topic)
            # an everyday word naming a place of the language's own countries is that place
            # in any text (서울, 北京: famous there, hence everyday words)
            if (f.weak and ent["qid"] not in (ent["country"] or ()) and not _coherent(ent, about, fd.g.home)
                    and not _designated(row.text, f.start, f.end, fd.g)):
                continue  # a country is named in any text; a designator says a place is meant
            span = {"start": f.start, "end": f.end, "text": row.text[f.start:f.end],
                    "qid": ent["qid"], "label": ent["label"] or ent["label_en"],
                    "match": f"{f.how}-{'alias' if tier % 2 else 'label'}",
                    "evidence": [list(x) for x in ent["evidence"]],
                    "granularity": ent["granularity"], "granularity_score": ent["granularity_score"],
                    "country": list(ent["country"])}
            if steps:
                span["decided_by"] = steps
            out.append(span)
        if fd.g.quotes:
            out = _with_quoted_names(row.text, out, fd.g.quotes)
        if affixes.head_first(row.lang, row.topic):
            out = qualified.spans(self.ix, self.records, row, fd, out)
        if fd.g.across and across.stages():
            more = self._across_spans(row, fd, out)
            out = [s for s in out if not any(m["start"] <= s["start"] and s["end"] <= m["end"] for m in more)]
            out = sorted(out + more, key=lambda s: (s["start"], s["end"]))
        if fd.g.attributive:
            out = [s for s in out if not _attribute(row.text, s["start"], fd.g.attributive)]
        if fd.g.trailing_marks:
            out = [_without_trailing_marks(row.text, s, fd.g.trailing_marks) for s in out]
        if named_runs and spec.get("invented_names"):
            out = _with_unlinked_runs(row.text, out, named_runs)
        return out

    def _cross(self) -> across.Across:
        """The linker's cross-script stages over this index (made on first use)."""
        if self._across is None:
            self._across = across.Across(self.ix, location=self.location)
        return self._across

    def _holds_places(self, eid: int) -> bool:
        """Whether the entity has places located in it (P131): a region or a country."""
        return bool(self.ix.inbound("P131").get(self.ix.qids[eid]))

    def _settlement_across(self, row: TextRow, f, fd: Finder, eid: int) -> int:
        """A settlement's designator beside a name that, in the text's language, is a
        country's or a region's only (Persian شهر مراکش: مراکش is Morocco's label, the city
        Marrakech has none in Persian): the settlement the name reaches across scripts by
        the same romanized key, when there is one; else ``eid``."""
        # the designator as written (شهرهای ایران, the cities of Iran, names the country)
        if dict(fd.g.designator_kinds).get(fd.g.designator(row.text, f.start, f.end, bare=True)) != "settlement" \
                or "cross-script" not in fd.g.across or not across.stages():
            return eid
        r = self._cross().resolve([row.text[f.start:f.end]], row.lang, row.topic, row.country,
                                 [("cross-script",)])[0]
        other = self.ix.eid_of.get(r["qid"]) if r and r.get("match") == "cross-script" else None
        return other if other is not None and not self._holds_places(other) else eid

    def _inner_namesake(self, eid: int, name: str, fd: Finder) -> int:
        """A place located in ``eid`` named ``name`` with one of the language's namesake
        designators written on (京都 -> 京都市), when ``eid`` has places in it; else ``eid``."""
        ix = self.ix
        qid = ix.qids[eid]
        if not ix.inbound("P131").get(qid):
            return eid
        for d in fd.g.namesake:
            key = fold(name + d)
            codes = fd.names.exact.get(key) or fd.names.unspaced.get(scripts.han_fold(name + d)) or ()
            inner = sorted({decode(c)[0] for c in codes if _inside(ix, ix.qids[decode(c)[0]], qid)})
            if inner:
                return inner[0]
        return eid

    def _across_spans(self, row: TextRow, fd: Finder, spans: list[dict]) -> list[dict]:
        """Spans the linker's cross-script stages find among the words no name matched."""
        taken = [(s["start"], s["end"]) for s in spans]
        groups = across.guesses(row.text, fd.g, fd.names, taken, fd.lookup)
        flat = [g for grp in groups for g in grp]
        # the countries the text is about: the prompt's and those of the entities found
        about = {row.country} if row.country else set()
        for s in spans:
            about.update(s.get("country") or ())
        # the first guess of a place asks only the stages whose matches its tier may take;
        # the others, the shorter forms a taken answer may be narrowed to whatever their
        # kind of match, every stage (the fuzzy one where their tier may take it)
        firsts = {id(grp[0]) for grp in groups}
        kinds = [_kinds(fd.g, g.known) + tuple(m for m in (_local_kinds(fd.g, g.known) if about and not g.phrase else ())
                                               if m != _HEARD or g.foreign)
                 for g in flat]
        # the others ask only the kinds the language takes somewhere (German: compound and
        # reordered, not the fuzzy stages the cross-script languages need)
        langs_kinds = set(fd.g.across + fd.g.across_known + fd.g.across_everyday + fd.g.across_local
                          + fd.g.across_known_local + fd.g.across_everyday_local)
        kinds = [k if id(g) in firsts else
                 tuple(m for m in across.MATCH_STAGE if (m not in _LOOSE or m in k) and m in langs_kinds)
                 for g, k in zip(flat, kinds)]
        res: dict[across.Guess, dict | None] = dict(zip(flat, self._cross().resolve(
            [g.mention for g in flat], row.lang, row.topic, row.country, kinds)))
        out = []
        for grp in groups:
            ok = [g for g in grp if _taken_ok(res[g], fd, self.ix, g.known)
                  and (not any(g.start < e and s < g.end for s, e in taken)
                       or (g.covers and (res[g] or {}).get("match") == "cross-script"
                           and not any(g.start < e and s < g.end for s, e in taken[len(spans):])))
                  and (not g.known or _coherent(res[g], about, _home(res[g], fd.g)))
                  and not (_everyday_stem(g, fd) and not _coherent(res[g], about))
                  and not (_few_consonants(g, fd.g) and not _local_or_country(res[g], about))
                  and not (g.known and _foreign_affix(res[g], fd.g))
                  and not ((res[g] or {}).get("match") == _HEARD and not g.foreign)
                  and not (g.known and (res[g] or {}).get("match") == _VOWELLED and _few_consonants(g, fd.g))
                  and ((res[g] or {}).get("match") in _kinds(fd.g, g.known)
                       or (not g.phrase and (_local(res[g], about) or _heard_unplaced(res[g], g))))]
            if not ok:
                continue
            # a form found by the same romanized key before one a few letters off (교토로,
            # Kyoto with a particle, is one edit from Goto; 교토 is Kyoto)
            best = next((g for g in ok if (res[g] or {}).get("match") != _FUZZY), ok[0])
            r = res[best] or {}
            # the word without its attached grammar when that names the same entity (the
            # match taken vouches for the entity, whatever kind of match the shorter form got),
            # or when the grammar cut off is a proclitic before the article (و + ال): a word
            # that begins so has one, whatever the shorter form names by itself
            for g in grp[grp.index(best) + 1:]:
                if fold(row.text[best.start:g.start]) in fd.g.inside:
                    continue  # a designator written as part of the name stays in (เกาะสมุย)
                if best.start <= g.start and g.end <= best.end and (
                        (res[g] or {}).get("qid") == r.get("qid") or _proclitic_article(row.text, best, g, fd.g)
                        or (r.get("match") == _FUZZY and _suffix_off(row.text, best, g, fd.g))):
                    best = g
            for g in (best,):
                taken.append((g.start, g.end))
                kind = _designator_kind(row.text, g.start, g.end, fd.g)
                eid = self.ix.eid_of[r["qid"]]
                other = _namesake_of_kind(self.ix, eid, _tied(self.ix, r), kind) if kind else eid
                if other != eid:  # the namesake the designator calls for, the linker's record of it
                    ent = self.records.entity(other, row.lang, row.topic)
                    r = {**r, "qid": ent["qid"], "label": ent["label"], "label_en": ent["label_en"],
                         "evidence": [list(x) for x in ent["evidence"]], "granularity": ent["granularity"],
                         "granularity_score": ent["granularity_score"], "country": list(ent["country"])}
                out.append({"start": g.start, "end": g.end, "text": row.text[g.start:g.end], "qid": r["qid"],
                            "label": r["label"] or r["label_en"], "match": r["match"],
                            "evidence": r["evidence"], "granularity": r["granularity"],
                            "granularity_score": r["granularity_score"], "country": r["country"]})
        return out


def _with_quoted_names(text: str, spans: list[dict], quotes: tuple[tuple[str, str], ...]) -> list[dict]:
    """``spans`` with a span right before a name in quotation marks (one space between:
    Russian торт «Шварцвальд», the Black Forest cake; салат «Оливье») made one span with
    it, over the marks, of the quoted name's entity: the head noun and the name it is
    given are one name (GOLD.md: the longest lexicalised name)."""
    out: list[dict] = []
    i = 0
    while i < len(spans):
        s = spans[i]
        nxt = spans[i + 1] if i + 1 < len(spans) else None
        if nxt is not None and nxt["qid"] and any(
                text[s["end"]:nxt["start"]] == " " + o and text[nxt["end"]:nxt["end"] + 1] == c for o, c in quotes):
            end = nxt["end"] + 1
            out.append({**nxt, "start": s["start"], "end": end, "text": text[s["start"]:end]})
            i += 2
            continue
        out.append(s)
        i += 1
    return out


def _inside_run(f, run: tuple[int, int]) -> bool:
    """Whether the name found ``f`` lies inside the run of capitalized words ``run``
    without covering it."""
    a, b = run
    return a <= f.start and f.end <= b and (a, b) != (f.start, f.end)


def _without_modifiers(text: str, spans: list, fd: Finder, head_first: bool) -> list:
    """``spans`` less the one-word ones that qualify another span they stand right beside
    (one space between), on the side the language puts what qualifies a noun:

    * an everyday word met as the other number of a name (English green, the label leafy
      greens), before the span in English (a green salad), after it where the head comes
      first (ensalada verde);
    * a word ending as an adjective or participle of the language ends: after the span in
      es, it, fr (``adjective_endings``: formaggio salato, salty cheese; cordero asado, roast
      lamb, where asado is also the barbecue), before it in Russian
      (``adjective_endings_before``: варёный рис, boiled rice; варёный stems as варенье)."""
    every = fd.names.everyday(fd.lang) if fd.g.number else frozenset()
    starts = {f.start for f in spans}
    ends = {f.end for f in spans}

    def modifier(f) -> bool:
        if f.nwords != 1:
            return False
        after = f.start - 1 in ends and text[f.start - 1:f.start] == " "
        before = f.end + 1 in starts and text[f.end:f.end + 1] == " "
        if f.how == "stem" and f.key in every and (after if head_first else before):
            return True
        word = fold(text[f.start:f.end])
        return ((after and word.endswith(fd.g.adjective_endings))
                or (before and word.endswith(fd.g.adjective_endings_before)))

    return [f for f in spans if not modifier(f)]


def _with_unlinked_runs(text: str, spans: list[dict], runs: list[tuple[int, int]]) -> list[dict]:
    """``spans`` and, as a span with no entity (``qid`` null, match ``title-run``), each of
    ``runs`` (runs of capitalized words, ``text.title_runs``, that hold a name of the topic:
    a food word) that no span covers or crosses: the name of a thing of the topic the graph
    does not hold, most often a dish the model made up (``Nube de Sakura Teriyaki``), which
    MakiEval's extraction lists and its matching leaves unlinked; not a festival or a
    place (``Chinese New Year``, ``Rio de Janeiro``), whose words name no food."""
    taken = [(s["start"], s["end"]) for s in spans]
    more: list[dict] = [{"start": a, "end": b, "text": text[a:b], "qid": None, "label": None, "match": "title-run",
                         "evidence": [], "granularity": None, "granularity_score": None, "country": []}
                        for a, b in runs if not any(s < b and a < e for s, e in taken)]
    return sorted(spans + more, key=lambda s: (s["start"], s["end"])) if more else spans


def _everyday_stem(g, fd: Finder) -> bool:
    """Whether the word guessed is an everyday word of the language with a particle or
    case ending on (코스가: 코스, course): a place named so elsewhere is that word."""
    f = fold(g.mention)
    every = fd.names.everyday(fd.g.lang)
    return any(f.endswith(s) and len(f) > len(s) and f[:-len(s)] in every for s in fd.g.suffixes)


def _without_trailing_marks(text: str, span: dict, marks: frozenset) -> dict:
    """``span`` without the vowel marks written after its last letter (Persian استانبولِ,
    the ezafe written as a kasra): grammar, outside the span as GOLD.md has it."""
    end = span["end"]
    while end > span["start"] + 1 and text[end - 1] in marks:
        end -= 1
    return span if end == span["end"] else {**span, "end": end, "text": text[span["start"]:end]}


def _invented_compound(text: str, start: int, found: list) -> bool:
    """Whether the name at ``start`` ends a hyphenated word whose first part names nothing
    (Mondschein-Enchiladas, Drachenperlen-Nudeln): a kind the writer made up, named by
    its own compound (a real one's first part is a name: Kokos-Milch); an invented name
    stays unlinked, also in part."""
    if start < 2 or text[start - 1] != "-" or not text[start - 2].isalpha():
        return False
    head = start - 1
    while head > 0 and (text[head - 1].isalpha() or text[head - 1] == "-"):
        head -= 1
    return not any(f.start <= head and f.end >= head + 1 and f.end <= start - 1 for f in found)


def _without_compounds(text: str, spans: list, suffixes: tuple[str, ...]) -> list:
    """``spans`` without the names of a compound noun that is no name itself: a name with
    a possessive suffix (Turkish -sı, -si) after another word is the head of a compound
    (mercimek çorbası, lentil soup; Türk kahvesi), which names another dish than its
    head, and its first word is no name of it either (GOLD.md: one span, null where the
    graph lacks the dish)."""
    drop: set = set()
    for i, f in enumerate(spans):
        rest = text[f.end:f.end + 4]
        tail = next((x for x in suffixes if fold(rest).startswith(x)), None)
        if tail is None or (len(rest) > len(tail) and rest[len(tail)].isalpha()):
            continue
        if f.start < 2 or text[f.start - 1] != " " or not text[f.start - 2].isalpha():
            continue
        drop.add(i)
        drop.update(j for j, e in enumerate(spans) if e.end == f.start - 1)
    return [f for i, f in enumerate(spans) if i not in drop]


FEW_CONSONANTS = 3  # an abjad spelling of this many consonants names a local place or a country


def _few_consonants(g, gram) -> bool:
    """Whether the guess is written in Arabic script with :data:`FEW_CONSONANTS`
    consonants or fewer (its romanized skeleton): so few consonants, any vowels between
    them, meet some place of the world by chance (Persian ساپورو, Sapporo, sbr: Siberia)."""
    return scripts.abjad(g.mention) and len(scripts.skeleton(scripts.romanize(g.mention, gram.lang))) <= FEW_CONSONANTS


def _local_or_country(r: dict | None, about: set) -> bool:
    """Whether ``r`` has no country (a food), is a country (named in any text) or lies in
    one the text is about."""
    r = r or {}
    c = r.get("country") or ()
    return not c or r.get("qid") in c or _local(r, about)


def _suffix_off(text: str, whole, part, g) -> bool:
    """Whether ``part`` is ``whole`` without a suffix of the language (a particle, a case
    ending: 홋카이도의 less 의). Asked where ``whole`` was matched a few letters off (the
    particle is those letters): the grammar stays outside the span, whatever the word
    without it was matched as on its own (a known word takes no fuzzy match). Matched by
    its very key, a word ending as a suffix does is the name (Persian بمبئی, Mumbai)."""
    return (part.start == whole.start and part.end < whole.end
            and g.suffixed(fold(text[part.end:whole.end])))


def _proclitic_article(text: str, whole, part, g) -> bool:
    """Whether ``part`` is ``whole`` without a proclitic of the language, and begins with
    its article (Arabic و + الكمون)."""
    if part.end != whole.end or part.start == whole.start or not g.article:
        return False
    return (fold(text[whole.start:part.start]) in g.prefixes
            and any(fold(text[part.start:part.end]).startswith(a) for a in g.article))


def _inside(ix, q: str, region: str) -> bool:
    """Whether ``q`` is located in ``region`` (P131), or located nowhere the graph says: a
    city named with the designator a region's name lacks (広島市 beside 広島, the
    prefecture) is the city the name means, where the mirror lost its P131 claim."""
    located = [o for pid, o in ix.edges.get(q, ()) if pid == "P131"]
    return region in located or (not located and q != region)


def _designated(text: str, start: int, end: int, g) -> bool:
    """Whether one of the language's designators stands beside the name (استان فارس,
    จังหวัดเลย, Antalya ili): the text calls it a place."""
    return g.designator(text, start, end) is not None


def _designator_kind(text: str, start: int, end: int, g) -> str | None:
    """``region`` or ``settlement``: what the designator beside the name calls it
    (``designator_kinds``: จังหวัดสงขลา, Songkhla Province; ตัวเมืองระยอง, the town of
    Rayong; Denizli iline, with its case ending), or None."""
    return dict(g.designator_kinds).get(g.designator(text, start, end)) if g.designator_kinds else None


def _namesake_of_kind(ix, eid: int, candidates: set, kind: str) -> int:
    """Among namesakes, the one of the designator's kind: for ``region`` the candidate
    another is located in (P131; or, where the mirror locates a place nowhere, the one
    with places in it: ``disambiguate.containers``), for ``settlement`` one that is not;
    ``eid`` when it is of that kind already, or none is."""
    cands = candidates | {eid}
    if len(cands) < 2:
        return eid
    regions = containers(cands, ix)
    if kind == "region" and eid not in regions and regions:
        return min(regions, key=lambda e: ix.qnums[e])
    if kind == "settlement" and eid in regions and cands - regions:
        return min(cands - regions, key=lambda e: ix.qnums[e])
    return eid


def _tied(ix, r: dict) -> set:
    """The entities the linker found as near as the one it took, by the same kind of match
    (namesakes a designator may tell apart)."""
    top = (r.get("candidates") or [{}])[0]
    out = set()
    for c in r.get("candidates") or ():
        if c.get("match") == r.get("match") and abs((c.get("score") or 0) - (top.get("score") or 0)) <= 0.001:
            e = ix.eid_of.get(c["qid"])
            if e is not None:
                out.add(e)
    return out


def _attribute(text: str, start: int, heads: tuple[str, ...]) -> bool:
    """Whether the name at ``start`` is written onto one of the language's nouns it then
    qualifies (Thai อาหารไทย, Thai food; คนไทย, a Thai): a demonym or an adjective, no span."""
    return any(text.endswith(h, 0, start) for h in heads)


def _coherent(r: dict | None, about: set, home: frozenset = frozenset()) -> bool:
    """A known word of the language taken across scripts names an entity of the countries
    the text is about (the prompt's, those of the entities it names) or of ``home`` (the
    language's own: :func:`_home`), or one with no country (a food): an everyday word that
    a region's name is made of (north, the market) names a place elsewhere. A text about
    no country known takes any."""
    c = (r or {}).get("country") or ()
    return not c or not about or bool(about.intersection(c)) or bool(home.intersection(c))


def _home(r: dict | None, g) -> frozenset:
    """The language's own countries (``home_countries``), for an answer that is no country:
    a known word naming a place there is that place in a text about any country (Thai
    กรุงเทพ, Bangkok, in one about Laos), but a known word naming the country itself is
    as often its adjective (ครอบครัวไทย, a Thai family)."""
    r = r or {}
    return frozenset() if r.get("qid") in (r.get("country") or ()) else g.home


def _foreign_affix(r: dict | None, g) -> bool:
    """An ``affix`` answer by a name of another language than the text's and its kin's:
    for a word the language knows, the affix stage takes the language's own name with
    its grammar or designator off or on; another language's name of the same letters is
    chance (Arabic الزيتون, the olives: زيتون, a Sindhi label of guava)."""
    r = r or {}
    used = (r.get("lang_used") or "").split("-", 1)[0]
    return r.get("match") == "affix" and used not in {g.lang, *g.kin}


def _kinds(g, known: int) -> tuple[str, ...]:
    """The kinds of cross-script match taken anywhere for a word of tier ``known``."""
    return (g.across, g.across_known, g.across_everyday)[known]


_FUZZY = "cross-script-fuzzy"
# a name spelled by ear (the consonants heard: Thai คย็องจู, Gyeongju): taken only for
# letters the segmenter's word list lacks, a foreign name it cut up (a word of the list,
# พระอาทิตย์, the sun, heard as Preah Vihear, is a word)
_HEARD = "cross-script-heard"
_LOOSE = (_FUZZY, _HEARD)
# a name in a script that writes its vowels, met by an abjad word's consonants and written
# vowels (Arabic طماطم, Amharic ቲማቲም timatim): for a word the language knows, only by more
# than FEW_CONSONANTS consonants (ملعقة, spoon, m l q, is heard as a mollusc's name)
_VOWELLED = "cross-script-vowelled"


def _local_kinds(g, known: int) -> tuple[str, ...]:
    """The kinds taken for a word of tier ``known`` naming a place of the text's countries."""
    return (g.across_local, g.across_known_local, g.across_everyday_local)[known]


def _local(r: dict | None, about: set) -> bool:
    """An answer of a looser kind (``across_local``) names one of the countries the text
    is about, or an entity located in one of them: among a few places, a romanization a
    few letters off the name is that place (Thai เวียดนาม wiatnam, Vietnam); among every
    place of the world, chance. Never for known words of the language joined (a phrase:
    เมืองหลวงเก่า, the old capital)."""
    r = r or {}
    return bool(about) and (r.get("qid") in about or bool(about.intersection(r.get("country") or ())))


def _heard_unplaced(r: dict | None, g: across.Guess) -> bool:
    """A name spelled by ear (``cross-script-heard``) that the linker found among the places
    the graph locates nowhere (a mirror loses claims: Provence), for letters the word list
    lacks: the linker took it only within two edits as heard, beside no place of the
    country so near."""
    r = r or {}
    return r.get("match") == _HEARD and g.foreign and not r.get("country")


def _taken_ok(r: dict | None, fd: Finder, ix, known: int = 0) -> bool:
    """A cross-script answer of a kind the language takes (for a known word of the
    language, of the stricter kinds it takes; for an everyday word, of the strictest),
    naming no generic entity."""
    kinds = _kinds(fd.g, known) + _local_kinds(fd.g, known)
    if r is None or r["match"] not in kinds:
        return False
    e = ix.eid_of.get(r["qid"])
    return e is not None and e not in fd.names.generic
