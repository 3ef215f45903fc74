"""The linker's input: mention rows checked once (:func:`check`, the one validation of a row,
for ``Linker.link_many`` and for files), and JSONL files of mention rows or MakiEval
extraction dicts (:func:`read`), with malformed lines reported as ``FILE:LINE: ...`` and
skipped or fatal (``on_error``)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Collection, Iterator

from kgcult.errors import KgcultError
from kgcult.files import iter_jsonl, reject
from kgcult.safe_text import clip


@dataclass(slots=True, frozen=True)
class Mention:
    """A checked input row: ``row`` is the row as given (its other fields are passed
    through to the result), ``lang`` lower-cased, ``topic`` one of the linker's or None,
    ``group`` the response the mention belongs to (coherence) or None."""
    row: dict
    mention: str
    lang: str
    topic: str | None
    group: str | int | None


# The longest mention linked (docs/link.md, "Input"): MakiEval's mentions are entity names
# (a few words, at most ~100 characters in its extractions); a longer text is not a name.
MAX_CHARS = 1_000
MAX_WORDS = 64


@dataclass(slots=True, frozen=True)
class Limits:
    """The length cap on a mention: ``chars`` characters and ``words`` words (0: none)."""
    chars: int = MAX_CHARS
    words: int = MAX_WORDS

    def fits(self, mention: str) -> bool:
        """Whether ``mention`` is within the cap."""
        try:
            self.check(mention)
        except KgcultError:
            return False
        return True

    def check(self, mention: str) -> None:
        if self.chars and len(mention) > self.chars:
            raise KgcultError(f"mention of {len(mention):,} characters is longer than the cap of "
                              f"{self.chars:,} (--max-mention-chars; 0 for none)")
        if self.words:
            n = len(mention.split(None, self.words))  # at most words + 1 pieces
            if n > self.words:
                raise KgcultError(f"mention of more than {self.words:,} words is longer than the cap "
                                  f"(--max-mention-words; 0 for none)")


LIMITS = Limits()


def check(row: dict, topics: Collection[str], limits: Limits = LIMITS) -> Mention:
    """The row checked against the linker's ``topics``: ``mention`` a string no longer than
    ``limits``, ``lang`` a string (default ``en``), ``topic`` one of ``topics`` or empty,
    ``group`` (else ``source_id``) a string or an integer. Raises :class:`KgcultError`
    naming the field."""
    mention = row.get("mention")
    if not isinstance(mention, str):
        raise KgcultError(f"mention must be a string, got {type(mention).__name__}")
    limits.check(mention)
    if not mention.isascii():
        try:
            mention.encode("utf-8")
        except UnicodeEncodeError:
            raise KgcultError("mention holds a lone surrogate (a \\uD800-\\uDFFF escape without its pair): "
                              "not Unicode text") from None
    lang = row.get("lang") or "en"
    if not isinstance(lang, str):
        raise KgcultError(f"lang must be a string, got {type(lang).__name__}")
    topic = row.get("topic") or None
    if topic is not None and (not isinstance(topic, str) or topic not in topics):
        raise KgcultError(f"unknown topic {clip(repr(topic), 200)}: one of {', '.join(sorted(topics))}")
    group = row.get("group", row.get("source_id"))
    if group is not None and (not isinstance(group, (str, int)) or isinstance(group, bool)):
        raise KgcultError(f"group must be a string or an integer, got {type(group).__name__}")
    return Mention(row, mention, lang.strip().lower(), topic, group)


def mention_rows(obj: dict, lineno: int, default_lang: str, default_topic: str | None) -> list[dict]:
    """Turn one input object into mention rows (checked by :func:`check` afterwards).

    * ``{"mention": ..., "lang": ..., "topic": ..., "country": ..., "id": ...}``;
    * a MakiEval extraction: ``{"entities": {"<text>": "<type>", ...}, "lang": ..., "topic":
      ..., "country": ..., "id": ...}`` (also ``extraction`` as the dict's key, or the dict
      itself with lang/topic/country alongside) -> one row per entity, ids ``<id>#<n>``."""
    base_id = obj.get("id", lineno)
    lang = obj.get("lang") or obj.get("language") or default_lang
    topic = obj.get("topic") or default_topic
    country = obj.get("country")
    if "mention" in obj:
        row = {"id": base_id, "mention": obj["mention"], "lang": lang, "topic": topic, "country": country}
        if "type" in obj:
            row["type"] = obj["type"]
        return [row]
    ents = obj.get("entities", obj.get("extraction"))
    if ents is None:
        meta = {"id", "lang", "language", "topic", "country", "prompt_type", "model", "prompt"}
        ents = {k: v for k, v in obj.items() if k not in meta}
        if not ents:
            raise KgcultError("no mention: give a field mention, or an "
                              "extraction dict {\"<text>\": \"<type>\"}")
    if not isinstance(ents, dict):
        raise KgcultError("entities must be a JSON object {\"<text>\": \"<type>\"}")
    rows = []
    for n, (text, typ) in enumerate(ents.items()):
        if not isinstance(typ, (str, type(None))):
            raise KgcultError(f"the type of {text!r} must be a string")
        row = {"id": f"{base_id}#{n}", "mention": text, "lang": lang, "topic": topic,
               "country": country, "type": typ, "source_id": base_id}
        for extra in ("prompt_type", "model"):
            if extra in obj:
                row[extra] = obj[extra]
        rows.append(row)
    return rows


class MentionFile:
    """The checked mentions of a JSONL file (a path, or a text stream such as stdin), in
    order; iterate once. ``lang``, ``topic``, ``country``: defaults for rows without them;
    ``topics``: the linker's; ``limits``: the length cap on a mention (:class:`Limits`). A bad line raises ``WHERE:LINE: ...`` (``on_error="fail"``)
    or is logged and skipped. ``rows`` counts the lines that gave mentions."""

    def __init__(self, src, topics: Collection[str], *, lang: str = "en", topic: str | None = None,
                 country: str | None = None, on_error: str = "fail", where: str | None = None,
                 limits: Limits = LIMITS):
        self.src = src
        self.where = where or (os.fspath(src) if isinstance(src, (str, os.PathLike))
                               else getattr(src, "name", "input"))
        self.topics = topics
        self.lang, self.topic, self.country = lang, topic, country
        self.on_error = on_error
        self.limits = limits
        self.rows = 0

    def __iter__(self) -> Iterator[Mention]:
        for lineno, obj in iter_jsonl(self.src, on_error=self.on_error):
            try:
                ms = [check(r, self.topics, self.limits) for r in self._rows(obj, lineno)]
            except KgcultError as e:
                reject(f"{self.where}:{lineno}: {e}", self.on_error)
                continue
            self.rows += 1
            yield from ms

    def _rows(self, obj: dict, lineno: int) -> list[dict]:
        rows = mention_rows(obj, lineno, self.lang, self.topic)
        for r in rows:
            if obj.get("group") is not None:  # mentions of one response
                r["group"] = obj["group"]
            if r.get("country") is None and self.country:
                r["country"] = self.country
        return rows


def read(src, topics: Collection[str], **options) -> MentionFile:
    """The checked mentions of a JSONL file: :class:`MentionFile` (options as there)."""
    return MentionFile(src, topics, **options)
