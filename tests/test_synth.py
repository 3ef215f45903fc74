"""CultureSynth on the graph: knowledge points, template QA synthesis, verification of
generator rewrites, and scoring answers with the entity linker."""
from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest

from kgcult.store import hierarchy
from kgcult import resources
from kgcult import synth
from kgcult.synth import taxonomy
from kgcult.errors import KgcultError
from kgcult.store import Store

from tests.conftest import run_cli

FIXTURE = Path(__file__).parent / "fixtures" / "synth" / "mini.ttl"


@pytest.fixture(scope="module")
def mini_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("synth") / "mini"
    with Store(path) as s:
        s.load([FIXTURE])
        hierarchy.ensure_closure(s)
    return path


@pytest.fixture
def mini(mini_path):
    s = Store(mini_path, read_only=True)
    yield s
    s.close()


def _by(qs, template, keyword=None, lang="en"):
    found = [q for q in qs if q["template"] == template and q["lang"] == lang
             and (keyword is None or q["keyword"] == keyword)]
    assert len(found) == 1, (template, keyword, lang, [q["question"] for q in found])
    return found[0]


# -- templates ------------------------------------------------------------------------

def test_templates_render_pinned():
    en = {t.id: t for t in synth.load_templates("en")}
    assert en["origin"].render(subject="sushi") == "Where does sushi originally come from?"
    assert en["which_from"].render(subject="sushi", other="pizza", country="Japan", **{"class": "dish"}) == \
        "Of sushi and pizza (both: dish), which one comes from Japan?"
    ja = {t.id: t for t in synth.load_templates("ja")}
    assert ja["ingredient"].render(subject="寿司") == "寿司の材料を一つ挙げてください。"
    fr = {t.id: t for t in synth.load_templates("fr")}
    assert fr["official_language_diff"].render(country="Japon", other_country="Corée du Sud") == \
        "Citez une langue officielle de ce pays : Japon, qui n'est pas une langue officielle de cet autre pays : Corée du Sud."
    with pytest.raises(KgcultError, match="no value for {subject}"):
        en["origin"].render(country="Japan")


def test_every_language_has_the_same_templates():
    langs = synth.template_langs()
    assert {"en", "ar", "es", "fr", "ja", "ko", "pt", "zh", "ru", "he"} <= set(langs)
    ids = {lang: sorted((t.id, t.kind, t.setting, t.property) for t in synth.load_templates(lang)) for lang in langs}
    assert all(v == ids["en"] for v in ids.values())


def test_bad_template_files(tmp_path):
    (tmp_path / "xx.json").write_text('{"templates": [{"id": "a", "kind": "fact", "setting": "unique", '
                                      '"question": "{subject}?"}]}', encoding="utf-8")
    with pytest.raises(KgcultError, match=r"xx.json: templates\[0\] \(a\): kind fact needs a property"):
        synth.load_templates("xx", tmp_path)
    (tmp_path / "yy.json").write_text('{"templates": [{"id": "a", "kind": "fact", "setting": "unique", '
                                      '"property": "P17", "question": "{nope}?"}]}', encoding="utf-8")
    with pytest.raises(KgcultError, match=r"unknown placeholder \{nope\}"):
        synth.load_templates("yy", tmp_path)
    (tmp_path / "zz.json").write_text('{"templates": [\n{"id": }]}', encoding="utf-8")
    with pytest.raises(KgcultError, match=r"zz.json:2: invalid JSON"):
        synth.load_templates("zz", tmp_path)
    with pytest.raises(KgcultError, match="no question templates for language 'qq'"):
        synth.load_templates("qq", tmp_path)


# -- knowledge points -----------------------------------------------------------------

def test_knowledge_point(mini):
    kp = synth.knowledge_point(mini, "Q46383", "ja")
    assert (kp["label"], kp["label_lang"], kp["description"]) == ("寿司", "ja", "酢飯を用いる日本料理")
    assert kp["aliases"] == ["すし"]
    facts = [(f["property"], f["value"], f["value_label"]) for f in kp["facts"]]
    assert facts == [("P31", "Q746549", "料理"), ("P495", "Q17", "日本"),
                     ("P527", "Q5090", "米"), ("P527", "Q11254", "塩"), ("P527", "Q600396", "魚"),
                     ("P2012", "Q234138", "日本料理")]
    assert kp["facts_in_lang"] == 6
    with pytest.raises(KgcultError, match="Q123456789: not in the store"):
        synth.knowledge_point(mini, "Q123456789", "en")


@pytest.mark.slow  # 5-7 s: make test-all
def test_knowledge_point_for_free_text_links_first(mini):
    pytest.importorskip("kgcult.link")
    kp = synth.knowledge_point_for_text(mini, "kimchi", "ko")
    assert kp["qid"] == "Q9900001" and kp["label"] == "김치" and kp["link"]["status"] == "resolved"
    with pytest.raises(KgcultError, match="no entity"):
        synth.knowledge_point_for_text(mini, "zzzz qqqq", "en")


# -- synthesis ------------------------------------------------------------------------

def test_synth_unique_setting_pinned(mini):
    qs = synth.synthesize(mini, taxonomy.load(), "food", "Q17", ["en", "ja", "ko"], settings=["unique"])
    q = _by(qs, "ingredient", "Q46383")
    assert q["question"] == "Name an ingredient of sushi."
    assert q["answers"] == ["fish as food", "rice", "salt"]
    assert q["gold_qids"] == ["Q5090", "Q11254", "Q600396"]
    assert q["facts"] == [["Q46383", "P527", "Q5090"], ["Q46383", "P527", "Q11254"], ["Q46383", "P527", "Q600396"]]
    assert (q["setting"], q["topic"], q["country"]) == ("unique", "SS.05", "Q17")
    q = _by(qs, "origin", "Q9900010", lang="ja")
    assert (q["question"], q["answers"], q["gold_qids"]) == ("スープカレーの発祥地はどこですか？", ["北海道"], ["Q9900009"])
    q = _by(qs, "name_one", "Q746549", lang="ko")
    assert q["question"] == "일본의 요리을(를) 하나 말해 보세요."
    assert q["gold_qids"] == ["Q46383", "Q9900004"]  # soup curry's origin is a region: not a direct fact
    assert q["facts"] == [["Q46383", "P495", "Q17"], ["Q9900004", "P495", "Q17"]]
    assert {q["lang"] for q in qs} == {"en", "ja", "ko"}
    assert all(q["setting"] == "unique" for q in qs)
    assert synth.check_questions(mini, qs) == []


def test_synth_different_setting_pinned(mini):
    tax = taxonomy.load()
    qs = synth.synthesize(mini, tax, "food", "Q17", ["en", "fr"], settings=["different"], versus=["Q38"])
    q = _by(qs, "which_from", "Q46383", lang="fr")
    assert q["question"] == ("« sushi » et « pizza » sont tous deux du type « plat ». "
                             "Lequel des deux est originaire de ce pays : Japon ?")
    assert (q["gold_qids"], q["distractor_qids"], q["other"], q["other_country"]) == (["Q46383"], ["Q177"], "Q177", "Q38")
    assert q["facts"] == [["Q177", "P31", "Q746549"], ["Q177", "P495", "Q38"],
                          ["Q46383", "P31", "Q746549"], ["Q46383", "P495", "Q17"]]
    q = _by(qs, "ingredient_diff", "Q46383")
    assert q["question"] == "Name an ingredient of sushi that pizza does not have."
    assert (q["gold_qids"], q["distractor_qids"]) == (["Q5090", "Q600396"], ["Q10943", "Q9900006"])
    lang = synth.synthesize(mini, tax, "LAN", "Q17", ["ko"], settings=["different"], versus=["Q884"])
    assert [(q["template"], q["question"], q["gold_qids"], q["distractor_qids"], q["topic"]) for q in lang] == [
        ("official_language_diff", "일본의 공용어 중 대한민국의 공용어가 아닌 것을 하나 말해 보세요.",
         ["Q5287"], ["Q9176"], "LAN.12")]
    # same official currency (euro): no contrast question; France is Italy's neighbour (P47)
    it = synth.synthesize(mini, tax, "currency", "Q38", ["en"], settings=["different"])
    assert it == []
    assert synth.check_questions(mini, qs + lang) == []


def test_synth_is_deterministic_and_limited(mini):
    tax = taxonomy.load()
    a = synth.synthesize(mini, tax, "SS", "Q17", ["en", "zh"], versus=["Q884"])
    b = synth.synthesize(mini, tax, "SS", "Q17", ["en", "zh"], versus=["Q884"])
    assert a == b and len({q["id"] for q in a}) == len(a)
    limited = synth.synthesize(mini, tax, "SS", "Q17", ["en", "zh"], limit=3)
    assert [q["lang"] for q in limited] == ["en"] * 3 + ["zh"] * 3


def test_synth_errors(mini):
    tax = taxonomy.load()
    with pytest.raises(KgcultError, match="unknown setting"):
        synth.synthesize(mini, tax, "food", "Q17", ["en"], settings=["odd"])
    with pytest.raises(KgcultError, match="no question templates for language 'xx'"):
        synth.synthesize(mini, tax, "food", "Q17", ["xx"])
    with pytest.raises(KgcultError, match="--country"):
        synth.synthesize(mini, tax, "food", "Japan", ["en"])


def test_check_questions_finds_ungrounded_facts(mini):
    q = synth.synthesize(mini, taxonomy.load(), "food", "Q17", ["en"], settings=["unique"])[0]
    bad = dict(q, facts=[["Q46383", "P495", "Q884"]], gold_qids=["Q884", "Q123456789"])
    problems = synth.check_questions(mini, [bad])
    assert any("fact Q46383 P495 Q884 is not in the graph" in p for p in problems)
    assert any("gold Q123456789 has no label" in p for p in problems)


def test_cli_synth_three_languages(mini_path, tmp_path):
    out = tmp_path / "q.jsonl"
    r = run_cli(["synth", "--topic", "SS", "--country", "Q17", "--lang", "en,ja", "--lang", "zh",
                 "--versus", "Q884", "-o", str(out)], mini_path)
    assert r.exit_code == 0, r.output
    qs = [json.loads(l) for l in out.read_text(encoding="utf-8").splitlines()]
    assert {q["lang"] for q in qs} == {"en", "ja", "zh"}
    assert {q["setting"] for q in qs} == {"unique", "different"}
    assert "19 question(s)" not in r.stderr and "en 19, ja 19, zh 19" in r.stderr
    with Store(mini_path, read_only=True) as s:
        assert synth.check_questions(s, qs) == []
    r = run_cli(["synth", "--topic", "food", "--lang", "en"], mini_path)
    assert r.exit_code == 1 and "--topic and --country" in r.stderr
    r = run_cli(["synth", "--topic", "food", "--country", "Q17", "--lang", "tlh"], mini_path)
    assert r.exit_code == 1 and "no question templates for language 'tlh'" in r.stderr


def test_cli_knowledge(mini_path):
    r = run_cli(["synth", "knowledge", "Q9900004", "--lang", "zh"], mini_path)
    assert r.exit_code == 0, r.output
    kp = json.loads(r.stdout)
    assert kp["label"] == "拉面" and [f["value_label"] for f in kp["facts"]] == ["汤面", "日本", "面条"]


# -- verification of generator rewrites ---------------------------------------------

class ScriptedGenerator:
    """A deterministic stand-in for a causal LM, for the verification unit test only:
    returns ``question`` for question prompts and ``answer`` for answer prompts."""

    def __init__(self, question: str, answer: str):
        self.question, self.answer = question, answer
        self.prompts: list[str] = []

    def generate(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.answer if prompt.startswith("You are an expert") else self.question


@pytest.mark.parametrize("new_q,answer,status,reason", [
    ("When you eat sushi in a restaurant, what ingredient would you taste?\nextra", "Rice, mostly.",
     "accepted", "answer names 'rice'"),
    ("Which ingredient goes into sushi?", "Cheese.", "rejected", "answer names no gold entity"),
    ("Which ingredient goes into this dish?", "rice", "rejected", "question lost the name 'sushi'"),
    ("Is rice an ingredient of sushi?", "yes, rice", "rejected", "question gives away the answer 'rice'"),
    ("", "rice", "rejected", "empty question"),
])
def test_rewrite_verification(mini, new_q, answer, status, reason):
    q = _by(synth.synthesize(mini, taxonomy.load(), "food", "Q17", ["en"], settings=["unique"]),
            "ingredient", "Q46383")
    gen = ScriptedGenerator(new_q, answer)
    [r] = synth.rewrite(mini, [q], gen)
    assert r["rewrite"]["status"] == status
    assert r["rewrite"]["reason"] == reason
    if status == "accepted":
        assert r["question"] == new_q.splitlines()[0] and r["template_question"] == q["question"]
        assert r["source"] == "generator" and r["gold_qids"] == q["gold_qids"]
        assert "sushi — has part(s) — rice" in gen.prompts[0]
    else:
        assert r["question"] == q["question"] and r["source"] == "template"
    assert synth.rewrite(mini, [q], ScriptedGenerator(new_q, answer), keep_rejected=False) == \
        ([r] if status == "accepted" else [])


def test_rewrite_rejects_a_distractor_answer(mini):
    q = _by(synth.synthesize(mini, taxonomy.load(), "food", "Q17", ["en"], settings=["different"], versus=["Q38"]),
            "which_from", "Q46383")
    [r] = synth.rewrite(mini, [q], ScriptedGenerator("Between sushi and pizza, which is Japanese?", "Pizza."))
    assert (r["rewrite"]["status"], r["rewrite"]["reason"]) == ("rejected", "answer names a distractor 'pizza'")
    [r] = synth.rewrite(mini, [q], ScriptedGenerator("Between sushi and pizza, which is Japanese?", "Sushi."))
    assert r["rewrite"]["status"] == "accepted"


def test_mentions_word_boundaries():
    assert synth.mentions("Rice, mostly.", "rice")
    assert not synth.mentions("licorice", "rice")
    assert synth.mentions("寿司の材料は米です", "米")
    assert synth.mentions("김치는 맛있다", "김치")
    assert synth.mentions("ＲＩＣＥ", "rice")  # NFKC + casefold


def _tiny_gpt2(path: Path) -> Path:
    """A random-weight GPT-2 with a word-level tokenizer, saved like any local model."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    words = ["[UNK]", "[EOS]", "sushi", "rice", "fish", "salt", "name", "an", "ingredient", "of", "which",
             "the", "is", "what", "?", "."]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="[EOS]")
    cfg = GPT2Config(vocab_size=len(words), n_positions=1024, n_embd=16, n_layer=1, n_head=2,
                     bos_token_id=1, eos_token_id=1)
    import torch

    torch.manual_seed(0)
    GPT2LMHeadModel(cfg).save_pretrained(path)
    fast.save_pretrained(path)
    return path


@pytest.mark.slow
def test_causal_lm_generator_from_a_local_path(mini, tmp_path):
    pytest.importorskip("transformers")
    path = _tiny_gpt2(tmp_path / "gpt2")
    gen = synth.CausalLMGenerator(str(path), max_new_tokens=8, device="cpu")
    text = gen.generate("name an ingredient of sushi .")
    assert isinstance(text, str) and gen.generate("name an ingredient of sushi .") == text  # greedy
    q = _by(synth.synthesize(mini, taxonomy.load(), "food", "Q17", ["en"], settings=["unique"]),
            "ingredient", "Q46383")
    [r] = synth.rewrite(mini, [q], gen)
    # random weights: whatever it writes, the verifier decides; the record stays grounded
    assert r["rewrite"]["status"] in ("accepted", "rejected") and r["rewrite"]["reason"]
    assert r["gold_qids"] == q["gold_qids"] and r["facts"] == q["facts"]
    with pytest.raises(KgcultError, match="cannot load a causal LM"):
        synth.CausalLMGenerator(str(tmp_path / "nothing-here"))


# -- scoring answers ------------------------------------------------------------------

ANSWERS = {  # (template, keyword) -> a model's answer
    ("country", "Q234138"): "Nippon",               # alias of Japan
    ("cuisine", "Q46383"): "Japanese cuisine",      # exact
    ("ingredient", "Q9900004"): "pizza",            # miss (a dish, not an ingredient)
    ("ingredient", "Q46383"): "Rice and salt.",     # exact (first part)
    ("kind", "Q46383"): "food",                     # ancestor of dish
    ("name_one", "Q746549"): "sushi",               # exact
    ("origin", "Q9900010"): "Japan",                # ancestor: Hokkaido is located in Japan
    ("origin", "Q46383"): "japan",                  # exact (case ignored)
    ("ingredient_diff", "Q46383"): "fish",          # alias of fish as food
    ("which_from", "Q46383"): "kimchi",             # miss: the distractor
    ("public_holiday", "Q17"): "",                  # unanswered: miss
    ("kind", "Q8146"): "currency",                  # exact
    ("currency", "Q17"): "円",                       # exact: a label in another language
}


def test_synth_eval_per_topic_scores(mini_path, tmp_path):
    pytest.importorskip("kgcult.link")
    qpath, apath = tmp_path / "q.jsonl", tmp_path / "a.jsonl"
    r = run_cli(["synth", "--topic", "SS", "--country", "Q17", "--lang", "en", "--versus", "Q884",
                 "-o", str(qpath)], mini_path)
    assert r.exit_code == 0, r.output
    qs = [json.loads(l) for l in qpath.read_text(encoding="utf-8").splitlines()]
    assert len(qs) == 19
    with open(apath, "w", encoding="utf-8") as f:
        for q in qs:
            if (q["template"], q["keyword"]) in ANSWERS:
                f.write(json.dumps({"id": q["id"], "answer": ANSWERS[q["template"], q["keyword"]]},
                                   ensure_ascii=False) + "\n")
    r = run_cli(["synth", "eval", str(apath), "--questions", str(qpath), "--format", "json"], mini_path)
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    counts = {t: (d["n"], d["exact"], d["alias"], d["ancestor"], d["miss"]) for t, d in rep["by_topic"].items()}
    assert counts == {
        "SS.05": (15, 4, 2, 2, 7),   # food: 15 questions
        "SS.10": (3, 2, 0, 0, 1),    # currency: kind + currency answered, currency_diff not
        "SS.16": (1, 0, 0, 0, 1),    # holiday: empty answer
    }
    assert rep["by_topic"]["SS.05"]["accuracy"] == round(6 / 15, 4)
    assert rep["by_topic"]["SS.05"]["lenient_accuracy"] == round(8 / 15, 4)
    assert rep["overall"]["n"] == 19 and rep["answered"] == 12
    assert list(rep["by_lang"]) == ["en"] and list(rep["by_country"]) == ["Q17"]
    r = run_cli(["synth", "eval", str(apath), "--questions", str(qpath)], mini_path)
    assert "SS.05            15      4      2      2     7  0.400   0.533" in r.stdout


def test_synth_eval_bad_input(mini_path, tmp_path):
    qpath = tmp_path / "q.jsonl"
    qpath.write_text('{"id": "a", "gold_qids": ["Q17"], "lang": "en", "topic": "SS.05", "country": "Q17"}\n')
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "answer": "Japan"}\n{oops\n')
    r = run_cli(["synth", "eval", str(bad), "--questions", str(qpath)], mini_path)
    assert r.exit_code == 1 and f"{bad}:2: malformed JSON" in r.stderr
    bad.write_text('{"id": "zzz", "answer": "Japan"}\n')
    r = run_cli(["synth", "eval", str(bad), "--questions", str(qpath)], mini_path)
    assert r.exit_code == 1 and f"{bad}:1: id 'zzz' is not in the questions file" in r.stderr
    bad.write_text('{"id": "a", "text": "Japan"}\n')
    r = run_cli(["synth", "eval", str(bad), "--questions", str(qpath)], mini_path)
    assert r.exit_code == 1 and "no answer text" in r.stderr


# -- the seed -------------------------------------------------------------------------

def _seed_store(tmp_path) -> Store:
    snap = resources.seed()
    s = Store(tmp_path / "seed")
    if (snap / "MANIFEST.json").exists():
        from kgcult.store import snapshot

        snapshot.import_(s, str(snap))
    else:
        files = sorted(glob.glob(str(snap / "source" / "*.ttl")))
        if not files:
            s.close()
            pytest.skip("dumps/seed is not there yet")
        s.load(files)
    hierarchy.ensure_closure(s)
    return s


@pytest.mark.slow
def test_seed_synth_three_languages_grounded(tmp_path):
    s = _seed_store(tmp_path)
    try:
        tax = taxonomy.load()
        qs = []
        for country in ("Q17", "Q38", "Q884", "Q148"):
            qs += synth.synthesize(s, tax, "SS", country, ["en", "zh", "ko", "ar", "ja"])
        langs = {q["lang"] for q in qs}
        assert len(langs) >= 3, langs
        assert {q["setting"] for q in qs} == {"unique", "different"}
        assert synth.check_questions(s, qs) == []
        for q in qs:  # every gold answer is a graph entity with a label in the question's language
            assert q["answers"] and q["gold_qids"]
    finally:
        s.close()


def test_cli_synth_with_given_keywords(mini_path):
    pytest.importorskip("kgcult.link")
    r = run_cli(["synth", "--topic", "food", "--country", "Q17", "--lang", "ko", "--setting", "unique",
                 "--keyword", "ramen", "--keyword", "Q9900010", "--keyword", "xyzzy qqq"], mini_path)
    assert r.exit_code == 0, r.output
    qs = [json.loads(l) for l in r.stdout.splitlines()]
    assert {q["keyword"] for q in qs if q["kind"] == "fact"} == {"Q9900004", "Q9900010"}  # ramen linked from text
    assert "keyword 'xyzzy qqq' not linked" in r.stderr
    r = run_cli(["synth", "--topic", "food", "--country", "Q17", "--keyword", "xyzzy qqq"], mini_path)
    assert r.exit_code == 1 and "none of the keywords" in r.stderr
