"""Probing templates are data: ``queries/templates/{fmlama,dlama,spectral}.jsonl``.

One JSON object a line with at least ``id``, ``lang`` and ``template``. Placeholders:
``[X]`` the subject, ``[Y]`` the object (masked or continued), ``[C]`` the country (the
cultural-context variants "In [C], ..." of FmLAMA §4.2 and the spectral prompts of Table 7).

FmLAMA rows carry ``context`` (true for the "In [C], ..." variants); DLAMA rows carry
``predicate``; spectral rows carry ``domain``, ``var`` and ``human_category``.

``load(path)`` also reads the template files released with FmLAMA
(``{"relation": "hasParts_1" | "country_1", "template": ...}``), their ``[1]/[2]/[3]``
placeholders (the release's ar and he files) read as ``[X]/[Y]/[C]``; a user probes with
the release's set by ``--templates DIR`` (the release's ``templates/`` directory, one
``<lang>_templates.jsonl`` per language) or ``--templates FILE``. kgcult does not
redistribute the release's sentences; its default set is the paper's Fig. 9 wording.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from kgcult import resources
from kgcult.errors import KgcultError

RELEASE_PLACEHOLDERS = {"[1]": "[X]", "[2]": "[Y]", "[3]": "[C]"}   # FmLAMA's ar/he files


@dataclass(frozen=True)
class Template:
    id: str
    text: str
    lang: str = ""
    context: bool = False
    predicate: str | None = None
    domain: str | None = None
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def fill(self, subject: str = "", country: str = "", obj: str | None = None) -> str:
        """Fill [X] and [C]; [Y] is filled with ``obj`` when given, else left in place."""
        out = self.text.replace("[X]", subject).replace("[C]", country)
        if obj is not None:
            out = out.replace("[Y]", obj)
        return out

    def split(self, subject: str = "", country: str = "") -> tuple[str, str]:
        """(text before [Y], text after [Y]) with [X] and [C] filled."""
        filled = self.fill(subject, country)
        if filled.count("[Y]") != 1:
            raise KgcultError(f"template {self.id!r} must contain [Y] exactly once: {self.text!r}")
        before, after = filled.split("[Y]")
        return before, after


def default_path(kind: str) -> Path:
    return resources.queries("templates", f"{kind}.jsonl")


def load(path: str | Path) -> list[Template]:
    """Read a template file; errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        raise KgcultError(f"template file not found: {path}")
    out: list[Template] = []
    seen: set[str] = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise KgcultError(f"{path}:{n}: not JSON ({e.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("template"), str):
            raise KgcultError(f"{path}:{n}: a template row needs a string field 'template'")
        text = row["template"]
        if "relation" in row and "id" not in row:  # the FmLAMA release's format
            tid = str(row["relation"])
            context = tid.startswith("country")
            for numbered, named in RELEASE_PLACEHOLDERS.items():
                text = text.replace(numbered, named)
        else:
            tid = str(row.get("id") or f"t{n}")
            context = bool(row.get("context", "[C]" in text))
        if text.count("[Y]") != 1:
            raise KgcultError(f"{path}:{n}: template {tid!r} must contain [Y] exactly once")
        if tid in seen:
            raise KgcultError(f"{path}:{n}: duplicate template id {tid!r}")
        seen.add(tid)
        known = {"id", "template", "lang", "context", "predicate", "domain", "relation"}
        out.append(Template(
            id=tid, text=text, lang=str(row.get("lang", "")), context=context,
            predicate=row.get("predicate"), domain=row.get("domain"),
            extra={k: v for k, v in row.items() if k not in known},
        ))
    if not out:
        raise KgcultError(f"{path}: no templates")
    return out


def fmlama_templates(lang: str, context: str = "plain", path: str | Path | None = None) -> list[Template]:
    """The five FmLAMA templates of a language; ``context`` is plain, country or all."""
    if context not in ("plain", "country", "all"):
        raise KgcultError(f"context must be plain, country or all, not {context!r}")
    if path is not None and Path(path).is_dir():
        path = Path(path) / f"{lang}_templates.jsonl"   # the release's templates/ layout
    rows = load(path or default_path("fmlama"))
    if path is None or any(t.lang for t in rows):
        rows = [t for t in rows if not t.lang or t.lang == lang]
    if context == "plain":
        rows = [t for t in rows if not t.context]
    elif context == "country":
        rows = [t for t in rows if t.context]
    if not rows:
        langs = sorted({t.lang for t in load(path or default_path("fmlama")) if t.lang})
        raise KgcultError(f"no FmLAMA templates for language {lang!r} ({context}) in "
                          f"{path or default_path('fmlama')}; languages there: {', '.join(langs)}")
    return rows


def dlama_templates(lang: str, path: str | Path | None = None) -> dict[str, Template]:
    """predicate -> template for a language."""
    rows = [t for t in load(path or default_path("dlama")) if t.lang in ("", lang)]
    out = {t.predicate: t for t in rows if t.predicate}
    if not out:
        raise KgcultError(f"no DLAMA templates for language {lang!r} in {path or default_path('dlama')}")
    return out


def spectral_templates(path: str | Path | None = None, domains=None) -> list[Template]:
    rows = load(path or default_path("spectral"))
    if domains:
        wanted = set(domains)
        unknown = wanted - {t.domain for t in rows}
        if unknown:
            raise KgcultError(f"unknown spectral domain(s) {', '.join(sorted(unknown))}; known: "
                              + ", ".join(sorted({t.domain for t in rows if t.domain})))
        rows = [t for t in rows if t.domain in wanted]
    return rows
