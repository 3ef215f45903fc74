"""The fuzzy and token pools: a second database of the index directory
(``pools.sqlite``), built from the index's names once, when first needed
(``LabelIndex.ensure_pools``: ``kgcult link index``, or the first mention that reaches a
loose stage), so a process then searches them from its first mention.

A *part* is the names, in one language, of the entities of one topic (topic None: of
the entities of any topic), in the order the linker has always used: by entity, then
name. A part holds, per name, its folded key (fuzzy) and its words (tokens):

* ``fuzzy``: every deletion variant (``matching.deletion_variants``) of each distinct
  folded name of 5+ characters, once for every part that holds it (``(v, f)``: a third
  of the rows of one per part and name at 1x), keyed by variant first; the parts' names
  are found by their folded name (index ``part_by_f``); a hit is verified with the real
  edit distance against the stored key, exactly as the reference ``FuzzyPool``
  (tests/reference_pools.py) does.
* ``tok`` / ``tokdf`` / ``rare``: word postings, the number of entities per word and part,
  and each name filed under its rarest word of its part. A token pool is the parts of
  a topic in the mention's language, its base language and English
  (the reference ``TokenPool`` over the same entries); its entity count is stored per
  (topic, language) in ``pooln``, a word's entity count over several parts is counted
  when first needed.

Results are those of the reference ``FuzzyPool`` / ``TokenPool`` (tests/reference_pools.py) built from the
same names (tests/test_link_index.py compares them).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from kgcult import lazy
from kgcult import log as kglog
from kgcult.link import memo, normalize
from kgcult.link.matching import FUZZY_MIN_LEN, deletion_variants, fuzzy_bound, nearest, tokens
from kgcult.link.index.layout import DB_NAME, MAX_PARAMS, chunks, connect, finish_build, read_only_uri, script

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy.module("numpy")

SCHEMA = """
CREATE TABLE part_info(pid INTEGER PRIMARY KEY, topic TEXT NOT NULL, lang TEXT NOT NULL, size INTEGER);
CREATE TABLE part(pid INTEGER, seq INTEGER, eid INTEGER, text TEXT, f TEXT, toks TEXT,
                  PRIMARY KEY (pid, seq)) WITHOUT ROWID;
CREATE TABLE scratch.fuzzy_raw(v TEXT, f TEXT);
CREATE TABLE scratch.tok_raw(pid INTEGER, token TEXT, seq INTEGER, eid INTEGER);
CREATE TABLE fuzzy(v TEXT, f TEXT, PRIMARY KEY (v, f)) WITHOUT ROWID;
CREATE TABLE tok(pid INTEGER, token TEXT, seq INTEGER, eid INTEGER, PRIMARY KEY (pid, token, seq)) WITHOUT ROWID;
CREATE TABLE tokdf(pid INTEGER, token TEXT, df INTEGER, PRIMARY KEY (pid, token)) WITHOUT ROWID;
CREATE TABLE rare(pid INTEGER, token TEXT, seq INTEGER, PRIMARY KEY (pid, token, seq)) WITHOUT ROWID;
CREATE TABLE pooln(topic TEXT, lang TEXT, n INTEGER, PRIMARY KEY (topic, lang)) WITHOUT ROWID;
"""
BATCH = 5_000  # names per flush (the deletion variants of a batch are ~16x as many rows)


def _topic_key(topic: str | None) -> str:
    return "" if topic is None else topic


def pool_langs(lang: str) -> list[str]:
    """The part languages of a token pool for mentions in ``lang``."""
    return sorted({lang, normalize.base_lang(lang), "en"})


# -- building --------------------------------------------------------------------------

POOLS_DB = "pools.sqlite"  # beside the index's own database, in its directory


def build_file(index_directory: str | Path, out: str | Path, topic_names: list[str], langs: list[str],
               topic_bits: np.ndarray) -> None:
    """Build the pools database ``out`` (a new file; its staging tables in a scratch file
    beside it, removed at the end) from the names of the index database in
    ``index_directory`` and the entities' topic bits."""
    out = Path(out)
    scratch = out.name + ".scratch"
    (out.parent / scratch).unlink(missing_ok=True)
    con = connect(out.parent, write=True, name=out.name, scratch=scratch)
    try:
        con.execute("COMMIT")  # ATTACH outside a transaction
        con.execute("ATTACH DATABASE ? AS ix", (read_only_uri(Path(index_directory) / DB_NAME),))
        con.execute("BEGIN")
        script(con, "CREATE TABLE scratch.ebits(eid INTEGER PRIMARY KEY, bits INTEGER NOT NULL)")
        bits = np.asarray(topic_bits)
        nz = np.flatnonzero(bits)
        for i in range(0, len(nz), BATCH):
            sel = nz[i:i + BATCH]
            con.executemany("INSERT INTO ebits VALUES (?,?)", zip(sel.tolist(), bits[sel].tolist()))
        build(con, topic_names, langs)
        con.execute("COMMIT")
        con.execute("DETACH DATABASE ix")
        con.execute("BEGIN")
        finish_build(con, out.parent, scratch)
    except BaseException:
        con.close()
        (out.parent / scratch).unlink(missing_ok=True)
        out.unlink(missing_ok=True)
        raise


def build(con, topic_names: list[str], langs: list[str]) -> None:
    """Fill the pool tables from ``names`` (lang id, text, eid, alias) and ``ebits``
    (eid, topic bitmask of the entities in some topic); ``langs`` by id."""
    script(con, SCHEMA)
    specs = [(None, None)] + [(name, 1 << i) for i, name in enumerate(topic_names)]
    with kglog.progress(total=len(specs) + 1, desc="link index: fuzzy and token pools", unit=" parts") as bar:
        _build_parts(con, specs, langs, bar)
        bar.set_postfix_str("sorting")
        _sort(con)
        _pool_sizes(con, topic_names, langs)
        bar.update(1)


def _build_parts(con, specs: list, langs: list[str], bar) -> None:
    """The parts' rows and words, every part in one pass over the names (by language,
    entity, name: each name goes to the part of any topic and to those of its entity's
    topics), then the deletion variants of each distinct folded name once."""
    # part ids as the parts come: topic by topic (any topic first), then by language
    present = con.execute("SELECT DISTINCT n.lang, b.bits FROM names n JOIN ebits b ON b.eid = n.eid").fetchall()
    pid_of: dict = {}
    for i, (_topic, bit) in enumerate(specs):
        for lid in sorted({lid for lid, bits in present if bit is None or bits & bit}):
            pid_of[i, lid] = len(pid_of)
    size = dict.fromkeys(pid_of.values(), 0)
    topic_bits = [(i, bit) for i, (_t, bit) in enumerate(specs) if bit is not None]
    parts: list = []
    tk: list = []
    fold = normalize.fold
    rows = con.cursor().execute(
        "SELECT DISTINCT n.lang, n.eid, n.text, b.bits FROM names n JOIN ebits b ON b.eid = n.eid "
        "ORDER BY n.lang, n.eid, n.text")
    cur_lang = None
    for lid, eid, text, bits in rows:
        if lid != cur_lang:
            cur_lang, lg = lid, langs[lid]
            bar.set_postfix_str(lg)
        f = fold(text)
        pid = pid_of[0, lid]  # the part of any topic: no words
        parts.append((pid, size[pid], eid, text, f, ""))
        size[pid] += 1
        toks = None
        for i, bit in topic_bits:
            if not bits & bit:
                continue
            if toks is None:  # the words of matching.tokens(text, lg), from the folded name at hand
                toks = frozenset(w for w in normalize.stem(f, lg).split(" ") if len(w) >= 2)
                joined = " ".join(sorted(toks))
            pid = pid_of[i, lid]
            seq = size[pid]
            parts.append((pid, seq, eid, text, f, joined))
            size[pid] = seq + 1
            for t in toks:
                tk.append((pid, t, seq, eid))
        if len(parts) >= BATCH:
            _flush(con, parts, [], tk)
    _flush(con, parts, [], tk)
    con.executemany("INSERT INTO part_info VALUES (?,?,?,?)",
                    [(pid, _topic_key(specs[i][0]), langs[lid], size[pid]) for (i, lid), pid in pid_of.items()])
    bar.update(len(specs))
    bar.set_postfix_str("deletion variants")
    fz: list = []
    for (f,) in con.cursor().execute(f"SELECT DISTINCT f FROM part WHERE length(f) >= {FUZZY_MIN_LEN}"):
        fz.append((f, f))
        fz.extend([(v, f) for v in {f[:i] + f[i + 1:] for i in range(len(f))} if v != f])
        if len(fz) >= 6 * BATCH:
            _flush(con, [], fz, [])
    _flush(con, [], fz, [])


def _sort(con) -> None:
    """The staged rows sorted into the searched tables."""
    script(con, """
        INSERT OR IGNORE INTO fuzzy SELECT v, f FROM fuzzy_raw ORDER BY 1, 2;
        DROP TABLE fuzzy_raw;
        CREATE INDEX part_by_f ON part(f, pid);
        INSERT INTO tok SELECT pid, token, seq, eid FROM tok_raw ORDER BY 1, 2, 3;
        DROP TABLE tok_raw;
        INSERT INTO tokdf SELECT pid, token, COUNT(DISTINCT eid) FROM tok GROUP BY pid, token;
        INSERT INTO rare SELECT pid, token, seq FROM (
            SELECT t.pid, t.token, t.seq, ROW_NUMBER() OVER (
                PARTITION BY t.pid, t.seq ORDER BY d.df, t.token) AS rn
            FROM tok t JOIN tokdf d ON d.pid = t.pid AND d.token = t.token) WHERE rn = 1
        ORDER BY 1, 2, 3;
    """)


def _flush(con, parts, fz, tk) -> None:
    con.executemany("INSERT INTO part VALUES (?,?,?,?,?,?)", parts)
    con.executemany("INSERT INTO fuzzy_raw VALUES (?,?)", fz)
    con.executemany("INSERT INTO tok_raw VALUES (?,?,?,?)", tk)
    parts.clear()
    fz.clear()
    tk.clear()


def _part_entities(con, pid: int) -> np.ndarray:
    """Sorted entities of a part's names that have at least one word."""
    return np.fromiter((r[0] for r in con.execute(
        "SELECT DISTINCT eid FROM part WHERE pid = ? AND toks != '' ORDER BY eid", (pid,))), dtype=np.int64)


def pool_size(con, topic: str, lang: str, part_entities=None) -> int:
    """Entities with a word among the names of a token pool's parts (at least 1)."""
    ents = []
    for lg in pool_langs(lang):
        r = con.execute("SELECT pid FROM part_info WHERE topic = ? AND lang = ?", (topic, lg)).fetchone()
        if r is not None:
            ents.append(part_entities(r[0]) if part_entities else _part_entities(con, r[0]))
    if not ents:
        return 1
    return max(1, len(np.unique(np.concatenate(ents))))


def _pool_sizes(con, topic_names: list[str], langs: list[str]) -> None:
    for topic in topic_names:
        cache: dict = {}

        def ents(pid):
            if pid not in cache:
                cache[pid] = _part_entities(con, pid)
            return cache[pid]

        rows = [(topic, lg, pool_size(con, topic, lg, ents)) for lg in langs]
        con.executemany("INSERT INTO pooln VALUES (?,?,?)", rows)
        # the English part is kept across languages; the others are used once or twice
        for pid in list(cache):
            r = con.execute("SELECT lang FROM part_info WHERE pid = ?", (pid,)).fetchone()
            if r and r[0] != "en":
                del cache[pid]


# -- searching -------------------------------------------------------------------------

def part_id(con, topic: str | None, lang: str) -> int | None:
    r = con.execute("SELECT pid FROM part_info WHERE topic = ? AND lang = ?", (_topic_key(topic), lang)).fetchone()
    return r[0] if r else None


def parts(con, topic: str | None) -> list[tuple[str, int]]:
    """(language, size) of the topic's parts, by language."""
    return [(lg, n) for lg, n in con.execute(
        "SELECT lang, size FROM part_info WHERE topic = ? ORDER BY lang", (_topic_key(topic),))]


def part_names(con, topic: str | None, lang: str) -> list[tuple[int, str, str]]:
    """(eid, lang, name) of a part, in the linker's order."""
    pid = part_id(con, topic, lang)
    if pid is None:
        return []
    return [(e, lang, t) for e, t in con.execute("SELECT eid, text FROM part WHERE pid = ? ORDER BY seq", (pid,))]


class PartRows:
    """The (eid, lang, name) rows of a part as a lazy sequence: ``len`` from the part's
    size, ``rows[i]`` one lookup (memoized), iteration one scan; what ``part_names``
    returns, without holding every row of a large part in memory."""

    def __init__(self, con, topic: str | None, lang: str):
        self.con = con
        self.lang = lang
        r = con.execute("SELECT pid, size FROM part_info WHERE topic = ? AND lang = ?",
                        (_topic_key(topic), lang)).fetchone()
        self.pid: int | None = r[0] if r else None
        self.size: int = r[1] if r else 0
        self._memo = memo.Memo(memo.PER_PART)  # seq -> (eid, lang, name)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i: int) -> tuple[int, str, str]:
        i = int(i)
        if not 0 <= i < self.size:
            raise IndexError(i)
        v = self._memo.get(i)
        if v is None:
            e, t = self.con.execute("SELECT eid, text FROM part WHERE pid = ? AND seq = ?", (self.pid, i)).fetchone()
            v = self._memo.put(i, (e, self.lang, t))
        return v

    def prefetch(self, seqs) -> None:
        """Read the rows at ``seqs`` in one query per chunk (memoized for ``rows[i]``)."""
        want = sorted(int(i) for i in seqs if int(i) not in self._memo and 0 <= int(i) < self.size)
        got = {}
        for ch in chunks(want):
            q = f"SELECT seq, eid, text FROM part WHERE pid = ? AND seq IN ({','.join('?' * len(ch))})"
            for i, e, t in self.con.execute(q, (self.pid, *ch)):
                got[i] = (e, self.lang, t)
        self._memo.put_many(got)

    def __iter__(self) -> Iterator[tuple[int, str, str]]:
        if self.pid is None:
            return iter(())
        return ((e, self.lang, t) for e, t in self.con.execute(
            "SELECT eid, text FROM part WHERE pid = ? ORDER BY seq", (self.pid,)))


LONG_KEY = 64  # a longer fuzzy key is first compared with the longest name of the parts


def longest_folded(con, pids) -> int:
    """The length of the longest folded name in parts ``pids``."""
    ph = ",".join("?" * len(pids))
    return con.execute(f"SELECT coalesce(max(length(f)), 0) FROM part WHERE pid IN ({ph})", tuple(pids)).fetchone()[0]


def fuzzy_rows(con, pids, key: str):
    """(eid, part id, name, folded name) of the names in parts ``pids`` that share a
    deletion variant with ``key`` (the stored deletion index): the candidates a fuzzy
    search ranks by edit distance."""
    if len(key) > LONG_KEY and len(key) - 1 > longest_folded(con, pids):
        return  # no name shares a deletion variant with it: not its n variants of n characters
    variants = list(deletion_variants(key))
    step = max(1, MAX_PARAMS - len(pids))
    ph = ",".join("?" * len(pids))
    # the deletion index drives the join (CROSS JOIN: SQLite keeps the order written): one
    # range of its (v, f) key per variant gives the folded names, each looked up in the parts
    # asked for through the (f, pid) index
    for ch in chunks(variants, step):
        q = ("SELECT DISTINCT p.eid, p.pid, p.text, p.f FROM fuzzy z CROSS JOIN part p INDEXED BY part_by_f "
             f"ON p.f = z.f AND p.pid IN ({ph}) WHERE z.v IN ({','.join('?' * len(ch))})")
        yield from con.execute(q, (*pids, *ch))


def part_ids(con, topic: str | None) -> list[tuple[int, str]]:
    """(part id, language) of a topic's parts."""
    return con.execute("SELECT pid, lang FROM part_info WHERE topic = ? ORDER BY pid", (_topic_key(topic),)).fetchall()


def part_samples(con, topic: str | None, n: int = 32) -> list[tuple[int, str, list[str]]]:
    """(part id, language, the folded forms of its first ``n`` names) of a topic's parts."""
    out = []
    for pid, lg in part_ids(con, topic):
        out.append((pid, lg, [f for (f,) in con.execute(
            "SELECT f FROM part WHERE pid = ? ORDER BY seq LIMIT ?", (pid, n))]))
    return out


class StoredFuzzyPool:
    """The reference ``FuzzyPool`` over one part, searched in the database."""

    def __init__(self, con, topic: str | None, lang: str):
        self.con = con
        self.lang = lang
        self.pid = part_id(con, topic, lang)

    def search(self, key: str) -> list[tuple[int, str, str, int]]:
        bound = fuzzy_bound(len(key))
        if not bound or self.pid is None:
            return []
        lang = self.lang
        rows = ((eid, lang, name, f) for eid, _pid, name, f in fuzzy_rows(self.con, [self.pid], key))
        return nearest(key, bound, rows)


def search_parts(con, pools: list[StoredFuzzyPool], key: str) -> list[list[tuple[int, str, str, int]]]:
    """``[pool.search(key) for pool in pools]`` (pools of one database) in one query: the
    deletion index is keyed by variant first, so one range per variant covers every part
    (half the probes of one query per part for a mention in two languages)."""
    out: list[list] = [[] for _ in pools]
    bound = fuzzy_bound(len(key))
    at = {p.pid: i for i, p in enumerate(pools) if p.pid is not None}
    if not bound or not at:
        return out
    if len(at) == 1:
        i = next(iter(at.values()))
        out[i] = pools[i].search(key)
        return out
    rows: list[list] = [[] for _ in pools]
    for eid, pid, name, f in fuzzy_rows(con, tuple(at), key):
        rows[at[pid]].append((eid, pools[at[pid]].lang, name, f))
    for i in at.values():
        out[i] = nearest(key, bound, rows[i])
    return out


class StoredTokenPool:
    """The reference ``TokenPool`` over a topic's parts in a mention language, its base
    language and English, searched in the database."""

    def __init__(self, con, topic: str, lang: str):
        self.con = con
        self.lang = lang
        self.parts = [(pid, lg) for lg in pool_langs(lang) if (pid := part_id(con, topic, lg)) is not None]
        self.pids = tuple(p for p, _ in self.parts)
        self._rank = {p: i for i, (p, _) in enumerate(self.parts)}
        self._lang = dict(self.parts)
        r = con.execute("SELECT n FROM pooln WHERE topic = ? AND lang = ?", (topic, lang)).fetchone()
        n = r[0] if r else pool_size(con, topic, lang)
        self.n = n
        self.default_idf = math.log(n + 1)
        self._df = memo.Memo(memo.PER_PART)
        ph = ",".join("?" * len(self.pids))
        self._q_df = f"SELECT df FROM tokdf WHERE pid IN ({ph}) AND token = ?"
        self._q_union = f"SELECT COUNT(DISTINCT eid) FROM tok WHERE pid IN ({ph}) AND token = ?"
        names = "SELECT x.pid, x.seq, p.eid, p.text, p.toks FROM {} x JOIN part p ON p.pid = x.pid AND p.seq = x.seq "
        self._q_rare = names.format("rare") + f"WHERE x.pid IN ({ph}) AND x.token = ?"
        self._q_post = names.format("tok") + f"WHERE x.pid IN ({ph}) AND x.token = ?"

    def df(self, t: str) -> int:
        """Entities of the pool with a name holding word ``t``."""
        v = self._df.get(t)
        if v is None:
            rows = self.con.execute(self._q_df, (*self.pids, t)).fetchall()
            if len(rows) <= 1:
                v = rows[0][0] if rows else 0
            else:
                v = self.con.execute(self._q_union, (*self.pids, t)).fetchone()[0]
            self._df.put(t, v)
        return v

    def idf(self, t: str) -> float:
        c = self.df(t)
        return math.log((self.n + 1) / c) if c else self.default_idf

    def search(self, mention: str) -> list[tuple[float, int, str, str]]:
        m = tokens(mention, self.lang)
        if not m or not self.pids:
            return []
        found: dict = {}  # (eid, words) -> (first position in the pool, lang, name)

        def consider(rows):
            for pid, seq, eid, name, toks_s in rows:
                toks = frozenset(toks_s.split(" "))
                if not (toks <= m or m <= toks) or toks == m:
                    continue
                k = (eid, toks)
                pos = (self._rank[pid], seq)
                cur = found.get(k)
                if cur is None or pos < cur[0]:
                    found[k] = (pos, self._lang[pid], name)

        for t in m:  # names contained in the mention: filed under their rarest word
            consider(self.con.execute(self._q_rare, (*self.pids, t)))
        dfs = {t: self.df(t) for t in m}
        if all(dfs.values()):  # names containing the mention: via its rarest word
            consider(self.con.execute(self._q_post, (*self.pids, min(m, key=lambda t: (dfs[t], t)))))
        best: dict = {}
        idf = self.idf
        whole = None  # the mention's weight: the union with a name it contains (m | toks is m)
        for (eid, toks), (_pos, lg, name) in found.items():
            shared = sum(idf(w) for w in m & toks)
            if toks <= m:  # not a pass over every word of a long mention per name
                if whole is None:
                    whole = sum(idf(w) for w in m | toks)
                union = whole
            else:
                union = sum(idf(w) for w in m | toks)
            sc = shared / union if union else 0.0
            cur = best.get(eid)
            if cur is None or (sc, lg, name) > (cur[0], cur[1], cur[2]):
                best[eid] = (sc, lg, name)
        return sorted(((sc, e, lg, nm) for e, (sc, lg, nm) in best.items()), key=lambda x: (-x[0], x[1]))
