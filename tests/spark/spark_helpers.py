"""Helpers for Spark tests: publish and read events with the real SDKs, build and run task configs."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient

from support.connections import connection_files


def send(connection_string: str, hub: str, events: list[dict[str, Any]]) -> None:
    """Each event: ``body`` and optionally ``partition`` or ``key``, ``properties``. Sent one batch per
    consecutive run of the same destination, so the order of the list is the order per partition."""
    producer = EventHubProducerClient.from_connection_string(connection_string, eventhub_name=hub)
    with producer:
        run: list[dict[str, Any]] = []
        for event in [*events, None]:
            if run and (event is None or _dest(event) != _dest(run[0])):
                kind, value = _dest(run[0])
                batch = producer.create_batch(**({kind: value} if value is not None else {}))
                for item in run:
                    data = EventData(item["body"])
                    data.properties = item.get("properties", {})
                    batch.add(data)
                producer.send_batch(batch)
                run = []
            if event is not None:
                run.append(event)


def _dest(event: dict[str, Any]) -> tuple[str, str | None]:
    if "partition" in event:
        return ("partition_id", event["partition"])
    return ("partition_key", event.get("key"))


def read_all(connection_string: str, hub: str) -> dict[str, list[Any]]:
    """Every event of every partition, in sequence order, as the SDK's ``EventData`` a consumer gets."""
    from federator_spark.connections import Connection
    from federator_spark.sources.eventhubs import receive

    client = EventHubConsumerClient.from_connection_string(
        connection_string, consumer_group="$Default", eventhub_name=hub
    )
    with client:
        ids = client.get_partition_ids()
        last = {p: client.get_partition_properties(p)["last_enqueued_sequence_number"] for p in ids}
    found: dict[str, list[Any]] = {}
    for partition in ids:
        found[partition] = []
        if last[partition] < 0:
            continue
        connection = Connection(connection_string=connection_string)
        for events in receive(
            connection,
            hub,
            "$Default",
            partition,
            -1,
            inclusive=False,
            timeout=20,
            expected=last[partition] + 1,
        ):
            # The app's receiver hands over the SDK's decoded messages; a consumer would see EventData.
            found[partition].extend(EventData._from_message(message) for message in events)
            if found[partition] and found[partition][-1].sequence_number >= last[partition]:
                break
    return found


def body(event: Any) -> str:
    return event.body_as_str()


def prop(event: Any, name: str) -> str | None:
    value = (event.properties or {}).get(name.encode())
    return value.decode() if isinstance(value, bytes) else value


def eh_endpoint(namespace: str, hub: str) -> dict[str, Any]:
    return {"eventHub": {"connection": {"emulator": {"namespace": namespace}}, "eventHubName": hub}}


def task_config(
    tmp_path: Path,
    emulator: Any,
    spec: dict[str, Any],
    *,
    namespaces: tuple[str, ...] = ("ns1",),
    name: str = "task",
) -> dict[str, Any]:
    checkpoint = tmp_path / f"checkpoint-{name}"
    return {
        "apiVersion": "federator.io/v1alpha1",
        "kind": "ReplicationTask",
        "metadata": {"name": name, "namespace": "default", "generation": 1},
        "spec": spec,
        "checkpointLocation": f"file://{checkpoint}",
        "secretEnv": {},
        "emulatorConnectionFiles": connection_files(tmp_path / "connections", emulator, namespaces),
        "statusFile": str(tmp_path / f"status-{name}.json"),
    }


def run_task(spark: Any, raw: dict[str, Any]) -> Any:
    """Run the task over what the source holds now (availableNow) and return the finished query."""
    from federator_contract.taskconfig import TaskConfig
    from federator_spark import pipeline

    task = pipeline.plan_task(TaskConfig.from_raw(json.loads(json.dumps(raw))))
    query = pipeline.start(spark, task, available_now=True)
    query.awaitTermination(timeout=120)
    if query.isActive:
        query.stop()
        raise AssertionError("the task did not finish within 120 s")
    if query.exception() is not None:
        raise AssertionError(str(query.exception()))
    return query


REPLICATE = Path(__file__).resolve().parents[2] / "spark-apps" / "replicate.py"


def start_app(
    config_path: Path, log: Path, *extra: str, env: dict[str, str] | None = None, master: str = "local[2]"
) -> subprocess.Popen[bytes]:
    """``replicate.py`` in a session of its own (kill its process group to crash it whole); Spark's and
    Python's temporary files under ``log``'s folder."""
    argv = [str(REPLICATE), "--task-config", str(config_path), "--master", master, *extra]
    return start_driver(argv, log, env)


def start_host(task_dir: Path, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    """A shared driver (``federator_spark.host``, ``local[2]``) running the task configs of ``task_dir``,
    in a session of its own like ``start_app``'s."""
    argv = ["-m", "federator_spark.host", "--task-dir", str(task_dir), "--master", "local[2]", *extra]
    return start_driver(argv, log)


def start_driver(argv: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """This interpreter running ``argv`` as a Spark driver in a session of its own, its output appended
    to ``log``, Spark's and Python's temporary files under ``log``'s folder."""
    temporary = log.parent / "tmp"
    temporary.mkdir(exist_ok=True)
    environment = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "TMPDIR": str(temporary),
        "PYSPARK_SUBMIT_ARGS": f"--conf spark.local.dir={temporary} "
        f"--conf spark.driver.extraJavaOptions=-Djava.io.tmpdir={temporary} "
        "--conf spark.ui.showConsoleProgress=false pyspark-shell",
        **(env or {}),
    }
    with log.open("ab") as output:
        return subprocess.Popen(
            [sys.executable, *argv],
            stdout=output,
            stderr=subprocess.STDOUT,
            env=environment,
            start_new_session=True,
        )


def kill_session(leader: subprocess.Popen[bytes]) -> None:
    """SIGKILL every process of ``leader``'s session, as a pod dies: the driver and its JVM (the leader's
    process group) and PySpark's daemon with its workers (a group of their own in the session); returns
    once none is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(leader.pid, signal.SIGKILL)  # the JVM at once: nothing commits after this
    deadline = time.monotonic() + 30
    while members := session_members(leader.pid):
        assert time.monotonic() < deadline, f"processes of the session left: {members}"
        for pid in members:  # again if a daemon forked meanwhile
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if leader.poll() is None:
            leader.wait()
        time.sleep(0.1)


def session_members(session: int) -> list[int]:
    """The live (not zombie) processes of a session, from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue  # gone meanwhile
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields and fields[0] != "Z" and int(fields[3]) == session:
            members.append(int(entry.name))
    return members


def run_app_to_end(config_path: Path, log: Path, *extra: str, timeout: float = 240) -> int:
    """``replicate.py --available-now`` until it exits, which must be with 0 within ``timeout`` (it is
    killed whole otherwise); returns the driver's pid."""
    app = start_app(config_path, log, "--available-now", *extra)
    try:
        assert app.wait(timeout=timeout) == 0, log.read_text(encoding="utf-8")[-4000:]
    finally:
        if app.poll() is None:
            os.killpg(app.pid, signal.SIGKILL)  # the driver, its JVM and everything in its session
            app.wait()
    return app.pid
