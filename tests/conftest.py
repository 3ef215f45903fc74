"""Shared fixtures: fresh stores, paths to ../shared, and `oxigraph serve` on loopback."""
from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
STANDIN = SHARED / "standin" / "wikidata-standin.nt.gz"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def require_shared(path: Path = STANDIN) -> Path:
    if not path.exists():
        pytest.skip(f"{path} not found: ../shared (the stand-in data) is not beside this checkout")
    return path


@pytest.fixture
def store(tmp_path):
    from kgcult.store import Store

    s = Store(tmp_path / "store")
    yield s
    s.close()


@pytest.fixture
def standin_path() -> Path:
    return require_shared(STANDIN)


SERVE_FOOD = FIXTURES / "serve" / "food.ttl"


def build_store(path: Path, files=(SERVE_FOOD,)) -> Path:
    """A store at ``path`` holding ``files`` (default: the serve food fixture) and its closure."""
    from kgcult.store import hierarchy
    from kgcult.store import Store

    s = Store(path)
    s.load(list(files))
    hierarchy.build(s)
    s.close()
    return path


@pytest.fixture(scope="session")
def store_path(tmp_path_factory) -> Path:
    """The serve food fixture and its closure, built once per run and only ever opened
    read-only: shared by the server and trust tests (a test that writes takes a copy)."""
    return build_store(tmp_path_factory.mktemp("served") / "store")


@pytest.fixture
def make_server(store_path, tmp_path):
    """Start servers, each with its own config, stopped after the test: read-only over the
    shared store (or over ``path``); ``writable_store=True`` serves a writable copy of it."""
    with ExitStack() as stack:
        copies = iter(range(1000))

        def start(cfg=None, path: Path | None = None, *, writable_store: bool = False):
            if writable_store:
                path = tmp_path / f"store{next(copies)}"
                shutil.copytree(store_path, path)
            return stack.enter_context(running_server(path or store_path, cfg, read_only=not writable_store))
        yield start


@contextmanager
def running_server(path: Path, config=None, read_only: bool = True):
    """`kgcult serve` in-process on a free loopback port over the store at ``path``."""
    from kgcult.serve import Server, ServeConfig
    from kgcult.store import Store

    st = Store(path, read_only=read_only)
    srv = Server(st, config or ServeConfig(port=0)).start()
    try:
        yield srv
    finally:
        srv.stop()
        st.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def oxigraph_binary() -> str:
    exe = Path(sys.executable).with_name("oxigraph")
    if exe.exists():
        return str(exe)
    found = shutil.which("oxigraph")
    if not found:
        pytest.skip("the `oxigraph` server binary (PyPI package oxigraph) is not installed")
    return found


class OxigraphServer:
    """`oxigraph serve` on 127.0.0.1 over a directory loaded with RDF files."""

    def __init__(self, location: Path, files: list[Path], graph: str | None = None):
        self.location = Path(location)
        exe = oxigraph_binary()
        for f in files:
            cmd = [exe, "load", "--location", str(self.location), "--file", str(f)]
            if graph:
                cmd += ["--graph", graph]
            subprocess.run(cmd, check=True, capture_output=True)
        self.port = free_port()
        self.proc = subprocess.Popen(
            [exe, "serve", "--location", str(self.location), "--bind", f"127.0.0.1:{self.port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        self.url = f"http://127.0.0.1:{self.port}/query"
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/", timeout=1)
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(self.proc.stderr.read().decode()) from None
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("oxigraph serve did not start within 30 s")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.fixture
def oxigraph_server(tmp_path):
    """Factory: ``oxigraph_server([files], graph=None)`` -> OxigraphServer (stopped after the test)."""
    servers = []

    def start(files, graph=None):
        s = OxigraphServer(tmp_path / f"oxserve{len(servers)}", [Path(f) for f in files], graph)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


def run_cli(args, store_path=None, input=None):  # noqa: A002 - CliRunner.invoke's name
    """Run the CLI in-process through click's CliRunner; returns the Result."""
    from click.testing import CliRunner

    from kgcult.cli.main import main

    runner = CliRunner()
    full = (["--store", str(store_path)] if store_path else []) + list(args)
    return runner.invoke(main, full, input=input, catch_exceptions=False)
