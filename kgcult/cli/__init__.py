"""The ``kgcult`` command line: one module per command family, each a thin click layer
over the library functions of the same names; :data:`kgcult.cli.main.COMMANDS` maps the
command names to them. ``main`` is the console-script entry point."""
from __future__ import annotations

from kgcult.cli.main import main

__all__ = ["main"]
