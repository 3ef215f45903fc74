"""CultureSynth on the local graph (CultureSynth §3): the SKOS taxonomy and its keywords
from the graph (:mod:`.taxonomy`), knowledge points (:mod:`.knowledge`), template QA
synthesis (:mod:`.templates`, :mod:`.generate`, over :mod:`.graph`), an optional generator
that rewrites template questions, verified against the gold facts (:mod:`.rewrite`), and
scoring of a model's free-text answers with the entity linker (:mod:`.score`); a whole
``kgcult synth`` run in one call (:mod:`.pipeline`)."""
from kgcult.synth.generate import check_questions, synthesize
from kgcult.synth.knowledge import knowledge_point, knowledge_point_for_text, link_keywords
from kgcult.synth.rewrite import CausalLMGenerator, Generator, rewrite, verify
from kgcult.synth.score import format_report, score_answers
from kgcult.synth.templates import SETTINGS, load_templates, template_langs
from kgcult.synth.name_match import mentions

__all__ = ["CausalLMGenerator", "Generator", "SETTINGS", "check_questions", "format_report",
           "knowledge_point", "knowledge_point_for_text", "link_keywords", "load_templates", "mentions",
           "rewrite", "score_answers", "synthesize", "template_langs", "verify"]
