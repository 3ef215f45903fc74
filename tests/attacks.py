"""Rerun the attack list of issue 30 kept as tests (``tests/attacks.toml``): exactly the
catalogued tests, slow ones included, then the count of attacks held per category.

    make attacks                       # or: python -m tests.attacks
    python -m tests.attacks --list     # the catalogue, no run
    python -m tests.attacks -- -x      # anything after -- goes to pytest

An attack holds when every test that replays it passed (a skipped or failed one, or one
that did not run -- deselected by arguments after --, does not hold it); a pending attack
(another branch is on it) is counted apart. Exit status 0 when every catalogued attack with tests holds.
"""
from __future__ import annotations

import argparse
import os
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = Path(__file__).resolve().parent / "attacks.toml"
CATEGORIES = {  # in the order
    "way-in": "a way in, or reading what is not yours (serve)",
    "data-lost": "data lost",
    "truncation": "truncation and emptiness taken for data",
    "machine-down": "one input takes the machine down",
    "leaks": "leaks and confusing errors",
}
FIELDS = {"id", "category", "attack", "tests", "pending", "source"}


def load(path: Path = CATALOGUE) -> list[dict]:
    """The catalogue's entries, checked: known fields and category, unique ids, tests xor
    pending."""
    with open(path, "rb") as f:
        entries = tomllib.load(f).get("attack", [])
    seen: set = set()
    for n, e in enumerate(entries, 1):
        where = f"{path.name}: attack {n} ({e.get('id', '?')})"
        if set(e) - FIELDS:
            raise ValueError(f"{where}: unknown fields {sorted(set(e) - FIELDS)}")
        if not e.get("id") or e["id"] in seen:
            raise ValueError(f"{where}: missing or repeated id")
        seen.add(e["id"])
        if e.get("category") not in CATEGORIES:
            raise ValueError(f"{where}: category must be one of {sorted(CATEGORIES)}")
        if not e.get("attack"):
            raise ValueError(f"{where}: no attack text")
        if bool(e.get("tests")) == bool(e.get("pending")):
            raise ValueError(f"{where}: give either tests (node ids) or pending (the owner)")
    return entries


def node_ids(entries: list[dict]) -> list[str]:
    """Every catalogued node id once, in catalogue order."""
    return list(dict.fromkeys(t for e in entries for t in e.get("tests", [])))


def covers(node: str, reported: str) -> bool:
    """Whether the catalogued ``node`` names the test pytest reported as ``reported``
    ("file::function" covers each of its parameters)."""
    return reported == node or ("[" not in node and reported.startswith(node + "["))


class _Outcomes:
    """A pytest plugin: each test's outcome (a failing setup or teardown fails it)."""

    def __init__(self):
        self.outcome: dict[str, str] = {}

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.outcome[report.nodeid] = "failed"
        elif report.skipped and report.when in ("setup", "call"):
            self.outcome.setdefault(report.nodeid, "skipped")
        elif report.when == "call" and report.passed:
            self.outcome.setdefault(report.nodeid, "passed")


def verdicts(entries: list[dict], outcome: dict[str, str]) -> dict[str, str]:
    """attack id -> 'held' | 'pending' | 'failed' | 'skipped' | 'not run'."""
    out = {}
    for e in entries:
        if e.get("pending"):
            out[e["id"]] = "pending"
            continue
        worst = "held"
        for node in e["tests"]:
            got = [v for k, v in outcome.items() if covers(node, k)]
            state = ("not run" if not got else "failed" if "failed" in got
                     else "skipped" if "skipped" in got else "held")
            if state != "held" and worst in ("held", "skipped"):
                worst = state
        out[e["id"]] = worst
    return out


def report(entries: list[dict], verdict: dict[str, str]) -> str:
    lines = [f"{'category':<14} held/total  pending  what"]
    for cat, title in CATEGORIES.items():
        mine = [e for e in entries if e["category"] == cat]
        tested = [e for e in mine if not e.get("pending")]
        held = sum(verdict[e["id"]] == "held" for e in tested)
        pending = ", ".join(f"{e['id']} ({e['pending']})" for e in mine if e.get("pending"))
        lines.append(f"{cat:<14} {held:>4}/{len(tested):<5}  {len(mine) - len(tested):>7}  {title}"
                     + (f"; pending: {pending}" if pending else ""))
    tested = [e for e in entries if not e.get("pending")]
    held = sum(verdict[e["id"]] == "held" for e in tested)
    lines.append(f"{'all':<14} {held:>4}/{len(tested):<5}  {len(entries) - len(tested):>7}  "
                 f"({len(entries)} attacks catalogued; "
                 f"{sum(e.get('source', 'issue 30') != 'issue 30' for e in entries)} found on the rerun)")
    for e in entries:
        if verdict[e["id"]] not in ("held", "pending"):
            lines.append(f"NOT HELD ({verdict[e['id']]}): {e['id']}: {e['attack']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    ap = argparse.ArgumentParser(prog="python -m tests.attacks", description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="print the catalogue and its node ids; run nothing")
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    entries = load()
    if args.list:
        for e in entries:
            print(f"{e['category']:<13} {e['id']}: " + (f"pending ({e['pending']})" if e.get("pending")
                                                         else " ".join(e["tests"])))
        return 0
    import pytest

    plugin = _Outcomes()
    os.chdir(ROOT)  # the node ids are relative to the repository root
    code = pytest.main(["-q", "-p", "no:cacheprovider", "-m", "slow or not slow", "--rootdir", str(ROOT),
                        *extra, *node_ids(entries)], plugins=[plugin])
    verdict = verdicts(entries, plugin.outcome)
    print("\n== issue 30's attacks, rerun (tests/attacks.toml)")
    print(report(entries, verdict))
    bad = [i for i, v in verdict.items() if v not in ("held", "pending")]
    return 1 if bad or code not in (0, 5) else 0


if __name__ == "__main__":
    sys.exit(main())
