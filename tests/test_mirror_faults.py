"""Lossless under faults: a fault-injecting proxy between mirror and endpoint, and runs
killed with SIGKILL at random points, must still give the fault-free store."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kgcult.acquire.endpoint import mirror as m
from kgcult.acquire import subgraphs
from kgcult.store import Store

from tests.test_mirror import FIXTURE, data_quads, fast_config
from tests.test_mirror_proxy import ALL_FAULTS, FaultProxy

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def server(oxigraph_server):
    return oxigraph_server([FIXTURE])


@pytest.fixture
def clean(server, tmp_path):
    """The fault-free mirror of the fixture (all subgraphs)."""
    with Store(tmp_path / "clean") as st:
        m.mirror(st, config=fast_config(server.url))
        quads = data_quads(st)
    assert len(quads) > 100
    return quads


def test_faults_without_delays_give_identical_store(server, clean, tmp_path):
    faults = [f for f in ALL_FAULTS if f != "delay"]
    with FaultProxy(server.url, faults=faults, seed=7, rate=0.5) as p:
        with Store(tmp_path / "faulty") as st:
            reps = m.mirror(st, config=fast_config(p.url))
            assert data_quads(st) == clean
        assert sum(r.retries for r in reps) > 0
        assert len([f for f in faults if p.stats.get(f)]) >= 5, p.stats


@pytest.mark.slow
def test_all_faults_give_identical_store(server, clean, tmp_path):
    """429 + Retry-After, 500, 503, slow past the timeout, resets, truncated bodies (with and
    without a matching Content-Length), HTML error pages with status 200."""
    with FaultProxy(server.url, faults=ALL_FAULTS, seed=3, rate=0.5, delay=1.4) as p:
        with Store(tmp_path / "faulty") as st:
            m.mirror(st, config=fast_config(p.url, timeout=1.0, concurrency=3))
            assert data_quads(st) == clean
            assert not [g for g in st.graph_counts() if "/staging/" in g]
        assert all(p.stats.get(f) for f in ALL_FAULTS), p.stats


def _cli(store: Path, url: str) -> list[str]:
    return [sys.executable, "-m", "kgcult.cli", "--store", str(store), "mirror", "--endpoint", url,
            "--no-progress", "--batch-size", "2", "--page-size", "2", "--class-batch-size", "2",
            "--concurrency", "2", "--backoff", "0.01", "--max-backoff", "0.05", "--timeout", "10"]


@pytest.mark.slow
def test_kill9_at_random_points_then_resume(server, clean, tmp_path):
    store = tmp_path / "killed"
    rng = random.Random(11)
    killed = 0
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with FaultProxy(server.url, rate=0.2, faults=("500", "truncated", "html200"), seed=5, latency=0.06) as p:
        for _ in range(12):  # bounded
            proc = subprocess.Popen(_cli(store, p.url), cwd=ROOT, env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                proc.wait(timeout=rng.uniform(0.6, 2.0))
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=30)
                killed += 1
                continue
            assert proc.returncode == 0, proc.stderr.read().decode()
            break
        else:
            # the last run goes to completion
            proc = subprocess.run(_cli(store, p.url), cwd=ROOT, env=env, capture_output=True, timeout=120)
            assert proc.returncode == 0, proc.stderr.decode()
    assert killed >= 2, "the schedule should kill at least two runs mid-way"
    with Store(store) as st:
        assert data_quads(st) == clean
        assert not [g for g in st.graph_counts() if "/staging/" in g]
        # one provenance record per subgraph, however many times it was interrupted
        recs = [r for r in st.provenance() if r.get("kind") == "mirror"]
        assert sorted(r["subgraph"] for r in recs) == sorted(subgraphs.load_specs())
