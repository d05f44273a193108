"""A task's checkpoint is bound to its source, with real Spark and the emulator: the task replicates from
namespace `weu`, then its connection (the Secret's value, here the connection file) is re-pointed to `neu`,
whose hub has the same name. The app refuses to start: it exits with `CheckpointSourceMismatch` in its
status and reads nothing (local mode shows the task Stalled with that reason). With a reset token the old
checkpoint is set aside, kept, and the task replicates `neu` from the spec's start position."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import body, eh_endpoint, read_all, run_task, send, start_app, task_config

from federator.local.observe import LogWatch, app_row
from federator_contract.appstatus import CHECKPOINT_SOURCE_MISMATCH, read_status
from federator_contract.checkpoints import CheckpointLayout

pytestmark = [pytest.mark.slow, pytest.mark.jvm]

HUBS = {
    "namespaces": [
        {"name": "weu", "eventHubs": [{"name": "orders", "partitionCount": 2}]},
        {"name": "neu", "eventHubs": [{"name": "orders", "partitionCount": 2}]},
        {"name": "dr", "eventHubs": [{"name": "copy", "partitionCount": 2}]},
    ]
}


def copied(emulator: Any) -> list[str]:
    return sorted(
        body(e) for events in read_all(emulator.connection_string("dr"), "copy").values() for e in events
    )


def refused_run(config: dict[str, Any], tmp_path: Path) -> tuple[int, Path]:
    """``replicate.py`` as local mode and the Spark pods run it: its exit code and its log."""
    path, log = tmp_path / "task.json", tmp_path / "app.log"
    path.write_text(json.dumps(config), encoding="utf-8")
    app = start_app(path, log, "--available-now")
    try:
        return app.wait(timeout=120), log
    finally:
        if app.poll() is None:
            os.killpg(app.pid, signal.SIGKILL)
            app.wait()


def test_a_re_pointed_source_is_refused_until_positions_are_reset(
    spark: Any, emulator_factory: Any, tmp_path: Path
) -> None:
    emulator = emulator_factory(HUBS)
    spec = {
        "source": eh_endpoint("weu", "orders"),
        "targets": [{"name": "copy", **eh_endpoint("dr", "copy")}],
    }
    config = task_config(tmp_path, emulator, spec, namespaces=("weu", "dr"))
    send(
        emulator.connection_string("weu"),
        "orders",
        [{"body": f"weu-{i}", "partition": "0"} for i in range(3)],
    )
    run_task(spark, config)
    assert copied(emulator) == ["weu-0", "weu-1", "weu-2"]

    # The Secret is re-pointed: the same hub name on another namespace, whose sequence numbers differ.
    Path(config["emulatorConnectionFiles"]["weu"]).write_text(
        emulator.connection_string("neu"), encoding="utf-8"
    )
    send(
        emulator.connection_string("neu"),
        "orders",
        [{"body": f"neu-{i}", "partition": "0"} for i in range(5)],
    )
    code, log = refused_run(config, tmp_path)

    assert code != 0
    status = read_status(config["statusFile"])
    [outage] = status["unavailable"]
    assert outage["reason"] == CHECKPOINT_SOURCE_MISMATCH
    assert (
        emulator.namespace("weu").connection_string.split(";")[0].removeprefix("Endpoint=sb://")
        in outage["message"]
    )
    assert copied(emulator) == ["weu-0", "weu-1", "weu-2"]  # nothing read, nothing written
    row = app_row(
        "default/task", exit_code=code, stop_requested=False, log=LogWatch(log, "never"), status=status
    )
    assert (row.condition, row.reason) == ("Stalled", CHECKPOINT_SOURCE_MISMATCH)

    run_task(spark, {**config, "resetPositions": "re-pointed to neu"})

    assert copied(emulator) == ["neu-0", "neu-1", "neu-2", "neu-3", "neu-4", "weu-0", "weu-1", "weu-2"]
    assert "unavailable" not in read_status(config["statusFile"])  # the refusal is over
    layout = CheckpointLayout(Path(config["checkpointLocation"].removeprefix("file://")))
    [aside] = list(layout.previous_dir.iterdir())
    assert (aside / "offsets").is_dir() and (aside / "federator" / "source.json").is_file()
