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
QIDs of an ambiguous result; ``decided_by`` the graph criteria that settled a tie),
stages (the stages that ran, comma-separated in pipeline order). A mention longer than
``mention_rows.Limits`` (1,000 characters, 64 words by default) is refused as a bad row.

The rooms:

* here, the linker itself: ``linker`` (batches through the stages, typing by topic),
  ``pipeline`` (the stage registry, in order; defaults), ``state`` (typed per-mention
  state, candidates, ranked candidates), ``rank`` (deterministic order), ``ties`` and
  ``disambiguate`` (ties settled by the graph), ``record`` (the result record),
  ``topics`` (``ontology/topics.ttl``), ``normalize`` (name keys), ``matching`` (fuzzy and
  token primitives), ``memo`` (bounded memos and open-pool caches), ``mention_rows``
  (input rows: the one check, the length cap, JSONL files);
* ``index/``: the label index beside the store (``reader``, ``build``, ``encoding``,
  ``layout``, ``name_pools``);
* ``stages/``: the candidate stages (``base``: what a stage is; ``lexical``: exact ...
  tokens; ``stemmed``: stem and compound, over ``morphology`` and ``morphology_pools``;
  ``embedding``: the optional faiss stage);
* ``semantic/``: the multilingual USE stage (``stage``, ``search``, ``bound``, ``checks``,
  ``use_model``, ``use_tokenizer``).

Link evaluation (``kgcult link eval``) and MakiEval's own procedure live in
:mod:`kgcult.eval.linking` and :mod:`kgcult.eval.link_baseline`.
"""
from kgcult.link.pipeline import STAGES
from kgcult.link.index.reader import LabelIndex, load_or_build
from kgcult.link.linker import Linker
from kgcult.link.topics import Topic, load_topics

__all__ = ["Linker", "LabelIndex", "load_or_build", "load_topics", "Topic", "STAGES"]
