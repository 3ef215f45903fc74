"""kgcult: a local Wikidata mirror for research on cultural knowledge in language models.

``kgcult.open(location)`` gives a :class:`KG`, the Python API over the same library
functions the ``kgcult`` command uses (see docs/python-api.md).
"""
from kgcult.version import __version__
from kgcult.errors import KgcultError
from kgcult.api import KG, open, wd
from kgcult.store import Store, open_store

__all__ = ["KG", "KgcultError", "Store", "__version__", "open", "open_store", "wd"]
