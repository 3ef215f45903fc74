"""Probers over the local graph's datasets: FmLAMA and DLAMA probing of masked and causal
LMs. :mod:`.models` loads a model, :mod:`.masked` and :mod:`.causal` score candidates,
:mod:`.templates` reads the prompt templates, :mod:`.run` probes into a resumable output
directory, :mod:`.metrics`, :mod:`.vectors` (mWS word vectors), :mod:`.report` and
:mod:`.plots` turn predictions into result tables and charts. Reading the datasets is
:mod:`.datasets`; a whole run (dataset, model, probe, report) is :mod:`.pipeline`.

Heavy dependencies (torch, transformers, matplotlib, the vector packages) are imported only
when a model is loaded or a chart drawn, through :func:`kgcult.extras.require`.
"""
from kgcult.probe.pipeline import probe
from kgcult.probe.run import probe_dlama, probe_fmlama

__all__ = ["probe", "probe_dlama", "probe_fmlama"]
