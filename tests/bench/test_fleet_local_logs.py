"""A failed local run of the fleet benchmark keeps its logs (``fleet_local.keep_logs``): ``federator run``'s
output and each application's log, copied out of the benchmark's temporary directory, which goes."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from support.resources import ROOT

sys.path.insert(0, str(ROOT))  # the benchmarks are run from the repository's root, not installed
from bench.fleet_local import keep_logs


def test_the_run_s_output_and_every_application_s_log_are_kept(tmp_path: Path) -> None:
    files, state = tmp_path / "local", tmp_path / "run"
    files.mkdir()
    (files / "run.log").write_text("default/in-local-009: Ready (Running)\n")
    for application in ("fleet", "other"):
        directory = state / "applications" / "default" / application
        directory.mkdir(parents=True)
        (directory / "app.log").write_text(f"the log of {application}\n")

    kept = keep_logs(files, state)
    try:
        shutil.rmtree(tmp_path)  # the benchmark's temporary directory goes

        assert sorted(path.read_text() for path in kept.iterdir()) == [
            "default/in-local-009: Ready (Running)\n",
            "the log of fleet\n",
            "the log of other\n",
        ]
    finally:
        shutil.rmtree(kept)
