"""Probers over the local graph's datasets: FmLAMA and DLAMA probing of masked and causal
LMs (:mod:`.masked`, :mod:`.causal`, :mod:`.run`), their metrics (:mod:`.metrics`,
:mod:`.report`) and spectral macro-structure analysis (:mod:`.spectral`).

Heavy dependencies (torch, transformers) are imported only when a model is loaded.
"""
from kgcult.probe.run import probe_dlama, probe_fmlama  # noqa: F401
