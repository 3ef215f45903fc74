"""Getting Wikidata subgraphs into the store, from a SPARQL endpoint (``endpoint.mirror``) or
a dump (``dump.ingest``): the same specs (``specs``), the same crawl (``crawl``) and the same
way into the store (``staging``); the endpoint source adds its HTTP side (``fetch``), its
queries (``queries``) and its memory across runs (``checkpoint``)."""
