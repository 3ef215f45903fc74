"""Question templates are data: ``ontology/synth-templates/<lang>.json``, one file per
language, each template a ``kind`` (which generator fills it), a ``setting`` (unique or
different knowledge) and a question with placeholders."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from kgcult import ids, resources
from kgcult.errors import KgcultError

SETTINGS = ("unique", "different")
KINDS = ("fact", "name_one", "inverse", "which_from", "fact_diff", "inverse_diff")
PROPERTY_KINDS = ("fact", "inverse", "fact_diff", "inverse_diff")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_PLACEHOLDERS = {"subject", "other", "class", "country", "other_country"}


@dataclass(frozen=True)
class Template:
    id: str
    kind: str
    setting: str
    question: str
    lang: str
    property: str | None = None

    def pid(self) -> str:
        """The property of a template of one of the PROPERTY_KINDS (which must name one)."""
        if self.property is None:
            raise KgcultError(f"template {self.lang}/{self.id}: a {self.kind} template names no property")
        return self.property

    def render(self, **labels: str) -> str:
        """Fill the placeholders; every placeholder of the template must be given."""
        missing = [n for n in _PLACEHOLDER.findall(self.question) if not labels.get(n)]
        if missing:
            raise KgcultError(f"template {self.lang}/{self.id}: no value for {{{missing[0]}}}")
        return _PLACEHOLDER.sub(lambda m: labels[m.group(1)], self.question)


def templates_dir() -> Path:
    return resources.ontology("synth-templates")


def template_langs(directory: str | Path | None = None) -> list[str]:
    d = Path(directory) if directory else templates_dir()
    return sorted(p.stem for p in d.glob("*.json"))


def load_templates(lang: str, directory: str | Path | None = None) -> list[Template]:
    """The templates of one language, validated (kind, setting, property, placeholders)."""
    d = Path(directory) if directory else templates_dir()
    path = d / f"{lang}.json"
    if not path.is_file():
        raise KgcultError(f"no question templates for language {lang!r} ({path} missing; "
                          f"available: {', '.join(template_langs(d))})")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise KgcultError(f"{path}:{e.lineno}: invalid JSON: {e.msg}") from None
    out = []
    for i, t in enumerate(doc.get("templates", [])):
        where = f"{path}: templates[{i}]"
        for key in ("id", "kind", "setting", "question"):
            if not isinstance(t.get(key), str) or not t[key]:
                raise KgcultError(f"{where}: missing field {key!r}")
        if t["kind"] not in KINDS:
            raise KgcultError(f"{where} ({t['id']}): unknown kind {t['kind']!r} (one of {', '.join(KINDS)})")
        if t["setting"] not in SETTINGS:
            raise KgcultError(f"{where} ({t['id']}): unknown setting {t['setting']!r}")
        needs_prop = t["kind"] in PROPERTY_KINDS
        prop = t.get("property")
        if needs_prop and not ids.is_id(prop, "P"):
            raise KgcultError(f"{where} ({t['id']}): kind {t['kind']} needs a property such as P495")
        bad = set(_PLACEHOLDER.findall(t["question"])) - _PLACEHOLDERS
        if bad:
            raise KgcultError(f"{where} ({t['id']}): unknown placeholder {{{sorted(bad)[0]}}}")
        out.append(Template(t["id"], t["kind"], t["setting"], t["question"], lang, prop if needs_prop else None))
    if not out:
        raise KgcultError(f"{path}: no templates")
    return out
