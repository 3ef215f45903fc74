"""Where kgcult's data directories live (``ontology/``, ``queries/``, ``dumps/``).

They sit at the repository root next to the package (kgcult is installed in editable
mode by ``make install``). ``KGCULT_HOME`` points elsewhere, for a copy of the data.
"""
from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    env = os.environ.get("KGCULT_HOME")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent


def ontology(*parts: str) -> Path:
    return home().joinpath("ontology", *parts)


def queries(*parts: str) -> Path:
    return home().joinpath("queries", *parts)


def dumps(*parts: str) -> Path:
    return home().joinpath("dumps", *parts)
