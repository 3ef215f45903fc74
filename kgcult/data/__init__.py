"""kgcult's data, shipped inside the package: ``ontology/``, ``queries/`` and the seed
snapshot ``dumps/seed/``.

In the repository these live at the top level (where the design puts them) and the
entries here are symbolic links to them; building a wheel copies their content in
(``[options.package_data]`` in setup.cfg). Code reads them through
:mod:`kgcult.resources`, never by a path relative to the checkout.
"""
