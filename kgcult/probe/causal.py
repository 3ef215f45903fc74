"""Causal-LM (decoder-only) scoring: the log-probability of a candidate as the continuation
of the query's text before [Y].

``sum`` = log P(c_1..c_d | prefix) = sum_i log p(c_i | prefix, c_<i); ``mean`` = that sum / d.
With ``span="sentence"`` the text after [Y] is scored too (continuation = candidate +
rest of the sentence), which lets templates that put [Y] first see the subject.

Word boundaries: when the template has a space before [Y] the prefix is stripped of it and
the candidate is tokenized with a leading space (how BPE vocabularies mark word starts);
templates that glue [Y] to the text (Chinese, Korean particles) glue the candidate too.
All (query, candidate) sequences are right-padded and scored in batches of ``batch_size``.
"""
from __future__ import annotations

import numpy as np

from kgcult.errors import KgcultError

SCORINGS = ("sum", "mean")


class CausalScorer:
    kind = "causal"

    def __init__(self, model, tokenizer, device: str = "cpu", batch_size: int = 32,
                 scoring: str = "sum", span: str = "object"):
        if scoring not in SCORINGS:
            raise KgcultError(f"causal-LM scoring must be one of {', '.join(SCORINGS)}, not {scoring!r}")
        if span not in ("object", "sentence"):
            raise KgcultError(f"span must be object or sentence, not {span!r}")
        self.model = model
        self.tok = tokenizer
        self.device = device
        self.batch_size = max(1, int(batch_size))
        self.scoring = scoring
        self.span = span
        self.forward_passes = 0

    def prepare(self, labels: list[str]) -> list[str]:
        return list(labels)

    def _start_ids(self) -> list[int]:
        for t in (self.tok.bos_token_id, self.tok.eos_token_id):
            if t is not None:
                return [t]
        raise KgcultError("the tokenizer has neither a BOS nor an EOS token to start an empty prefix")

    def pair_ids(self, before: str, after: str, label: str) -> tuple[list[int], list[int]]:
        spaced = before.endswith((" ", "\t"))
        prefix = before.rstrip(" \t") if spaced else before
        cont = (" " if spaced and prefix else "") + label
        if self.span == "sentence":
            cont += after
        p = list(self.tok(prefix)["input_ids"]) if prefix else []
        if not p:
            p = self._start_ids()
        c = list(self.tok(cont, add_special_tokens=False)["input_ids"])
        return p, c

    def score(self, queries: list[tuple[str, str]], labels: list[str], progress=None) -> np.ndarray:
        import torch

        out = np.full((len(queries), len(labels)), -np.inf, dtype=np.float32)
        jobs = []
        for qi, (before, after) in enumerate(queries):
            for ci, label in enumerate(labels):
                p, c = self.pair_ids(before, after, label)
                if c:
                    jobs.append((len(p) + len(c), qi, ci, p, c))
        jobs.sort(key=lambda j: j[0])
        pad = self.tok.pad_token_id
        if pad is None:
            pad = self.tok.eos_token_id if self.tok.eos_token_id is not None else 0
        for s in range(0, len(jobs), self.batch_size):
            chunk = jobs[s:s + self.batch_size]
            B, L = len(chunk), max(j[0] for j in chunk)
            inp = torch.full((B, L), pad, dtype=torch.long)
            att = torch.zeros((B, L), dtype=torch.long)
            tgt_mask = torch.zeros((B, L), dtype=torch.bool)
            for b, (n, _, _, p, c) in enumerate(chunk):
                inp[b, :n] = torch.tensor(p + c)
                att[b, :n] = 1
                tgt_mask[b, len(p):n] = True  # positions whose token is scored
            inp, att = inp.to(self.device), att.to(self.device)
            with torch.inference_mode():
                logits = self.model(input_ids=inp, attention_mask=att).logits
                self.forward_passes += B
                # token t is predicted at position t-1
                pred = torch.log_softmax(logits[:, :-1].float(), -1)
                tok_lp = pred.gather(-1, inp[:, 1:, None])[..., 0].cpu()
            m = tgt_mask[:, 1:]
            sums = (tok_lp * m).sum(1)
            counts = m.sum(1).clamp(min=1)
            vals = sums if self.scoring == "sum" else sums / counts
            for b, (_, qi, ci, _, _) in enumerate(chunk):
                out[qi, ci] = float(vals[b])
            if progress is not None:
                progress(B)
        return out
