"""Optional dependencies: the core (store, mirror, ingest, views, inspection, server)
installs without the model stacks; a feature that needs one imports it through
:func:`require`, which says which extra to install when it is missing. The extras and
their packages are listed once, in setup.cfg (``[options.extras_require]``)."""
from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from kgcult.errors import KgcultError

class MissingExtra(KgcultError):
    """A feature needs an optional package that is not installed."""


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` or fail with the ``pip install 'kgcult[extra]'`` to run."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingExtra(
            f"{feature} needs the Python package {module.split('.')[0]!r}, which is not installed "
            f"({e}); install it with: pip install 'kgcult[{extra}]'"
        ) from None


def require_present(module: str, extra: str, feature: str) -> None:
    """:func:`require` without the import (a feature that reads the package's data files)."""
    if not available(module):
        raise MissingExtra(f"{feature} needs the Python package {module!r}, which is not installed; "
                           f"install it with: pip install 'kgcult[{extra}]'")


def available(module: str) -> bool:
    """Whether an optional module can be imported (without importing it)."""
    return importlib.util.find_spec(module) is not None


def pyplot(extra: str, feature: str) -> ModuleType:
    """matplotlib.pyplot on the Agg backend (files only, no display), or the error naming
    ``extra``."""
    require("matplotlib", extra, feature).use("Agg")
    return require("matplotlib.pyplot", extra, feature)
