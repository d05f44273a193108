"""Spark's checkpoint logs (offsets, commits) are written through the FileSystem API: the default
FileContext-based manager cost about 100 ms of every batch on a local disk (pipeline.py)."""

from __future__ import annotations

from spark_helpers import eh_endpoint, read_all, run_task, send, task_config

from federator_spark.pipeline import (
    CHECKPOINT_FILE_MANAGER,
    FILE_SYSTEM_CHECKPOINTS,
    use_file_system_checkpoints,
)

FILE_CONTEXT_CHECKPOINTS = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager"
)


def test_a_task_writes_its_checkpoint_logs_through_the_file_system_api(spark, emulator_factory, tmp_path):
    spark.conf.unset(CHECKPOINT_FILE_MANAGER)
    hubs = [{"name": name, "partitionCount": 2} for name in ("a", "b")]
    emulator = emulator_factory({"namespaces": [{"name": "ns1", "eventHubs": hubs}]})
    cs = emulator.connection_string("ns1")
    send(cs, "a", [{"body": f"e{i}", "partition": str(i % 2)} for i in range(6)])
    spec = {"source": eh_endpoint("ns1", "a"), "targets": [{"name": "b", **eh_endpoint("ns1", "b")}]}
    raw = task_config(tmp_path, emulator, spec)

    run_task(spark, raw)  # Spark loads the manager by name: a wrong one fails the query

    assert spark.conf.get(CHECKPOINT_FILE_MANAGER) == FILE_SYSTEM_CHECKPOINTS
    assert sum(len(events) for events in read_all(cs, "b").values()) == 6
    checkpoint = tmp_path / "checkpoint-task"
    assert sorted(p.name for p in (checkpoint / "commits").iterdir() if not p.name.startswith(".")) == ["0"]


def test_an_application_s_own_checkpoint_manager_is_kept(spark):
    spark.conf.set(CHECKPOINT_FILE_MANAGER, FILE_CONTEXT_CHECKPOINTS)
    try:
        use_file_system_checkpoints(spark)
        assert spark.conf.get(CHECKPOINT_FILE_MANAGER) == FILE_CONTEXT_CHECKPOINTS
    finally:
        spark.conf.unset(CHECKPOINT_FILE_MANAGER)
