"""A shared application's driver gives each member the companions a driver of its own would: the lag
monitor of its Event Hubs source, whose figures are in the member's status document
(``/tasks/<ns>/<task>/status``) and its metrics, and the checkpoint translator of a member that translates
its consumers' checkpoints, whose cycles are in that document too; started with its query and stopped with
it. A member removed takes its companions with it and leaves the others' running; a driver whose members
come and go keeps nothing of the ones that went (against the emulator and Azurite, in the shared local[2]
session)."""

from __future__ import annotations

import threading
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import send
from test_fleet_queries import config, free_port, hubs, place, scrape, wait_until
from test_shared_driver import fetch, running, stopped

from federator_contract.driverstatus import task_status_path
from federator_spark.fleet import ConfigReader
from federator_spark.host import Host
from support.azurite import BlobContainer

pytestmark = pytest.mark.slow


class Driver:
    """A shared driver following the task configs of a directory, with the application's endpoint."""

    def __init__(self, spark: Any, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.host, self._thread = running(spark, ConfigReader([directory]), metrics_port=self.port)

    def stop(self) -> None:
        """Stop it (every query, then their companions); once."""
        if self._thread.is_alive():
            stopped(self.host, self._thread)


@pytest.fixture
def driver(spark: Any, emulator_factory: Any, tmp_path: Path) -> Iterator[Driver]:
    """Stopped before the emulator, as a driver goes before the namespaces it reads."""
    directory = tmp_path / "tasks"
    directory.mkdir()
    found = Driver(spark, directory)
    try:
        yield found
    finally:
        found.stop()


def member(tmp_path: Path, emulator: Any, name: str) -> dict[str, Any]:
    """A member's config, its status where a member's is in a cluster (under its checkpoint): its lag and
    translation reports beside it are its own."""
    raw = config(tmp_path, emulator, name, name)
    del raw["statusFile"]
    return raw


def threads_named(prefix: str) -> int:
    return sum(1 for thread in threading.enumerate() if thread.name.startswith(prefix) and thread.is_alive())


def status_of(port: int, name: str) -> dict[str, Any]:
    """The member's status document (empty while the driver does not serve it)."""
    try:
        code, document = fetch(port, task_status_path("default", name))
    except urllib.error.URLError:  # the endpoint opens with the first pass
        return {}
    return document if code == 200 else {}


def caught_up(port: int, name: str, sequence: int) -> bool:
    """The member's lag says its one partition is replicated up to ``sequence``, nothing behind."""
    lag = status_of(port, name).get("lag", {})
    partition = lag.get("partitions", {}).get("0", {})
    return partition.get("replicatedSequence") == sequence and lag.get("eventsBehind") == 0


def forgot_the_removed(host: Host, kept: set[str]) -> bool:
    """Nothing of a removed member left: no task, no companions stopping or stopped (the driver's passes
    forget them), no thread stopping them."""
    return set(host.tasks) == kept and len(host.retiring) == 0 and threads_named("federator-retire") == 0


def test_each_member_reports_its_own_lag_and_a_removed_member_takes_only_its_companions_with_it(
    emulator_factory: Any, driver: Driver, tmp_path: Path
) -> None:
    emulator = emulator_factory(hubs("a", "a-copy", "b", "b-copy"))
    cs = emulator.connection_string("ns1")
    host, directory, port = driver.host, driver.directory, driver.port
    monitors_before = threads_named("federator-lag")  # none of the driver's yet: it runs no task
    send(cs, "a", [{"body": "a-0"}, {"body": "a-1"}])
    send(cs, "b", [{"body": "b-0"}])
    place(directory, "a.json", member(tmp_path, emulator, "a"))
    place(directory, "b.json", member(tmp_path, emulator, "b"))

    starts = 300  # seconds: two queries starting one after the other on a loaded 2-core machine
    wait_until(lambda: caught_up(port, "a", 1), "a's status carries its lag: both events replicated", starts)
    wait_until(lambda: caught_up(port, "b", 0), "b's status carries its own lag: its one event", starts)
    assert threads_named("federator-lag") == monitors_before + 2  # a monitor per member
    lag_series = 'federator_replication_lag_events{namespace="default",partition="0",task="%s"} 0.0'
    metrics = scrape(port)
    assert lag_series % "a" in metrics and lag_series % "b" in metrics

    (directory / "b.json").unlink()
    wait_until(lambda: forgot_the_removed(host, {"default/a"}), "b, removed, stops with its monitor")
    assert threads_named("federator-lag") == monitors_before + 1
    send(cs, "a", [{"body": "a-2"}])
    wait_until(lambda: caught_up(port, "a", 2), "a's lag goes on being measured")

    place(directory, "b.json", member(tmp_path, emulator, "b"))  # back, and away again
    send(cs, "b", [{"body": "b-1"}])
    wait_until(lambda: caught_up(port, "b", 1), "b, added again, replicates, has its monitor again", starts)
    (directory / "b.json").unlink()
    wait_until(lambda: forgot_the_removed(host, {"default/a"}), "b, removed again, leaves nothing")
    assert threads_named("federator-lag") == monitors_before + 1
    assert lag_series % "b" not in scrape(port)
    driver.stop()
    assert threads_named("federator-lag") == monitors_before  # the driver stopped: every monitor with it
    assert len(host.retiring) == 0


def test_a_member_that_translates_checkpoints_has_its_translator_in_the_shared_driver_until_it_goes(
    emulator_factory: Any, driver: Driver, blob_container: BlobContainer, tmp_path: Path
) -> None:
    emulator = emulator_factory(hubs("t", "t-copy"))
    store = tmp_path / "azurite-connection"  # as local mode hands the app its Azurite
    store.write_text(blob_container.connection_string)
    store.chmod(0o600)
    raw = member(tmp_path, emulator, "t")
    raw["spec"]["checkpointTranslation"] = {
        "consumerGroups": ["orders-app"],
        "checkpointStore": {"containerName": blob_container.name, "connection": {"emulator": {}}},
        "intervalSeconds": 1,
    }
    raw["emulatorBlobConnectionFile"] = str(store)
    translators_before = threads_named("federator-translation")
    place(driver.directory, "t.json", raw)

    def translated() -> bool:
        groups = status_of(driver.port, "t").get("translation", {}).get("groups", {})
        return groups.get("orders-app", {}).get("source_checkpoints") == 0  # none written there yet

    wait_until(translated, "the member's status carries its translator's cycles", 300)  # a query's start
    assert threads_named("federator-translation") == translators_before + 1

    (driver.directory / "t.json").unlink()
    wait_until(
        lambda: forgot_the_removed(driver.host, set()), "the member, removed, stops with its translator"
    )
    assert threads_named("federator-translation") == translators_before
