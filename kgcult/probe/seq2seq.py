"""Encoder-decoder (T5, mT5) scoring with sentinel spans, as FmLAMA reports for T5 models.

The query is the template with ``<extra_id_0>`` in place of [Y]; each candidate is scored as
the target ``<extra_id_0> candidate <extra_id_1>`` (with the end-of-sequence token the
tokenizer appends), by the mean log-probability of the target's tokens, i.e. minus the
per-token cross-entropy that ``model(input_ids, labels=target).loss`` gives. Higher is
better. ``sum`` (the sum of the log-probabilities) is offered for comparison.

Candidates whose own tokens (between the sentinels) are more than ``max_tokens`` long are
left out (no score), as the masked scorer does.
"""
from __future__ import annotations

import numpy as np

from kgcult.errors import KgcultError

SCORINGS = ("mean", "sum")
SENTINEL_0, SENTINEL_1 = "<extra_id_0>", "<extra_id_1>"


class Seq2SeqScorer:
    kind = "seq2seq"

    def __init__(self, model, tokenizer, device: str = "cpu", batch_size: int = 32,
                 scoring: str = "mean", max_tokens: int | None = 10):
        if scoring not in SCORINGS:
            raise KgcultError(f"encoder-decoder scoring must be one of {', '.join(SCORINGS)}, not {scoring!r}")
        vocab = tokenizer.get_vocab()
        if SENTINEL_0 not in vocab or SENTINEL_1 not in vocab:
            raise KgcultError("the tokenizer has no <extra_id_0>/<extra_id_1> sentinels: not a T5-style model")
        self.model = model
        self.tok = tokenizer
        self.device = device
        self.batch_size = max(1, int(batch_size))
        self.scoring = scoring
        self.max_tokens = max_tokens or None
        self.forward_passes = 0

    def target_ids(self, label: str) -> list[int]:
        """``<extra_id_0> label <extra_id_1>`` as the tokenizer writes it (with </s>)."""
        return list(self.tok(f"{SENTINEL_0} {label} {SENTINEL_1}")["input_ids"])

    def prepare(self, labels: list[str]) -> list[list[int] | None]:
        """Target ids per candidate; None for a candidate over the length cap."""
        out: list[list[int] | None] = []
        for label in labels:
            own = self.tok(label, add_special_tokens=False)["input_ids"]
            if not own or (self.max_tokens is not None and len(own) > self.max_tokens):
                out.append(None)
            else:
                out.append(self.target_ids(label))
        return out

    def query_ids(self, before: str, after: str) -> list[int]:
        return list(self.tok(f"{before}{SENTINEL_0}{after}")["input_ids"])

    def score(self, queries: list[tuple[str, str]], targets: list[list[int] | None], progress=None) -> np.ndarray:
        import torch

        out = np.full((len(queries), len(targets)), -np.inf, dtype=np.float32)
        live = [i for i, t in enumerate(targets) if t]
        tids = [t or [] for t in targets]  # as targets, [] for the ones not ranked
        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else 0
        for qi, (before, after) in enumerate(queries):
            q = torch.tensor([self.query_ids(before, after)], dtype=torch.long, device=self.device)
            with torch.inference_mode():
                enc = self.model.get_encoder()(input_ids=q).last_hidden_state
            for s in range(0, len(live), self.batch_size):
                chunk = live[s:s + self.batch_size]
                B, L = len(chunk), max(len(tids[c]) for c in chunk)
                labels = torch.full((B, L), -100, dtype=torch.long)
                for b, c in enumerate(chunk):
                    labels[b, :len(tids[c])] = torch.tensor(tids[c])
                labels = labels.to(self.device)
                dec_in = self.model._shift_right(labels.masked_fill(labels == -100, pad))
                with torch.inference_mode():
                    logits = self.model(encoder_outputs=(enc.expand(B, -1, -1),), decoder_input_ids=dec_in).logits
                    self.forward_passes += B
                    lp = torch.log_softmax(logits.float(), -1)
                    mask = labels != -100
                    tok_lp = lp.gather(-1, labels.clamp(min=0)[..., None])[..., 0] * mask
                    sums = tok_lp.sum(1)
                    vals = sums / mask.sum(1) if self.scoring == "mean" else sums
                for b, c in enumerate(chunk):
                    out[qi, c] = float(vals[b])
            if progress is not None:
                progress(1)
        return out
