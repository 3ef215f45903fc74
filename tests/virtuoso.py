"""Virtuoso Open Source (Debian's ``virtuoso-opensource``) on 127.0.0.1 for tests and
benchmarks, started by hand as a user would: a database folder of its own, a generated
``virtuoso.ini`` (free ports, nothing under /var or /etc), data loaded with Virtuoso's bulk
loader (``ld_dir`` + ``rdf_loader_run``, through ``isql-vt``), stopped with the test.

Layout (docs/serve.md, "Virtuoso"): the store's named graphs as they are (N-Quads), and
kgcult's default graph (every data triple once, and the closure) in one graph,
:data:`DEFAULT_GRAPH`, which the store URL makes the default graph
(``?default-graph-uri=``). Limits are Virtuoso's defaults unless ``limits`` says otherwise
(``ResultSetMaxRows`` 10000 among them).

Without Virtuoso the tests that need it skip, saying what to install.
"""
from __future__ import annotations

import gzip
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

DEFAULT_GRAPH = "https://w3id.org/kgcult/graph/default"
DEFAULT_LIMITS = {"ResultSetMaxRows": 10000, "MaxQueryExecutionTime": 60, "MaxQueryCostEstimationTime": 400}


def virtuoso_binaries() -> tuple[str, str]:
    server, isql = shutil.which("virtuoso-t"), shutil.which("isql-vt")
    if not server or not isql:
        pytest.skip("Virtuoso is not installed (apt-get install virtuoso-opensource: virtuoso-t and isql-vt); "
                    ".ci/run installs it when it runs as root")
    return server, isql


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def export_store(store_path: Path, out: Path) -> tuple[Path, Path]:
    """The embedded store at ``store_path`` as Virtuoso loads it: ``named.nq.gz`` (every
    named graph) and ``default.nt.gz`` (its default graph: the set of data triples and
    the closure)."""
    import pyoxigraph as ox

    from kgcult.store import Store

    out.mkdir(parents=True, exist_ok=True)
    named, default = out / "named.nq.gz", out / "default.nt.gz"
    with Store(store_path, read_only=True) as s:
        with gzip.open(named, "wb", compresslevel=1) as f:
            ox.serialize((q for q in s.ox.quads_for_pattern(None, None, None)
                          if not isinstance(q.graph_name, ox.DefaultGraph)), f, format=ox.RdfFormat.N_QUADS)
        with gzip.open(default, "wb", compresslevel=1) as f:
            ox.serialize((q.triple for q in s.ox.quads_for_pattern(None, None, None, ox.DefaultGraph())), f,
                         format=ox.RdfFormat.N_TRIPLES)
    return named, default


class VirtuosoServer:
    """``virtuoso-t +foreground`` over ``location`` (created), HTTP on a free loopback port."""

    def __init__(self, location: Path, *, limits: dict | None = None, buffers: int = 20000):
        self.server, self.isql = virtuoso_binaries()
        self.location = Path(location).resolve()
        self.location.mkdir(parents=True, exist_ok=True)
        self.sql_port, self.http_port = _free_port(), _free_port()
        self.limits = {**DEFAULT_LIMITS, **(limits or {})}
        params = {k: v for k, v in self.limits.items() if k in ("MaxSortedTopRows",)}
        sparql = {k: v for k, v in self.limits.items() if k not in params}
        ini = [
            "[Database]", "DatabaseFile = virtuoso.db", "ErrorLogFile = virtuoso.log", "LockFile = virtuoso.lck",
            "TransactionFile = virtuoso.trx", "xa_persistent_file = virtuoso.pxa", "Striping = 0",
            "TempStorage = TempDatabase",
            "[TempDatabase]", "DatabaseFile = virtuoso-temp.db", "TransactionFile = virtuoso-temp.trx", "Striping = 0",
            "[Parameters]", f"ServerPort = 127.0.0.1:{self.sql_port}", "DisableUnixSocket = 1",
            "CheckpointInterval = 0", f"DirsAllowed = ., {self.location}", f"NumberOfBuffers = {buffers}",
            f"MaxDirtyBuffers = {buffers * 3 // 4}", "ThreadsPerQuery = 2",
            *(f"{k} = {v}" for k, v in params.items()),
            "[HTTPServer]", f"ServerPort = 127.0.0.1:{self.http_port}", "ServerRoot = .", "ServerThreads = 4",
            "EnabledGzipContent = 1",
            "[SPARQL]", *(f"{k} = {v}" for k, v in sparql.items()),
        ]
        (self.location / "virtuoso.ini").write_text("\n".join(ini) + "\n")
        self.proc = subprocess.Popen([self.server, "+foreground", "+configfile", "virtuoso.ini"],
                                     cwd=self.location, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.endpoint = f"http://127.0.0.1:{self.http_port}/sparql"
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"virtuoso-t exited: {self.proc.stderr.read().decode()[-2000:]}")
            try:
                q = urllib.parse.urlencode({"query": "ASK { }"})
                urllib.request.urlopen(f"{self.endpoint}?{q}", timeout=2).read()
                return
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError("Virtuoso did not start within 120 s")

    def url(self, default_graph: str | None = DEFAULT_GRAPH) -> str:
        """The ``--store`` value for this server."""
        q = "?" + urllib.parse.urlencode({"default-graph-uri": default_graph}) if default_graph else ""
        return f"sparql+{self.endpoint}{q}"

    def sql(self, statements: str) -> str:
        r = subprocess.run([self.isql, f"127.0.0.1:{self.sql_port}", "dba", "dba", f"exec={statements}"],
                           capture_output=True, text=True, timeout=1800)
        if r.returncode != 0 or "*** Error" in r.stdout + r.stderr:
            raise RuntimeError(f"isql: {r.stdout[-1500:]}{r.stderr[-1500:]}")
        return r.stdout

    def load(self, files: list[Path], graph: str = DEFAULT_GRAPH) -> None:
        """Bulk-load files (N-Quads go to their graphs, N-Triples to ``graph``) with
        Virtuoso's loader, then checkpoint. The files must lie under the database folder
        (``DirsAllowed``); others are copied there first."""
        self.loads = getattr(self, "loads", 0) + 1
        inbox = self.location / f"inbox{self.loads}"  # a path the loader has not listed yet
        shutil.rmtree(inbox, ignore_errors=True)
        inbox.mkdir()
        for i, f in enumerate(files):
            shutil.copy(f, inbox / f"{i:03d}-{Path(f).name}")
        self.sql(f"ld_dir('{inbox}', '*', '{graph}'); rdf_loader_run(); checkpoint;")
        errors = self.sql("SELECT ll_file, ll_error FROM DB.DBA.LOAD_LIST WHERE ll_error IS NOT NULL;")
        if "0 Rows" not in errors:
            raise RuntimeError(f"Virtuoso's loader failed: {errors[-1500:]}")
        shutil.rmtree(inbox, ignore_errors=True)

    @contextmanager
    def graph_holding(self, graph: str, ntriples: str):
        """Graph ``graph`` loaded with ``ntriples`` (Virtuoso's own loader) for the block,
        cleared after it."""
        nt = self.location / (graph.rsplit(":", 1)[-1] + ".nt")
        nt.write_text(ntriples)
        self.sql(f"DB.DBA.TTLP(file_to_string('{nt}'), '', '{graph}');")
        try:
            yield graph
        finally:
            self.sql(f"SPARQL CLEAR GRAPH <{graph}>;")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
