"""The ``reorder`` stage: a head noun and the foreign name that qualifies it, in a language
that writes the head first (``arroz jollof``, ``riso thai``, ``рис басмати``, ``salade
Olivier``), as English writes them, the qualifier first: ``jollof rice``, ``Thai rice``,
``basmati rice``, ``Olivier salad``. The head names an entity in the mention's language
(verbatim, normalized, or a case form of it: ``курицу``, ``курица``); the qualifier,
romanized, is put before each of that entity's English names, and an entity with the
name so made is the hit. The qualifier is taken as written, untranslated: a loan or a
proper name (``tandoori``, ``jollof``, ``thai``) reads the same in English; a word of the
language (``verde``) does not, and finds nothing.

The languages and topics are data: ``head_first`` in ``ontology/link-affixes.json`` (dishes
are so named; places are not: ``China Taipei`` is no head and qualifier).
"""
from __future__ import annotations

from kgcult.link import affixes, scripts
from kgcult.link.index.reader import LabelIndex
from kgcult.link.stages.base import Stage
from kgcult.link.stages.lexical import exact, normalized

ENGLISH = ("en",)


def head_first(lang: str, topic: str | None) -> bool:
    """Whether ``lang`` (its base language) writes a noun before the name that qualifies
    it, in names of ``topic``."""
    return affixes.head_first(lang, topic)


def heads(ix: LabelIndex, word: str, lang: str) -> list[int]:
    """The entities ``word`` names in ``lang``: verbatim, normalized, else as a case form of
    a name (``курицу`` -> ``курица``)."""
    found = exact(ix, word, lang) or normalized(ix, word, lang)
    if not found:
        for v in affixes.case_forms(word, lang):
            found = exact(ix, v, lang)
            if found:
                break
    return sorted(found)


def reordered(ix: LabelIndex, head_eids, qualifier: str, lang: str, valid=None) -> dict:
    """``{eid: (alias, "en", None)}``: the entities with an English name that is
    ``qualifier`` (romanized) before an English name of one of ``head_eids``, other than
    those; ``valid(eid)``: which count (a topic's)."""
    q = scripts.romanize(qualifier, lang)
    if not q or not head_eids:
        return {}
    out: dict = {}
    for _eid, _lg, name in ix.names_of(head_eids, ENGLISH):
        made = f"{q} {name}"
        for eid, v in (exact(ix, made, "en") or normalized(ix, made, "en")).items():
            if eid in head_eids or (valid is not None and not valid(eid)):
                continue
            cur = out.get(eid)
            if cur is None or v[0] < cur[0]:
                out[eid] = v
    return out


def search(ix: LabelIndex, mention: str, lang: str, topic: str | None, valid=None) -> dict:
    """The hits of a mention of two words, a head and its qualifier (none for another
    mention, language or topic)."""
    words = mention.split()
    if len(words) != 2 or not head_first(lang, topic):
        return {}
    head, qualifier = words
    return reordered(ix, heads(ix, head, lang), qualifier, lang, valid)


class Reorder(Stage):
    """A head noun and its foreign qualifier, looked up in English order."""
    name = "reorder"
    match = "reordered"
    base_score = 0.74

    def run(self, batch):
        ix = self.ctx.ix
        for s in batch:
            if s.topic is None or s.names_something():
                continue
            s.add_found(search(ix, s.text, s.lang, s.topic, self.ctx.valid(s.topic)), self)
