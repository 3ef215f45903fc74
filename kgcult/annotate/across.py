"""Names across scripts: the words of a text that no name of the dictionary matched, in the
languages whose grammar says ``across`` (names in a script the graph often lacks labels
in), sent to the linker's cross-script stages (``affix``, ``xscript``, ``xfuzzy`` of
``kgcult.link``: romanized keys against the topic's Latin names) when the installed linker
has them. Each word is tried as written, without a suffix or a proclitic of the language
(the span then leaves it outside), and as its stem (the span keeps the inflection); two
adjacent words before one. Everyday words of the language are never tried."""
from __future__ import annotations

from dataclasses import dataclass

from kgcult.annotate.finder import _cut_front
from kgcult.annotate.grammar import Grammar, grammar, languages
from kgcult.annotate.names import Names, stem_key
from kgcult.annotate.segment import listed, segment
from kgcult.annotate.wordlists import lexicon_zipf
from kgcult.annotate.text import fold, joined, katakana, unspaced, words
from kgcult import extras
from kgcult.link import Linker, pipeline
from kgcult.link.thai import corpus as thai_corpus

STAGES = ("gazetteer", "affix", "xscript", "xvowel", "stem", "compound", "reorder", "anyfuzzy", "xfuzzy", "xheard")
FEATURE = "kgcult annotate's Thai stopwords"
MIN_CHARS = 3
MEMO = 50_000


@dataclass(frozen=True, slots=True)
class Guess:
    start: int
    end: int
    mention: str
    known: int = 0  # 1 a known word of the language, 2 an everyday one: stricter matches only
    phrase: bool = False  # words of the segmenter joined, each a known word: a phrase of the language
    covers: bool = False  # pieces joined over a name found there: taken only by the same romanized key
    foreign: bool = False  # holds letters the segmenter's word list lacks (a name it cut up: คย็|อง|จู)


# the stage that makes each kind of match the grammar file lists
MATCH_STAGE = {"gazetteer": "gazetteer", "stem": "stem", "any-language-fuzzy": "anyfuzzy", "affix": "affix",
               "cross-script": "xscript", "cross-script-vowelled": "xvowel", "cross-script-fuzzy": "xfuzzy",
               "cross-script-heard": "xheard", "reordered": "reorder",
               "compound": "compound"}


def stages() -> tuple[str, ...]:
    """The cross-script stages the installed linker has and the grammar file takes a match
    of, in some language (none: no guesses are made)."""
    used = {MATCH_STAGE.get(m) for lg in languages()
            for m in grammar(lg).across + grammar(lg).across_known + grammar(lg).across_everyday
            + grammar(lg).across_local + grammar(lg).across_known_local
            + grammar(lg).across_everyday_local}
    return tuple(s for s in STAGES if s in pipeline.STAGES and s in used)


def guesses(text: str, g: Grammar, names: Names, taken: list[tuple[int, int]],
            lookup=None) -> list[list[Guess]]:
    """Per place in the text not taken by a span, the mentions to try there, best first;
    in an unspaced script, pieces joined over a span found there too (麻婆豆腐 over 豆腐:
    a longer name the romanized key may find). ``lookup(folded words)``: whether they are
    a name of the dictionary (a name with an ending it takes no grammar before is
    another word, an adjective: تایلندی, Thai; it is not guessed)."""
    every = names.known(g.lang) or names.everyday(g.lang)
    everyday = names.everyday(g.lang)

    def level(k: str) -> int:
        if k in everyday:  # a loanword in katakana (ラーメン, ramen) is a known word, no everyday one
            return 1 if g.katakana_loans and katakana(k) else 2
        return 1 if k in every else 0

    def free(a: int, b: int) -> bool:
        return not any(a < e and s < b for s, e in taken)

    def over(a: int, b: int) -> bool:  # spans there, each inside [a, b) and shorter
        hit = [(s, e) for s, e in taken if a < e and s < b]
        return bool(hit) and all(a <= s and e <= b and (s, e) != (a, b) for s, e in hit)

    strict = bool(g.across_known or g.across_everyday)  # known words go too, for stricter matches
    naming = bool(g.naming) and any(d in fold(text) for d in g.naming)  # a naming designator in the text
    stop = _stopwords(g.segmenter) | g.before | g.after
    every_word = words(text)
    index_of = {x.start: j for j, x in enumerate(every_word)}
    ws = [w for w in every_word if w.unspaced or free(w.start, w.end)]
    folds = [fold(w.text) for w in ws]
    # the words that begin as a naming designator does (a name may stand beside them)
    beside = ({j + k for j, f in enumerate(folds) if f.startswith(tuple(g.naming)) for k in (-1, 1, 2)}
              if naming else set())
    out: list[list[Guess]] = []
    for i, w in enumerate(ws):
        if w.unspaced and g.segmenter and g.join_pieces > 1:
            out.extend(_joined(w, g, every, level, strict, stop, free, over, naming, everyday,
                                   names.dictionary(g.lang)))
            continue
        if w.unspaced:
            cuts = _words(w.text, g) if g.segmenter else _runs(w.text)
            for a, b in cuts:
                k = fold(w.text[a:b])
                if free(w.start + a, w.start + b) and (strict or k not in every) and k not in stop:
                    # a short word in hiragana, no function word, goes by the strictest kinds
                    # only: as its name in katakana (ねぎ, ネギ), never by a romanized key
                    tier = 2 if b - a < g.min_kana and _hiragana(k) else level(k)
                    out.append([Guess(w.start + a, w.start + b, w.text[a:b], tier)])
            continue
        f = folds[i]
        if f in stop or len(w.text) < (2 if _hangul(w.text) else MIN_CHARS):
            continue
        if w.start > 1 and text[w.start - 1] in _CLOSING and not text[w.start - 2].isspace():
            continue  # written onto a quotation's end: its grammar ('지붕 없는 박물관'이라: 이라, "as")
        # beside a designator only names stand by (استان گلستان): a name, whatever the word
        named = i in beside and g.designator(text, w.start, w.end) in g.naming
        # one coordinated with it (استان‌های گیلان و مازندران: Gilan and Mazandaran) is
        # likelier a name: an everyday word there is tried as a known one (the kinds
        # ``across_known`` and ``across_known_local`` say)
        paired = naming and not named and _coordinated(text, index_of[w.start], every_word, g)
        if f in every and not strict and not named:
            continue
        if lookup is not None and _adjective(f, g, lookup):
            continue
        if _predicate(f, g, every):
            continue
        lv = _unknown if named else (lambda k: min(level(k), 1)) if paired else level
        tries: list[Guess] = []
        if i + 1 < len(ws) and joined(text, w, ws[i + 1]) and fold(ws[i + 1].text) not in every:
            nxt = ws[i + 1]
            tries.append(Guess(w.start, nxt.end, text[w.start:nxt.end], lv(f)))
        tries.append(Guess(w.start, w.end, w.text, lv(f)))
        for s in g.suffixes:
            if f.endswith(s) and len(f) - len(s) >= 2 and g.takes(s, f[:-len(s)]):
                tries.append(Guess(w.start, w.end - len(s), w.text[:-len(s)], max(lv(f), lv(f[:-len(s)]))))
        for p in g.prefixes:
            if f.startswith(p) and len(f) - len(p) >= MIN_CHARS:
                cut = _cut_front(w.text, len(p))
                rest = fold(w.text[cut:])
                if rest in every and not strict:
                    break
                tries.append(Guess(w.start + cut, w.end, w.text[cut:], max(lv(f), lv(rest))))
        if g.stem:
            sk = stem_key((f,), g.lang)
            if sk and sk != f and len(sk) >= MIN_CHARS and w.text.lower().startswith(sk):
                tries.append(Guess(w.start, w.end, w.text[:len(sk)], lv(f)))
        out.append(tries)
    return out


def _joined(w, g: Grammar, every, level, strict: bool, stop, free, over, naming: bool = False,
            every_day=frozenset(), dictionary=frozenset()) -> list[list[Guess]]:
    """The segmenter's words of an unspaced run and up to ``g.join_pieces`` adjacent ones
    joined (up to ``g.join_foreign`` where they hold letters the word list lacks), longest
    first: a foreign name the word list lacks is cut into the words and letters it happens
    to contain (ปูซาน: ปู, ซาน); never with a one-letter everyday word
    of the language (``every_day``) at either end, a grammatical word (有 have, 和 and)."""
    cuts = segment(w.text, g.segmenter or "", g.lang)
    # the letters the segmenter cut off a word its list lacks (บ|อร์|โดซ์, Bordeaux)
    bits = [not listed(w.text[x:y], g.segmenter or "", g.lang) for x, y in cuts]
    out = []
    for i in range(len(cuts)):
        tries = []
        for n in range(min(max(g.join_pieces, g.join_foreign), len(cuts) - i), 0, -1):
            if n > g.join_pieces and not any(bits[i:i + n]):
                continue  # more pieces than join_pieces: only a name the list lacks (เบ|รอ|ตา|ญ)
            a, b = cuts[i][0], cuts[i + n - 1][1]
            parts = [w.text[x:y] for x, y in cuts[i:i + n]]
            if (i > 0 and bits[i - 1] and bits[i]) or (i + n < len(cuts) and bits[i + n] and bits[i + n - 1]):
                continue  # a piece of a longer unknown word, cut from the letters beside it (บอร์)
            # a designator is no piece of a name (its folded form: Thai อำ folds to ํา)
            if b - a < 2 or any(p in stop or fold(p) in stop or fold(p) in g.before for p in parts):
                continue
            if n > 1 and any(len(p) == 1 and fold(p) in every_day for p in (parts[0], parts[-1])):
                continue  # a grammatical word at either end (有米饭, 和红烧肉): no name's piece
            covers = over(w.start + a, w.start + b)
            if not covers and not free(w.start + a, w.start + b):
                continue
            k = fold(w.text[a:b])
            if naming and any(fold(w.text[:a]).endswith(d) for d in g.naming):  # จังหวัด|...: a name
                tries.append(Guess(w.start + a, w.start + b, w.text[a:b], 0, False, covers))
                continue
            if k in every and not strict:
                continue
            # known words of the language joined, or a word of its dictionary (joined or
            # alone): words of the language (เมืองหลวง|เก่า, the old capital), never a
            # name a few letters off (เมืองหลวง is no Mueang Suang)
            phrase = (all(level(fold(p)) or fold(p) in dictionary for p in parts)
                      and (n > 1 or fold(parts[0]) in dictionary))
            tries.append(Guess(w.start + a, w.start + b, w.text[a:b], level(k), phrase, covers, any(bits[i:i + n])))
        if tries:
            out.append(tries)
    return out


def _coordinated(text: str, k: int, every_word: list, g: Grammar) -> bool:
    """Whether the text's word ``k`` follows a conjunction of the language
    (``conjunctions``) after a word a naming designator stands beside: the designator,
    often plural (استان‌های, the provinces of), names both (استان‌های گیلان و مازندران)."""
    if k < 2 or fold(every_word[k - 1].text) not in g.conjunctions:
        return False
    prev = every_word[k - 2]
    return g.designator(text, prev.start, prev.end) in g.naming


def _unknown(k: str) -> int:
    return 0


def _adjective(f: str, g: Grammar, lookup) -> bool:
    """Whether the folded word is a name of the dictionary with an ending the name takes
    as no grammar (``suffix_after``: Persian تایلندی, Thai, an adjective)."""
    return bool(g.suffix_after) and any(f.endswith(s) and not g.takes(s, f[:-len(s)]) and lookup((f[:-len(s)],))
                                        for s in g.suffixes)


def _predicate(f: str, g: Grammar, known) -> bool:
    """Whether the folded word is a known word of the language with one of its
    ``predicate_endings`` on: a verb or adjective made of that noun (Korean 방문한,
    visited: 방문, a visit, and 한), no name."""
    return any(f.endswith(e) and len(f) > len(e) and f[:-len(e)] in known for e in g.predicate_endings)


def _hangul(s: str) -> bool:
    return any("\uac00" <= c <= "\ud7a3" for c in s)


def _words(run: str, g: Grammar) -> list[tuple[int, int]]:
    """The segmenter's words of an unspaced run that may be names: two letters or more,
    no designator, no stopword of the segmenter's language; one in hiragana shorter than
    ``min_kana`` only when it is no function word (Zipf below :data:`KANA_FUNCTION_ZIPF`:
    ねぎ, たこ, not ます, まで)."""
    stop = _stopwords(g.segmenter)
    return [(a, b) for a, b in segment(run, g.segmenter or "", g.lang) if b - a >= 2
            and fold(run[a:b]) not in g.before and run[a:b] not in stop
            and (b - a >= g.min_kana or not _hiragana(run[a:b]) or _content_kana(run[a:b], g))]


_CLOSING = frozenset("'\u2019\"\u201d\u00bb\u300d\u300f)")  # marks that close a quotation or an aside
KANA_FUNCTION_ZIPF = 5.0  # a short hiragana word this common is grammar (ます 6.7, また 5.9); ねぎ 3.5


def _content_kana(word: str, g: Grammar) -> bool:
    zipf = lexicon_zipf(word, g.lang) if g.segmenter == "lexicon" else None
    return zipf is not None and zipf < KANA_FUNCTION_ZIPF


def _hiragana(s: str) -> bool:
    return all("\u3041" <= c <= "\u309f" for c in s)


_STOP: dict = {}


def _stopwords(segmenter: str | None) -> frozenset:
    if segmenter not in _STOP:
        words_: frozenset = frozenset()
        if segmenter == "thai":
            extras.require_present("pythainlp", "annotate", FEATURE)
            words_ = thai_corpus("stopwords_th.txt")
        _STOP[segmenter] = words_
    return _STOP[segmenter]


def _runs(run: str) -> list[tuple[int, int]]:
    """Katakana words and Han words (two to four characters) inside an unspaced run."""
    out = []
    i = 0
    while i < len(run):
        j = i
        if katakana(run[i]):
            while j < len(run) and katakana(run[j]):
                j += 1
            if j - i >= 2:
                out.append((i, j))
        elif unspaced(run[i]) and "\u3400" <= run[i] <= "\u9fff":
            while j < len(run) and "\u3400" <= run[j] <= "\u9fff":
                j += 1
            if 2 <= j - i <= 4:
                out.append((i, j))
        j = max(j, i + 1)
        i = j
    return out


class Across:
    """The linker's cross-script stages over one index, with a bounded memo of answers.
    Each mention is asked of the stages whose kinds of match it may take only (the
    stages run in pipeline order and the first that finds an entity answers, so the
    answer taken is the same as with every stage, and a known word skips the
    romanized search it could not take)."""

    def __init__(self, ix, location=None):
        self.stages = stages()
        self.linker = Linker(ix, location=location, stages=self.stages) if self.stages else None
        self._linkers: dict[tuple[str, ...], Linker] = {}
        self._memo: dict[tuple, dict | None] = {}

    def _stages_for(self, kinds) -> tuple[str, ...]:
        wanted = {MATCH_STAGE.get(k) for k in kinds}
        return tuple(s for s in self.stages if s in wanted)

    def _linker(self, st: tuple[str, ...]) -> Linker:
        got = self._linkers.get(st)
        if got is None:
            assert self.linker is not None
            got = self._linkers[st] = self.linker if st == self.stages else self.linker.with_stages(st)
        return got

    def resolve(self, mentions: list[str], lang: str, topic: str, country: str | None,
                kinds: list[tuple[str, ...]] | None = None) -> list[dict | None]:
        """The linker's result for each mention (None: unresolved, or not by these stages);
        ``kinds[i]``: the kinds of match mention i may take (default: all)."""
        if self.linker is None:
            return [None] * len(mentions)
        sts = [self._stages_for(k) for k in kinds] if kinds is not None else [self.stages] * len(mentions)
        keys = [(m, lang, topic, country, st) for m, st in zip(mentions, sts)]
        todo = sorted({k for k in keys if k not in self._memo and k[4]})
        for st in sorted({k[4] for k in todo}):
            part = [k for k in todo if k[4] == st]
            rows = [{"mention": m, "lang": lg, "topic": t, "country": c} for m, lg, t, c, _ in part]
            for k, r in zip(part, self._linker(st).link_many(rows)):
                ok = r["status"] == "resolved" and r["qid"]
                if len(self._memo) >= MEMO:
                    self._memo.clear()
                self._memo[k] = r if ok else None
        return [self._memo.get(k) if k[4] else None for k in keys]
