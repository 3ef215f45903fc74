"""``kgcult mirror``: subgraphs pulled from a WDQS-compatible SPARQL endpoint.

Modules: ``mirror`` (the run), ``client`` (settings, politeness, HTTP), ``queries`` (the
templates of ``queries/mirror/``), ``checkpoint`` (resume across runs).
"""
