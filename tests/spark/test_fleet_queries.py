"""One application's driver reconciling its queries with a directory of task configs, against the
emulator in the shared local[2] session: a config that appears starts its task without touching the
running one, an edit restarts only its task's query, a removal stops only it, a member whose batches come
full runs them in the catching-up pool until it has caught up, and a broken config or a failing query
leaves the others running while it is retried with its own backoff."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.eventhub import EventHubConsumerClient
from spark_helpers import eh_endpoint, send, task_config

from federator_spark.fleet import ConfigReader
from federator_spark.host import Host
from federator_spark.pools import CATCHING_UP_POOL

pytestmark = pytest.mark.slow


def hubs(*names: str) -> dict[str, Any]:
    return {"namespaces": [{"name": "ns1", "eventHubs": [{"name": n, "partitionCount": 1} for n in names]}]}


def config(tmp_path: Path, emulator: Any, name: str, source: str, **runtime: Any) -> dict[str, Any]:
    spec = {
        "source": eh_endpoint("ns1", source),
        "targets": [{"name": "copy", **eh_endpoint("ns1", f"{source}-copy")}],
        "runtime": {"triggerIntervalSeconds": 1, **runtime},
    }
    return task_config(tmp_path, emulator, spec, name=name)


def place(directory: Path, name: str, raw: dict[str, Any] | str) -> float:
    """Write a config as an update would (a hidden file, then a rename: never half a file); returns when
    it appeared."""
    hidden = directory / f".{name}.tmp"
    hidden.write_text(raw if isinstance(raw, str) else json.dumps(raw), encoding="utf-8")
    os.replace(hidden, directory / name)
    return time.monotonic()


def delivered(connection_string: str, hub: str) -> int:
    client = EventHubConsumerClient.from_connection_string(
        connection_string, consumer_group="$Default", eventhub_name=hub
    )
    with client:
        return sum(
            client.get_partition_properties(p)["last_enqueued_sequence_number"] + 1
            for p in client.get_partition_ids()
        )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text: str = response.read().decode()
        return text


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f} s: {what}")
        time.sleep(0.1)


@pytest.fixture
def running_host(spark: Any, tmp_path: Path) -> Iterator[tuple[Host, Path]]:
    """A host reconciling ``tmp_path/tasks`` every 0.2 s in a thread, stopped (every query) at the end."""
    directory = tmp_path / "tasks"
    directory.mkdir()
    host = Host(spark, ConfigReader([directory]), backoff_seconds=1.0, backoff_cap_seconds=4.0)
    thread = threading.Thread(target=host.run, kwargs={"pass_seconds": 0.2}, name="host", daemon=True)
    thread.start()
    try:
        yield host, directory
    finally:
        host.stop(0, None)
        thread.join(timeout=120)
        host.close()
        assert not [q for q in spark.streams.active if q.name and q.name.startswith("default.")]


def query(host: Host, key: str) -> Any:
    task = host.tasks.get(key)
    return task.query if task is not None else None


def runs(host: Host, key: str) -> bool:
    found = query(host, key)
    return found is not None and found.isActive


def failures(host: Host, key: str) -> int:
    task = host.tasks.get(key)
    return task.failures if task is not None else 0


def test_tasks_added_edited_and_removed_start_restart_and_stop_only_their_own_query(
    running_host: tuple[Host, Path], emulator_factory: Any, tmp_path: Path
) -> None:
    host, directory = running_host
    emulator = emulator_factory(hubs("a", "a-copy", "b", "b-copy"))
    cs = emulator.connection_string("ns1")
    send(cs, "a", [{"body": "a-0"}])
    port = free_port()
    place(directory, "a.json", {**config(tmp_path, emulator, "a", "a"), "metricsPort": port})
    wait_until(lambda: delivered(cs, "a-copy") == 1, "task a replicates its first event")
    counted = 'federator_events_replicated_total{namespace="default",target="copy",task="a"} 1.0'
    wait_until(lambda: counted in scrape(port), "task a's metrics count it")
    first = query(host, "default/a")
    run_id = first.runId

    send(cs, "b", [{"body": "b-0"}])
    appeared = place(directory, "b.json", config(tmp_path, emulator, "b", "b"))
    wait_until(lambda: delivered(cs, "b-copy") == 1, "task b, added, replicates its first event")
    seconds = time.monotonic() - appeared
    print(f"task added to a running application: first event replicated {seconds:.2f} s after its config")
    assert seconds < 60  # the goal is 5 s (bench/fleet.py measures it); a loaded test machine is slower
    assert (query(host, "default/a"), first.runId, first.isActive) == (first, run_id, True)
    assert (host.tasks["default/a"].phase, host.tasks["default/b"].phase) == (0.0, 0.5)  # 0.5 s apart

    b_before = query(host, "default/b")
    place(directory, "b.json", config(tmp_path, emulator, "b", "b", maxEventsPerTrigger=50))
    wait_until(lambda: query(host, "default/b") not in (None, b_before), "task b restarts")
    assert not b_before.isActive
    assert (query(host, "default/a"), first.runId, first.isActive) == (first, run_id, True)
    send(cs, "b", [{"body": "b-1"}])
    send(cs, "a", [{"body": "a-1"}])
    wait_until(lambda: delivered(cs, "b-copy") == 2, "task b, edited, goes on from its checkpoint")
    wait_until(lambda: delivered(cs, "a-copy") == 2, "task a goes on")

    b_now = query(host, "default/b")
    (directory / "a.json").unlink()
    wait_until(lambda: "default/a" not in host.tasks, "task a stops")
    assert not first.isActive
    with pytest.raises(urllib.error.URLError, match="Connection refused"):  # its endpoint went with it
        scrape(port)
    assert (query(host, "default/b"), b_now.isActive) == (b_now, True)


def test_a_member_whose_batches_come_full_runs_them_in_the_catching_up_pool_until_caught_up(
    running_host: tuple[Host, Path], emulator_factory: Any, spark: Any, tmp_path: Path
) -> None:
    host, directory = running_host
    emulator = emulator_factory(hubs("c", "c-copy"))
    cs = emulator.connection_string("ns1")
    send(cs, "c", [{"body": f"c-{i}"} for i in range(10)])  # batches of 3, 3, 3 and 1
    place(directory, "c.json", config(tmp_path, emulator, "c", "c", maxEventsPerTrigger=3))
    wait_until(lambda: delivered(cs, "c-copy") == 10, "task c catches up, three events a batch")
    # Its batches after its first full one carried the catching-up pool: Spark's status store knows a pool
    # once a stage was submitted in it, whatever the scheduler's mode (this session's is FIFO), and raises
    # NoSuchElementException for any other name.
    catching_up_pool = spark.sparkContext._jsc.sc().statusStore().pool(CATCHING_UP_POOL)
    assert catching_up_pool.name() == CATCHING_UP_POOL
    wait_until(lambda: not host.tasks["default/c"].catching_up, "task c's batches back in the members' pool")
    send(cs, "c", [{"body": "c-10"}])
    wait_until(lambda: delivered(cs, "c-copy") == 11, "task c goes on in the members' pool")
    assert not host.tasks["default/c"].catching_up


def test_a_broken_config_and_a_failing_query_leave_the_others_running_and_are_retried_with_backoff(
    running_host: tuple[Host, Path],
    emulator_factory: Any,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="federator.host")
    host, directory = running_host
    emulator = emulator_factory(hubs("c", "c-copy"))
    cs = emulator.connection_string("ns1")
    place(directory, "broken.json", "{not json")
    place(directory, "missing.json", config(tmp_path, emulator, "missing", "nowhere"))
    place(directory, "c.json", config(tmp_path, emulator, "c", "c"))
    wait_until(lambda: runs(host, "default/c"), "task c starts")
    healthy = query(host, "default/c")

    wait_until(lambda: failures(host, "default/missing") >= 2, "the failing task is retried", 180)
    send(cs, "c", [{"body": "c-0"}])
    wait_until(lambda: delivered(cs, "c-copy") == 1, "task c replicates meanwhile")

    assert (query(host, "default/c"), healthy.isActive) == (healthy, True)
    assert "task config " + str(directory / "broken.json") + ": the task config is not JSON" in caplog.text
    assert caplog.text.count("the task config is not JSON") == 1  # reported once, not every pass
    assert "task default/missing failed: " in caplog.text
    delays = [
        r.getMessage() for r in caplog.records if r.getMessage().startswith("task default/missing: start")
    ]
    assert delays[:2] == [
        "task default/missing: starting it again in 1 s (failure 1 in a row)",
        "task default/missing: starting it again in 2 s (failure 2 in a row)",
    ]
