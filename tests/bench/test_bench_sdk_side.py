"""``bench.replication`` pre-loads its source and runs the SDK copy loop in a process of its own: its own
process is the Spark driver's Python side, whose memory counts in the application's peak, and a driver
holds no copy loop's receivers, threads and buffers."""

from __future__ import annotations

import os
import sys

from support.resources import ROOT

sys.path.insert(0, str(ROOT))  # the benchmarks are run from the repository's root, not installed
from bench.replication import sdk_process


def test_the_sdk_side_runs_in_another_process_that_outlives_each_call() -> None:
    with sdk_process() as side:
        first, second = (side.submit(os.getpid).result(timeout=60) for _ in range(2))

    assert first != os.getpid()
    assert first == second  # one process for the run: pre-loading and both copy loops
