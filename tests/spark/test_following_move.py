"""A task following a FailoverGroup in a shared driver moves its query to the member its new config names
without waiting for the driver's next pass (a look at the configs every 0.1 s sees the change) or for its
old companions to stop (they stop beside it: the lag monitor's measurement against a member gone silent
waits for its timeout), and the move is logged phase by phase; back on a member it read before, with
nothing new there, it is timed as flowing as soon as its source answers (Spark makes no batch then), not
left with the time of its earlier stay (real Spark and emulator, in the shared local[2] session; the
member that goes silent is reached through a proxy that stops answering without closing anything, as in
a network partition, where a stopped namespace would refuse at once)."""

from __future__ import annotations

import contextlib
import json
import logging
import re
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import eh_endpoint, send, task_config
from test_fleet_queries import place, wait_until

from federator_spark import metrics
from federator_spark.fleet import ConfigReader
from federator_spark.host import Host

pytestmark = pytest.mark.slow

HUBS = {
    "namespaces": [
        {"name": name, "eventHubs": [{"name": hub, "partitionCount": 1}]}
        for name, hub in (("weu", "orders"), ("neu", "orders"), ("dr", "copy"))
    ]
}
PASS_SECONDS = 20.0  # far apart: a move that waited for a pass would show
LAG_POLL_SECONDS = 5.0  # federator_spark.lag


class Silenceable:
    """A TCP proxy in front of a namespace's AMQP port that can go silent: from then on nothing is
    forwarded either way and new connections are accepted and never answered; nothing is closed."""

    def __init__(self, connection_string: str) -> None:
        self.original = connection_string
        self.target = ("127.0.0.1", int(re.findall(r"sb://[^:/;]+:(\d+)", connection_string)[0]))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.silent = threading.Event()
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, name="silenceable", daemon=True).start()

    @property
    def connection_string(self) -> str:
        return re.sub(r"(sb://[^:/;]+):\d+", rf"\g<1>:{self.port}", self.original)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.sockets.append(client)
            if self.silent.is_set():
                continue  # held open, never answered
            upstream = socket.create_connection(self.target)
            self.sockets.append(upstream)
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        while True:
            try:
                data = source.recv(65536)
                if not data:
                    return
                if not self.silent.is_set():
                    sink.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        self.listener.close()
        for held in self.sockets:
            with contextlib.suppress(OSError):
                held.close()


def follower(tmp_path: Path, emulator: Any, member: str, switched: float) -> dict[str, Any]:
    """The config the operator writes while ``member`` is the consumers' member, since ``switched``."""
    spec = {
        "source": eh_endpoint(member, "orders"),
        "targets": [{"name": "copy", **eh_endpoint("dr", "copy")}],
    }
    raw = task_config(tmp_path, emulator, spec, namespaces=("weu", "neu", "dr"), name="orders")
    weu = tmp_path / "connections" / "weu"  # through the proxy, whose port the fixture wrote there
    raw["emulatorConnectionFiles"]["weu"] = str(weu.with_name("weu-proxied"))
    moment = datetime.fromtimestamp(switched, UTC).isoformat().replace("+00:00", "Z")
    raw["following"] = {"group": "orders", "member": member, "switchedAt": moment, "skewSeconds": 5}
    raw["followedMembers"] = {"spec.source.eventHub": f"orders/{member}"}
    return raw


@pytest.fixture
def host(spark: Any, tmp_path: Path) -> Iterator[Host]:
    (tmp_path / "tasks").mkdir()
    found = Host(spark, ConfigReader([tmp_path / "tasks"]), backoff_seconds=1.0, backoff_cap_seconds=4.0)
    thread = threading.Thread(target=found.run, kwargs={"pass_seconds": PASS_SECONDS}, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        found.stop(0, None)
        thread.join(timeout=120)
        found.close()


def switch(tmp_path: Path, emulator: Any, member: str) -> float:
    """The group switches its consumers to ``member`` and the operator writes the config at once."""
    switched = time.time()
    place(tmp_path / "tasks", "orders.json", follower(tmp_path, emulator, member, switched))
    return switched


def first_batch_on_member(tmp_path: Path) -> float | None:
    moment = metrics.read_status(str(tmp_path / "status-orders.json")).get("firstBatchOnMemberTime")
    return datetime.fromisoformat(moment).timestamp() if moment else None


@pytest.fixture
def weu(emulator_factory: Any, tmp_path: Path) -> Iterator[tuple[Any, Silenceable]]:
    """The emulator, and the proxy the task reaches weu through (its connection file)."""
    emulator = emulator_factory(HUBS)
    proxy = Silenceable(emulator.connection_string("weu"))
    (tmp_path / "connections").mkdir()
    (tmp_path / "connections" / "weu-proxied").write_text(proxy.connection_string)
    try:
        yield emulator, proxy
    finally:
        proxy.close()


def test_a_follower_is_timed_per_stay_and_moves_at_once(
    host: Host, weu: tuple[Any, Silenceable], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="federator.host")
    emulator, proxy = weu
    send(emulator.connection_string("weu"), "orders", [{"body": "w1"}])
    send(emulator.connection_string("neu"), "orders", [{"body": "n1"}])
    switch(tmp_path, emulator, "weu")
    wait_until(lambda: first_batch_on_member(tmp_path) is not None, "the task flows on weu", timeout=180)
    to_neu = switch(tmp_path, emulator, "neu")
    wait_until(lambda: (first_batch_on_member(tmp_path) or 0) >= to_neu, "it flows on neu", timeout=180)
    wait_until(lambda: len(logged(caplog, "neu")) == 1, "the move's log (at the next pass)", timeout=60)
    assert "first batch done" in logged(caplog, "neu")[0], logged(caplog, "neu")  # n1, not a later trigger

    back = switch(
        tmp_path, emulator, "weu"
    )  # nothing new on weu: its checkpoint has a batch, Spark makes none
    wait_until(lambda: (first_batch_on_member(tmp_path) or 0) >= back, "it flows on weu again", timeout=180)
    assert json.loads((tmp_path / "status-orders.json").read_text()).get("eventsIn") == 2

    proxy.silent.set()  # weu goes silent; the lag monitor's next measurement (every 5 s) hangs
    time.sleep(LAG_POLL_SECONDS + 1)
    switch(tmp_path, emulator, "neu")
    wait_until(lambda: len(moves(caplog, "neu")) == 2, "the move's log", timeout=180)
    phases = moves(caplog, "neu")[-1]
    assert phases["config seen"] < 2.0, phases  # not at the next pass, up to PASS_SECONDS later
    assert phases["new query started"] < 2.0, phases  # not once the old lag monitor gave up (35 s)


def logged(caplog: pytest.LogCaptureFixture, member: str) -> list[str]:
    """The log lines of the moves to ``member``."""
    return [r.getMessage() for r in caplog.records if f"moved to member {member}:" in r.getMessage()]


def moves(caplog: pytest.LogCaptureFixture, member: str) -> list[dict[str, float]]:
    """The phases of each logged move to ``member`` (seconds, each from the one before)."""
    pattern = r"(config seen|new query started) \+([\d.]+)s"
    return [{name: float(s) for name, s in re.findall(pattern, line)} for line in logged(caplog, member)]
