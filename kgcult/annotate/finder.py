"""Where names are in a text: the words of a spaced script looked up as word sequences
(longest first, attached grammar stripped per ``grammar``), the runs of an unspaced script
searched with the dictionary's automaton; then the longest name wins and spans never
overlap (:func:`select`)."""
from __future__ import annotations

from dataclasses import dataclass

from kgcult.annotate.grammar import Grammar
from kgcult.annotate.names import MAX_WORDS, Names, capitalized, decode, stem_key
from kgcult.annotate.segment import segment
from kgcult.annotate.text import Word, _initial, fold, joined, katakana, unspaced, words
from kgcult.annotate.wordlists import lexicon_zipf
from kgcult.link.scripts import alphabetic, han_fold, script_of

# how a name was found, best first (the order breaks ties between spans of one length)
HOW = ("exact", "article", "stem", "suffix", "cognate", "compound")
# a cognate key names an entity only when that many other languages name it so
COGNATE_LANGS = 2
# a case form's base (the word less its ending) has at least this many letters
CASE_MIN_BASE = 3
# an everyday word of the language names an entity named so in this many languages
INTERNATIONAL_LANGS = 5
# a borrowed plural's singular has at least this many letters
LOAN_MIN_BASE = 4
# what may stand between the two parts of a compound: at most one word this short (de, d')
COMPOUND_GAP_WORD = 3
# a one-word name of an alphabet this short or shorter is taken from the names of the
# text's language, its kin and English only: a word of three or four letters meets a word
# of some other of the index's ~300 languages by chance (German Dim Sum, Croatian dim:
# smoke; Turkish kâse, a bowl, German Käse)
SHORT_FOREIGN = 4
# a character cut alone this common (Zipf) is a function word beside a one-character name
# (的, 了, 和: zh 7.8, 7.1, 6.9), not the rest of a word the segmenter's list lacks (昆 3.5)
FUNCTION_ZIPF = 6


@dataclass(frozen=True, slots=True)
class Found:
    """A name found at ``text[start:end]``: its entities' codes, how it was found, the
    folded key that matched, and how many words it spans."""
    start: int
    end: int
    codes: tuple[int, ...]
    how: str
    key: str
    nwords: int
    weak: bool = False  # an everyday word of the language met in a kin language's names only


class Finder:
    """Finds names of one dictionary in texts of one language."""

    def __init__(self, names: Names, grammar: Grammar, lang: str, coherent_common: bool = False,
                 modifiers: bool = False):
        self.names = names
        # the topic's names qualify other things as the first part of a word (北京故宫):
        # a head-final language's segmenter word then holds the name (``bounded: head``)
        self.modifiers = modifiers
        # the topic's names that are everyday words are weak (taken where the text is about
        # the entity's country): a place named by a common word (老街 Lào Cai, old street)
        self.coherent_common = coherent_common
        self.g = grammar
        self.lang = grammar.lang or lang
        self._stem = names.stem.get(self.lang)
        self._memo: dict[tuple, tuple | None] = {}
        self._heads: dict[tuple, bool] = {}
        own = {self.lang, *grammar.kin}
        self._lids = {i for i, lg in enumerate(names.langs) if lg.split("-", 1)[0] in own}
        # the commonness guard asks for a name in the text's language itself: a kin
        # language's name that is an everyday word here (Marathi यात्रा) is that word
        self._self_lids = {i for i, lg in enumerate(names.langs) if lg.split("-", 1)[0] == self.lang}
        self._every = names.everyday(self.lang)
        self._short_lids = self._lids | {i for i, lg in enumerate(names.langs) if lg.split("-", 1)[0] == "en"}

    # -- lookups -------------------------------------------------------------------------

    def lookup(self, parts: tuple[str, ...]) -> tuple | None:
        """(codes, how, key) of the folded words ``parts``, or None."""
        r = self._memo.get(parts, False)
        if r is not False:
            return r  # type: ignore[return-value]
        r = self._lookup(parts)
        if len(self._memo) < 100_000:
            self._memo[parts] = r
        return r

    def _lookup(self, parts: tuple[str, ...]):
        exact = self.names.exact
        key = " ".join(parts)
        hit = exact.get(key)
        if hit and not (len(parts) == 1 and self._foreign_common(key, hit)):
            return hit, "exact", key
        found = (hit, "exact", key) if hit else None
        for art in self.g.article:
            bare = tuple(w[len(art):] if w.startswith(art) and len(w) > len(art) + 1 else w for w in parts)
            for k in dict.fromkeys((" ".join((bare[0],) + parts[1:]), " ".join(bare))):
                hit = exact.get(k)
                if hit and not (len(parts) == 1 and self._foreign_word(key, hit)):
                    return hit, "article", k
        if self._stem is not None:
            sk = stem_key(parts, self.lang)
            hit = self._stem.get(sk) if sk else None
            # a common word that other languages name (pasto) only as the other number
            forms = self.names.forms[self.lang].get(sk, ()) if hit and sk else ()
            if hit and self._inflected(parts, forms, found is not None):
                # the entities of the names it is a form of (saucisses: saucisse, not sauce,
                # which the stemmer also cuts to sauc)
                return self._forms_entities(parts, forms, hit, found is not None), "stem", key
        if self.g.case_endings:
            hit = self._case(parts)
            if hit:
                return hit, "stem", key
        if self.g.loan_plurals or self.g.number:
            hit = self._loan_plural(parts)
            if hit:
                return hit, "stem", key
        if len(parts) == 1 and self.g.cognate:
            return self._cognate(parts[0]) or found
        return found

    def _foreign_common(self, key: str, codes: tuple[int, ...], words=None) -> bool:
        """Whether ``key``, a word of the text's language (an everyday one, or one of
        ``words``), is only other languages' name than the text's and its kin's (Bier:
        Dutch bier): a form of one of the language's own names is looked for first (Biere,
        the German alias), the foreign name taken only failing that."""
        return key in (self._every if words is None else words) and not any(decode(c)[1] in self._lids for c in codes)

    def _foreign_word(self, key: str, codes: tuple[int, ...]) -> bool:
        """:meth:`_foreign_common` of a word as written with its article, among the words
        the language knows, unless one entity is named so in :data:`INTERNATIONAL_LANGS`
        languages: the word of the language, met by chance (الزيتون, the olives: زيتون is
        a Sindhi label of guava)."""
        return self._foreign_common(key, codes, self.names.known(self.lang)) and not self._international(codes)

    def _loan_plural(self, parts: tuple[str, ...]) -> tuple[int, ...] | None:
        """The codes of a name, in any language, that the last word is a borrowed plural of
        (``loan_plurals``: Tacos, quesadillas, sushis, энчиладас: taco, quesadilla, sushi,
        энчилада), where the language has no name of its own for the dish; never an
        everyday word of the language, and the singular is at least :data:`LOAN_MIN_BASE`
        letters."""
        word = parts[-1]
        if word in self._every:
            return None
        singulars = [word[:-len(s)] for s in self.g.loan_plurals if word.endswith(s)]
        # the language's own plural of a borrowed singular (Italian lasagne: lasagna)
        singulars += [word[:len(word) - len(y)] + x for x, y in self.g.number if y and word.endswith(y)]
        for base in dict.fromkeys(singulars):
            if len(base) >= LOAN_MIN_BASE:
                hit = self.names.exact.get(" ".join(parts[:-1] + (base,)))
                if hit:
                    return hit
        return None

    def _case(self, parts: tuple[str, ...]) -> tuple[int, ...] | None:
        """The codes of a name of the text's own language that the words are a case form
        of, by the last word's ending (``case_endings``: its ending for the name's,
        баклажанов -> баклажан, чаем -> чай, том яма -> том ям; with a fleeting vowel put
        back: кабачков -> кабачок), where the stemmer cuts the name and its forms apart; the
        longest ending first; the name has three letters or more."""
        word = parts[-1]
        if word in self._every:
            return None
        for te, ne in self.g.case_endings:
            base = word[:len(word) - len(te)]
            if not word.endswith(te) or len(base) < 2 or (len(parts) == 1 and len(base) + len(ne) < CASE_MIN_BASE):
                continue
            forms = [base + ne]
            if not ne and len(base) >= CASE_MIN_BASE and not _vowel(base[-1]) and not _vowel(base[-2]):
                # a vowel the name has before its last consonant, lost in the case forms
                # (кабачок, кабачков; перец, перцем)
                forms += [base[:-1] + v + base[-1] for v in self.g.fleeting]
            for form in forms:
                codes = self.names.exact.get(" ".join(parts[:-1] + (form,)), ())
                own = tuple(c for c in codes if decode(c)[1] in self._self_lids)
                if own:
                    return own
        return None

    def _cognate(self, word: str):
        """(codes, "cognate", word) of a word that no name matched, by its cognate key
        (``grammar.cognate_key``): only a word that is no everyday word of the language
        (a function word meets a short foreign name), when the key is that of one common
        noun of the topic (its generic words aside; a proper name, spelled with a capital
        in every language, is a dish's name, no international word: Soba), which has no
        name in the text's language and is named so in at least
        :data:`COGNATE_LANGS` other languages (a word shared across the family)."""
        if word in self._every:
            return None
        ck = self.g.cognate_key(word)
        hit = self.names.cognate.get(ck) if ck else None
        if not hit:
            return None
        generic = self.names.generic
        codes = tuple(c for c in hit if not capitalized(c) and decode(c)[0] not in generic)
        eids = {decode(c)[0] for c in codes}
        if len(eids) != 1 or next(iter(eids)) in self.names.own.get(self.lang, ()):
            return None
        langs = {self.names.langs[decode(c)[1]].split("-", 1)[0] for c in codes} - {self.lang}
        if len(langs) < COGNATE_LANGS:
            return None
        return codes, "cognate", word

    def _inflected(self, parts: tuple[str, ...], forms: tuple[str, ...], number_only: bool = False) -> bool:
        """Whether the words are an inflected form of one of the names ``forms``: word by
        word, the name's word less at most its last two letters begins the text's word,
        which adds at most four (two to a word of four letters or fewer); an everyday word
        of the language (with ``number_only``, every word) only as the other number of the
        same noun."""
        every = self._every
        for form in forms:
            fw = form.split(" ")
            if len(fw) != len(parts):
                continue
            if all(_inflection_of(t, n, _Either(every, parts) if number_only else every, self.g.endings,
                                  self.g.number) for t, n in zip(parts, fw)):
                return True
        return False

    def _forms_entities(self, parts: tuple[str, ...], forms: tuple[str, ...], codes: tuple[int, ...],
                        number_only: bool = False) -> tuple[int, ...]:
        """``codes`` (a stem key's) less those of entities none of whose names under the key
        the words are an inflected form of (all of them when none is left)."""
        eids = {decode(c)[0] for f in forms if self._inflected(parts, (f,), number_only)
                for c in self.names.exact.get(f, ())}
        kept = tuple(c for c in codes if decode(c)[0] in eids)
        return kept or codes

    def _head(self, parts: tuple[str, ...]) -> bool:
        """Whether some longer name begins with ``parts``."""
        r = self._heads.get(parts)
        if r is None:
            r = self._head_uncached(parts)
            if len(self._heads) < 100_000:
                self._heads[parts] = r
        return r

    def _head_uncached(self, parts: tuple[str, ...]) -> bool:
        heads = self.names.heads
        if " ".join(parts) in heads:
            return True
        for art in self.g.article:
            bare = " ".join(w[len(art):] if w.startswith(art) and len(w) > len(art) + 1 else w for w in parts)
            if bare in heads:
                return True
        if self._stem is not None:
            sk = stem_key(parts, self.lang)
            return sk is not None and ("\x00" + sk) in heads
        return False

    # -- finding -------------------------------------------------------------------------

    def find(self, text: str) -> list[Found]:
        """Every name found in ``text`` (overlapping; :func:`select` picks the spans)."""
        ws = words(text)
        folds = [fold(w.text) for w in ws]
        out: list[Found] = []
        for i, w in enumerate(ws):
            if w.unspaced:
                out.extend(self._unspaced(w))
                continue
            if not folds[i]:
                continue
            for first, cut in self._firsts(w, folds[i]):
                self._from(text, ws, folds, i, first, cut, out)
        return out

    def _firsts(self, w: Word, f: str) -> list[tuple[str, int]]:
        """The first word as written, then without each proclitic it begins with
        (``cut``: the proclitic's length in the text)."""
        out = [(f, 0)]
        if f in self._every:
            return out  # an everyday word is no name with a proclitic
        for p in self.g.prefixes:
            if f.startswith(p) and len(f) - len(p) >= 2:
                cut = _cut_front(w.text, len(p))
                out.append((fold(w.text[cut:]), cut))
        return out

    def _from(self, text: str, ws: list[Word], folds: list[str], i: int, first: str, cut: int,
              out: list[Found]) -> None:
        g = self.g
        if first in g.before and i + 1 < len(ws):
            return  # a designator before a name is outside the span
        parts: tuple[str, ...] = ()
        for j in range(i, min(len(ws), i + MAX_WORDS)):
            if j > i:
                if ws[j].unspaced or not joined(text, ws[j - 1], ws[j]):
                    break
            word = first if j == i else folds[j]
            parts = parts + (word,)
            if not (j > i and word in g.after):
                hit = self.lookup(parts)
                if hit:
                    out.append(Found(ws[i].start + cut, ws[j].end, hit[0], hit[1], hit[2], len(parts)))
                elif g.suffixes and word not in self._every:
                    self._suffixed(ws[i].start + cut, ws[j], parts, out)
            if not self._head(parts):
                break

    def _suffixed(self, start: int, last: Word, parts: tuple[str, ...], out: list[Found]) -> None:
        """The last word without a particle or case ending (the longest that leaves a name)."""
        w = parts[-1]
        for s in self.g.suffixes:
            if w.endswith(s) and (len(w) - len(s) >= 3 or (len(w) > len(s) and _syllable(w[0]))) \
                    and (not self.g.suffix_after or self.g.takes(s, w[:-len(s)])):
                hit = self.lookup(parts[:-1] + (w[:-len(s)],))
                if hit:
                    end = last.end - _cut_back(last.text, len(s))
                    out.append(Found(start, end, hit[0], "suffix", hit[2], len(parts)))
                    return

    def _unspaced(self, w: Word) -> list[Found]:
        if not self.names.unspaced:
            return []
        out = []
        before = self.g.before
        run = han_fold(w.text)
        bounds: set[int] | None = None
        word_end: dict[int, int] = {}  # a letter's place -> the end of the segmenter's word it is in
        if self.g.segmenter and self.g.bounded:
            cuts = segment(w.text, self.g.segmenter, self.g.lang)  # as written: the word list's script
            bounds = {a for a, _ in cuts} | {b for _, b in cuts}
            if self.g.bounded == "head":
                word_end = {i: b for a, b in cuts for i in range(a, b)}
        starts = bounds if self.g.bounded is True else None
        for name, s, e in self.names.unspaced_in(run, starts):
            if word_end and bounds is not None:
                # a head-final language: a name may begin inside a word as that word's head,
                # its end (首都北京, the capital Beijing), never reach across its end (牛油果|酱:
                # 果酱 is no name there); it may end inside one as the word's first part only
                # in a topic whose names qualify other things (北京故宫, Beijing's palace; not
                # 玉米饼, a corn tortilla, no corn)
                if (word_end[s] != e) if s not in bounds else (
                        e not in bounds and (not self.modifiers or word_end[s] < e)):
                    continue
            elif bounds is not None and e not in bounds:
                continue  # a name inside a word of the segmenter
            if any(name.startswith(d) and len(name) > len(d) for d in before):
                continue  # a designator written onto a name stays outside it
            codes = self.names.unspaced[name]
            if e - s == 1 and len(run) > 1:
                if bounds is None or word_end:
                    continue  # one character inside a longer run: a piece of a word
                if self._cut_one_by_one(w.text, s, e, bounds):
                    continue
                # a word of one character, as the segmenter cut it (魚): by a label in the
                # text's language only, not by an abbreviation (黒, Heilongjiang's)
                codes = tuple(c for c in codes if not c & 1 and decode(c)[1] in self._lids)
                if not codes:
                    continue
            if katakana(name) and ((s > 0 and katakana(run[s - 1])) or (e < len(run) and katakana(run[e]))):
                continue  # a katakana name inside a longer katakana word
            out.append(Found(w.start + s, w.start + e, codes, "exact", name, 1))
        return out

    def _cut_one_by_one(self, run: str, s: int, e: int, bounds: set[int]) -> bool:
        """Whether the one-character word ``run[s:e]`` (of the run as written, the word
        list's script) has beside it another character
        the segmenter also cut alone, no function word (Zipf below :data:`FUNCTION_ZIPF`):
        a word the list lacks, cut letter by letter (昆|明, Kunming; 豚|骨, tonkotsu),
        not a name (明, the Ming; 骨, bone). 的|粥 (congee) stays a word."""
        for a, b in ((s - 1, s), (e, e + 1)):
            if 0 <= a and b <= len(run) and a in bounds and b in bounds and script_of(run[a]) == "CJK":
                zipf = lexicon_zipf(run[a], self.g.lang)
                if zipf is None or zipf < FUNCTION_ZIPF:
                    return True
        return False

    def compounds(self, text: str, found: list[Found]) -> list[Found]:
        """Two names side by side (at most one short word between: ``huile d'olive``,
        ``ensalada de patatas``) whose entities are the parts of one entity's name in some
        language (``olive oil``, ``potato salad``; ``names.compound``): a span of that
        entity over both, when one entity alone is so made."""
        comp = self.names.compound
        if not comp:
            return []
        by_start: dict[int, list[Found]] = {}
        for f in found:
            by_start.setdefault(f.start, []).append(f)
        starts = sorted(by_start)
        out = []
        for a in found:
            for b_start in starts:
                if b_start < a.end:
                    continue
                if b_start - a.end > COMPOUND_GAP_WORD + 2:
                    break
                if not _filler(text[a.end:b_start], self.g.conjunctions):
                    continue
                for b in by_start[b_start]:
                    hit: set = set()
                    for ea in {decode(c)[0] for c in a.codes}:
                        for eb in {decode(c)[0] for c in b.codes}:
                            hit.update(comp.get(f"{min(ea, eb)} {max(ea, eb)}", ()))
                    if hit and len({decode(c)[0] for c in hit}) == 1:
                        out.append(Found(a.start, b.end, tuple(sorted(hit)), "compound",
                                         fold(text[a.start:b.end]), a.nwords + b.nwords))
        return out

    # -- guards ------------------------------------------------------------------------

    def kept(self, text: str, f: Found) -> Found | None:
        """``f`` with the entities it may name here, or None: never a generic entity; a
        word written in lower case never names what is spelled with a capital (a
        common noun is no proper name); never an everyday word of the language met in
        another language's names."""
        # a word in lower case is no proper name: in the place topic (proper names), never;
        # elsewhere when it is an everyday word of the language
        lower = text[f.start].islower() and (self.coherent_common or f.key in self.names.common.get(self.lang, ()))
        generic = self.names.generic
        codes = tuple(c for c in f.codes if not (lower and capitalized(c)) and decode(c)[0] not in generic)
        if f.nwords == 1 and len(f.key) <= SHORT_FOREIGN and alphabetic(f.key):
            codes = tuple(c for c in codes if decode(c)[1] in self._short_lids)
        if not codes:
            return None
        if codes != f.codes:
            f = Found(f.start, f.end, codes, f.how, f.key, f.nwords)
        if f.how == "cognate" and self.g.nouns_capitalized and not text[f.start].isupper():
            return None  # a cognate in a language that capitalizes nouns is a noun
        if self.g.quantifiers and f.nwords == 1 and self._counted(text, f.start):
            return None  # a counter noun: 여러 가지 (several kinds), not 가지 (eggplant)
        if self.everyday(f) and not self._proper(text, f):
            return None
        if self.kin_only(f) or (self.coherent_common and f.nwords == 1
                                and f.key in self.names.common.get(self.lang, ())):
            f = Found(f.start, f.end, f.codes, f.how, f.key, f.nwords, True)
        return f

    def _counted(self, text: str, start: int) -> bool:
        """Whether the word before ``start`` is one of the language's quantifiers, which a
        counter noun follows (Korean 여러, 몇, 두: 여러 가지, several kinds)."""
        before = text[max(0, start - 16):start]
        if not before[-1:].isspace():
            return False
        ws = before.split()
        return bool(ws) and fold(ws[-1]) in self.g.quantifiers

    def _proper(self, text: str, f: Found) -> bool:
        """A capitalized word inside a sentence, in a cased language that capitalizes proper
        names only, naming what is spelled with a capital everywhere: a proper name, however
        frequent (a city's name in its country's language: Nevşehir)."""
        if self.g.nouns_capitalized or not text[f.start].isupper() or text[f.start:f.end].isupper():
            return False
        if _initial(text, Word(f.start, f.end, text[f.start:f.end], False)):
            return False
        return any(capitalized(c) for c in f.codes)

    def everyday(self, f: Found) -> bool:
        """A one-word name that is an everyday word of the text's language and that is
        no name in that language (a word of another language's label, met by chance)."""
        if f.nwords != 1 or f.key not in self.names.common.get(self.lang, ()):
            return False
        if len(f.key) <= 2 and f.key in self._every and not unspaced(f.key) and not _syllable(f.key[0]):
            return True  # a two-letter everyday word of an alphabet (a particle, a pronoun) is no name
        return not any(decode(c)[1] in self._lids for c in f.codes) and not self._international(f.codes)

    def _international(self, codes: tuple[int, ...]) -> bool:
        """Whether one entity is named so in at least :data:`INTERNATIONAL_LANGS` languages
        (pizza, kebab): a word the languages share, the same word in the text's language
        where the mirror lacks its label there."""
        by_eid: dict[int, set] = {}
        for c in codes:
            eid, lid, _cap, _alias = decode(c)
            by_eid.setdefault(eid, set()).add(self.names.langs[lid].split("-", 1)[0])
        return len(by_eid) == 1 and len(next(iter(by_eid.values()))) >= INTERNATIONAL_LANGS

    def kin_only(self, f: Found) -> bool:
        """An everyday word of the text's language that only a kin language's names have
        (Marathi यात्रा, a wrong label of Tours): it names that entity only where the
        text is about its country (:func:`annotator._coherent`)."""
        return (f.nwords == 1 and f.key in self.names.common.get(self.lang, ())
                and not any(decode(c)[1] in self._self_lids for c in f.codes))


def _vowel(ch: str) -> bool:
    return ch.lower() in "aeiouyаеёиоуыэюя"


def _filler(gap: str, conjunctions=frozenset()) -> bool:
    """Whether ``gap`` (between two names) is spaces, or one short word with spaces or an
    elision's apostrophe around it: what joins a compound's parts (de, d', al); not a
    conjunction of the language (y, and: two things)."""
    if not gap.strip():
        return bool(gap)
    ws = gap.replace("'", " ").replace("\u2019", " ").split()
    return (len(ws) == 1 and len(ws[0]) <= COMPOUND_GAP_WORD and ws[0].isalpha()
            and fold(ws[0]) not in conjunctions
            and gap[:1].isspace() and (gap[-1:].isspace() or gap[-1:] in "'\u2019"))


def _syllable(ch: str) -> bool:
    """A Hangul syllable: a one-letter name is a word there (밥)."""
    return "\uac00" <= ch <= "\ud7a3"


class _Either:
    """Words in either of two collections (``in`` only)."""

    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __contains__(self, word) -> bool:
        return word in self.a or word in self.b


def _inflection_of(t: str, n: str, everyday, endings: tuple[str, ...] = (), number: tuple = ()) -> bool:
    if t == n:
        return True
    if t in everyday:
        # an everyday word is a name's form only as the other number of one noun (the
        # language's ``number`` pairs: tea, the label Mint teas; birra, the alias Birre)
        return any(a.endswith(x) and b == a[:len(a) - len(x)] + y
                   for x, y in number for a, b in ((t, n), (n, t)))
    if endings:  # the language's nominal endings: the name, or the name less its last letter, and one
        return any(t == b + e for b in (n, n[:-1]) for e in endings)
    p = len(n) - 2 if len(n) > 4 else len(n) - 1
    if p < 3 or not t.startswith(n[:p]):
        return False
    return len(t) - len(n) <= (4 if len(n) > 4 else 2)


def _cut_front(word: str, n: int) -> int:
    """Characters of ``word`` whose fold is ``n`` characters long (marks dropped by the fold)."""
    for j in range(1, len(word) + 1):
        if len(fold(word[:j])) >= n:
            while j < len(word) and not fold(word[j]):
                j += 1
            return j
    return len(word)


def _cut_back(word: str, n: int) -> int:
    for j in range(1, len(word) + 1):
        if len(fold(word[-j:])) >= n:
            return j
    return len(word)


def select(found: list[Found]) -> list[Found]:
    """Non-overlapping spans: the longest first, then the better way of finding, then the
    leftmost; returned in text order."""
    rank = {h: i for i, h in enumerate(HOW)}
    order = sorted(found, key=lambda f: (-(f.end - f.start), rank[f.how], f.start, f.end))
    taken: list[Found] = []
    used: list[tuple[int, int]] = []
    for f in order:
        if any(f.start < e and s < f.end for s, e in used):
            continue
        taken.append(f)
        used.append((f.start, f.end))
    return sorted(taken, key=lambda f: (f.start, f.end))
