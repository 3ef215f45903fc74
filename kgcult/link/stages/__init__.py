"""The linker's candidate stages, apart from the semantic one (``kgcult.link.semantic``).

Modules: ``base`` (``Stage``, what every stage is, and ``Context``, what it may read of the
linker; the stages are registered in ``kgcult/link/pipeline.py``), ``lexical`` (exact,
normalized, english, any, fuzzy, anyfuzzy, tokens), ``stemmed`` (the stem and compound
stages), ``morphology`` (their keys: Snowball stems, compound splitting),
``morphology_pools`` (their pools on disk beside the index), ``embedding`` (the opt-in
faiss embedding stage).
"""
