"""kgcult: a local Wikidata mirror for research on cultural knowledge in language models."""

__version__ = "0.1.0"

from .errors import KgcultError  # noqa: E402
from .store import Store, open_store  # noqa: E402

__all__ = ["KgcultError", "Store", "open_store", "__version__"]
