"""The ``cognate`` stage: a one-word mention spelled as the same word is spelled in a
related Latin-script language (German ``Suppe``, Italian ``zuppa`` ~ soup, soupe, sopa).

The key is the annotator's (``ontology/annotate-grammar.json``'s ``cognates``: each
language's orthographic correspondences, the shared letter classes, doubled letters as
one, a final vowel dropped; ``kgcult.link.cognates.cognate_key``). A mention no earlier
stage matched names an entity by its key only when (the annotator's guards):

* it is one word of a language with rules, no everyday word of it (wordfreq Zipf below
  :data:`EVERYDAY_ZIPF`: a function word meets a short dish name), and in a language that
  capitalizes nouns (German) it is capitalized;
* the key is that of the one-word labels (not aliases: a broth's alias sopa) of one entity
  of the topic, written in lower case in some language (a name capitalized everywhere is a
  proper name: Soba), in at least :data:`MIN_LANGS` languages other than the mention's;
* that entity has no name in the mention's language (a word of the language that is a
  name of its own is found by its own name).

The key table (the cognate key of every one-word lower-case label in those languages, of
any entity: a class such as soup is valid for food through its instances) is an SQLite
file built on first use and kept beside the label index
(``cognate-<index hash>-<rules hash>-v<FORMAT>.sqlite``); ``kgcult link index`` builds it.
wordfreq is asked only about a mention whose key names one entity.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

from kgcult import extras, resources
from kgcult.files import atomic_sqlite, read_only_sqlite
from kgcult.link import memo, normalize
from kgcult.link.cognates import GRAMMAR_FILE, cognate_key, cognate_languages
from kgcult.link.stages.base import Stage

CACHE_KIB = 512  # page cache of the open table (a few MB, the OS page cache does the rest)

FORMAT = 1
EVERYDAY_ZIPF = 4.5
MIN_LANGS = 2


def _rules() -> tuple[frozenset, frozenset, str]:
    """(languages with cognate rules, languages that capitalize nouns, hash of the rules)."""
    with open(resources.ontology(GRAMMAR_FILE), encoding="utf-8") as f:
        d = json.load(f)
    caps = frozenset(lg for lg, v in d.get("languages", {}).items()
                     if isinstance(v, dict) and v.get("nouns_capitalized"))
    h = hashlib.sha256(json.dumps(d.get("cognates", {}), sort_keys=True).encode()).hexdigest()[:12]
    return cognate_languages(), caps, h


class Cognate(Stage):
    """A one-word mention by its cognate key among the one-word labels of the related
    languages (the annotator's guards)."""
    name = "cognate"
    match = "cognate-label"
    base_score = 0.62
    needs = ("wordfreq",)
    extra = "annotate"
    feature = "the linker's cognate stage"

    def __init__(self, ctx, rank: int):
        super().__init__(ctx, rank)
        self._con: sqlite3.Connection | None = None
        self._rules: tuple[frozenset, frozenset, str] = _rules()  # small: read with the stage
        self._memo = memo.Memo(memo.MENTIONS)

    def rules(self) -> tuple[frozenset, frozenset, str]:
        return self._rules

    def run(self, batch):
        for s in batch:
            if s.topic is None or not s.text.isalpha():  # one word of letters
                continue
            langs, caps, _h = self.rules()
            base = normalize.base_lang(s.lang)
            if base not in langs or (base in caps and not s.text[:1].isupper()):
                continue  # German: a noun is capitalized
            if s.names_something():
                continue
            k = (s.text, base, s.topic)
            found = self._memo.get(k)
            if found is None:
                found = self._memo.put(k, self.search(s.text, base, s.topic))
            s.add_found(found, self)

    def search(self, text: str, lang: str, topic: str) -> dict:
        word = normalize.fold(text)
        key = cognate_key(word, lang)
        if key is None:
            return {}
        valid = self.ctx.valid(topic)
        hits = [(eid, lg, normalize.base_lang(lg)) for eid, lg in self.table().execute(
            "SELECT eid, lang FROM keys WHERE key = ? ORDER BY eid, lang", (key,))]
        hits = [h for h in hits if h[2] != lang and valid(h[0])]
        if len({h[0] for h in hits}) != 1 or len({h[2] for h in hits}) < MIN_LANGS:
            return {}
        eid, lg = hits[0][0], hits[0][1]
        ix = self.ctx.ix
        if any(normalize.base_lang(lgx) == lang for _e, lgx, _n in ix.names_of([eid], None)):
            return {}  # the language has a name of its own for it
        if extras.require("wordfreq", "annotate", "the cognate stage's everyday words").zipf_frequency(
                word, lang) >= EVERYDAY_ZIPF:
            return {}  # an everyday word (a function word meets a short dish name)
        return {eid: (0, lg, 0)}

    # -- the key table, kept beside the label index ----------------------------------

    def _rows(self) -> list[tuple[str, int, str]]:
        langs = self.rules()[0]
        ix = self.ctx.ix
        out = []
        for eid, lg, name in ix.one_word_labels([lg for lg in ix.lang_id if normalize.base_lang(lg) in langs]):
            # a capitalized label is a proper name (Soba), or says nothing (German nouns)
            if "-" in name or name[:1].isupper():
                continue
            k = cognate_key(normalize.fold(name), normalize.base_lang(lg))
            if k:
                out.append((k, eid, lg))
        return out

    def _path(self) -> Path | None:
        ctx = self.ctx
        if ctx.cache_dir is None:
            return None
        return ctx.cache_dir / f"cognate-{ctx.ix.content_hash[:16]}-{self.rules()[2]}-v{FORMAT}.sqlite"

    @staticmethod
    def _write(con: sqlite3.Connection, rows) -> None:
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("CREATE TABLE keys(key TEXT, eid INTEGER, lang TEXT)")
        con.executemany("INSERT INTO keys VALUES (?, ?, ?)", rows)
        con.execute("CREATE INDEX keys_key ON keys(key)")

    def table(self) -> sqlite3.Connection:
        if self._con is None:
            self._con = self._open()
        return self._con

    def _open(self) -> sqlite3.Connection:
        path = self._path()
        if path is not None:
            try:
                if not path.exists():
                    with atomic_sqlite(path) as con:
                        self._write(con, self._rows())
                return read_only_sqlite(path, CACHE_KIB)
            except (OSError, sqlite3.Error):
                pass
        con = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._write(con, self._rows())
        return con

    def caches(self) -> list:
        return [] if self.ctx.cache_dir is None else [("cognate", 1)]

    def build_cache(self, key) -> bool:
        path = self._path()
        had = path is not None and path.exists()
        self.table()
        return not had
