"""Datasets as SPARQL views over the store: each view is data (``queries/views/<name>.json``
plus its ``.rq`` files) run by a processor (:data:`~kgcult.views.registry.PROCESSORS`);
:func:`build` gives the sorted, hashed outputs and their manifest in memory and writes
them on request.

Modules: ``spec`` (declarations, parameters), ``engine`` (queries and labels over a
store), ``output`` (rows, bytes, manifest, :class:`BuildResult`), one module per dataset
(``table``, ``fmlama``, ``dlama``, ``spectral_items``, ``entity_metadata``), ``registry``
(views by name, their processors) and ``materialize`` (``build``, ``build_all``)."""
from kgcult.views.dlama import culture_groups, entropy
from kgcult.views.materialize import DEFAULT_OUT, build, build_all
from kgcult.views.output import BuildResult, snapshot_content_hash
from kgcult.views.registry import PROCESSORS, get_view, load_view, registry, views
from kgcult.views.spec import Param, View, ViewError, param_items, parse_params, views_dir
from kgcult.views.spectral_items import spectral_domains

__all__ = ["DEFAULT_OUT", "PROCESSORS", "BuildResult", "Param", "View", "ViewError", "build", "build_all",
           "culture_groups", "entropy", "get_view", "load_view", "param_items", "parse_params", "registry",
           "snapshot_content_hash", "spectral_domains", "views", "views_dir"]
