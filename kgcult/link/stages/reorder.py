"""The ``reorder`` stage: a head noun and what qualifies it, in a language that writes the
head first, looked up as English writes the name, the qualifier first:

* a foreign name qualifying the head, taken as written (romanized): ``arroz jollof`` ->
  jollof rice, ``riso thai`` -> Thai rice, ``рис басмати`` -> basmati rice, ``salade
  Olivier`` -> Olivier salad;
* the name of an entity qualifying it, after a linking word of the language or none,
  put into English by that entity's English names: ``salsa de tomate`` -> tomato sauce,
  ``pollo al burro`` -> butter chicken, ``торт Шварцвальд`` -> Black Forest cake;
* in a language that writes a compound's qualifier right before its head, with no
  space (``head_last``: ja ko zh, and the compounding languages, de nl sv fi ...), the
  two parts of a word the same way, in the order written: ``味噌汁`` (miso, soup) -> miso
  soup, ``Pitabrot`` -> pita bread.

The head names an entity in the mention's language (verbatim, normalized, or a case form
of a name: ``курицу``, ``курица``); each of its English names, then the head noun (the
last word) of those of several words, is put after each English rendering of the
qualifier (``fagioli neri``: Common beans, beans -> black beans), and an entity of the topic, other than the head, with the
name so made (exact, then normalized) is the hit. Nothing is translated but through the
graph's own names, and a closed class of adjectives of colour and taste the data gives
English words for (``qualifier_words``: ``curry verde`` -> green curry); another word of
the language that names nothing (``casero``) makes no English name.

The languages, their linking words and the topics are data: ``head_first`` and
``head_last`` in ``ontology/link-affixes.json`` (dishes are so named; places are not:
``China Taipei`` is no head and qualifier).
"""
from __future__ import annotations

import weakref

from kgcult.link import affixes, memo, scripts
from kgcult.link.index.reader import LabelIndex
from kgcult.link.stages.base import Stage
from kgcult.link.stages.lexical import exact, normalized

ENGLISH = ("en",)
MAX_QUALIFIER = 2  # words
MIN_LETTERS = 3  # in an English name composed
MIN_PART = 3  # letters of each part of a compound cut in two, but in the scripts below
_SYLLABLES = frozenset({"CJK", "HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA", "HANGUL"})  # a letter is a syllable
# per index (not keeping it open): bounded memos of English names and renderings
_MEMOS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def named(ix: LabelIndex, word: str, lang: str) -> list[int]:
    """The entities ``word`` names in ``lang``: verbatim, normalized, else without the
    language's article written onto it (``الطماطم`` -> ``طماطم``; not without a proclitic:
    ``والطماطم`` is "and tomatoes", no qualifier) or as a case form of a name (``курицу`` ->
    ``курица``)."""
    found = exact(ix, word, lang) or normalized(ix, word, lang)
    if not found:
        bare = [word[len(a):] for a in affixes.grammar(lang).article if word.startswith(a) and len(word) > len(a) + 1]
        for v in bare + affixes.case_forms(word, lang):
            found = exact(ix, v, lang)
            if found:
                break
    return sorted(found)


def split(mention: str, lang: str) -> tuple[str, str, bool] | None:
    """(head, qualifier, whether a linking word stands between them) of a mention of a
    one-word head, maybe a linking word of the language (``de``, ``al``, ``d'``), and a
    qualifier of one or two words; None for another mention."""
    head, _, tail = mention.strip().partition(" ")
    q = qualifier(tail, lang)
    return None if q is None else (head, *q)


def qualifier(tail: str, lang: str) -> tuple[str, bool] | None:
    """(the qualifier, whether a linking word stood before it) of what follows a head:
    one or two words, after a linking word of the language or none; None for more."""
    rest = tail.split()
    linked = False
    for link in affixes.linking_words(lang):  # longest first
        if link.endswith("'"):  # elided onto the qualifier: d'oignon, à l'ail
            joined = " ".join(rest).replace("\u2019", "'")
            if joined.startswith(link) and len(joined) > len(link):
                rest, linked = joined[len(link):].split(), True
                break
        elif rest[:len(link.split())] == link.split() and len(rest) > len(link.split()):
            rest, linked = rest[len(link.split()):], True
            break
    if not 1 <= len(rest) <= MAX_QUALIFIER:
        return None
    return " ".join(rest), linked


def renderings(ix: LabelIndex, qualifier: str, lang: str) -> list[str]:
    """The qualifier in English: as written, romanized (a loan or a foreign name; not in a
    script without short vowels), then the English names of the entities it names in
    ``lang``, then its English word when it is an adjective of colour or taste
    (``qualifier_words``); remembered per index."""
    m = _memo(ix, "renderings")
    key = (qualifier, lang)
    got = m.get(key)
    if got is None:
        out = []
        if not scripts.abjad(qualifier):
            q = scripts.romanize(qualifier, lang)
            if sum(c.isalpha() for c in q) >= MIN_LETTERS:
                out.append(q)
        eids = named(ix, qualifier, lang)
        if eids:
            out += english_names(ix, eids)
        word = affixes.qualifier_word(qualifier, lang)  # a colour or taste: verde, green
        if word:
            out.append(word)
        got = m.put(key, list(dict.fromkeys(out)))
    return got


def _memo(ix: LabelIndex, kind: str) -> memo.Memo:
    """The bounded memo ``kind`` of ``ix``."""
    per = _MEMOS.get(ix)
    if per is None:
        per = _MEMOS[ix] = {}
    got = per.get(kind)
    if got is None:
        got = per[kind] = memo.Memo(memo.MENTIONS)
    return got


def english_names(ix: LabelIndex, eids) -> list[str]:
    """The English names of ``eids`` that are words: three letters or more (not a flag's
    emoji, 🇩🇿, nor a code, dz); remembered per index."""
    m = _memo(ix, "english")
    key = tuple(sorted(eids))
    got = m.get(key)
    if got is None:
        got = m.put(key, [n for _e, _lg, n in ix.names_of(key, ENGLISH)
                          if sum(c.isalpha() for c in n) >= MIN_LETTERS])
    return got


def reordered(ix: LabelIndex, head_eids, qualifier: str, lang: str, valid=None, begins=None,
              maybe=None) -> dict:
    """``{eid: (alias, "en", None)}``: the entities with an English name that is an
    English rendering of ``qualifier`` (:func:`renderings`) before an English name of one
    of ``head_eids``, other than those; ``valid(eid)``: which count (a topic's). Two cheap
    tests skip lookups that cannot succeed (the annotator's dictionary answers them):
    ``begins(rendering)``, whether some name begins so; ``maybe(name made)``, whether it
    may be a name (in some number)."""
    if not head_eids:
        return {}
    qs = [q for q in renderings(ix, qualifier, lang) if begins is None or begins(q)]
    if not qs:
        return {}
    out: dict = {}
    heads = english_names(ix, head_eids)
    # then the head noun of a name of several words, its last (Common beans: beans, so
    # fagioli neri is black beans)
    heads = list(dict.fromkeys(heads + [n.rsplit(" ", 1)[1] for n in heads
                                        if " " in n and sum(c.isalpha() for c in n.rsplit(" ", 1)[1]) >= MIN_LETTERS]))
    for q in qs:
        for name in heads:
            made = f"{q} {name}"
            if maybe is not None and not maybe(made):
                continue
            for eid, v in (exact(ix, made, "en") or normalized(ix, made, "en")).items():
                if eid in head_eids or (valid is not None and not valid(eid)):
                    continue
                cur = out.get(eid)
                if cur is None or v[0] < cur[0]:
                    out[eid] = v
    return out


def search(ix: LabelIndex, mention: str, lang: str, topic: str | None, valid=None) -> dict:
    """The hits of a mention that is a head and its qualifier (none for another mention,
    language or topic): in a head-first language, split by :func:`split`; in a head-last
    one, a word cut in two, the shortest qualifier first (``味噌|汁``)."""
    if affixes.head_first(lang, topic):
        parts = split(mention, lang)
        if parts is None:
            return {}
        head, qualifier, _linked = parts
        return reordered(ix, named(ix, head, lang), qualifier, lang, valid)
    if affixes.head_last(lang, topic) and " " not in mention.strip():
        word = mention.strip()
        least = 1 if scripts.scripts_in(word) <= _SYLLABLES else MIN_PART  # 蛋|挞; Pita|brot
        for k in range(least, len(word) - least + 1):
            heads = named(ix, word[k:], lang)
            hits = reordered(ix, heads, word[:k], lang, valid) if heads else {}
            if hits:
                return hits
    return {}


class Reorder(Stage):
    """A head noun and its qualifier, looked up in English order."""
    name = "reorder"
    match = "reordered"
    base_score = 0.74

    def run(self, batch):
        ix = self.ctx.ix
        for s in batch:
            if s.topic is None or s.names_something():
                continue
            s.add_found(search(ix, s.text, s.lang, s.topic, self.ctx.valid(s.topic)), self)
