"""Shared helpers for the benchmark scripts: where the data is, machine facts, and
writing results (bench/results/<name>.json + a Markdown fragment for BENCHMARKS.md)."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
STANDIN = SHARED / "standin" / "wikidata-standin.nt.gz"
RESULTS = ROOT / "bench" / "results"
WORK = Path(os.environ.get("KGCULT_BENCH_DIR", "/tmp/kgcult-bench"))


def child_env() -> dict:
    """The environment of a child process that imports this checkout's kgcult."""
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


# Loads a store in a child process (``load_in_child``).
LOAD_CHILD = r"""
import sys
from kgcult.store import Store, hierarchy
from kgcult.store.snapshot import store_content_hash
s = Store(sys.argv[1])
s.load(sys.argv[3:], graph=sys.argv[2])
hierarchy.ensure_closure(s)
store_content_hash(s)  # cached in the store: read-only opens find it
s.close()
"""


def load_in_child(store: Path, files: list, graph: str) -> None:
    """Load ``files`` into the embedded store at ``store`` (into ``graph``) and build its
    closure, in a child process. A benchmark that measures child processes must stay
    small itself: a child's ru_maxrss starts at the RSS its parent had when it forked
    (Linux keeps the old memory's high-water mark across exec), so a load done in the
    benchmark's own process would count in every child it measures afterwards."""
    subprocess.run([sys.executable, "-c", LOAD_CHILD, str(store), graph, *map(str, files)],
                   env=child_env(), check=True)


def require(path: Path) -> Path:
    if not path.exists():
        sys.exit(f"benchmark needs {path} (../shared beside the checkout)")
    return path


def machine() -> dict:
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = f.readline().split(":")[1].strip()
    except OSError:
        pass
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "memory": mem,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def commit() -> str:
    """The commit the working tree measured (``+`` when it had uncommitted changes)."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+" if dirty else "")


def tree_at(rev: str, dest: Path) -> Path:
    """The files of commit ``rev`` in ``dest`` (``git archive``; kept for the next run), for
    a benchmark that runs an older commit's code beside this checkout's."""
    if not dest.exists():
        dest.mkdir(parents=True)
        arch = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=arch, check=True)
    return dest


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def run(cmd: list[str], **kw) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, **kw)
    return time.perf_counter() - t0


def save(name: str, data: dict, markdown: str) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    data = {"machine": machine(), **data}
    (RESULTS / f"{name}.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    m = data["machine"]
    header = (f"_Measured {m['date']} at commit `{m['commit']}` on {m['cpus']} CPUs ({m['cpu']}), "
              f"{m['memory']} RAM._\n\n")
    (RESULTS / f"{name}.md").write_text(header + markdown.strip() + "\n")
    print(markdown)
