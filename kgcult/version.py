"""kgcult's version, apart from the package init so that any module may import it."""

__version__ = "0.2.0"
