"""Evaluation: MakiEval's four metrics over linked entities (``makieval``), linking quality
against a gold file (``linking``, ``kgcult link eval``) and MakiEval's own linking
procedure for comparison (``link_baseline``).
"""
