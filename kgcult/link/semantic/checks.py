"""Lexical checks on the semantic stage's hits (``semantic.stage.Semantic.run``).

Sentence vectors blur what a string spells exactly; two checks keep the stage from
linking where the spelling says otherwise:

* ``numbers_agree``: a name whose numbers share none of the mention's (each number with
  the letters glued to it, as the fuzzy stages read them: ``candidates.codes_of``) is no
  hit when both have numbers. ``e-451i`` is not ``E-451ii``, whatever the cosine says.
* ``spelling_only`` / ``anchored``: a mention in a language the encoder was not trained on
  (``semantic.LANGS``) is matched against the names in its own language too, not only
  against English names; the encoder's vectors of such strings reflect their spelling
  (shared sub-word pieces), not their meaning, so a hit among those names counts only
  when one of the two folded strings contains the other (``marsala-viini`` ~
  ``marsala``, ``savófehérje izolátum`` ~ ``tejsavófehérje izolátum``), never for a
  neighbour that merely starts alike (``mononatriumglutamaatti`` !~
  ``mononatriumsitraatti``). The cut-offs are the stage's own; no parameter is added.
* ``names_a_part``: in a script written without spaces (Chinese, Japanese, Thai), a name
  the mention holds with more letters around it names a part or a kind of what the
  mention names (``味噌汁`` miso soup holds ``味噌`` miso, ``虾饺`` ``虾``, ``カレーライス``
  ``カレー``): no hit, however near the vectors.
* ``same_word``: a hit for a one-word mention among its own language's names (not
  English) begins as the mention does (its first :data:`SAME_START` letters, two in a script without spaces):
  the encoder reads the two as one word in two forms (``шпинатом`` ~ ``шпинат огородный``,
  ``кабачков`` ~ ``кабачок``); a name of that language that starts otherwise is a spelling
  neighbour the vectors confuse (``ceviz`` ~ ``Kereviz``, ``мороженым`` ~ ``пирожное``,
  ``济州`` ~ ``济南市``).
"""
from __future__ import annotations

from kgcult.link import normalize, scripts
from kgcult.link.semantic import search as semantic
from kgcult.link.stages.lexical import codes_of


def _codes(text: str) -> set:
    return set(codes_of(normalize.fold(text)))


def numbers_agree(mention: str, name: str) -> bool:
    """False when both have numbers and share none."""
    m = _codes(mention)
    if not m:
        return True
    n = _codes(name)
    return not n or bool(m & n)


def number_filtered(mention: str, hits: list) -> list:
    """The semantic hits ``(cosine, eid, lang, name)`` whose names' numbers agree with the
    mention's (all of them when the mention has none)."""
    if not _codes(mention):
        return hits
    return [h for h in hits if numbers_agree(mention, h[3])]


def spelling_only(mention_lang: str, name_lang: str) -> bool:
    """Whether a hit among ``name_lang`` names for a mention in ``mention_lang`` compares
    spellings only: the mention's language is not one the encoder was trained on and the
    name is not English."""
    return normalize.base_lang(mention_lang) not in semantic.LANGS and name_lang != "en"


def anchored(mention: str, name: str) -> bool:
    """One folded string contains the other."""
    a, b = normalize.fold(mention), normalize.fold(name)
    return bool(a) and bool(b) and (a in b or b in a)


_UNSPACED = frozenset({"CJK", "HIRAGANA", "KATAKANA", "THAI", "LAO", "KHMER", "MYANMAR"})


def names_a_part(mention: str, name: str) -> bool:
    """Whether ``mention``, written in a script without spaces, holds ``name`` with more
    letters around it (folded)."""
    if not scripts.scripts_in(mention) & _UNSPACED:
        return False
    a, b = normalize.fold(mention), normalize.fold(name)
    return bool(b) and b in a and b != a


SAME_START = 4  # letters a hit among the mention's own language's names shares at its start


def same_word(mention: str, name: str, lang: str) -> bool:
    """Whether ``name`` begins with the one-word mention's first :data:`SAME_START`
    letters, both folded (in a script without spaces, both romanized as ``lang`` reads
    them: もちアイス and 餅アイス are both mochiaisu); a mention of several words always
    passes."""
    a, b = normalize.fold(mention), normalize.fold(name)
    if " " in a:
        return True  # a phrase: synonyms differ in a word (Pipe d'Ardenne, Saucisson d'Ardenne)
    if scripts.scripts_in(mention) & _UNSPACED:
        a, b = scripts.compact(scripts.romanize(a, lang)), scripts.compact(scripts.romanize(b, lang))
    return bool(a) and b.startswith(a[:SAME_START])
