"""Metrics over linked entities: MakiEval's four (``kgcult.eval.makieval``)."""
