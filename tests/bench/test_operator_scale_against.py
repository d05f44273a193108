"""`bench.operator_scale --against DIR`: another checkout's operator against this tree's fake API server,
alternated with this tree's operator in each round, each run saying which operator package it imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def bench(*arguments: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "bench.operator_scale", *arguments]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.full(why="two operators against the fake API server, with their baselines: 20 s")
def test_the_other_checkouts_operator_runs_first_then_this_ones(tmp_path: Path) -> None:
    other = tmp_path / "other"
    for package in ("operator/federator", "contract/federator_contract"):
        (other / package).parent.mkdir(parents=True)
        (other / package).symlink_to(ROOT / package)
    done = bench("--tasks", "3", "--observe-interval", "1", "--against", str(other))
    assert done.returncode == 0, done.stderr[-3000:]
    runs = json.loads(done.stdout.strip().splitlines()[-1])["runs"]
    assert [(r["round"], r["operator"], r["ready_tasks"]) for r in runs] == [
        (1, str(other), 3),
        (1, "this tree", 3),
    ]
    assert [r["operator_package"] for r in runs] == [
        str(other / "operator" / "federator"),
        str(ROOT / "operator" / "federator"),
    ]


def test_a_directory_without_an_operator_is_refused_naming_the_option(tmp_path: Path) -> None:
    done = bench("--against", str(tmp_path))
    assert done.returncode == 2
    assert f"--against {tmp_path}: no operator/federator or contract/federator_contract there" in done.stderr
