"""Multi-token masked-LM scoring (FmLAMA §4.1, mLAMA).

For a query (the template with [X] and [C] filled, [Y] open) and a candidate set, the
candidate C = (c_1..c_d) of d subtokens is scored from the query with exactly d [MASK]
tokens, Q_d = t(X, [MASK] * d):

- ``mean`` (FmLAMA eq. 2): (1/d) * sum_i log p(Q_d, [MASK]_i = c_i), log-softmax over the
  vocabulary at each mask position;
- ``geometric`` (mLAMA): the geometric mean of the subtoken probabilities,
  exp(mean log p): the same ranking as ``mean``, a probability-valued score;
- ``sum``: sum_i log p (no length normalisation; what the spectral paper uses).

Only lengths that some candidate has are queried (a length without candidates would score
nothing). One forward pass per (query, length), batched across queries of the same length;
the candidates' log-probabilities are gathered from it in one indexing operation.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kgcult.errors import KgcultError

SCORINGS = ("mean", "geometric", "sum")
# FmLAMA's code leaves out candidates longer than 10 subtokens; so does kgcult by default
# (--max-candidate-tokens 0 lifts the cap). A left-out candidate gets no score and no rank.
MAX_CANDIDATE_TOKENS = 10


@dataclass
class Candidates:
    labels: list[str]
    token_ids: list[list[int]]
    groups: dict  # length d -> (indices LongTensor [N_d], ids LongTensor [N_d, d])

    @property
    def max_len(self) -> int:
        return max(self.groups) if self.groups else 0


def _head_and_base(model) -> tuple[Any, Any]:
    """(base encoder, LM head) when the head can be applied to mask positions only."""
    base = getattr(model, "base_model", None)
    for name in ("cls", "lm_head"):
        head = getattr(model, name, None)
        if head is not None and base is not None and base is not model:
            return base, head
    return None, None


class MaskedScorer:
    kind = "masked"
    base: Any  # the encoder and the LM head, applied to mask positions only (fast_head), else None
    head: Any

    def __init__(self, model, tokenizer, device: str = "cpu", batch_size: int = 32,
                 scoring: str = "mean", fast_head: bool = True, max_tokens: int | None = MAX_CANDIDATE_TOKENS):
        if scoring not in SCORINGS:
            raise KgcultError(f"masked-LM scoring must be one of {', '.join(SCORINGS)}, not {scoring!r}")
        if tokenizer.mask_token_id is None:
            raise KgcultError("the tokenizer has no mask token: not a masked LM")
        self.model = model
        self.tok = tokenizer
        self.device = device
        self.batch_size = max(1, int(batch_size))
        self.scoring = scoring
        self.max_tokens = max_tokens or None   # candidates longer than this are not ranked
        self.base, self.head = _head_and_base(model) if fast_head else (None, None)
        self.forward_passes = 0  # counted rows (one per query and length)
        self._ctx_cache: dict[tuple[str, str], list[int]] = {}

    # -- candidates -------------------------------------------------------------------
    def _cand_ids(self, label: str) -> list[int]:
        text = label
        # byte-level BPE tokenizers mark a word start with the preceding space
        if getattr(self.tok, "add_prefix_space", None) is not None or "Roberta" in type(self.tok).__name__:
            text = " " + label
        return list(self.tok(text, add_special_tokens=False)["input_ids"])

    def prepare(self, labels: list[str]) -> Candidates:
        import torch

        ids = [self._cand_ids(c) for c in labels]
        by_len: dict[int, list[int]] = {}
        for i, t in enumerate(ids):
            if t and (self.max_tokens is None or len(t) <= self.max_tokens):
                by_len.setdefault(len(t), []).append(i)
        groups = {}
        for d, idx in sorted(by_len.items()):
            groups[d] = (torch.tensor(idx, dtype=torch.long, device=self.device),
                         torch.tensor([ids[i] for i in idx], dtype=torch.long, device=self.device))
        return Candidates(labels=list(labels), token_ids=ids, groups=groups)

    # -- queries ----------------------------------------------------------------------
    def _context_ids(self, before: str, after: str) -> tuple[list[int], int]:
        """Token ids of the query with one mask, and the mask's position."""
        key = (before, after)
        ids = self._ctx_cache.get(key)
        if ids is None:
            ids = list(self.tok(before + self.tok.mask_token + after)["input_ids"])
            if len(self._ctx_cache) < 100_000:
                self._ctx_cache[key] = ids
        pos = [i for i, t in enumerate(ids) if t == self.tok.mask_token_id]
        if len(pos) != 1:
            raise KgcultError(f"query {before!r}[Y]{after!r} holds a mask token already; "
                              f"subject or country labels must not contain {self.tok.mask_token!r}")
        return ids, pos[0]

    def query_ids(self, before: str, after: str, d: int) -> tuple[list[int], int]:
        """Ids of Q_d (the single mask expanded to d masks) and the first mask's position."""
        ids, p = self._context_ids(before, after)
        return ids[:p] + [self.tok.mask_token_id] * d + ids[p + 1:], p

    # -- scoring ----------------------------------------------------------------------
    def _mask_logprobs(self, batch_ids: list[list[int]], starts: list[int], d: int):
        """log-softmax over the vocabulary at the d mask positions: [B, d, V]."""
        import torch

        B = len(batch_ids)
        L = max(len(x) for x in batch_ids)
        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else 0
        inp = torch.full((B, L), pad, dtype=torch.long)
        att = torch.zeros((B, L), dtype=torch.long)
        for i, x in enumerate(batch_ids):
            inp[i, :len(x)] = torch.tensor(x)
            att[i, :len(x)] = 1
        inp, att = inp.to(self.device), att.to(self.device)
        rows = torch.arange(B, device=self.device)[:, None].expand(B, d)
        cols = torch.tensor(starts, device=self.device)[:, None] + torch.arange(d, device=self.device)[None, :]
        with torch.inference_mode():
            if self.head is not None:
                hidden = self.base(input_ids=inp, attention_mask=att).last_hidden_state
                logits = self.head(hidden[rows, cols])  # [B, d, V]
            else:
                logits = self.model(input_ids=inp, attention_mask=att).logits[rows, cols]
            self.forward_passes += B
            return torch.log_softmax(logits.float(), dim=-1)

    def score(self, queries: list[tuple[str, str]], cands: Candidates, progress=None) -> np.ndarray:
        """Scores [len(queries), len(candidates)]; -inf for candidates that tokenize to nothing."""
        import torch

        out = torch.full((len(queries), len(cands.labels)), float("-inf"))
        jobs = []  # (d, token length, query index)
        for qi, (before, after) in enumerate(queries):
            ids, _ = self._context_ids(before, after)
            for d in cands.groups:
                jobs.append((d, len(ids) + d - 1, qi))
        jobs.sort()
        i = 0
        while i < len(jobs):
            d = jobs[i][0]
            j = i
            # rows of d masks hold d vocabulary-sized log-prob vectors: keep B·d bounded
            rows_max = max(1, min(self.batch_size, (4 * self.batch_size) // d))
            while j < len(jobs) and j - i < rows_max and jobs[j][0] == d:
                j += 1
            chunk = jobs[i:j]
            built = [self.query_ids(*queries[q], d) for _, _, q in chunk]
            lp = self._mask_logprobs([b[0] for b in built], [b[1] for b in built], d)  # [B, d, V]
            idx, ids = cands.groups[d]
            g = lp[:, torch.arange(d, device=lp.device)[None, :], ids]  # [B, N_d, d]
            s = g.sum(-1) if self.scoring == "sum" else g.mean(-1)
            if self.scoring == "geometric":
                s = s.exp()
            qidx = torch.tensor([q for _, _, q in chunk])
            out[qidx[:, None], idx.cpu()[None, :]] = s.cpu()
            if progress is not None:
                progress(len(chunk))
            i = j
        return out.numpy()


def naive_score(model, tokenizer, queries, labels, device="cpu", scoring="mean") -> np.ndarray:
    """The reference loop: one forward pass per (query, candidate), full model, no batching.

    Same definition as :class:`MaskedScorer`; used by the tests (equality) and the benchmark
    (speed baseline)."""
    import torch

    sc = MaskedScorer(model, tokenizer, device=device, batch_size=1, scoring=scoring, fast_head=False)
    out = np.full((len(queries), len(labels)), -np.inf, dtype=np.float32)
    for qi, (before, after) in enumerate(queries):
        for ci, label in enumerate(labels):
            cid = sc._cand_ids(label)
            if not cid:
                continue
            ids, p = sc.query_ids(before, after, len(cid))
            with torch.inference_mode():
                logits = model(input_ids=torch.tensor([ids], device=device)).logits[0]
            lp = torch.log_softmax(logits[p:p + len(cid)].float(), -1)
            v = lp[torch.arange(len(cid)), torch.tensor(cid, device=device)]
            s = v.sum() if scoring == "sum" else v.mean()
            out[qi, ci] = float(s.exp() if scoring == "geometric" else s)
    return out
