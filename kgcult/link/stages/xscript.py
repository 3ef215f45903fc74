"""The stages that reach a name across attached grammar and across scripts:

* ``affix``: the mention in the other kana, with its attached grammar taken off, or with
  a designator added or taken off (``kgcult/link/affixes.py``, data in ``ontology/link-affixes.json``), among
  the names in its language (exact, then normalized) and the language-free keys
  (``الكمون`` -> ``كمون``, ``서울에서`` -> ``서울``, ``京都`` -> ``京都市``);
* ``xscript``: a mention written in another script than Latin, romanized
  (``kgcult/link/scripts.py``), among the romanized Latin names of the topic's entities
  in every language: the same key (``寿司`` ``sushi``), or, in Arabic and Persian script,
  the same consonants (``تهران`` ~ ``Tehran``); a Latin name is filed also without its
  designator words (``Gilan Province`` as ``gilan``). A name in Chinese characters is
  read first as the prompt's country reads it (``ontology/han-readings.json``: Chinese
  ``寿司`` about Japan, sushi; ``済州`` about Korea, jeju), and reaches no entity named
  otherwise in characters (a homophone: ``杭州`` koshu, not ``甲州市``);
* ``xfuzzy``: the same keys within a few edits (``เชียงใหม่`` ``chianghaim`` ~ ``chiangmai``),
  when one entity alone is nearest.
* ``xvowel``: a mention in Arabic script among the names in scripts that write their
  vowels (Cyrillic, Greek, Armenian, Georgian, Ethiopic), each written vowel heard as
  written (``طماطم``, Amharic ``ቲማቲም``).

``xheard`` (``kgcult/link/stages/heard.py``) reads the same pools by the consonants heard.

The cross-script pool of a topic is built from the index's parts on first use and kept
beside the label index (``xscript-<index hash>-<topics hash>-<topic>-<designators hash>-v<FORMAT>.sqlite``);
``kgcult link index`` builds it with the other caches.
"""
from __future__ import annotations

import sqlite3
from itertools import chain
from pathlib import Path

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from kgcult.files import atomic_sqlite, read_only_sqlite
from kgcult.link import affixes, by_ear, memo, normalize, scripts, sino_korean, thai
from kgcult.link.index.reader import label_chain
from kgcult.link.stages.base import Stage
from kgcult.link.stages.lexical import any_language, exact, normalized

FORMAT = 6
_FOLD = str.maketrans("ckqpv", "kkkbf")
MIN_KEY = 3        # romanized keys (skeletons) shorter than this are not compared
FUZZY_MIN_KEY = 5  # nor, within edits, keys shorter than this
MIN_ABJAD_KEY = 4  # a key in Arabic script with fewer consonants than MIN_KEY: compared whole from this length
ROMANIZERS = ("anyascii", "pythainlp", "pykakasi", "korean_romanizer")


def fuzzy_bound(n: int) -> int:
    """Edits allowed between romanized keys of n characters (romanizations of one name
    differ more than spellings in one script): 1 up to 9, 2 up to 13, then 3."""
    if n < FUZZY_MIN_KEY:
        return 0
    return 1 if n < 10 else 2 if n < 14 else 3


def _topic_valid(ctx, topic: str):
    bit = ctx.ix.topic_bit(topic)
    tb = ctx.ix.topic_bits
    return lambda eid: bool(tb[eid] & bit)


class Affix(Stage):
    """The mention without its attached grammar, or with a designator added or taken off."""
    name = "affix"
    base_score = 0.78

    def run(self, batch):
        ix = self.ctx.ix
        for s in batch:
            # a mention that is another entity's name in its own language names that one
            if s.topic is None or s.names_something():
                continue
            valid = _topic_valid(self.ctx, s.topic)
            forms = [(v, self.lookup) for v in affixes.stripped(s.text, s.lang)]
            kana = scripts.kana_folded(s.text)  # ねぎ / ネギ
            if kana is not None:
                forms.insert(0, (kana, self.verbatim))
            # with a designator: the name as its own language writes it, verbatim
            forms += [(v, self.verbatim) for v in affixes.case_forms(s.text, s.lang)]
            if s.topic in affixes.designator_topics():
                forms += [(v, self.verbatim) for v in affixes.designated(s.text, s.lang)]
            for v, lookup in forms:
                found = lookup(ix, v, s.lang)
                if found:
                    s.add_found(found, self)
                    if any(valid(e) for e in found):
                        break

    @staticmethod
    def verbatim(ix, text: str, lang: str) -> dict:
        base = normalize.base_lang(lang)
        return exact(ix, text, lang) or (exact(ix, text, base) if base != lang else {})

    @staticmethod
    def lookup(ix, text: str, lang: str) -> dict:
        for lg in label_chain(lang):
            found = exact(ix, text, lg)
            if found:
                return found
        keys = normalize.keys(text, lang)
        return normalized(ix, text, lang, keys) or any_language(ix, text, lang, keys)


SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE rows(key TEXT, skel TEXT, eid INTEGER, flag INTEGER, support INTEGER, lang TEXT,
                  name TEXT, first TEXT, len INTEGER, words INTEGER, latin INTEGER, ear TEXT);
"""
INDEXES = """
CREATE INDEX rows_key ON rows(key);
CREATE INDEX rows_skel ON rows(skel);
CREATE INDEX rows_ear ON rows(ear);
CREATE INDEX rows_len ON rows(first, latin, len, key);
"""
CACHE_KIB = 512  # page cache of an open pool
NEAR_LISTS = 64  # key lists by (first letter, lengths) a pool keeps (a few thousand keys each)
NEAR_RANGES = 512  # key lists by (first letter, range of lengths), sharing those keys


class CrossPool:
    """The romanized Latin names of a topic's entities in an SQLite file (or in memory):
    rows (key, skeleton, entity, designator taken off 0/1, languages with the key, the
    first language and name, first letter, length, words, Latin 1 or another script that
    writes its vowels 0, the consonants as heard: ``by_ear.ear_key``), searched by key, by
    skeleton, by the consonants heard, or by first letter and length (the fuzzy stage's
    candidates). The names in other scripts (Cyrillic, Greek, Ethiopic:
    ``scripts.VOWELLED``) are for a name written in an abjad that no Latin name's
    consonants spell (Arabic لازانيا, Russian лазанья lazan'ya)."""

    def __init__(self, con: sqlite3.Connection):
        self.con = con
        self._memo = memo.Memo(memo.PER_PART)
        self._near = memo.Memo(NEAR_LISTS)  # first letter -> {length: keys}
        self._near_ranges = memo.Memo(NEAR_RANGES)  # (first letter, shortest, longest) -> keys

    @staticmethod
    def rows(names) -> list[tuple]:
        """From (eid, lang, name) rows: the Latin-script names, each under its romanized
        key and, without its designator words, under that key too, then the names in other
        scripts that write their vowels, under their romanized key where no Latin name of
        the entity has it; sorted."""
        best: dict = {}
        langs: dict = {}
        for eid, lg, name in names:
            latin = scripts.is_latin(name)
            if not latin and not scripts.vowelled(name):
                continue
            key = scripts.romanize(name, lg)
            for flag, k in enumerate((key, affixes.latin_without_designators(key))):
                if not k:
                    continue
                ck = scripts.compact(k)
                if len(ck) < MIN_KEY:
                    continue
                cur = best.get((ck, eid))
                if cur is None or (not latin, flag, lg, name, k.count(" ") + 1) < cur:
                    best[(ck, eid)] = (not latin, flag, lg, name, k.count(" ") + 1)
                # the languages whose names have the key, counted among the Latin names
                # or the others, whichever the row is of
                langs.setdefault((ck, eid, latin), set()).add(normalize.base_lang(lg))
        return sorted((ck, scripts.skeleton(ck), eid, flag, len(langs[(ck, eid, not other)]), lg, name, ck[0], len(ck),
                       words, int(not other), by_ear.ear_key(ck))
                      for (ck, eid), (other, flag, lg, name, words) in best.items())

    @classmethod
    def write(cls, con: sqlite3.Connection, names) -> None:
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("BEGIN")
        for stmt in (SCHEMA + INDEXES).split(";"):
            if stmt.strip():
                con.execute(stmt)
        con.execute("INSERT INTO meta VALUES ('format', ?)", (str(FORMAT),))
        con.executemany("INSERT INTO rows VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", cls.rows(names))
        con.execute("COMMIT")

    @classmethod
    def in_memory(cls, names) -> "CrossPool":
        con = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        cls.write(con, names)
        return cls(con)

    @classmethod
    def open(cls, path: Path) -> "CrossPool | None":
        try:
            con = read_only_sqlite(path, CACHE_KIB)
            meta = dict(con.execute("SELECT key, value FROM meta"))
            if int(meta.get("format", -1)) != FORMAT:
                con.close()
                return None
            return cls(con)
        except (sqlite3.Error, ValueError, OSError):
            return None

    def _select(self, where: str, args: tuple) -> list[tuple]:
        k = (where, args)
        v = self._memo.get(k)
        if v is None:
            v = self._memo.put(k, self.con.execute(
                f"SELECT key, eid, flag, support, lang, words, latin FROM rows WHERE {where} ORDER BY rowid",
                args).fetchall())
        return v

    def by_key(self, key: str) -> list[tuple]:
        """The rows of the Latin names with the key."""
        return self._select("key = ? AND latin = 1", (key,))

    def by_skel(self, skel: str) -> list[tuple]:
        """The rows of a skeleton, of Latin names (``latin``, the last field, 1) and of names
        in other scripts (0)."""
        return self._select("skel = ?", (skel,))

    def by_ear(self, ear: str) -> list[tuple]:
        """The rows of the Latin names whose consonants are heard as ``ear``."""
        return self._select("ear = ? AND latin = 1", (ear,))

    def near_keys(self, key: str, bound: int) -> list[str]:
        """The keys with the first letter of ``key`` and a length within ``bound`` of it,
        by length (one list per first letter and range of lengths: a fuzzy search asks for
        the same few ranges again and again). Each key once: a search's matches, sorted by
        key, come out in one order whatever the list's."""
        lo, hi = len(key) - bound, len(key) + bound
        near = self._near_ranges.get((key[0], lo, hi))
        if near is None:
            by_len = self._by_length(key[0])
            near = self._near_ranges.put((key[0], lo, hi),
                                         list(chain.from_iterable(by_len.get(n, ()) for n in range(lo, hi + 1))))
        return near

    def _by_length(self, first: str) -> dict[int, list[str]]:
        """The keys that begin with ``first``, by length (a key, spaces taken out by
        ``scripts.compact``, comes back from SQLite in one string per length)."""
        by_len = self._near.get(first)
        if by_len is None:
            by_len = {n: keys.split(" ") for n, keys in self.con.execute(
                "SELECT len, group_concat(key, ' ') FROM (SELECT DISTINCT key, len FROM rows WHERE first = ? AND latin = 1)"
                " GROUP BY len", (first,))}
            self._near.put(first, by_len)
        return by_len

    @staticmethod
    def hits(rows: list[tuple], key: str, keep=None, unwritten: bool = False) -> dict:
        """{eid: (0, lang, order)} of (key, eid, flag, support, lang) rows: the order is the
        edit distance of the entity's nearest name's key to ``key`` (both folded as
        skeletons fold consonants; none for a spelling in Arabic script, ``unwritten``,
        which writes no short vowel: the vowels a name adds are no evidence against it,
        حمص is Hummus as much as Hams), half an edit more for a name whose designator was
        taken off (``Lampang`` before ``Lampang Province``), and, below a tenth of an edit,
        fewer languages that call the entity so (a name many languages give it before a
        stub's one name); ``keep(name key)``: which rows count."""
        out: dict = {}
        fk = key.translate(_FOLD)
        for k, eid, flag, support, lg, _words, _latin in rows:
            if keep is not None and not keep(k):
                continue
            edits = 0 if unwritten else Levenshtein.distance(fk, k.translate(_FOLD))
            d = edits + 0.5 * flag + round(0.1 / (1 + support), 4)
            cur = out.get(eid)
            if cur is None or (d, lg) < (cur[2], cur[1]):
                out[eid] = (0, lg, d)
        return out

    def close(self) -> None:
        self.con.close()


def _save(names, path: Path) -> None:
    with atomic_sqlite(path) as con:
        CrossPool.write(con, names)


class CrossScript(Stage):
    """A mention in another script than Latin: its romanized key (in Arabic script, its
    consonants) among the topic's romanized Latin names."""
    name = "xscript"
    match = "cross-script"
    base_score = 0.7
    needs = ROMANIZERS
    feature = "the linker's cross-script stages"
    scored = True
    fuzzy = False
    other_scripts = False  # the names in other scripts that write their vowels (xvowel), not the Latin ones

    def __init__(self, ctx, rank: int):
        super().__init__(ctx, rank)
        self.pools = memo.Pools.cached_in(ctx.cache_dir)
        self._memo = memo.Memo(memo.MENTIONS)
        self._hanja: dict[str, str] | None = None

    def score(self, alias, sub):
        return round(self.base_score - 0.05 * sub, 4)

    def run(self, batch):
        for s in batch:
            if s.topic is None or scripts.is_latin(s.text):
                continue
            # read as its country reads it, a name in characters may be one the text's own
            # language gives something else (Chinese 北海道 is the island's name, no place in
            # the graph; read in Japanese, hokkaido, it is the prefecture)
            country = s.row.get("country")
            found = self.as_the_country_reads(s.text, s.lang, s.topic, country)
            # else a mention that is another entity's name in its own language names that one
            if not found and s.names_something():
                continue
            if not found:
                k = (s.text, s.lang, s.topic)
                found = self._memo.get(k)
                if found is None:
                    found = self.search(s.text, s.lang, s.topic)
                    if found and scripts.han_only(s.text):
                        found = self.not_homophones(s.text, s.lang, found)
                    found = self._memo.put(k, found)
                found = self.kept(found, country)
            s.add_found(found, self)

    def as_the_country_reads(self, text: str, lang: str, topic: str, country: str | None) -> dict:
        """The hits of a name written in Chinese characters read as the prompt's country
        reads it, when the text's language reads it otherwise
        (``ontology/han-readings.json``): Chinese 寿司 in a text about Japan is Japanese
        sushi, not shousi; only hits that are the country or lie in it."""
        reading = scripts.han_reading(country)
        if country is None or reading is None or reading == normalize.base_lang(lang) or not scripts.han_only(text):
            return {}
        k = (text, reading, topic, country)
        found = self._memo.get(k)
        if found is None:
            v = sino_korean.hangul(text, self.hanja()) if reading == "ko" else scripts.written_as(text, reading)
            found = self.search(v, reading, topic) if v else {}
            found = self.in_country(found, country)
            if found:  # the mention itself against the entities' names in characters
                found = self.not_homophones(text, lang, found)
            found = self._memo.put(k, found)
        return found

    def kept(self, found: dict, country: str | None) -> dict:
        """The hits a mention given with ``country`` (the prompt's) takes: all of them."""
        return found


    def in_country(self, found: dict, country: str) -> dict:
        """The hits that are ``country`` or lie in it (``GraphFacts.countries``)."""
        ix, countries = self.ctx.ix, self.ctx.countries
        return {e: v for e, v in found.items() if ix.qids[e] == country or country in countries(e)}

    def not_homophones(self, text: str, lang: str, found: dict) -> dict:
        """The hits of a name written in Chinese characters that no name of theirs in
        characters contradicts. Its reading reaches the entities the graph names only in
        other scripts (寿司, sushi); an entity with its own name in characters, another
        one, is a homophone: Japanese 杭州 reads koshu as 甲州市 (Kōshū-shi) does, 大都市
        daitoshi as 大東市. Names compare with Japanese, traditional and simplified
        characters folded, with or without a designator; a name that holds the mention
        (Chinese 日本拉面, Japanese ramen, holds 拉面) is no other one."""
        def keys(name: str, lg: str) -> set[str]:
            return {scripts.han_fold(v) for v in [name, *affixes.undesignated(name, lg)]}

        mine = keys(text, lang)
        han: dict[int, set[str]] = {}
        for e, lg, name in self.ctx.ix.names_of(found, None):
            if scripts.han_only(name):
                han.setdefault(e, set()).update(keys(name, lg))
        return {e: v for e, v in found.items()
                if e not in han or any(m in n for m in mine for n in han[e])}

    def search(self, text: str, lang: str, topic: str) -> dict:
        pool = self.pool(topic)
        # the forms without an article or proclitic first (an article romanized, ``al``,
        # is noise), then the mention as written, then without a suffix: a name ending in
        # what a suffix looks like is more often the name (Persian دهلی, Delhi, not دهل)
        forms = affixes.stripped(text, lang)[::-1]
        tails = [v for v in forms if text.startswith(v)]
        for v in [v for v in forms if not text.startswith(v)] + [text] + tails:
            words = scripts.romanize(v, lang)
            # a Brahmic name with its silent inherent vowels left out, after the written one,
            # then with its last one said (केरल, Kerala), then its long vowels as English
            # spells them (खीर, kheer); a Thai one as a foreign name is written in Thai
            # (อาร์คันซอ, Arkansas)
            extra = [k for k in (scripts.final_vowel_variant(v), scripts.long_vowel_variant(v),
                                 thai.foreign_key(v)) if k]
            for key in [scripts.compact(words)] + scripts.syncope_variants(v)[1:] + extra:
                found = self._fuzzy(pool, key, v) if self.fuzzy else self._exact(pool, key, v, words.count(" ") + 1)
                if found:
                    return found
        if not self.fuzzy:
            # an inflected word of an alphabet as its name's case (Russian сметаной, smetana:
            # Smetana; эбу, eba: Eba), among the same keys
            for v in affixes.case_forms(text, lang):
                found = self._exact(pool, scripts.compact(scripts.romanize(v, lang)), v)
                if found:
                    return found
            # a Pali or Sanskrit compound with an inner final read again (ราชบุรี ratchaburi),
            # then readings the Thai spelling hides (สระแก้ว sa kaeo, อยุธยา ayutthaya)
            for key in thai.linking_variants(text) + thai.spoken_variants(text):
                found = self._exact(pool, key, text)
                if found:
                    return found
            # without its designator (เกาะเต่า: เต่า), among the Latin names that had one
            # (Koh Tao filed as tao): the designator's romanizations differ (ko, koh)
            for v in affixes.undesignated(text, lang):
                if not scripts.abjad(v):
                    key = scripts.compact(scripts.romanize(v, lang))
                    rows = [r for r in pool.by_key(key) if r[2]] if len(key) >= MIN_KEY else []
                    if rows:
                        return pool.hits(rows, key)
        return {}

    def _exact(self, pool: CrossPool, key: str, text: str, words: int = 1) -> dict:
        if scripts.abjad(text):
            sk = scripts.skeleton(key)
            if len(sk) < MIN_KEY:
                if self.other_scripts:
                    return {}
                # too few consonants to meet a name by: the key itself, every vowel of it
                # written long (Persian آگرا agra: Agra; نارا nara: Nara)
                rows = [r for r in pool.by_key(key) if r[5] == words] if len(key) >= MIN_ABJAD_KEY else []
                return pool.hits(rows, key) if rows else {}
            # a spaced script: a name of as many words (البيلميني is not "palm wine"); the
            # Latin names, or (xvowel) those of other scripts that write their vowels
            # (طماطم: Amharic ቲማቲም timatim, where no Latin name's consonants are tmtm)
            latin = 0 if self.other_scripts else 1
            rows = [r for r in pool.by_skel(sk) if r[5] == words and r[6] == latin]
            return pool.hits(rows, key, scripts.abjad_matcher(key, heard=not latin), unwritten=True) if rows else {}
        return pool.hits(pool.by_key(key), key) if len(key) >= MIN_KEY else {}

    def _fuzzy(self, pool: CrossPool, key: str, text: str) -> dict:
        # a skeleton is too short to spell it another way; an alphabet's neighbours are
        # the fuzzy stages' (an inflected Russian word one letter from a Czech name)
        if scripts.abjad(text) or scripts.alphabetic(text):
            return {}
        bound = fuzzy_bound(len(key))
        if not bound:
            return {}
        # a romanization keeps the first sound of a name
        near = process.extract(key, pool.near_keys(key, bound), scorer=Levenshtein.distance,
                               score_cutoff=bound, limit=None)
        found = pool.hits([r for c, _d, _i in sorted(near) for r in pool.by_key(c)], key)
        if not found:
            return {}
        best = min(int(v[2] * 2) for v in found.values())  # edits, designators
        top = {e: v for e, v in found.items() if int(v[2] * 2) == best}
        if len(top) != 1:  # several entities as near: the one more languages call so, or no guess
            least = min(v[2] for v in top.values())
            top = {e: v for e, v in top.items() if v[2] == least}
            if len(top) != 1:
                return {}
        return top

    # -- the pool, kept beside the label index -----------------------------------------

    def _path(self, topic: str) -> Path | None:
        ctx = self.ctx
        if ctx.cache_dir is None:
            return None
        return ctx.cache_dir / (f"xscript-{ctx.ix.content_hash[:16]}-{ctx.ix.topics_key}-{topic}"
                                f"-{affixes.latin_designators_digest()}-v{FORMAT}.sqlite")

    def pool(self, topic: str) -> CrossPool:
        return self.pools.get_or_open(topic, lambda: self._open(topic))

    def _open(self, topic: str) -> CrossPool:
        path = self._path(topic)
        if path is not None and path.exists():
            pool = CrossPool.open(path)
            if pool is not None:
                return pool
        ix = self.ctx.ix
        names = self.ctx.names(topic, [lg for lg, n in ix.parts(topic) if n])
        if path is not None:
            try:
                _save(names, path)
                pool = CrossPool.open(path)
                if pool is not None:
                    return pool
            except (OSError, sqlite3.Error):
                pass
        return CrossPool.in_memory(names)

    def hanja(self) -> dict[str, str]:
        """The Korean readings of Chinese characters induced from the index's names
        (``kgcult/link/sino_korean.py``), read or built once."""
        if self._hanja is None:
            self._hanja = sino_korean.table(self.ctx.cache_dir, self.ctx.ix)
        return self._hanja

    def prepare(self) -> None:
        """What a first Japanese or Thai name needs (``scripts.prepare``): the converted kanji
        dictionary, the RTGS readings of the Thai syllables; and the Korean readings of
        Chinese characters, beside the index."""
        scripts.prepare()
        if not self.fuzzy:
            self.hanja()

    def caches(self) -> list:
        if self.ctx.cache_dir is None:
            return []
        return [(t.name, sum(n for _lg, n in self.ctx.ix.parts(t.name))) for t in self.ctx.ix.topics]

    def build_cache(self, key) -> bool:
        path = self._path(key)
        had = path is not None and path.exists()
        self._open(key).close()
        return not had


class _SharedPool(CrossScript):
    """A cross-script stage that reads xscript's pools and readings, when the linker has
    that stage (one open pool per topic, its memos shared); it builds no cache of its own."""

    def _exact_stage(self) -> "CrossScript | None":
        st = self.ctx.stage("xscript") if hasattr(self.ctx, "stage") else None
        return st if st is not None and st is not self else None

    def pool(self, topic: str) -> CrossPool:
        st = self._exact_stage()
        return st.pool(topic) if st is not None else super().pool(topic)

    def hanja(self) -> dict[str, str]:
        """xscript's readings (read once per process), when the linker has that stage."""
        st = self._exact_stage()
        return st.hanja() if st is not None else super().hanja()

    def caches(self) -> list:
        return []


class CrossScriptVowelled(_SharedPool):
    """A mention in an abjad (Arabic script) that no Latin name's consonants spell, among the
    topic's names in the scripts that write their vowels (Cyrillic, Greek, Armenian,
    Georgian, Ethiopic: ``scripts.VOWELLED``), romanized, each vowel the abjad writes heard
    as written (``scripts.abjad_matcher(heard=True)``: Arabic طماطم is Amharic ቲማቲም timatim;
    مقلية is no Georgian მიქლიო miklio)."""
    name = "xvowel"
    match = "cross-script-vowelled"
    base_score = 0.65
    other_scripts = True

    def run(self, batch):
        super().run([s for s in batch if scripts.abjad(s.text)])

    def prepare(self) -> None:
        scripts.prepare()


class CrossScriptFuzzy(_SharedPool):
    """:class:`CrossScript` within ``fuzzy_bound`` edits (in Arabic script, one edit of a
    skeleton of 5+ consonants), when one entity alone is nearest; ``sub``: the edits."""
    name = "xfuzzy"
    match = "cross-script-fuzzy"
    base_score = 0.6
    fuzzy = True

    def kept(self, found: dict, country: str | None) -> dict:
        """Within a few edits, a romanization meets some place of the world by chance; among
        the few places of one country, it is that place (Thai หลวงพระบาง ~ Luang Prabang in a
        text about Laos, not ฮอยอัน ~ Henan in one about Vietnam). A mention given with a
        country keeps the hits that are that country or lie in it, as ``kgcult annotate``
        takes this kind of match only for the countries its text is about
        (``across_local``); without a country, every hit."""
        if not country or not found:
            return found
        return self.in_country(found, country)
