"""A task's plan, made once on the driver from its config (``pipeline.plan_task``): what its source reads,
what its writer writes, and where each of its files goes under the checkpoint (``CheckpointLayout``). Its
data sources are bound to it and carry it by value to the Python processes Spark starts. No JVM here."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest
from pyspark import cloudpickle
from pyspark.sql import SparkSession

from federator_contract.applog import failed_marker
from federator_contract.checkpoints import CheckpointLayout
from federator_contract.taskconfig import TaskConfig
from federator_spark import datasources, pipeline
from federator_spark.host import Host, Task
from federator_spark.sources.eventhubs_settings import HubSourceSettings
from federator_spark.sources.servicebus_settings import SourceSettings
from support.connections import write_connection_files

KEY = "Endpoint=sb://{host}/;SharedAccessKeyName=k;SharedAccessKey=a2V5;UseDevelopmentEmulator=true"


def config(tmp_path: Path, source: dict[str, Any], **extra: Any) -> TaskConfig:
    connection = {"emulator": {"namespace": "a"}}
    target = {"eventHub": {"connection": {"emulator": {"namespace": "b"}}, "eventHubName": "copy"}}
    return TaskConfig.from_raw(
        {
            "metadata": {"name": "orders", "namespace": "shop"},
            "spec": {
                "source": {key: {"connection": connection, **value} for key, value in source.items()},
                "targets": [{"name": "copy", **target}],
                "runtime": {"maxEventsPerTrigger": 200, "triggerIntervalSeconds": 3},
            },
            "checkpointLocation": f"file://{tmp_path / 'checkpoint'}",
            "emulatorConnectionFiles": write_connection_files(
                tmp_path / "connections",
                {"a": KEY.format(host="a.example"), "b": KEY.format(host="b.example")},
            ),
            **extra,
        }
    )


HUB = {
    "eventHub": {
        "eventHubName": "orders",
        "consumerGroup": "replication",
        "partitionIds": ["0", "2"],
        "startPosition": {"position": "enqueuedTime", "enqueuedTime": "2026-11-01T00:00:00Z"},
    }
}


def test_an_event_hub_task_is_planned_into_what_its_query_reads_and_writes(tmp_path: Path) -> None:
    task = pipeline.plan_task(config(tmp_path, HUB))

    checkpoint = tmp_path / "checkpoint"
    assert (task.key, task.trigger_seconds) == ("shop/orders", 3)
    assert task.layout == CheckpointLayout(checkpoint)
    assert task.layout.query_location == f"file://{checkpoint}"
    assert task.source == HubSourceSettings(
        connection=task.source.connection,
        event_hub="orders",
        consumer_group="replication",
        partition_ids=("0", "2"),
        start_position="enqueuedTime",
        start_time=datetime(2026, 11, 1, tzinfo=UTC),
        max_events=200,
        status_file=str(checkpoint / "federator" / "status.json"),
        start_file=str(checkpoint / "federator" / "start-positions.json"),  # the query's
    )
    assert task.source.connection.host == "a.example"
    assert task.write.state_dir == str(checkpoint / "federator")
    assert task.write.status_file == str(checkpoint / "federator" / "status.json")
    assert [t.entity for t in task.write.targets.values()] == ["copy"]


def test_a_following_task_keeps_positions_under_its_member_and_the_status_with_the_task(
    tmp_path: Path,
) -> None:
    following = {"group": "orders", "member": "neu", "skewSeconds": 60}
    task = pipeline.plan_task(config(tmp_path, HUB, following=following))

    checkpoint = tmp_path / "checkpoint"
    member = checkpoint / "members" / "neu"
    assert task.layout.query_location == f"file://{member}"
    assert task.write.state_dir == str(member / "federator")
    assert task.layout.status_file == checkpoint / "federator" / "status.json"  # counts go on across switches
    assert task.write.following is not None
    assert task.write.following.state_dir("weu") == checkpoint / "members" / "weu" / "federator"


def test_a_service_bus_task_spools_under_its_query_checkpoint_and_reads_at_most_a_trigger(
    tmp_path: Path,
) -> None:
    source = {"serviceBus": {"topicName": "orders", "subscriptionName": "copy", "maxMessagesPerBatch": 500}}
    task = pipeline.plan_task(config(tmp_path, source, statusFile=str(tmp_path / "status.json")))

    assert isinstance(task.source, SourceSettings)
    assert (task.source.topic, task.source.subscription, task.source.queue) == ("orders", "copy", None)
    assert task.source.max_messages == 200  # the runtime's limit is lower than the entity's batch
    assert task.source.spool_dir == tmp_path / "checkpoint" / "federator" / "servicebus"
    assert task.source.status_file == str(tmp_path / "status.json")  # local mode keeps it in its state dir
    assert task.layout.beside_status("lag.json") == tmp_path / "lag.json"


def test_a_checkpoint_the_app_cannot_keep_files_at_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="checkpoint location: only file:// checkpoints"):
        CheckpointLayout.at("abfss://checkpoints@account.dfs.core.windows.net/orders")


def test_a_tasks_writer_carries_its_plan_by_value_to_a_fresh_process(tmp_path: Path) -> None:
    """Spark pickles a registered data source class and instantiates it in Python processes of its own;
    a bound class is not importable by name, so the plan travels with it, without the task's API models
    (the driver's: ``planning``)."""
    task = pipeline.plan_task(config(tmp_path, HUB))
    writer = datasources.bound(
        datasources.ReplicationDataSource, task.key, source=task.source, plan=task.write
    )
    pickled = tmp_path / "writer.pickle"
    pickled.write_bytes(cloudpickle.dumps(writer))
    code = (
        "import pickle, sys\n"
        "from pyspark.sql.types import StringType, StructField, StructType\n"
        "from federator_spark.sources.eventhubs_slices import SLICE_COLUMNS\n"
        "slices = StructType([StructField(column, StringType()) for column in SLICE_COLUMNS])\n"
        f"source = pickle.loads(open({str(pickled)!r}, 'rb').read())\n"
        "writer = source(options={}).streamWriter(slices, False)\n"
        "print(source.name(), writer.plan.namespace, writer.plan.task, writer.slices.settings.event_hub)\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'federator_contract.api'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)

    assert result.returncode == 0, result.stderr
    written, models = result.stdout.splitlines()
    assert written.split() == ["federator-replication/shop/orders", "shop", "orders", "orders"]
    assert models == "[]"


def test_a_task_the_host_cannot_plan_is_reported_and_keeps_no_other_from_running(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    host = Host(cast(SparkSession, None), pooled=False)  # planning starts nothing in Spark
    unresolved = config(tmp_path, HUB).model_copy(update={"emulator_connection_files": {}})

    assert host.plan(Task(unresolved)) is None
    assert host.failed
    assert failed_marker("shop", "orders") + "emulatorConnectionFiles has no connection" in caplog.text
    assert host.plan(Task(config(tmp_path, HUB))) is not None
