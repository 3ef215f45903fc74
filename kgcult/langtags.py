"""Language tags (BCP 47 as Wikidata uses them: ``en``, ``zh-hans``, ``be-tarask``),
checked one way everywhere a user gives one: a view parameter, a mirror's ``--lang``, a
page's ``?lang=``. Tags are lower-cased, as Oxigraph stores them, so that ``zh-Hans``
matches the labels it names."""
from __future__ import annotations

import re

from kgcult.errors import KgcultError

_TAG = re.compile(r"^[a-z]{1,8}(?:-[a-z0-9]{1,8})*$")


def parse(value: str, field: str = "language", error: type[KgcultError] = KgcultError) -> str:
    """The lower-cased tag, or ``error`` naming ``field`` and the value."""
    tag = value.strip().lower() if isinstance(value, str) else ""
    if not _TAG.match(tag):
        raise error(f"{field}: {value!r} is not a language tag (letters, digits and '-', "
                    "e.g. en, zh-hans, be-tarask)")
    return tag
