"""Sitelink counts from a file beside a dump that has none (``kgcult ingest --sitelinks FILE``).

The truthy N-Triples dump (``latest-truthy.nt``) carries no ``wikibase:sitelinks``: Wikibase's
``RdfDumpGenerator`` writes the ``truthy-dump`` flavour with ``PRODUCE_TRUTHY_STATEMENTS``
only, while the counts are page properties (``PRODUCE_PAGE_PROPS``) written to the full
dump alone, on the page node ``data:Q42`` (WDQS's munger moves them onto ``wd:Q42``).
DLAMA's subject ranking and the linker's popularity need them. FILE gives them, plain or
.gz/.bz2/.zst, one count a line, in either form:

* ``Q42<TAB>123`` (or spaces): an entity id and its number of sitelinks, e.g. from the
  ``page_props`` table (``pp_propname = 'wb-sitelinks'``) joined with ``page`` for the title;
* an N-Triples line with the predicate ``wikibase:sitelinks``, subject ``wd:Q42`` or
  ``data:Q42``: what ``grep 'ontology#sitelinks>'`` keeps of the full RDF dump
  (``latest-all.nt``).

Blank lines and ``#`` comments are skipped; anything else stops the ingest with file:line.
Each block becomes N-Triples lines that go through the same scan as the dump's.
"""
from __future__ import annotations

from kgcult import ids, vocab
from kgcult.acquire.dump.reader import DumpReader, IngestError

_SITELINKS = f"<{vocab.WIKIBASE}sitelinks>".encode()
_INT = f"<{vocab.XSD}integer>".encode()
_WD = f"<{vocab.WD}".encode()


def ntriples_blocks(path: str):
    """(first line number, N-Triples bytes) blocks of the counts in ``path``; the file's
    sha256 is :attr:`DumpReader.sha256` of the reader, given by the last item as
    ``(None, sha256)``."""
    line_no = 1
    with DumpReader(path, threads=1) as reader:
        for block in reader.blocks():
            lines = block.split(b"\n")[:-1]
            yield line_no, b"".join(_line(path, line_no + k, raw) for k, raw in enumerate(lines))
            line_no += len(lines)
        digest = reader.sha256()
    yield None, digest


def _line(path: str, n: int, raw: bytes) -> bytes:
    s = raw.strip()
    if not s or s.startswith(b"#"):
        return b""
    if s.startswith(b"<"):
        parts = s.split(b" ", 2)
        if len(parts) == 3 and parts[1] == _SITELINKS and s.endswith(b"."):
            return s + b"\n"
        raise IngestError(f"{path}:{n}: not a wikibase:sitelinks N-Triples line")
    fields = s.split()
    if len(fields) != 2 or not ids.is_entity(fields[0].decode("ascii", "replace")):
        raise IngestError(f"{path}:{n}: expected 'QID<TAB>count' or a wikibase:sitelinks N-Triples line")
    count = ids.sitelink_count(fields[1].decode("ascii", "replace"))
    if count is None:
        shown = fields[1][:30].decode("utf-8", "replace") + ("..." if len(fields[1]) > 30 else "")
        raise IngestError(f"{path}:{n}: sitelink count {shown!r} is not a number from 0 to {ids.MAX_SITELINKS}")
    return b'%s%s> %s "%d"^^%s .\n' % (_WD, fields[0], _SITELINKS, count, _INT)
