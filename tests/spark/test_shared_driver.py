"""A shared application's driver in a cluster, against the emulator in the shared local[2] session: it
runs the tasks of the ConfigMaps it watches through the API server (adding, editing, removing one
starts, restarts, stops only its query, and an outage of the API server stops nothing), serves one
status endpoint for all of them, runs each query's jobs in the members' scheduler pool, and lists the task
configs it cannot run."""

from __future__ import annotations

import json
import logging
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kube_configmaps import CuttableProxy, cuttable_api, put, remove
from py4j.protocol import Py4JJavaError
from pyspark import SparkConf
from spark_helpers import send
from test_fleet_queries import config, delivered, free_port, hubs, place, query, scrape, wait_until

from federator_contract.driverstatus import task_status_path
from federator_spark.config_watch import ConfigMapReader, ConfigMapWatch
from federator_spark.fleet import ConfigReader, Reader
from federator_spark.host import Host
from federator_spark.kube_client import ApiAccess
from federator_spark.pools import MEMBERS_POOL, scheduler_mode
from support.kube import KubeServer

pytestmark = pytest.mark.slow


def running(spark: Any, reader: Reader, **options: Any) -> tuple[Host, threading.Thread]:
    host = Host(spark, reader, backoff_seconds=1.0, backoff_cap_seconds=4.0, **options)
    thread = threading.Thread(target=host.run, kwargs={"pass_seconds": 0.2}, name="host", daemon=True)
    thread.start()
    return host, thread


def stopped(host: Host, thread: threading.Thread) -> None:
    host.stop(0, None)
    thread.join(timeout=120)
    host.close()


@dataclass(frozen=True)
class Shared:
    """A driver following the ConfigMaps labelled ``federator.io/application=orders`` through a proxy
    in front of the API server."""

    host: Host
    api: KubeServer
    proxy: CuttableProxy


@pytest.fixture
def shared(spark: Any) -> Iterator[Shared]:
    with cuttable_api() as (api, proxy):
        selector = "federator.io/application=orders"
        watch = ConfigMapWatch(
            ApiAccess(proxy.url), "default", selector, retry_seconds=0.2, retry_cap_seconds=1
        )
        watch.start()
        host, thread = running(spark, ConfigMapReader(watch))
        try:
            yield Shared(host, api, proxy)
        finally:
            stopped(host, thread)
            watch.stop()


def fetch(port: int, path: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.loads(error.read())


def states(port: int) -> list[tuple[str, str]]:
    return states_of(fetch(port, "/status")[1])


def states_of(listing: dict[str, Any]) -> list[tuple[str, str]]:
    return [(task["name"], task["state"]) for task in listing["tasks"]]


def replicated(port: int, name: str) -> Any:
    document = fetch(port, task_status_path("default", name))[1]
    return document.get("targets", {}).get("copy", {}).get("eventsOut")


def test_configmaps_start_restart_and_stop_only_their_own_query_and_an_api_outage_stops_nothing(
    shared: Shared,
    emulator_factory: Any,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="federator.host")
    host, api, proxy = shared.host, shared.api, shared.proxy
    emulator = emulator_factory(hubs("a", "a-copy", "b", "b-copy", "c", "c-copy"))
    cs = emulator.connection_string("ns1")
    port = free_port()  # the application's: every member's config names it

    def task(name: str, **runtime: Any) -> dict[str, Any]:
        return {**config(tmp_path, emulator, name, name, **runtime), "metricsPort": port}

    send(cs, "a", [{"body": "a-0"}])
    send(cs, "b", [{"body": "b-0"}])
    put(api, "a-task", task("a"))
    put(api, "b-task", task("b"))
    wait_until(lambda: delivered(cs, "a-copy") == 1 and delivered(cs, "b-copy") == 1, "a and b replicate")
    first = query(host, "default/a")
    run_id = first.runId
    wait_until(lambda: replicated(port, "a") == 1 and replicated(port, "b") == 1, "each task's status")
    assert states(port) == [("a", "Running"), ("b", "Running")]
    metrics = scrape(port)
    for name in ("a", "b"):
        assert (
            f'federator_events_replicated_total{{namespace="default",target="copy",task="{name}"}} 1.0'
            in metrics
        )

    b_before = query(host, "default/b")
    put(api, "b-task", task("b", maxEventsPerTrigger=50))
    wait_until(lambda: query(host, "default/b") not in (None, b_before), "b, edited, restarts")
    assert (query(host, "default/a"), first.runId, first.isActive) == (first, run_id, True)

    remove(api, "a-task")
    wait_until(lambda: "default/a" not in host.tasks, "a, removed, stops")
    assert not first.isActive
    wait_until(lambda: states(port) == [("b", "Running")], "a is gone from the status")
    assert fetch(port, task_status_path("default", "a"))[0] == 404
    b_now = query(host, "default/b")
    assert b_now.isActive

    proxy.cut()
    wait_until(lambda: "cannot follow them" in caplog.text, "the outage is noticed")
    put(api, "b-task", task("b", maxEventsPerTrigger=60))
    send(cs, "c", [{"body": "c-0"}])
    put(api, "c-task", task("c"))
    send(cs, "b", [{"body": "b-1"}])
    wait_until(lambda: delivered(cs, "b-copy") == 2, "b replicates while the API server is down")
    retries = caplog.text.count("cannot follow them")
    wait_until(lambda: caplog.text.count("cannot follow them") >= retries + 2, "it retries")
    assert (query(host, "default/b"), b_now.isActive, "default/c" in host.tasks) == (b_now, True, False)

    proxy.restore()
    wait_until(
        lambda: query(host, "default/b") not in (None, b_now), "b restarts with the edit made meanwhile"
    )
    wait_until(lambda: delivered(cs, "c-copy") == 1, "c, added meanwhile, replicates")


def stage_pools(spark: Any, run_id: Any) -> set[str]:
    """The scheduler pools of the stages of a query's jobs (Spark puts a micro-batch's jobs in a job
    group named after the query's run id), from the driver's status store."""
    store = spark.sparkContext._jsc.sc().statusStore()
    jobs = store.jobsList(None)
    pools: set[str] = set()
    for i in range(jobs.size()):
        job = jobs.apply(i)
        if not (job.jobGroup().isDefined() and job.jobGroup().get() == str(run_id)):
            continue
        stages = job.stageIds()
        for j in range(stages.size()):
            try:
                pools.add(store.lastStageAttempt(stages.apply(j)).schedulingPool())
            except Py4JJavaError:  # not in the store yet
                continue
    return pools


def test_each_query_runs_in_the_members_pool_and_the_status_lists_what_the_driver_cannot_run(
    spark: Any, emulator_factory: Any, tmp_path: Path
) -> None:
    emulator = emulator_factory(hubs("a", "a-copy", "b", "b-copy"))
    cs = emulator.connection_string("ns1")
    directory = tmp_path / "tasks"
    directory.mkdir()
    port = free_port()
    host, thread = running(spark, ConfigReader([directory]), metrics_port=port, pooled=True)
    try:
        send(cs, "a", [{"body": "a-0"}])
        send(cs, "b", [{"body": "b-0"}])
        place(directory, "a.json", config(tmp_path, emulator, "a", "a"))
        place(directory, "b.json", config(tmp_path, emulator, "b", "b"))
        place(directory, "broken.json", "{not json")
        bad = config(tmp_path, emulator, "bad", "a", triggerIntervalSeconds="soon")
        place(directory, "bad.json", bad)
        place(directory, "missing.json", config(tmp_path, emulator, "missing", "nowhere"))
        wait_until(lambda: delivered(cs, "a-copy") == 1 and delivered(cs, "b-copy") == 1, "a and b replicate")

        for key in ("default/a", "default/b"):
            run_id = query(host, key).runId
            wait_until(lambda r=run_id: stage_pools(spark, r) == {MEMBERS_POOL}, f"{key}'s jobs in the pool")
        listings: list[dict[str, Any]] = []

        def failed_listed() -> bool:
            listings.append(fetch(port, "/status")[1])
            return ("missing", "Failed") in states_of(listings[-1])

        wait_until(failed_listed, "the failing task is listed as failed", 180)
        listing = listings[-1]
    finally:
        stopped(host, thread)

    failed = next(task for task in listing["tasks"] if task["name"] == "missing")
    assert failed["reason"] == "QueryFailed" and failed["message"]
    assert ("a", "Running") in states_of(listing) and ("b", "Running") in states_of(listing)
    invalid = {Path(entry["source"]).name: entry for entry in listing["invalidConfigs"]}
    assert sorted(invalid) == ["bad.json", "broken.json"]
    assert {entry["reason"] for entry in invalid.values()} == {"InvalidSpec"}
    assert invalid["broken.json"]["message"].startswith(
        f"{directory / 'broken.json'}: the task config is not JSON"
    )
    assert "spec.runtime.triggerIntervalSeconds" in invalid["bad.json"]["message"]


def test_the_application_schedules_fair_unless_its_settings_say_fifo() -> None:
    assert scheduler_mode(SparkConf(loadDefaults=False)) == "FAIR"
    assert scheduler_mode(SparkConf(loadDefaults=False).set("spark.scheduler.mode", "fifo")) == "FIFO"
