"""``kgcult ingest DUMP --engine spark``: the same selection as the local engine, as Spark
jobs (pyspark; ``pip install 'kgcult[spark]'``, a Java runtime).

1. The executors read the dump (``sc.textFile``: a local path, ``hdfs://``, ``s3a://``...;
   Hadoop decompresses ``.gz`` and ``.bz2``; ``.bz2`` splits across executors, ``.gz``
   does not) and parse each partition with the local engine's block functions
   (:mod:`kgcult.acquire.dump.scan`) into edge records and, per block, the local engine's
   compressed frame of kept N-Triples lines and terms records (each entity's labels,
   aliases, descriptions and sitelink count, still undecoded), cached (memory, then disk)
   so the dump is read once.
2. The edges of the structural properties are collected on the driver, where the crawl
   runs to its fixpoint over the same :class:`~kgcult.acquire.dump.selection.EdgeIndex` as the
   local engine (the driver needs memory for those edges, as the local engine does).
3. The member sets are broadcast; the executors route each frame's groups as the local
   engine's emission does (:class:`~kgcult.acquire.dump.emit.Router`: only a member's lines
   are kept, and only a member of a labels subgraph has its terms record turned into
   label lines) and write each subgraph's lines as text partitions, ``OUTPUT/subgraph=NAME/part-*.txt`` (N-Triples), which the driver
   loads into the store, or which ``kgcult load ... --graph`` loads later.
"""
from __future__ import annotations

import glob
import logging
import os
import shutil
import sys
import tempfile
from typing import Iterable, Iterator

from kgcult import extras
from kgcult.acquire.dump import scan
from kgcult.acquire.dump.emit import Router
from kgcult.acquire.dump.selection import EdgeIndex, select
from kgcult.acquire.dump.reader import IngestError
from kgcult.files import sha256_file

log = logging.getLogger(__name__)

LINES_PER_BLOCK = 2000
_ERROR = "kgcult-ingest-error: "


def local_sha256(dump: str) -> str | None:
    """The sha256 of a dump on the local file system (None for a cluster URL)."""
    return sha256_file(dump) if os.path.isfile(dump) else None


def _scan_partition(plan: scan.ScanPlan, dump: str, index: int, lines: Iterable[str]) -> Iterator[tuple]:
    """Records of one partition: ("e", pid, subject, object or None) per edge and ("f",
    frame) per block (:func:`~kgcult.acquire.dump.scan.pack_frame`: the block's kept lines
    and terms records, grouped by subject, compressed)."""
    scanner = scan.SCANNERS[plan.kind]
    buf: list[str] = []
    first = 1

    def flush(first_line):
        r = scanner(plan, first_line, "\n".join(buf).encode(), terms=True)
        if r.error:
            raise ValueError(f"{_ERROR}{dump}: partition {index}, line {r.error_line}: {r.error}")
        for e in r.edge_ids():
            yield ("e",) + tuple(e)
        if len(r.groups):
            yield ("f", scan.pack_frame(r))

    for line in lines:
        buf.append(line)
        if len(buf) >= LINES_PER_BLOCK:
            yield from flush(first)
            first += len(buf)
            buf = []
    if buf:
        yield from flush(first)


def _tag_frames(router, records):
    """(subgraph name, its lines of one frame, as one text row) for each subgraph that keeps
    any of the frame's lines."""
    for r in records:
        for name, kept in router.route_groups(scan.unpack_frame(r[1])):
            text = kept.decode().rstrip("\n")
            if text:
                yield (name, text)


def session(master: str | None):
    """A SparkSession for ``master`` (default ``local[*]``); executors run this Python."""
    extras.require("pyspark", "spark", "kgcult ingest --engine spark")
    from pyspark.sql import SparkSession  # optional extra
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("kgcult ingest").master(master or "local[*]")
    builder = builder.config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
    return builder.getOrCreate()


def run(dump, plan, specs, needed, todo, reports, *, master=None, output=None):
    """Run the selection and the emission on Spark; return a source of the members' lines."""
    if dump.endswith(".zst"):
        raise IngestError(f"{dump}: the Spark engine reads .gz, .bz2 or plain dumps (Hadoop has no "
                          "portable zstd codec); recompress it or use --engine local")
    spark = session(master)
    from pyspark import StorageLevel  # optional extra
    sc = spark.sparkContext
    out = output or tempfile.mkdtemp(prefix="kgcult-spark-")
    try:
        scanned = sc.textFile(dump).mapPartitionsWithIndex(
            lambda i, it: _scan_partition(plan, dump, i, it)).persist(StorageLevel.MEMORY_AND_DISK)
        index = EdgeIndex(set(plan.struct_props))
        for _, pid, s, o in scanned.filter(lambda r: r[0] == "e").toLocalIterator():
            index.add(pid, s, o)
        index.freeze()
        backend = select(index, specs, needed, reports)
        router = sc.broadcast(Router(todo, backend))
        tagged = scanned.filter(lambda r: r[0] == "f").mapPartitions(lambda it: _tag_frames(router.value, it))
        frame = spark.createDataFrame(tagged, "subgraph string, value string")
        frame.write.mode("overwrite").partitionBy("subgraph").text(out)
        scanned.unpersist()
    except Exception as e:  # Py4J wraps the executors' errors
        if not output:
            shutil.rmtree(out, ignore_errors=True)
        text = str(e)
        if _ERROR in text:
            raise IngestError(text.split(_ERROR, 1)[1].splitlines()[0]) from None
        if isinstance(e, IngestError):
            raise
        raise IngestError(f"{dump}: the Spark job failed: {text.strip().splitlines()[0] if text.strip() else e!r}") from None
    finally:
        spark.stop()
    log.info("spark: output partitions in %s", out)
    return PartitionSource(out, keep=bool(output))


class PartitionSource:
    """The members' lines from Spark's output partitions."""

    def __init__(self, directory: str, keep: bool):
        self.directory, self.keep = directory, keep
        self.remote = "://" in directory and not directory.startswith("file:")
        if directory.startswith("file://"):
            self.directory = directory[len("file://"):]

    def emit(self, todo):
        for s in todo:
            for part in sorted(glob.glob(os.path.join(self.directory, f"subgraph={s.name}", "part-*"))):
                with open(part, "rb") as f:
                    for lines in iter(lambda: f.readlines(1 << 22), []):
                        yield s.name, b"".join(lines)

    def remove(self) -> None:
        if not self.keep and not self.remote:
            shutil.rmtree(self.directory, ignore_errors=True)
