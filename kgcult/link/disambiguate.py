"""Ambiguity settled by the graph: which of several equally matching candidates a mention
means, decided deterministically, with the deciding evidence in the output.

Candidates that the ranking (``rank.py``: topic validity, stage, label before alias,
score) cannot tell apart are a *tie*. The criteria below are tried in order; the first
one that singles out a strict subset of the tie keeps that subset (and the next criteria
only look inside it):

1. ``specificity``: the shortest evidence path to a topic root (an item typed as food
   directly beats a taxon or a namesake reachable only through a long chain, or a dish's
   P527 ingredient, whose path is that claim plus the dish's path; a place known through
   a P131/P30 claim counts that one claim).
2. ``country``: the input row's ``country`` (the prompt's country) is among the
   candidate's countries: its origin / country / nationality (P495, P17, P27), those of
   the classes it is an instance or subclass or part of (a dish of a cuisine), or the
   places it is located in (P131 up to a country: an entity typed with one of the
   ``kgc:CountryClass`` classes of ``ontology/topics.ttl``, itself a country).
3. ``coherence``: the candidate shares a country or a parent class with an entity already
   resolved for another mention of the same group (the optional ``group`` field; MakiEval
   extraction rows are grouped by their response id).
4. ``popularity``: the most Wikipedia sitelinks; then whether the graph places it in a
   country at all (any of the paths of ``country``; a well-described item over a namesake
   the graph knows little about); then, for places, the most places located in it (P131
   claims pointing at it; a province over its namesake capital).
5. ``granularity``: an item before a class (an entity with instances or subclasses in the
   graph, MakiEval's "category"): a name that a category and one specific item share, with
   nothing above to tell them apart, is taken as the item's own name (the German
   ``Kuchen`` item over the class cake, whose German label it also is). Last, so real
   popularity (sitelinks) outranks it.

Then (``ties.settle_tie``) an ``rdfs:label`` beats a ``skos:altLabel`` (``label``). A tie
that survives all of them is reported ``ambiguous`` with the tied QIDs; the smaller QID
is kept so output is reproducible. No criterion has a parameter to tune.
"""
from __future__ import annotations

from collections import deque

from kgcult import ids
from kgcult.link import memo
from kgcult.link.topics import load_country_classes, load_settlement_classes
from kgcult.link.index.reader import LabelIndex

CRITERIA = ("specificity", "country", "coherence", "popularity", "granularity")
_MAX_UP = 6  # P131 hops followed up to a country


class GraphFacts:
    """The graph facts the criteria read and the linker reports (evidence path, granularity,
    countries), derived from the label index and cached per entity."""

    def __init__(self, ix: LabelIndex, country_classes=None):
        """``country_classes``: QIDs whose instances are countries of their own (default:
        the ``kgc:CountryClass`` resources of ``ontology/topics.ttl``)."""
        self.ix = ix
        self.country_classes = frozenset(
            load_country_classes() if country_classes is None else country_classes)
        self._topic_bits = {t.name: 1 << i for i, t in enumerate(ix.topics)}
        self._evidence = memo.Memo(memo.ENTITIES)   # (eid, topic) -> evidence path
        self._gran = memo.Memo(memo.ENTITIES)       # (eid, topic) -> granularity
        self._countries = memo.Memo(memo.ENTITIES)  # eid -> countries
        self._parents = memo.Memo(memo.ENTITIES)    # eid -> parents
        self._names = memo.Memo(memo.ENTITIES)  # (eid, lang) -> the entity's names
        self._settlement_classes: frozenset | None = None

    def settlement(self, eid: int) -> bool:
        """Whether the entity is typed (P31) with a ``kgc:SettlementClass`` of
        ``ontology/topics.ttl`` or a subclass of one (P279, a few steps up): a city, not
        the province named the same."""
        if self._settlement_classes is None:
            self._settlement_classes = load_settlement_classes()
        goal, edges = self._settlement_classes, self.ix.edges
        frontier = {o for pid, o in edges.get(self.ix.qids[eid], ()) if pid == "P31"}
        seen = set(frontier)
        for _ in range(_MAX_UP):
            if frontier & goal:
                return True
            frontier = {o for c in frontier for pid, o in edges.get(c, ()) if pid == "P279"} - seen
            seen |= frontier
            if not frontier:
                break
        return False

    def depth(self, eid: int, topic: str | None) -> int:
        if topic is None:
            return 0
        path = self.evidence(eid, topic)
        if not path:
            return 0
        return len(path)  # a via-property claim (P131/P30) counts as one step

    def countries(self, eid: int) -> frozenset:
        c = self._countries.get(eid)
        if c is None:
            c = self._countries.put(eid, frozenset(self._countries_uncached(eid)))
        return c

    def _countries_uncached(self, eid: int) -> set:
        ix = self.ix
        q = ix.qids[eid]
        out = set(ix.country.get(eid, ()))
        edges = ix.edges
        for pid, o in edges.get(q, ()):
            if pid == "P31" and o in self.country_classes:
                out.add(q)
            if pid in ("P31", "P279", "P361"):  # a dish of a cuisine, a variety of a product
                e = ix.eid_of.get(o)
                if e is not None:
                    out.update(ix.country.get(e, ()))
        node, seen = q, {q}
        for _ in range(_MAX_UP):  # P131 up to a country
            up = [o for pid, o in edges.get(node, ()) if pid == "P131" and o not in seen]
            if not up:
                break
            node = up[0]
            seen.add(node)
            if any(pid == "P31" and o in self.country_classes for pid, o in edges.get(node, ())):
                out.add(node)
                break
            e = ix.eid_of.get(node)
            if e is not None and ix.country.get(e):
                out.update(ix.country[e])
        return out

    def parents(self, eid: int) -> frozenset:
        p = self._parents.get(eid)
        if p is None:
            p = self._parents.put(eid, frozenset(
                o for pid, o in self.ix.edges.get(self.ix.qids[eid], ())
                if pid in ("P31", "P279", "P361", "P131")))
        return p

    def names(self, eid: int, lang: str) -> tuple[str, ...]:
        """The entity's names (labels and aliases) in ``lang`` (cached; for ties only)."""
        key = (eid, lang)
        v = self._names.get(key)
        if v is None:
            v = self._names.put(key, tuple(n for _e, _lg, n in self.ix.names_of([eid], {lang})))
        return v

    def contains(self, eid: int) -> int:
        """How many entities have a P131 claim pointing at this one."""
        return self.ix.inbound("P131").get(self.ix.qids[eid], 0)


    def evidence(self, eid: int, topic_name: str) -> list[list[str]]:
        """The shortest hierarchy path [s, p, o]... from the entity to a root of the topic
        (else one claim of the topic's via property, e.g. P131; else a claim of its inverse
        via property pointing at the entity, e.g. [dish, P527, entity], followed by that
        member's own path), or []."""
        key = (eid, topic_name)
        path = self._evidence.get(key)
        if path is None:
            topic = self.ix.topic(topic_name)
            start = self.ix.qids[eid]
            path = self._direct_path(start, topic)
            if not path and topic.via_inverse and start not in topic.roots:
                path = self._inverse_path(start, topic)
            self._evidence.put(key, path)
        return path

    def inverse_typed(self, eid: int, topic_name: str) -> bool:
        """Whether a member of the topic points at this entity (not a member by the roots or
        via claims) with one of the topic's inverse via properties (a dish's P527
        ingredient): then it is valid for a name match, with that claim as evidence. The
        pools of the loose stages do not hold it (they search the entities the roots type)."""
        key = (eid, topic_name)
        path = self._evidence.get(key)
        if path is None:
            topic = self.ix.topic(topic_name)
            path = self._inverse_path(self.ix.qids[eid], topic) if topic.via_inverse else []
            self._evidence.put(key, path)
        return bool(path)

    def _direct_path(self, start: str, topic) -> list[list[str]]:
        """The shortest path over the base edges to a root, else one via-property claim."""
        ix = self.ix
        roots = set(topic.roots)
        if start in roots:
            return []
        via = set(topic.via)
        prev: dict = {start: None}
        q = deque([start])
        found = None
        while q and found is None:
            node = q.popleft()
            for pid, nxt in ix.edges.get(node, ()):
                if pid in via or pid[0] == "^" or nxt in prev:
                    continue
                prev[nxt] = (node, pid)
                if nxt in roots:
                    found = nxt
                    break
                q.append(nxt)
        path: list = []
        if found is not None:
            node = found
            while prev[node] is not None:
                parent, pid = prev[node]
                path.append([parent, pid, node])
                node = parent
            path.reverse()
            return path
        for pid, nxt in ix.edges.get(start, ()):  # the topic's via property (P131, P30)
            if pid in via:
                return [[start, pid, nxt]]
        return []

    def _inverse_path(self, start: str, topic) -> list[list[str]]:
        """[member, P527, start] + the member's direct path, for the member (a subject of
        such a claim with a direct path: one step only) with the shortest path, then the
        smallest QID."""
        ix = self.ix
        best = None
        for pid, subj in ix.edges.get(start, ()):
            if pid[0] != "^" or pid[1:] not in topic.via_inverse:
                continue
            sub = self._direct_path(subj, topic)
            if not sub and subj not in topic.roots:
                continue
            cand = (len(sub), ids.sort_key(subj), [[subj, pid[1:], start]] + sub)
            if best is None or cand[:2] < best[:2]:
                best = cand
        return best[2] if best else []

    def granularity(self, eid: int, topic: str | None):
        """(name, score) of the entity's kind in the topic (MakiEval's granularity)."""
        key = (eid, topic)
        g = self._gran.get(key)
        if g is None:
            g = self._gran.put(key, self._granularity_uncached(eid, topic))
        return g

    def _granularity_uncached(self, eid: int, topic: str | None):
        ix = self.ix
        topics = [ix.topic(topic)] if topic else [
            t for t in ix.topics if ix.topic_bits[eid] & self._topic_bits[t.name]]
        is_class = eid in ix.is_class
        for t in topics:
            for k in t.kinds:
                if eid in ix.kind_members.get((t.name, k.order), ()):
                    name = k.category_name if is_class else k.item_name
                    score = k.score if k.score is not None else (0 if is_class else 1)
                    return name, score
        if not topics:
            return None, None
        return ("category", 0) if is_class else ("item", 1)

    def shown_countries(self, eid: int) -> list[str]:
        """The countries the output reports: the entity's own origin/country claims, or
        itself when it is a country."""
        c = self.ix.country.get(eid)
        if c:
            return list(c)
        q = self.ix.qids[eid]
        for pid, o in self.ix.edges.get(q, ()):
            if pid == "P31" and o in self.country_classes:
                return [q]
        return []


def settle(tied: list[int], facts: GraphFacts, *, topic: str | None, country: str | None,
           context: list[int]) -> tuple[list[int], list[dict]]:
    """Narrow ``tied`` (eids, in ranking order) by the criteria in order. Returns (the
    remaining eids, in the same order; the evidence: one ``{"by": criterion, "values":
    {QID: value}}`` per criterion that narrowed the tie)."""
    ix = facts.ix
    ctx_countries: set = set()
    ctx_parents: set = set()
    for e in context:
        ctx_countries |= facts.countries(e)
        ctx_parents |= facts.parents(e)
    keys = {
        "specificity": lambda e: -facts.depth(e, topic),
        "country": (lambda e: int(country in facts.countries(e))) if country else None,
        "coherence": (lambda e: len(facts.countries(e) & ctx_countries)
                      + len(facts.parents(e) & ctx_parents)) if context else None,
        "popularity": lambda e: (ix.sitelinks[e], int(bool(facts.countries(e))),
                                 facts.contains(e)),
        "granularity": lambda e: int(e not in ix.is_class),
    }
    steps: list[dict] = []
    for name in CRITERIA:
        key = keys[name]
        if key is None or len(tied) < 2:
            continue
        vals = {e: key(e) for e in tied}
        best = max(vals.values())
        keep = [e for e in tied if vals[e] == best]
        if len(keep) < len(tied):
            steps.append({"by": name, "values": {ix.qids[e]: _shown(name, v) for e, v in vals.items()}})
            tied = keep
    return tied, steps


def _shown(name: str, v):
    if name == "specificity":
        return -v  # path length
    if name == "popularity":
        return {"sitelinks": v[0], "country_known": v[1], "contains": v[2]}
    return v


def containers(eids, ix: LabelIndex) -> set[int]:
    """The candidates another candidate is located in (P131): a name that a place and the
    region around it share names the place (a city before its prefecture)."""
    qids = {ix.qids[e]: e for e in eids}
    out = set()
    inbound = ix.inbound("P131")
    for q in qids:
        located = [o for pid, o in ix.edges.get(q, ()) if pid == "P131"]
        for o in located:
            if o in qids and o != q:
                out.add(qids[o])
        if not located and qids[q] not in ix.is_class:
            # a place located nowhere the graph says (a mirror loses claims) beside a
            # region with places in it: the region is the one that shares its name
            out.update(e for r, e in qids.items() if r != q and inbound.get(r) and _placed(ix, r))
    return out


def _placed(ix: LabelIndex, q: str) -> bool:
    """Whether ``q`` is itself located somewhere (P131): a region of a country, not a country."""
    return any(pid == "P131" for pid, _o in ix.edges.get(q, ()))
