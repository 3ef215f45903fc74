"""The label index beside the store: every label and alias per language under exact and
normalized keys, with the per-entity facts the linker reads on its hot path.

Modules: ``reader`` (:class:`~kgcult.link.index.reader.LabelIndex`, ``load_or_build``),
``build`` (streaming build from the store's quads), ``encoding`` (the stored format:
format number, name codes, packed arrays), ``layout`` (the directory on disk: SQLite file,
raw arrays), ``name_pools`` (the fuzzy and token pools stored with the index).
"""
