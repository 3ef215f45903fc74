"""Language tags (BCP 47 as Wikidata uses them: ``en``, ``zh-hans``, ``be-tarask``),
checked one way everywhere a user gives one: a view parameter, a mirror's ``--lang``, a
page's ``?lang=``. Tags are lower-cased, as Oxigraph stores them, so that ``zh-Hans``
matches the labels it names."""
from __future__ import annotations

import difflib
import json
import re
from functools import lru_cache

from kgcult import resources
from kgcult.errors import KgcultError

_TAG = re.compile(r"^[a-z]{1,8}(?:-[a-z0-9]{1,8})*$")
# BCP 47 primary language subtags in use are ISO 639 codes of 2 or 3 letters (4 is reserved,
# 5 to 8 would need registration, and none is registered); Wikimedia adds a few of its own.
_WIKIMEDIA_LONG = {"simple"}


def parse(value: str, field: str = "language", error: type[KgcultError] = KgcultError) -> str:
    """The lower-cased tag, or ``error`` naming ``field`` and the value."""
    tag = value.strip().lower() if isinstance(value, str) else ""
    if not _TAG.match(tag):
        raise error(f"{field}: {value!r} is not a language tag (letters, digits and '-', "
                    "e.g. en, zh-hans, be-tarask)")
    primary = tag.split("-", 1)[0]
    if not 2 <= len(primary) <= 3 and primary not in _WIKIMEDIA_LONG:
        raise error(f"{field}: {value!r} is not a language code: a tag starts with an ISO 639 code "
                    "of 2 or 3 letters (en, zh, ar, yue; zh-hans, be-tarask)")
    return tag


@lru_cache(maxsize=1)
def _fallbacks() -> tuple[dict, tuple]:
    path = resources.ontology("label-fallbacks.json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        chains = {parse(k, f"{path}: chains"): tuple(parse(x, f"{path}: chains.{k}") for x in v)
                  for k, v in data["chains"].items()}
        implicit = tuple(parse(x, f"{path}: implicit") for x in data["implicit"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise KgcultError(f"{path}: cannot read the label fallbacks: {e}") from None
    return chains, implicit


def fallback_chain(tag: str) -> tuple[str, ...]:
    """The languages a label "in ``tag``" is looked up in, best first: ``tag``, its variants
    and fallbacks (``ontology/label-fallbacks.json``; ``zh`` -> ``zh-hans``, ``zh-hant``,
    ``zh-cn``, ...), then ``mul`` (Wikidata's default for all languages, since 2024)."""
    chains, implicit = _fallbacks()
    out = [tag]
    for x in chains.get(tag, ()) + implicit:
        if x not in out:
            out.append(x)
    return tuple(out)


def with_fallbacks(tags) -> tuple[str, ...]:
    """``tags`` and every language of their fallback chains (what a labels mirror fetches),
    sorted."""
    return tuple(sorted({x for t in tags for x in fallback_chain(t)}))


def absent(tag: str, present, chain: tuple[str, ...] | None = None) -> str | None:
    """Why ``tag`` cannot be answered from a store whose labels (or names) are in the
    languages ``present``: None when any language the command reads for it (``chain``, else
    ``tag``, its primary language and :func:`fallback_chain`) is there; else one sentence
    naming close tags and some the store has. Every command that takes a label language
    refuses such a tag with it, rather than answering in English unasked."""
    have = set(present)
    if any(x in have for x in (chain or (tag, tag.split("-", 1)[0]) + fallback_chain(tag))):
        return None
    ordered = sorted(have)
    hint = difflib.get_close_matches(tag, ordered, n=3)
    return (f"no label of the store is in {tag!r}" + (f" (did you mean {', '.join(hint)}?)" if hint else "")
            + f"; the store's label languages include {', '.join(ordered[:20])}"
            + (" ..." if len(ordered) > 20 else "") if ordered else
            f"no label of the store is in {tag!r}: the store holds no labels")
