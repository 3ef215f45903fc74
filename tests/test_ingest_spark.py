"""kgcult ingest --engine spark: the same selection as the local engine, as Spark jobs
(local mode here); its output loaded into a store gives exactly the same graphs."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from kgcult import extras
from kgcult.acquire import subgraphs
from kgcult.store import Store
from kgcult.store.snapshot import store_content_hash

from tests.conftest import run_cli
from tests.test_ingest import write_dump
from tests.test_mirror import graph_triples


def _java_ok() -> bool:
    java = shutil.which("java")
    return bool(java) and subprocess.run([java, "-version"], capture_output=True).returncode == 0


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not extras.available("pyspark"), reason="pyspark not installed (pip install 'kgcult[spark]')"),
    pytest.mark.skipif(not _java_ok(), reason="no Java runtime (apt-get install default-jre-headless)"),
]


def test_spark_engine_gives_the_same_graphs_as_the_local_engine(tmp_path):
    dump = write_dump(tmp_path / "dump.json.bz2")
    r = run_cli(["ingest", str(dump), "--no-progress", "--jobs", "2"], tmp_path / "local")
    assert r.exit_code == 0, r.output
    out = tmp_path / "parts"
    r = run_cli(["ingest", str(dump), "--no-progress", "--engine", "spark", "--master", "local[2]",
                 "--output", str(out)], tmp_path / "spark")
    assert r.exit_code == 0, r.output
    with Store(tmp_path / "local") as a, Store(tmp_path / "spark") as b:
        assert store_content_hash(a) == store_content_hash(b)
        dishes = graph_triples(a, "dishes")
        assert dishes and graph_triples(b, "dishes") == dishes
        engines = [p["engine"] for p in b.provenance() if p.get("kind") == "ingest"]
        assert engines == ["spark"] * len(subgraphs.load_specs())  # one record per subgraph
    # the partitions are N-Triples that `kgcult load` takes (cluster use: concatenate, then load)
    parts = sorted((out / "subgraph=dishes").glob("part-*"))
    assert parts
    nt = tmp_path / "dishes.nt"
    nt.write_bytes(b"".join(p.read_bytes() for p in parts))
    r = run_cli(["load", str(nt), "--graph", "dishes", "--no-progress"], tmp_path / "loaded")
    assert r.exit_code == 0, r.output
    with Store(tmp_path / "loaded") as c:
        assert graph_triples(c, "dishes") == dishes


def test_spark_engine_without_output_dir_and_a_bad_line(tmp_path):
    dump = write_dump(tmp_path / "dump.json")
    r = run_cli(["ingest", str(dump), "countries", "--no-progress", "--jobs", "1"], tmp_path / "local")
    assert r.exit_code == 0, r.output
    r = run_cli(["ingest", str(dump), "countries", "--no-progress", "--engine", "spark", "--master", "local[1]"],
                tmp_path / "spark")
    assert r.exit_code == 0, r.output
    with Store(tmp_path / "local") as a, Store(tmp_path / "spark") as b:
        assert graph_triples(a, "countries") and graph_triples(b, "countries") == graph_triples(a, "countries")
    bad = tmp_path / "bad.json"
    bad.write_text('[\n{"type": "item", "id": "Q1"},\n{"type": "item", "id": \n]\n')
    r = run_cli(["ingest", str(bad), "--no-progress", "--engine", "spark", "--master", "local[1]"], tmp_path / "s")
    assert r.exit_code == 1 and "bad.json: partition 0, line 3: not a JSON entity line" in r.stderr
    with Store(tmp_path / "s") as st:
        assert not st.data_graphs()


def test_spark_engine_on_a_truthy_ntriples_dump(tmp_path):
    """An N-Triples dump: label lines are lines (no terms records); the same graphs."""
    from kgcult.acquire.dump import ingest as ing

    nt = tmp_path / "dump.nt"
    ing.json_to_ntriples(str(write_dump(tmp_path / "dump.json")), str(nt))
    r = run_cli(["ingest", str(nt), "--no-progress", "--jobs", "1"], tmp_path / "local")
    assert r.exit_code == 0, r.output
    r = run_cli(["ingest", str(nt), "--no-progress", "--engine", "spark", "--master", "local[2]"],
                tmp_path / "spark")
    assert r.exit_code == 0, r.output
    with Store(tmp_path / "local") as a, Store(tmp_path / "spark") as b:
        assert graph_triples(a, "dishes") and store_content_hash(a) == store_content_hash(b)
