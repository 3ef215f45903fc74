"""`kill -9` during `kgcult closure` on the stand-in (issue 12 item 2): the store must say
stale, no spec's closure but the one being written may differ from its old or new content, the
next run (or a command that needs the closure) removes the scratch records and leaves the
full closure."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time

import pytest

from kgcult import vocab
from kgcult.store import Store, hierarchy
from kgcult.store.hierarchy import scratch_dir

from tests.conftest import ROOT, run_cli
from tests.test_closure import assert_same_as_reference

WD, WDT = vocab.WD, vocab.WDT
# Edges that change most closure graphs: food gets a new superclass (every food, dish and
# ingredient gains an ancestor), Japan a new enclosing territory.
EXTRA = (f"<{WD}Q2095> <{WDT}P279> <{WD}Q9999001> .\n"
         f"<{WD}Q17> <{WDT}P131> <{WD}Q9999002> .\n")


def closure_counts(location) -> dict[str, int]:
    with Store(location, read_only=True) as s:
        return hierarchy.closure_sizes(s)


def closure_process(location) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "kgcult", "--store", str(location), "closure"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.mark.slow
def test_kill_9_during_closure_leaves_store_stale_and_next_run_repairs(tmp_path, standin_path):
    base = tmp_path / "base"
    assert run_cli(["load", str(standin_path), "--graph", vocab.GRAPH + "standin"], base).exit_code == 0
    assert run_cli(["closure"], base).exit_code == 0
    old = closure_counts(base)
    extra = tmp_path / "extra.nt"
    extra.write_text(EXTRA)
    assert run_cli(["load", str(extra)], base).exit_code == 0
    # the new closure, and how long a full run takes here
    full = tmp_path / "full"
    shutil.copytree(base, full)
    t0 = time.monotonic()
    assert closure_process(full).wait() == 0
    duration = time.monotonic() - t0
    new = closure_counts(full)
    assert new != old and all(new[g] >= old[g] for g in new)

    rng = random.Random(12)
    killed = 0
    for i, fraction in enumerate((0.2, 0.5, 0.8)):
        work = tmp_path / f"kill{i}"
        shutil.copytree(base, work)
        proc = closure_process(work)
        time.sleep(duration * fraction * rng.uniform(0.8, 1.2))
        if proc.poll() is not None:
            continue  # finished before the kill on a fast machine: nothing to check
        proc.kill()  # SIGKILL
        proc.wait()
        killed += 1
        with Store(work, read_only=True) as s:
            stale = s.closure_stale
        counts = closure_counts(work)
        if stale:
            # specs are written one at a time: at most the one being written is partial
            partial = [g for g in counts if counts[g] not in (old[g], new[g])]
            assert len(partial) <= 1, (fraction, counts, old, new)
        else:  # killed after the last graph was written (compacting): fresh means complete
            assert counts == new, (fraction, counts, new)
        # a command that needs the closure rebuilds it; the scratch records go
        res = subprocess.run([sys.executable, "-m", "kgcult", "--store", str(work), "show", "Q746549"],
                             env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        assert closure_counts(work) == new
        with Store(work, read_only=True) as s:
            assert not s.closure_stale
            # the new edges' consequences are there: Japan's new territory, food's new superclass
            assert s.query("ASK { wd:Q17 kgc:locatedIn wd:Q9999002 }")
            assert s.query("ASK { ?dish kgc:typedAs wd:Q746549 ; kgc:typedAs wd:Q9999001 }")
            assert not scratch_dir(s).exists()
    assert killed >= 2, "no run was killed part-way: the kill points were too late"
    with Store(tmp_path / "kill0") as s:
        assert_same_as_reference(s)
