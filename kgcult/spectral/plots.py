"""Heatmaps of the spectral measures (matplotlib, Agg backend)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from kgcult.extras import require
from kgcult.probe.plots import pyplot


def heatmaps(rows: list[dict], d: Path) -> None:
    """er_heatmap.png and sr_heatmap.png: questions × sources."""
    plt = pyplot()
    colors = require("matplotlib.colors", "probe", "plotting results")
    sources = list(dict.fromkeys(r["source"] for r in rows))
    questions = list(dict.fromkeys(r["question"] for r in rows))
    for metric, fname, note in (("ER", "er_heatmap.png", "Effective rank (higher = more plural)"),
                                ("SR", "sr_heatmap.png", "Spectral ratio λ1/λ2 (higher = more consensus)")):
        M = np.full((len(questions), len(sources)), np.nan)
        for r in rows:
            v = r[metric]
            M[questions.index(r["question"]), sources.index(r["source"])] = v if np.isfinite(v) else np.nan
        fig, ax = plt.subplots(figsize=(2 + 1.4 * len(sources), 1 + 0.35 * len(questions)))
        norm = None
        finite = M[np.isfinite(M)]
        if metric == "SR" and finite.size and finite.min() > 0 and finite.max() / finite.min() > 100:
            norm = colors.LogNorm(vmin=finite.min(), vmax=finite.max())  # SR spans orders of magnitude
        im = ax.imshow(M, aspect="auto", cmap="viridis", norm=norm)
        ax.set_xticks(range(len(sources)))
        ax.set_xticklabels([s.rsplit("/", 1)[-1] for s in sources], rotation=30, ha="right", fontsize=8)
        ax.set_yticks(range(len(questions)))
        ax.set_yticklabels(questions, fontsize=7)
        for i in range(len(questions)):
            for j in range(len(sources)):
                if not np.isnan(M[i, j]):
                    ax.text(j, i, f"{M[i, j]:.2f}", ha="center", va="center", fontsize=6, color="w")
        fig.colorbar(im, ax=ax)
        ax.set_title(note, fontsize=9)
        fig.tight_layout()
        fig.savefig(d / fname, dpi=120)
        plt.close(fig)
