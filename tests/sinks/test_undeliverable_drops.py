"""An event no endpoint can take (over the target's size limit, with no dead-letter endpoint or one
that refuses it too) is dropped, counted once as ``undeliverable`` and logged by reason, never by
body; the rest of the task's events are published. A write task called directly, without Spark,
publishing to emulator queues."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from federator_contract.taskconfig import TaskConfig
from federator_spark.planning import plan_from_task
from federator_spark.sinks.replication import ReplicationWriter
from support.connections import connection_files
from support.queues import queue_bodies
from support.rows import event_row

pytestmark = pytest.mark.slow  # an emulator, a few seconds

LIMIT = 256 * 1024
LARGE = b"secret-looking-" + b"L" * 300_000
CONNECTION = {"emulator": {"namespace": "basic"}}


def queue(name: str) -> dict[str, Any]:
    return {"serviceBus": {"connection": CONNECTION, "queueName": name}}


def write(emulator: Any, tmp_path: Any, **endpoints: Any) -> Any:
    spec = {
        "source": {"eventHub": {"connection": CONNECTION, "eventHubName": "src"}},
        "targets": [{"name": "out", **queue("out")}],
        **endpoints,
    }
    raw = {
        "kind": "ReplicationTask",
        "metadata": {"name": "t", "namespace": "default"},
        "spec": spec,
        "checkpointLocation": str(tmp_path / "checkpoint"),
        "emulatorConnectionFiles": connection_files(tmp_path / "connections", emulator, ["basic"]),
    }
    writer = ReplicationWriter(plan_from_task(TaskConfig.from_raw(raw)))
    (report,) = writer.write(iter([event_row(0, b"e0"), event_row(1, LARGE), event_row(2, b"e2")])).reports
    return report


def received(emulator: Any, queue: str) -> list[str]:
    return queue_bodies(emulator.connection_string("basic"), queue)


@pytest.fixture
def emulator(emulator_factory: Any) -> Any:
    return emulator_factory(
        {
            "namespaces": [
                {
                    "name": "basic",
                    "maxMessageSizeBytes": LIMIT,
                    "queues": [{"name": "out"}, {"name": "dead"}],
                }
            ]
        }
    )


def dropped_lines(caplog: Any) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "federator_spark.sinks.replication"]


def test_without_a_dead_letter_endpoint_it_is_dropped_counted_and_logged(emulator, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="federator_spark.sinks.replication"):
        report = write(emulator, tmp_path)

    assert (report.undeliverable_dropped, report.out, report.dead_lettered) == (1, {"out": 2}, {})
    assert received(emulator, "out") == ["e0", "e2"]
    assert dropped_lines(caplog) == [
        f"event host/src/0/1 dropped (undeliverable): target:out: a message with a body of {len(LARGE)} "
        f"bytes exceeds the message size limit of out ({LIMIT} bytes)"
    ]


def test_a_dead_letter_endpoint_that_refuses_it_too_counts_one_drop(emulator, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="federator_spark.sinks.replication"):
        report = write(emulator, tmp_path, deadLetter=queue("dead"))

    assert (report.undeliverable_dropped, report.out, report.dead_lettered) == (1, {"out": 2}, {})
    assert received(emulator, "out") == ["e0", "e2"]
    assert received(emulator, "dead") == []
    (line,) = dropped_lines(caplog)
    assert line.startswith("event host/src/0/1 dropped (undeliverable): target:deadLetter: a message ")
    assert "secret-looking" not in line
