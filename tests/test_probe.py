"""Probers with tiny models built in-process (no downloads).

The masked test model is a 1-layer BERT over a word-level vocabulary, trained for a few
hundred steps (fixed seed) on sentences whose objects were masked with their own length:
"the dish cake is made with [MASK] ." -> flour and "... [MASK] [MASK] ." -> sugar cane.
A prober that scored a one-token candidate from the two-mask query would rank "sugar"
first (it fills the first of two masks); scored from the right length, the golds
"flour" and "sugar cane" are the top two.
"""
import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from kgcult.errors import KgcultError  # noqa: E402
from kgcult.probe import masked, models, report, run  # noqa: E402
from kgcult.probe.causal import CausalScorer  # noqa: E402
from kgcult.probe.templates import Template  # noqa: E402

WORDS = ["the", "dish", "food", "is", "made", "with", "in", ",", ".", "soup", "cake", "pie", "salt", "flour",
         "sugar", "cane", "apple", "butter", "pepper", "aland", "bland"]
TRAIN = [  # (subject, object tokens)
    ("soup", ["salt"]), ("cake", ["flour"]), ("cake", ["sugar", "cane"]),
    ("pie", ["apple", "butter"]), ("pie", ["pepper"]),
]


def _tokenizer(tmp: Path, causal: bool = False):
    from tokenizers import Tokenizer, models as tm, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {w: i for i, w in enumerate(specials + WORDS)}
    tk = Tokenizer(tm.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    if not causal:
        tk.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
        return PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]",
                                       cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    return PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]",
                                   bos_token="[CLS]", eos_token="[SEP]")


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models: one torch thread is fastest, above all on a shared machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    from transformers import BertConfig, BertForMaskedLM

    d = tmp_path_factory.mktemp("tiny-bert")
    tok = _tokenizer(d)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=32, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0)
    model = BertForMaskedLM(cfg)
    ids, labels = [], []
    for subj, obj in TRAIN:
        text = f"the dish {subj} is made with " + " ".join(["[MASK]"] * len(obj)) + " ."
        x = tok(text)["input_ids"]
        y = [-100] * len(x)
        p = x.index(tok.mask_token_id)
        for i, o in enumerate(obj):
            y[p + i] = tok.convert_tokens_to_ids(o)
        ids.append(x)
        labels.append(y)
    L = max(map(len, ids))
    X = torch.tensor([x + [0] * (L - len(x)) for x in ids])
    Y = torch.tensor([y + [-100] * (L - len(y)) for y in labels])
    A = (X != 0).long()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(300):
        opt.zero_grad()
        loss = model(input_ids=X, attention_mask=A, labels=Y).loss
        loss.backward()
        opt.step()
    model.eval()
    assert loss.item() < 0.05
    model.save_pretrained(d)
    tok.save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    from transformers import GPT2Config, GPT2LMHeadModel

    d = tmp_path_factory.mktemp("tiny-gpt2")
    tok = _tokenizer(d, causal=True)
    torch.manual_seed(1)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_positions=32, n_embd=16, n_layer=1, n_head=2))
    model.save_pretrained(d)
    tok.save_pretrained(d)
    return d


def _rows():
    return [
        {"url": "u:soup", "origin": "Aland", "origin_name": "aland", "lang": "en", "sub_label": "soup",
         "obj_label": ["salt"]},
        {"url": "u:cake", "origin": "Bland", "origin_name": "bland", "lang": "en", "sub_label": "cake",
         "obj_label": ["sugar cane", "flour"]},
        {"url": "u:pie", "origin": "Bland", "origin_name": "bland", "lang": "en", "sub_label": "pie",
         "obj_label": ["apple butter", "pepper"]},
        {"url": "u:x", "origin": "Aland", "origin_name": "aland", "lang": "en", "sub_label": "food",
         "obj_label": ["sugar"]},
    ]


TEMPLATE = Template(id="t1", text="the dish [X] is made with [Y] .")


def test_multi_token_candidates_use_their_own_mask_length(tiny_bert):
    m = models.load(str(tiny_bert))
    assert m.kind == "masked"
    sc = masked.MaskedScorer(m.model, m.tokenizer, batch_size=4)
    labels = sorted({"salt", "flour", "sugar", "cane", "sugar cane", "apple", "apple butter", "pepper", "butter"})
    cands = sc.prepare(labels)
    assert sorted(cands.groups) == [1, 2]
    q = [TEMPLATE.split("cake"), TEMPLATE.split("pie"), TEMPLATE.split("soup")]
    scores = sc.score(q, cands)
    rank = [[labels[i] for i in np.argsort(-s, kind="stable")] for s in scores]
    assert set(rank[0][:2]) == {"flour", "sugar cane"}
    assert rank[0].index("sugar") > 2  # it would be first if scored from the two-mask query
    assert set(rank[1][:2]) == {"apple butter", "pepper"}
    assert rank[2][0] == "salt"
    # one forward pass per (query, length), no more
    assert sc.forward_passes == 3 * 2
    # exactly the scores of the one-pass-per-candidate reference loop (full model head)
    ref = masked.naive_score(m.model, m.tokenizer, q, labels)
    assert np.allclose(scores, ref, atol=1e-4)


def test_scorings_mean_geometric_sum(tiny_bert):
    m = models.load(str(tiny_bert))
    labels = ["flour", "sugar cane"]
    q = [TEMPLATE.split("cake")]
    out = {}
    for s in masked.SCORINGS:
        sc = masked.MaskedScorer(m.model, m.tokenizer, scoring=s)
        out[s] = sc.score(q, sc.prepare(labels))[0]
    assert np.allclose(out["geometric"], np.exp(out["mean"]), atol=1e-6)
    assert out["sum"][0] == pytest.approx(out["mean"][0], abs=1e-6)  # one token
    assert out["sum"][1] == pytest.approx(2 * out["mean"][1], abs=1e-5)  # two tokens
    with pytest.raises(KgcultError):
        masked.MaskedScorer(m.model, m.tokenizer, scoring="max")


def test_probe_fmlama_end_to_end_and_resume(tiny_bert, tmp_path):
    m = models.load(str(tiny_bert))
    tpl = tmp_path / "t.jsonl"
    tpl.write_text(json.dumps({"id": "a", "lang": "en", "template": "the dish [X] is made with [Y] ."}) + "\n"
                   + json.dumps({"id": "b", "lang": "en", "template": "in [C] , the dish [X] is made with [Y] ."})
                   + "\n")
    out = tmp_path / "out"
    st = run.probe_fmlama(m, _rows(), lang="en", out_dir=out, templates_path=tpl, context="all",
                          batch_size=3, progress=False)
    assert st["queries_scored"] == 8 and st["n_candidates"] == 6
    preds = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    cake = next(p for p in preds if p["key"] == "u:cake" and p["template"] == "a")
    assert sorted(cake["gold_ranks"]) == [1, 2]
    res = report.fmlama_report(out, embeddings="none")
    by = {c["origin"]: c for c in res["countries"]}
    assert by["Bland"]["dishes"] == 2 and by["All"]["dishes"] == 4
    assert set(by["Bland"]["per_template"]) == {"a", "b"}
    assert by["Bland"]["per_template"]["a"]["mAP"] == pytest.approx(1.0)
    for f in ("results.csv", "results.json", "results.md", "results.png"):
        assert (out / f).stat().st_size > 0
    assert "| Bland | 2 |" in (out / "results.md").read_text()
    # resume: drop the last two lines and tear the one before; only those are re-scored
    lines = (out / "predictions.jsonl").read_text().splitlines(keepends=True)
    (out / "predictions.jsonl").write_text("".join(lines[:-3]) + lines[-3][:10])
    st2 = run.probe_fmlama(m, _rows(), lang="en", out_dir=out, templates_path=tpl, context="all",
                           batch_size=3, progress=False)
    assert st2["queries_scored"] == 3 and st2["queries_skipped"] == 5
    again = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    assert sorted((p["key"], p["template"]) for p in again) == sorted((p["key"], p["template"]) for p in preds)
    # a different run into the same directory is refused
    with pytest.raises(KgcultError, match="different run"):
        run.probe_fmlama(m, _rows(), lang="en", out_dir=out, templates_path=tpl, context="all",
                         scoring="sum", progress=False)


def test_code_switching_joins_subject_language():
    rows = _rows()[:2] + [dict(_rows()[1], lang="xx", sub_label="cake", obj_label=["zz"])]
    rows[1] = dict(rows[1], sub_label="kuchen")  # the en label is not used for the subject
    items, cands = run.fmlama_items(rows, "en", [Template("a", "the dish [X] is made with [Y] .")], "xx")
    assert [i["sub_label"] for i in items] == ["cake"]          # dish label from the subject language
    assert cands == ["flour", "sugar cane"]                      # ingredients in the template language


def test_dlama_probe_and_report(tiny_bert, tmp_path):
    m = models.load(str(tiny_bert))
    tpl = tmp_path / "d.jsonl"
    tpl.write_text(json.dumps({"id": "P527_en", "predicate": "P527", "lang": "en",
                               "template": "the dish [X] is made with [Y] ."}) + "\n")
    rows = [
        {"subject": "cake", "predicate": "P527", "objects": ["flour", "sugar cane"], "culture": "West", "lang": "en"},
        {"subject": "soup", "predicate": "P527", "objects": ["salt"], "culture": "Arab", "lang": "en"},
        {"subject": "pie", "predicate": "P527", "objects": ["pepper", "apple butter"], "culture": "Arab", "lang": "en"},
        {"subject": "food", "predicate": "P527", "objects": ["salt"], "culture": "West", "lang": "en"},
    ]
    out = tmp_path / "dl"
    run.probe_dlama(m, rows, lang="en", out_dir=out, templates_path=tpl, progress=False)
    res = report.dlama_report(out)
    cult = {c["culture"]: c for c in res["cultures"]}
    assert cult["Arab"]["P@1"] == pytest.approx(1.0)
    assert cult["West"]["facts"] == 2
    assert (out / "results.png").exists()
    with pytest.raises(KgcultError, match="P99"):
        run.probe_dlama(m, [dict(rows[0], predicate="P99")], lang="en", out_dir=tmp_path / "x",
                        templates_path=tpl, progress=False)


def test_causal_scorer_matches_manual_logprobs(tiny_gpt2):
    m = models.load(str(tiny_gpt2))
    assert m.kind == "causal"
    tok, model = m.tokenizer, m.model
    labels = ["salt", "sugar cane", "apple butter"]
    q = [TEMPLATE.split("cake")]
    s_sum = CausalScorer(model, tok, batch_size=2, scoring="sum").score(q, labels)[0]
    s_mean = CausalScorer(model, tok, batch_size=3, scoring="mean").score(q, labels)[0]
    for j, lab in enumerate(labels):
        p = tok("the dish cake is made with")["input_ids"]
        c = tok(" " + lab, add_special_tokens=False)["input_ids"]
        with torch.inference_mode():
            lp = torch.log_softmax(model(input_ids=torch.tensor([p + c])).logits[0], -1)
        manual = sum(float(lp[len(p) - 1 + i, t]) for i, t in enumerate(c))
        assert s_sum[j] == pytest.approx(manual, abs=1e-4)
        assert s_mean[j] == pytest.approx(manual / len(c), abs=1e-4)


def test_causal_probe_same_outputs(tiny_gpt2, tmp_path):
    m = models.load(str(tiny_gpt2))
    tpl = tmp_path / "t.jsonl"
    tpl.write_text(json.dumps({"id": "a", "lang": "en", "template": "the dish [X] is made with [Y] ."}) + "\n")
    out = tmp_path / "c"
    st = run.probe_fmlama(m, _rows(), lang="en", out_dir=out, templates_path=tpl, progress=False)
    assert st["queries_scored"] == 4
    res = report.fmlama_report(out, embeddings="none", plot=False)
    assert res["countries"][0]["origin"] == "All"


def test_cli_probe_fmlama(tiny_bert, tmp_path):
    from click.testing import CliRunner

    from kgcult.cli.main import main

    ds = tmp_path / "fm.jsonl"
    ds.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    tpl = tmp_path / "t.jsonl"
    tpl.write_text(json.dumps({"relation": "hasParts_1", "template": "the dish [X] is made with [Y] ."}) + "\n")
    out = tmp_path / "o"
    args = ["probe", "fmlama", "--model", str(tiny_bert), "--dataset", str(ds), "--templates", str(tpl),
            "--out", str(out), "--embeddings", "none", "--no-plot"]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert "| Bland | 2 |" in res.output
    # bad dataset line -> file:line in the error, exit 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(_rows()[0]) + "\n" + '{"url": "u", "sub_label": "x"}\n')
    res = CliRunner().invoke(main, args[:5] + [str(bad)] + args[6:] + ["--overwrite"])
    assert res.exit_code == 1 and "bad.jsonl:2" in res.output and "obj_label" in res.output


@pytest.mark.slow  # over 10 s: make test-all
def test_missing_model_is_a_clear_error(tmp_path):
    with pytest.raises(KgcultError, match="no such directory"):
        models.load("no-such-model")


def test_spectral_model_matrix_rows_are_distributions(tiny_bert, tmp_path):
    from kgcult import spectral
    from kgcult.probe.run import make_scorer

    m = models.load(str(tiny_bert))
    sc = make_scorer(m, scoring="sum")
    t = Template("q", "the dish [C] is made with [Y] .", domain="d")
    items = ["flour", "salt", "sugar cane"]
    H = spectral.model_matrix(sc, t, ["soup", "cake", "pie"], items)
    assert H.shape == (3, 3)
    assert np.allclose(H.sum(1), 1.0)
    assert items[int(np.argmax(H[0]))] == "salt"
    r = spectral.analyse(H)
    assert 1.0 <= r["ER"] <= 3.0 and r["SR"] >= 1.0
    # and through the command line, next to the ground truth
    from click.testing import CliRunner

    from kgcult.cli.main import main

    f = tmp_path / "items.jsonl"
    f.write_text("".join(json.dumps({"domain": "d", "country": c, "item": i}) + "\n"
                         for c, i in [("soup", "salt"), ("cake", "flour"), ("cake", "sugar cane"), ("pie", "flour")]))
    tp = tmp_path / "p.jsonl"
    tp.write_text(json.dumps({"id": "d_1", "domain": "d", "template": "the dish [C] is made with [Y] ."}) + "\n")
    res = CliRunner().invoke(main, ["spectral", "--items", str(f), "--templates", str(tp), "--model", str(tiny_bert),
                                    "--out", str(tmp_path / "s")])
    assert res.exit_code == 0, res.output
    rows = json.loads((tmp_path / "s" / "spectral.json").read_text())
    assert {r["source"] for r in rows} == {"ground-truth", str(tiny_bert)}


def test_bar_chart_legend_only_for_drawn_series(tmp_path):
    """A chart whose series are all empty is drawn without a legend (matplotlib warns on
    a legend with nothing in it); one with data gets its series' labels."""
    import warnings

    pytest.importorskip("matplotlib")
    from kgcult.probe import plots

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plots.bar_chart(tmp_path / "empty.png", ["a", "b"], [("x", [None, None], None)], "empty")
    assert (tmp_path / "empty.png").stat().st_size > 0
    plt = plots.pyplot()
    calls = []
    real = plt.Axes.legend
    plt.Axes.legend = lambda self, *a, **k: calls.append(self.get_legend_handles_labels()[1]) or real(self, *a, **k)
    try:
        plots.bar_chart(tmp_path / "full.png", ["a", "b"], [("x", [0.5, None], None), ("y", [None, None], None)], "t")
    finally:
        plt.Axes.legend = real
    assert calls == [["x"]]
