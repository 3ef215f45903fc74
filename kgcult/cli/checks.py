"""Option checks shared by the read commands (``show``, ``taxonomy keywords``): a value
the store cannot answer is refused with what it does hold, never answered otherwise unasked."""
from __future__ import annotations

from kgcult import inspection, langtags
from kgcult.errors import KgcultError


def label_lang(store, lang: str) -> str:
    """A command's ``--lang`` checked as ``build`` checks a language parameter: a tag no
    label of the store is in (nor its primary language or fallback chain) is refused,
    never answered in English unasked (not checked on a remote endpoint, where listing its
    languages could take minutes)."""
    lang = langtags.parse(lang, "--lang")
    if not getattr(store, "remote", False):
        why = langtags.absent(lang, inspection.label_languages(store))
        if why:
            raise KgcultError(f"--lang {lang}: {why}")
    return lang
