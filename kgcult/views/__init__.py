"""Datasets as SPARQL views over the store: each view is data (``queries/views/<name>.json``
plus its ``.rq`` files); the engine binds parameters, runs the queries and writes sorted,
hashed outputs with a manifest."""
from kgcult.views.engine import (
    DEFAULT_OUT, BuildResult, ViewError, build, build_all, culture_groups, entropy, get_view, parse_params,
    registry, spectral_domains, views, views_dir,
)

__all__ = ["DEFAULT_OUT", "BuildResult", "ViewError", "build", "build_all", "culture_groups", "entropy",
           "get_view", "parse_params", "registry", "spectral_domains", "views", "views_dir"]
