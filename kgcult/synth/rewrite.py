"""An optional generator (any causal LM) rewrites template questions into natural ones; it
then answers its own question from the knowledge (the paper's Figure 17) and the rewrite
is kept only when that answer names a gold entity and no distractor."""
from __future__ import annotations

from typing import Protocol

from kgcult import ids
from kgcult.errors import KgcultError
from kgcult.extras import require
from kgcult.synth.graph import GraphCache
from kgcult.synth.name_match import mentions


class Generator(Protocol):
    """Anything that continues a prompt: ``generate(prompt) -> text``."""

    def generate(self, prompt: str) -> str: ...


LANG_NAMES = {"en": "English", "zh": "Chinese", "ja": "Japanese", "ko": "Korean", "ar": "Arabic",
              "es": "Spanish", "fr": "French", "pt": "Portuguese", "ru": "Russian", "he": "Hebrew",
              "de": "German", "it": "Italian"}


class CausalLMGenerator:
    """A causal LM from a local directory (or a hub id when the weights are cached),
    loaded with transformers' AutoModelForCausalLM; greedy decoding, deterministic.
    ``gguf_file`` loads a GGUF checkpoint from that directory (needs ``gguf``)."""

    def __init__(self, path: str, gguf_file: str | None = None, max_new_tokens: int = 64,
                 device: str | None = None):
        torch = require("torch", "probe", "--generator")
        transformers = require("transformers", "probe", "--generator")
        kw = {"gguf_file": gguf_file} if gguf_file else {}
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(path, **kw)
            self.model = transformers.AutoModelForCausalLM.from_pretrained(path, **kw)
        except (OSError, ValueError) as e:
            raise KgcultError(f"cannot load a causal LM from {path}: {e}") from None
        self.model.eval()
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model.to(self.device)
        self.max_new_tokens = max_new_tokens
        self._torch = torch

    def generate(self, prompt: str) -> str:
        tok = self.tokenizer
        text = prompt
        if getattr(tok, "chat_template", None):
            text = tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                           add_generation_prompt=True)
        enc = tok(text, return_tensors="pt").to(self.device)
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        with self._torch.no_grad():
            out = self.model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=False,
                                      pad_token_id=pad)
        return tok.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True)


def knowledge_text(q: dict) -> str:
    return "\n".join(f"- {s} — {p} — {o}" for s, p, o in q.get("fact_labels", []))


def question_prompt(q: dict) -> str:
    """The paper's Figures 16 (unique) and 15 (different), adapted to rewriting a question."""
    lang = LANG_NAMES.get(q["lang"], q["lang"])
    if q["setting"] == "different":
        head = (f"Assuming you are an expert in the field of {q['primary']}, rewrite the question below as a "
                f"natural, situational question in {lang} that involves the knowledge points from two countries.")
    else:
        head = (f"Consider the following cultural knowledge and rewrite the question below as a natural question "
                f"in {lang} that seeks expert advice.")
    return (f"{head}\n# Cultural Knowledge\n{knowledge_text(q)}\n# Question\n{q['question']}\n"
            "# Requirements\n- The question must not contain any offensive or discriminatory content.\n"
            "- Keep every name that the question mentions; do not reveal the answer.\n"
            "- Directly output the question, do not provide other contents.\n"
            f"- Use {lang}.\n")


def answer_prompt(q: dict, question: str) -> str:
    """The paper's Figure 17 (answer generation), asking for a short answer."""
    lang = LANG_NAMES.get(q["lang"], q["lang"])
    return (f"You are an expert in the field of {q['topic_label']} in {q.get('country_label') or q['country']}. "
            "Please refer to the following cultural knowledge to answer the question.\n"
            f"# Cultural Knowledge\n{knowledge_text(q)}\n# Question\n{question}\n"
            "# Requirements\n- Closely follow the cultural knowledge provided.\n"
            "- Directly output the answer; do not provide other contents.\n"
            f"- Use {lang}.\n")


def verify(q: dict, new_question: str, answer: str, gold_forms: set[str],
           distractor_forms: set[str]) -> tuple[bool, str]:
    """Accept a rewrite only if (1) the new question is one non-empty line that keeps every
    name the template question mentioned, (2) it does not give away a gold answer the
    template question did not contain, and (3) the generator's answer to it names a gold
    entity and no distractor (an entity the gold facts contrast it with)."""
    nq = new_question.strip()
    if not nq:
        return False, "empty question"
    if "\n" in nq:
        return False, "question spans several lines"
    for m in q.get("mentions", []):
        if not mentions(nq, m):
            return False, f"question lost the name {m!r}"
    leaked = [f for f in gold_forms if mentions(nq, f) and not mentions(q["question"], f)
              and not any(mentions(f, m) for m in q.get("mentions", []))]
    if leaked:
        return False, f"question gives away the answer {sorted(leaked)[0]!r}"
    hit_gold = sorted(f for f in gold_forms if mentions(answer, f))
    hit_bad = sorted(f for f in distractor_forms if mentions(answer, f) and f not in gold_forms
                     and not any(mentions(g, f) for g in hit_gold))
    if hit_bad:
        return False, f"answer names a distractor {hit_bad[0]!r}"
    if not hit_gold:
        return False, "answer names no gold entity"
    return True, f"answer names {hit_gold[0]!r}"


def rewrite(store, questions: list[dict], generator: Generator, keep_rejected: bool = True) -> list[dict]:
    """Rewrite each question with the generator, verify it, and keep the rewrite only when
    verified. Rejected rewrites leave the template question in place (``rewrite.status`` =
    "rejected") or, with ``keep_rejected=False``, drop the question."""
    cache = GraphCache(store)
    cache.fetch_names({ids.iri(x) for q in questions for x in q["gold_qids"] + q.get("distractor_qids", [])})
    out = []
    for q in questions:
        gold_forms = set().union(*(cache.surface_forms(ids.iri(g)) for g in q["gold_qids"]))
        bad_forms = set().union(*(cache.surface_forms(ids.iri(d)) for d in q.get("distractor_qids", [])), set())
        new_q = _first_line(generator.generate(question_prompt(q)))
        ans = generator.generate(answer_prompt(q, new_q)).strip() if new_q else ""
        ok, reason = verify(q, new_q, ans, gold_forms, bad_forms)
        r = dict(q)
        r["rewrite"] = {"status": "accepted" if ok else "rejected", "question": new_q,
                        "answer": ans, "reason": reason}
        if ok:
            r["template_question"] = q["question"]
            r["question"] = new_q
            r["source"] = "generator"
        elif not keep_rejected:
            continue
        out.append(r)
    return out


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        line = line.strip().strip('"').strip()
        if line:
            return line
    return ""
