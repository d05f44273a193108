"""What the replication benchmarks share: the events they send and the tasks they run."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from bench import profiled
from bench.processes import Emulators
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.taskconfig import TaskConfig, TaskMetadata
from federator_spark import pipeline

ROOT = Path(__file__).resolve().parents[1]

PARTITIONS = 4
EVENT_SIZE = 1024
ID_WIDTH = 12  # each body starts with its zero-padded index: the identity the read-back counts


def body(index: int) -> bytes:
    head = b"%0*d" % (ID_WIDTH, index)
    return head + b"x" * (EVENT_SIZE - len(head))


def task_config(
    workdir: Path,
    emus: Emulators,
    source: str,
    target: str,
    trigger_seconds: int | None = None,
    *,
    effectively_once: bool = False,
) -> TaskConfig:
    """A task config as the operator writes it (no ``runtime``: the API's defaults, unless a trigger
    interval is given; at-least-once unless ``effectively_once``)."""

    def endpoint(hub: str) -> dict[str, Any]:
        return {
            "eventHub": {"connection": {"emulator": {"namespace": emus.namespace(hub)}}, "eventHubName": hub}
        }

    name = f"{source}-to-{target}" + ("-eo" if effectively_once else "")
    spec = {
        "source": endpoint(source),
        "targets": [{"name": target, **endpoint(target)}],
        **({} if trigger_seconds is None else {"runtime": {"triggerIntervalSeconds": trigger_seconds}}),
        **({"delivery": {"effectivelyOnce": True}} if effectively_once else {}),
    }
    return TaskConfig(
        metadata=TaskMetadata(name=name, namespace="bench", generation=1),
        spec=ReplicationTaskSpec.model_validate(spec),
        checkpoint_location=f"file://{workdir / ('checkpoint-' + name)}",
        emulator_connection_files={
            emus.namespace(hub): connection_file(workdir, emus.namespace(hub), emus.cs(hub))
            for hub in (source, target)
        },
        status_file=str(workdir / f"status-{name}.json"),
    )


def connection_file(workdir: Path, namespace: str, connection_string: str) -> str:
    """Where the app reads an emulator namespace's connection string (as local mode writes it)."""
    path = workdir / "connections" / namespace
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(connection_string, encoding="utf-8")
    return str(path)


def start_task(spark: Any, config: TaskConfig, *, available_now: bool) -> Any:
    task = pipeline.plan_task(config)
    if os.environ.get("FEDERATOR_BENCH_PROFILE_DIR"):
        return profiled.start(spark, task, available_now=available_now)  # the same sources, profiled
    return pipeline.start(spark, task, available_now=available_now)


def run_available_now(spark: Any, config: TaskConfig) -> tuple[float, list[dict[str, Any]]]:
    started = time.perf_counter()
    query = start_task(spark, config, available_now=True)
    query.awaitTermination()
    elapsed = time.perf_counter() - started
    if query.exception() is not None:
        raise RuntimeError(f"the Spark task failed: {query.exception()}")
    return elapsed, [json.loads(p.json) for p in query.recentProgress]
