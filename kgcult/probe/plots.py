"""Charts of probing results (matplotlib, Agg backend: files only, no display)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from kgcult import extras


def pyplot():
    """matplotlib.pyplot for the probing charts (the ``probe`` extra)."""
    return extras.pyplot("probe", "plotting results")


def bar_chart(path: Path, names, series, title: str) -> None:
    """Grouped bars in % per name; ``series`` is [(label, values, errors or None)]."""
    plt = pyplot()
    x = np.arange(len(names))
    width = 0.8 / max(1, len(series))
    fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(names) + 2), 4))
    for i, (label, vals, errs) in enumerate(series):
        v = np.array([np.nan if a is None else 100 * a for a in vals], dtype=float)
        e = None if errs is None else np.array([0 if a is None else 100 * a for a in errs], dtype=float)
        if np.all(np.isnan(v)):
            continue
        ax.bar(x + (i - (len(series) - 1) / 2) * width, np.nan_to_num(v), width, yerr=e, capsize=2, label=label)
    ax.set_xticks(x)
    ax.set_xticklabels(names, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("%")
    ax.set_title(title, fontsize=9)
    if ax.get_legend_handles_labels()[0]:  # no legend when every series was empty
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
