"""Spectral macro-structure analysis (Measuring Meta-Cultural Competency, §3): country ×
item matrices (:mod:`.matrices`) from the graph or from a model (scored by
:mod:`kgcult.probe`), their effective rank, spectral ratio and category
(:mod:`.measures`), the item rows (:mod:`.items`), a whole run written to files
(:mod:`.run`) and heatmaps (:mod:`.plots`)."""
from kgcult.spectral.items import items_from_view, read_items
from kgcult.spectral.matrices import ground_truth_matrix, model_matrix, softmax_rows
from kgcult.spectral.measures import (adjacency, analyse, categorize, effective_rank, eigenvalues,
                                      spectral_ratio)
from kgcult.spectral.run import items_rows, run_spectral, spectral, write

__all__ = ["adjacency", "analyse", "categorize", "effective_rank", "eigenvalues", "ground_truth_matrix",
           "items_from_view", "items_rows", "model_matrix", "read_items", "run_spectral", "softmax_rows", "spectral",
           "spectral_ratio", "write"]
