"""Entity linking on the local graph (MakiEval §3.3, deterministic, multilingual, fast).

Public API (stable)::

    from kgcult.link import Linker
    linker = Linker.open(store_or_path, model=None, embeddings=False, stages=None)
    linker.link("lemon", lang="en", topic="food", country=None) -> dict
    linker.link_many([{"mention": ..., "lang": ..., "topic": ..., "country": ..., "id": ...}])

Each result has: qid (or None), label (mention's language), label_en, match, lang_used,
candidates (with scores), evidence (path of [subject, property, object] to a topic root),
granularity (+ granularity_score), country (QIDs: origin, else country, else
nationality), description, status (resolved | unresolved | ambiguous; ``tied`` lists the
QIDs of an ambiguous result; ``decided_by`` the graph criteria that settled a tie).

Modules: ``index`` (the label index beside the store), ``topics`` (``ontology/topics.ttl``),
``normalize`` (name keys), ``candidates`` (the string stages), ``morphology`` (stem and
compound stages), ``semantic`` (multilingual USE stage), ``embed`` (the optional
embedding stage), ``pipeline`` (stage order, defaults), ``rank``, ``disambiguate`` (ties
settled by the graph), ``linker``, ``io`` (JSONL input rows), ``evaluate`` (``kgcult link
eval``), ``baseline`` (MakiEval's own procedure, for comparison).
"""
from kgcult.link.pipeline import STAGES
from kgcult.link.index import LabelIndex, load_or_build
from kgcult.link.linker import Linker
from kgcult.link.topics import Topic, load_topics

__all__ = ["Linker", "LabelIndex", "load_or_build", "load_topics", "Topic", "STAGES"]
