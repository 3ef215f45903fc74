"""The annotator's files beside the link index: the format version in their names, the
memory-mapped tries (marisa-trie) some of them are, and the removal of other versions'
files. Each file is named ``annotate-<what>-<grammar hash>-v<VERSION>`` and an extension;
a version's files share the name before its first dot."""
from __future__ import annotations

import logging
from pathlib import Path

from kgcult import extras

log = logging.getLogger(__name__)

VERSION = 21  # the format of every file below; another version's files are another's
FEATURE_TRIES = "kgcult annotate's dictionaries, memory-mapped (marisa-trie)"


def tries():
    """The marisa-trie module (the annotate extra)."""
    return extras.require("marisa_trie", "annotate", FEATURE_TRIES)


def trie_path(p: Path, part: str) -> Path:
    """The trie file of ``part`` beside the file ``p`` (``<p's stem>.<part>.marisa``)."""
    return p.with_name(f"{p.stem}.{part}.marisa")


def write(p: Path, prefix: str, writer, errors: tuple = (OSError,)) -> None:
    """Run ``writer()``, which writes ``p`` (and its tries), then remove the other
    versions' files (:func:`remove_older`); where it cannot be written (a read-only
    directory: ``errors``), say so at info level: the next process builds it again."""
    try:
        writer()
    except errors as e:
        log.info("annotator file %s not saved (%s); it is rebuilt next time", p.name, e)
    else:
        remove_older(p, prefix)


KEEP_OTHERS = 2  # files of other grammar files or formats kept beside the current one


def remove_older(p: Path, prefix: str) -> None:
    """Remove the files beside ``p`` of other grammar files or formats (``prefix``-*.marshal,
    -*.sqlite and their tries, -*.marisa, -*.costs) but those of the :data:`KEEP_OTHERS` newest: two
    checkouts of kgcult that share a store (a branch and main) keep each other's
    dictionaries instead of rebuilding them in turn, and old versions do not pile up. A
    version's files share the name before its first dot."""
    def version(f: Path) -> str:
        return f.name.split(".", 1)[0]

    def age(f: Path) -> float:
        try:
            return -f.stat().st_mtime
        except OSError:
            return 0.0

    groups: dict[str, list[Path]] = {}
    for ext in ("marshal", "sqlite", "marisa", "costs"):
        for f in p.parent.glob(f"{prefix}-*.{ext}"):
            if version(f) != version(p) and f.name.count("-") == p.name.count("-"):
                groups.setdefault(version(f), []).append(f)
    newest = sorted(groups, key=lambda v: (min(age(f) for f in groups[v]), v))
    for v in newest[KEEP_OTHERS:]:
        for f in groups[v]:
            try:
                f.unlink()
            except OSError:
                pass
