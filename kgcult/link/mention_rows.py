"""JSONL input for the linker: mention rows and MakiEval extraction dicts, with malformed
lines reported by line number and skipped or fatal (``on_error``)."""
from __future__ import annotations

from kgcult.errors import KgcultError

ROW_FIELDS = ("mention", "lang", "topic", "country", "id")


def mention_rows(obj: dict, lineno: int, default_lang: str, default_topic: str | None,
                 where: str) -> list[dict]:
    """Turn one input object into mention rows.

    * ``{"mention": ..., "lang": ..., "topic": ..., "country": ..., "id": ...}``;
    * a MakiEval extraction: ``{"entities": {"<text>": "<type>", ...}, "lang": ..., "topic":
      ..., "country": ..., "id": ...}`` (also ``extraction`` as the dict's key, or the dict
      itself with lang/topic/country alongside) -> one row per entity, ids ``<id>#<n>``."""
    base_id = obj.get("id", lineno)
    lang = obj.get("lang") or obj.get("language") or default_lang
    topic = obj.get("topic") or default_topic
    country = obj.get("country")
    if "mention" in obj:
        m = obj["mention"]
        if not isinstance(m, str):
            raise KgcultError(f"{where}:{lineno}: field mention must be a string")
        row = {"id": base_id, "mention": m, "lang": lang, "topic": topic, "country": country}
        if "type" in obj:
            row["type"] = obj["type"]
        return [row]
    ents = obj.get("entities", obj.get("extraction"))
    if ents is None:
        meta = {"id", "lang", "language", "topic", "country", "prompt_type", "model", "prompt"}
        ents = {k: v for k, v in obj.items() if k not in meta}
        if not ents:
            raise KgcultError(f"{where}:{lineno}: no mention: give a field mention, or an "
                              "extraction dict {\"<text>\": \"<type>\"}")
    if not isinstance(ents, dict):
        raise KgcultError(f"{where}:{lineno}: entities must be a JSON object {{\"<text>\": \"<type>\"}}")
    rows = []
    for n, (text, typ) in enumerate(ents.items()):
        if not isinstance(typ, (str, type(None))):
            raise KgcultError(f"{where}:{lineno}: the type of {text!r} must be a string")
        row = {"id": f"{base_id}#{n}", "mention": text, "lang": lang, "topic": topic,
               "country": country, "type": typ, "source_id": base_id}
        for extra in ("prompt_type", "model"):
            if extra in obj:
                row[extra] = obj[extra]
        rows.append(row)
    return rows
