"""``kgcult ingest``: a Wikidata JSON or truthy N-Triples dump filtered into the subgraphs.

Modules: ``ingest`` (the run), ``reader`` (format, decompression, sha256), ``scan`` (the
parallel parse), ``json_entity`` (one JSON line, decoded lazily), ``truthy`` (an entity as
WDQS's truthy triples), ``selection`` (edges and members as integer arrays), ``emit``
(members' lines into staging graphs), ``spark`` (the Spark engine).
"""
