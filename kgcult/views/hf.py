"""Built datasets for Hugging Face ``datasets``: a dataset card written from the manifest, and
the rows as a ``DatasetDict``.

``kgcult build VIEW --format hf`` writes ``README.md`` beside the JSONL files: a dataset card
whose YAML header declares every JSONL output as a configuration (the main output is
``default``), so ``datasets.load_dataset(DIR)`` (or ``load_dataset(DIR, "en")``) reads the
directory as it is, and the Hub shows the card when the directory is pushed. ``to_hf`` builds
the same in memory (``pip install 'kgcult[hf]'``).
"""
from __future__ import annotations

import json
import re

from kgcult import extras

# Wikidata's data is CC0; the card says so and where the snapshot came from.
LICENSE = "cc0-1.0"


def config_name(path: str, main: str) -> str:
    """The configuration a JSONL output is read as: ``default`` for the main output, else its
    path without ``.jsonl``, with characters that ``datasets`` refuses as ``_``."""
    if path == main:
        return "default"
    return re.sub(r"\W+", "_", re.sub(r"\.jsonl$", "", path)).strip("_") or "output"


def _jsonl_outputs(manifest: dict) -> list[str]:
    """The outputs ``datasets`` reads as JSON Lines of objects: not the files a paper's
    released layout writes as arrays (FmLAMA's count files) or JSON documents (their
    manifest entry names a ``form``)."""
    return sorted(o["file"] for o in manifest["outputs"] if o["file"].endswith(".jsonl") and "form" not in o)


def dataset_card(manifest: dict) -> str:
    """A Hugging Face dataset card (README.md) for a built view, from its manifest."""
    main = manifest["output"]
    outputs = _jsonl_outputs(manifest)
    rows = {o["file"]: o["rows"] for o in manifest["outputs"]}
    languages = sorted({lang for lang in str(manifest.get("parameters", {}).get("languages", "")).split(",")
                        if re.fullmatch(r"[a-z]{2,3}(-[A-Za-z0-9]+)*", lang)})
    header = ["---", f"pretty_name: {json.dumps(manifest['view'])}", f"license: {LICENSE}"]
    if languages:
        header.append("language:")
        header += [f"- {lang}" for lang in languages]
    header.append("configs:")
    for path in sorted(outputs, key=lambda p: (p != main, p)):
        header += [f"- config_name: {config_name(path, main)}", "  data_files:",
                   "  - split: train", f"    path: {json.dumps(path)}"]
    header.append("---")
    body = [
        "", f"# {manifest['view']}", "", manifest.get("description", ""), "",
        "Built by [kgcult](https://pypi.org/project/kgcult/) "
        f"{manifest.get('kgcult_version', '')} as a SPARQL view over a local mirror of Wikidata "
        "(CC0). `MANIFEST.json` beside this card records everything needed to rebuild it "
        "byte for byte.", "",
        "## Provenance", "",
        f"- snapshot content sha256: `{manifest.get('snapshot_content_sha256')}`",
        f"- declaration: `{manifest['declaration']['file']}` (sha256 `{manifest['declaration']['sha256']}`)",
    ]
    for name, q in sorted(manifest.get("queries", {}).items()):
        body.append(f"- query `{name}`: `{q['file']}` (sha256 `{q['sha256']}`)")
    body += ["", "## Parameters", ""]
    params = manifest.get("parameters", {})
    body += [f"- `{k}` = `{v}`" for k, v in sorted(params.items())] or ["(defaults)"]
    body += ["", "## Files", "", "| configuration | file | rows | sha256 |", "|---|---|---|---|"]
    for path in sorted(outputs, key=lambda p: (p != main, p)):
        sha = next(o["sha256"] for o in manifest["outputs"] if o["file"] == path)
        body.append(f"| {config_name(path, main)} | `{path}` | {rows[path]} | `{sha[:16]}` |")
    return "\n".join(header + body) + "\n"


def to_hf(outputs: dict[str, list[dict]], manifest: dict):
    """The outputs as a ``datasets.DatasetDict``, one entry per JSONL output, named as the
    card's configurations (``default`` for the main output)."""
    datasets = extras.require("datasets", "hf", "a Hugging Face datasets export")
    main = manifest["output"]
    tables = set(_jsonl_outputs(manifest))
    return datasets.DatasetDict({config_name(path, main): datasets.Dataset.from_list(rows)
                                 for path, rows in sorted(outputs.items()) if path in tables})
