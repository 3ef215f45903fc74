"""Getting Wikidata subgraphs into the store, from a SPARQL endpoint or a dump, with the same
specs, the same crawl and the same way into the store.

Here: ``subgraphs`` (the specs of ``ontology/subgraphs.ttl``), ``crawl`` (member
selection, shared by both sources), ``staging`` (how a new graph version replaces the old),
``outcome`` (what acquiring one subgraph did).

* ``endpoint/``: ``kgcult mirror`` (``mirror``), its HTTP side (``client``), its SPARQL
  (``queries``) and its memory across runs (``checkpoint``);
* ``dump/``: ``kgcult ingest`` (``ingest``), reading the dump once (``reader``), parsing it in
  workers (``scan``, ``json_entity``, ``truthy``), the selection's arrays (``selection``),
  the emission into staging graphs (``emit``) and the Spark engine (``spark``).
"""
