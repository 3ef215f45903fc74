"""The annotator's input: text rows ``{"id", "text", "lang", "topic", "country"?}`` checked
once (:func:`check`), read from JSONL files line by line (:func:`read`: a line that is not
UTF-8, not JSON, or not a valid row is reported as ``FILE:LINE: ...`` and is fatal or
skipped, as ``kgcult link -i`` does with its rows)."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Collection, Iterator

from kgcult import ids
from kgcult.errors import KgcultError
from kgcult.files import reject

# The longest text annotated (docs/annotate.md, "Input"): a model's answer is a few
# paragraphs; a longer text is most likely not one (--max-text-chars; 0 for none).
MAX_TEXT_CHARS = 20_000


@dataclass(slots=True, frozen=True)
class TextRow:
    """A checked row: ``lang`` lower-cased, ``country`` a QID or None."""
    id: str | int
    text: str
    lang: str
    topic: str
    country: str | None
    model: str | None = None        # MakiEval's prompt: kept for the metrics
    prompt_type: str | None = None

    def as_dict(self) -> dict:
        return {"id": self.id, "text": self.text, "lang": self.lang, "topic": self.topic,
                "country": self.country, "model": self.model, "prompt_type": self.prompt_type}


def check(row: dict, *, topics: Collection[str], langs: Collection[str],
          max_chars: int = MAX_TEXT_CHARS) -> TextRow:
    """The row checked (raises :class:`KgcultError` naming the field): ``id`` a string or
    an integer, ``text`` a string of valid Unicode no longer than ``max_chars``, ``lang``
    a language the index or the grammar file knows, ``topic`` one of ``topics``,
    ``country`` absent, null or a QID."""
    for f in ("id", "text", "lang", "topic"):
        if f not in row or row[f] is None:
            raise KgcultError(f"missing field {f!r} (a row needs id, text, lang, topic)")
    rid = row["id"]
    if not isinstance(rid, (str, int)) or isinstance(rid, bool):
        raise KgcultError(f"id must be a string or an integer, got {type(rid).__name__}")
    text = row["text"]
    if not isinstance(text, str):
        raise KgcultError(f"text must be a string, got {type(text).__name__}")
    if max_chars and len(text) > max_chars:
        raise KgcultError(f"text of {len(text):,} characters is longer than the cap of "
                          f"{max_chars:,} (--max-text-chars; 0 for none)")
    for name, v in (("id", rid), ("text", text)):
        if isinstance(v, str):
            _valid_unicode(name, v)
    lang = row["lang"]
    if not isinstance(lang, str) or not lang.strip():
        raise KgcultError("lang must be a language code such as en or zh")
    lang = lang.strip().lower()
    if lang not in langs and lang.split("-", 1)[0] not in langs:
        raise KgcultError(f"unknown language {lang!r}: the index has no names in it")
    topic = row["topic"]
    if not isinstance(topic, str) or topic not in topics:
        raise KgcultError(f"unknown topic {topic!r}: one of {', '.join(sorted(topics))}")
    country = row.get("country")
    if country is not None and (not isinstance(country, str) or not ids.is_item(country)):
        raise KgcultError(f"country must be a QID such as Q17 or null, got {country!r}")
    extra: list[str | None] = []
    for name in ("model", "prompt_type"):
        x = row.get(name)
        if x is not None and not isinstance(x, str):
            raise KgcultError(f"{name} must be a string, got {type(x).__name__}")
        extra.append(x)
    return TextRow(rid, text, lang, topic, country, *extra)


def _valid_unicode(field: str, s: str) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise KgcultError(f"{field} holds a lone surrogate at character {e.start}") from None


def read(src, *, topics: Collection[str], langs: Collection[str], on_error: str = "fail",
         max_chars: int = MAX_TEXT_CHARS, where: str | None = None) -> Iterator[TextRow]:
    """The checked rows of a JSONL file (a path, or a binary or text stream), in order."""
    if on_error not in ("fail", "skip"):
        raise KgcultError(f"on_error must be skip or fail, not {on_error!r}")
    name = where or (os.fspath(src) if isinstance(src, (str, os.PathLike)) else getattr(src, "name", "input"))
    own = isinstance(src, (str, os.PathLike))
    try:
        f = open(src, "rb") if own else getattr(src, "buffer", src)
    except OSError as e:
        raise KgcultError(f"{name}: cannot read: {e.strerror or e}") from None
    try:
        for lineno, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8") if isinstance(raw, bytes) else raw
            except UnicodeDecodeError as e:
                reject(f"{name}:{lineno}: not UTF-8 (byte {e.start})", on_error)
                continue
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                if not isinstance(obj, dict):
                    raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
                row = check(obj, topics=topics, langs=langs, max_chars=max_chars)
            except ValueError as e:
                reject(f"{name}:{lineno}: malformed JSON line ({e})", on_error)
                continue
            except (KgcultError, RecursionError) as e:
                reject(f"{name}:{lineno}: {e}", on_error)
                continue
            yield row
    finally:
        if own:
            f.close()
