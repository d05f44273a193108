"""Test durations kept in ``tests/durations.json``, the file the suite's split reads
(``support/suite_split.py``).

``--store-durations`` records what this run took, per test (setup + call + teardown), into that file:
the entries of every file that ran are replaced by this run's (a test renamed or deleted goes with them),
those of files that no longer exist are dropped, the rest are kept, so a run of a few files refreshes
only theirs. Recorded on the xdist controller, which sees every
worker's reports."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

FILE = Path(__file__).resolve().parents[1] / "durations.json"
ROOT = FILE.parents[1]


def load(path: Path = FILE) -> dict[str, float]:
    """Seconds per test node id, or nothing where the file is missing."""
    if not path.exists():
        return {}
    return {nodeid: float(seconds) for nodeid, seconds in json.loads(path.read_text()).items()}


def merged(kept: dict[str, float], measured: dict[str, float], root: Path = ROOT) -> dict[str, float]:
    """This run's entries, and the kept ones of files that still exist and did not run, by node id."""
    ran = {nodeid.split("::", 1)[0] for nodeid in measured}
    still_there = {
        nodeid: seconds
        for nodeid, seconds in kept.items()
        if nodeid.split("::", 1)[0] not in ran and (root / nodeid.split("::", 1)[0]).exists()
    }
    return dict(sorted({**still_there, **measured}.items()))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--store-durations",
        action="store_true",
        help=f"record each test's duration into {FILE.relative_to(ROOT)} (the split reads it)",
    )


class Recorder:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid] += report.duration

    def pytest_sessionfinish(self) -> None:
        measured = {nodeid: round(seconds, 2) for nodeid, seconds in self.seconds.items()}
        FILE.write_text(json.dumps(merged(load(), measured), indent=0) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    is_worker = hasattr(config, "workerinput")
    if config.getoption("--store-durations") and not is_worker:
        config.pluginmanager.register(Recorder(), "federator-durations")
