"""kgcult: a local Wikidata mirror for research on cultural knowledge in language models."""
from kgcult.version import __version__
from kgcult.errors import KgcultError
from kgcult.store import Store, open_store

__all__ = ["KgcultError", "Store", "__version__", "open_store"]
