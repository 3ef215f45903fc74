"""``kgcult annotate``: entity spans and QIDs in raw model output, offline and deterministic,
over the link index's names in every language (docs/annotate.md).

Public API::

    from kgcult.annotate import Annotator
    ann = Annotator.open(store_or_path)
    ann.annotate("Ramen ist eine Nudelsuppe", lang="de", topic="food", country="Q17") -> [span, ...]
    ann.annotate_many([{"id", "text", "lang", "topic", "country"?}, ...]) -> {"id", "spans"} ...

The rooms: ``text`` (words, unspaced runs, folded keys), ``grammar`` (attached grammar per
language, from ``ontology/annotate-grammar.json``), ``names`` (the dictionary over the link
index, saved beside it), ``finder`` (spans: word sequences, the automaton, the longest
name), ``segment`` (words of unspaced scripts), ``across`` (unmatched words to the
linker's cross-script stages), ``choose`` (the entity in the text's context), ``annotator`` (records), ``rows``
(input rows and files), ``evaluate`` (scores against a gold file), ``metrics``
(MakiEval's four metrics from spans).
"""
from kgcult.annotate.annotator import Annotator

__all__ = ["Annotator"]
