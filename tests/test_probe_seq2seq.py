"""T5/mT5 sentinel scoring (FmLAMA's T5 protocol) and the 10-subtoken candidate cap, with
tiny random models built in the test (word-level tokenizers, no downloads)."""
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from kgcult.probe import models, run  # noqa: E402
from kgcult.probe.masked import MaskedScorer  # noqa: E402
from kgcult.probe.seq2seq import Seq2SeqScorer  # noqa: E402

WORDS = ["the", "dish", "cake", "soup", "is", "made", "with", ".", "flour", "salt", "sugar", "cane",
         "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]
LONG = "a b c d e f g h i j k"          # 11 subtokens: over the cap


def _t5_tokenizer():
    from tokenizers import Tokenizer, models as tm, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "</s>", "<unk>", "<extra_id_0>", "<extra_id_1>"]
    vocab = {w: i for i, w in enumerate(specials + WORDS)}
    tk = Tokenizer(tm.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    tk.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", vocab["</s>"])])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", pad_token="<pad>", eos_token="</s>",
                                  additional_special_tokens=["<extra_id_0>", "<extra_id_1>"])
    return tok, vocab


@pytest.fixture(scope="module")
def tiny_t5(tmp_path_factory):
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    tok, vocab = _t5_tokenizer()
    cfg = T5Config(vocab_size=len(vocab), d_model=16, d_ff=32, d_kv=8, num_layers=1, num_decoder_layers=1,
                   num_heads=2, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
    model = T5ForConditionalGeneration(cfg).eval()
    d = tmp_path_factory.mktemp("t5") / "model"
    model.save_pretrained(d)
    tok.save_pretrained(d)
    return d


def test_sentinel_score_is_minus_the_t5_loss_of_the_target(tiny_t5):
    m = models.load(str(tiny_t5))
    assert m.kind == "seq2seq"
    sc = run.make_scorer(m, batch_size=2)
    assert isinstance(sc, Seq2SeqScorer) and sc.scoring == "mean"
    labels = ["flour", "sugar cane", "salt", LONG]
    scores = sc.score([("the dish cake is made with ", " .")], sc.prepare(labels))
    tok = m.tokenizer
    inp = tok("the dish cake is made with <extra_id_0> .", return_tensors="pt").input_ids
    assert inp[0].tolist().count(tok.convert_tokens_to_ids("<extra_id_0>")) == 1
    for i, label in enumerate(labels[:3]):
        target = tok(f"<extra_id_0> {label} <extra_id_1>", return_tensors="pt").input_ids
        assert target[0].tolist()[-1] == tok.eos_token_id
        with torch.inference_mode():
            loss = m.model(input_ids=inp, labels=target).loss
        assert scores[0, i] == pytest.approx(-float(loss), abs=1e-5)
    assert scores[0, 3] == -np.inf                     # 11 subtokens: left out


def test_seq2seq_probe_end_to_end_and_uncapped(tiny_t5, tmp_path):
    m = models.load(str(tiny_t5))
    rows = [{"url": "u1", "origin": "Italy", "lang": "en", "sub_label": "cake", "obj_label": ["flour", LONG]},
            {"url": "u2", "origin": "Italy", "lang": "en", "sub_label": "soup", "obj_label": ["salt"]}]
    tpl = tmp_path / "t.jsonl"
    tpl.write_text(json.dumps({"id": "t1", "lang": "en", "template": "the dish [X] is made with [Y] ."}) + "\n")
    out = tmp_path / "o"
    run.probe_fmlama(m, rows, lang="en", out_dir=out, templates_path=tpl, progress=False)
    pred = [json.loads(x) for x in (out / run.PRED_FILE).read_text().splitlines()]
    cake = next(p for p in pred if p["key"] == "u1")
    assert cake["gold_ranks"][1] is None and LONG not in cake["top"]      # capped: never ranked
    assert json.loads((out / run.RUN_FILE).read_text())["max_candidate_tokens"] == 10
    out2 = tmp_path / "o2"
    run.probe_fmlama(m, rows, lang="en", out_dir=out2, templates_path=tpl, progress=False, max_tokens=0)
    cake2 = next(json.loads(x) for x in (out2 / run.PRED_FILE).read_text().splitlines() if '"u1"' in x)
    assert cake2["gold_ranks"][1] is not None and LONG in cake2["top"]


def test_masked_scorer_caps_candidates_at_ten_subtokens():
    from tokenizers import Tokenizer, models as tm, pre_tokenizers
    from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {w: i for i, w in enumerate(specials + WORDS)}
    tk = Tokenizer(tm.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                  sep_token="[SEP]", mask_token="[MASK]")
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1,
                                       num_attention_heads=2, intermediate_size=32)).eval()
    ten = "a b c d e f g h i j"
    capped = MaskedScorer(model, tok).prepare(["flour", ten, LONG])
    assert sorted(capped.groups) == [1, 10]                       # the 11-subtoken label is left out
    free = MaskedScorer(model, tok, max_tokens=0).prepare(["flour", ten, LONG])
    assert sorted(free.groups) == [1, 10, 11]
