"""The linker's candidate stages, apart from the semantic one (``kgcult.link.semantic``).

Modules: ``lexical`` (exact, normalized, english, any, fuzzy, anyfuzzy, tokens),
``morphology`` (Snowball stem and compound splitting), ``morphology_pools`` (their pools on
disk beside the index), ``embedding`` (the opt-in faiss embedding stage).
"""
