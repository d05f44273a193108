"""`federator drill -f examples/failover-group.yaml --kill` end to end, as a user runs it: the CLI in a
subprocess, which runs the manifests (emulator, Spark), switches the group to the secondary and back as
planned requests, then kills the primary's emulator namespace, waits for the failover, revives the primary
and fails back. Every switch is reported with the follower flowing on the member it moved to, the drill
exits 0, and the messages sent meanwhile to the member the group published for producers are all
replicated: the one run proves both the planned and the forced drill."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from run_helpers import federator

from federator.local.drill import GroupFiles, read_json
from federator.local.state import StateDir
from support.polling import eventually

DRILL_SECONDS = 900  # a Spark JVM and four switches on a busy 2-core machine

pytestmark = [
    pytest.mark.full(why="a drill of four switches and a kill: 2-3 minutes of Spark and the emulator"),
    pytest.mark.jvm,
    pytest.mark.timeout(DRILL_SECONDS + 60),
]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "failover-group.yaml"
QUEUE = "orders"  # the follower's source in the example; its members' emulator namespaces bear their names
BURST = 5
FLOWING = "orders-archive flowing after"


class Drill:
    """The drill's process and state dir."""

    def __init__(self, state: Path, log: Path) -> None:
        self.state, self.log = state, log
        self.process = federator("drill", "-f", str(EXAMPLE), "--kill", "--state-dir", str(state), log=log)

    def endpoints_when(self, ready: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The group's published endpoints once they satisfy ``ready``; fails at once if the drill ended."""

        def check() -> dict[str, Any] | None:
            assert self.process.poll() is None, self.log.read_text(encoding="utf-8")
            found = GroupFiles(StateDir(self.state), "default", "orders").endpoints()
            return found if found is not None and ready(found) else None

        return eventually(check, timeout=DRILL_SECONDS)

    def send_to_producers(self, endpoints: dict[str, Any], first: int) -> int:
        """``BURST`` messages to the queue on the member ``endpoints`` name for producers, as a producer
        following the group sends them; returns how many."""
        emulator = read_json(self.state / "emulator" / "ready.json")
        assert emulator is not None
        connection = emulator["namespaces"][endpoints["producerMember"]]["connectionString"]
        messages = [
            ServiceBusMessage(f"drill {n}", message_id=f"drill-{n}") for n in range(first, first + BURST)
        ]
        with (
            ServiceBusClient.from_connection_string(connection) as client,
            client.get_queue_sender(QUEUE) as sender,
        ):
            sender.send_messages(messages)
        return BURST

    def primary_killed(self, endpoints: dict[str, Any]) -> bool:
        """The primary's namespace is down and producers were moved off it."""
        outages = self.state / "emulator" / "outages"
        down = outages.read_text(encoding="utf-8").split() if outages.exists() else []
        return "primary" in down and endpoints.get("producerMember") == "secondary"

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def switches_with_the_follower_flowing(output: str) -> list[str]:
    """Each reported switch the follower flowed after: `<phase>: <from> → <to> (<cause>)`."""
    found = (
        re.match(r"(.*?\)): (?:killed|detected) →", line) for line in output.splitlines() if FLOWING in line
    )
    return [match.group(1) for match in found if match]


def test_a_drill_with_a_killed_primary_reports_each_switch_flowing_and_loses_nothing(tmp_path: Path) -> None:
    drill = Drill(tmp_path / "state", tmp_path / "drill.log")
    try:
        # Before the planned switches, and while the group is failed over: the failback drains the
        # secondary's queue before consumers move back, and the primary keeps what was not read there yet.
        sent = drill.send_to_producers(drill.endpoints_when(lambda _: True), 0)
        sent += drill.send_to_producers(drill.endpoints_when(drill.primary_killed), BURST)
        code = drill.process.wait(timeout=DRILL_SECONDS)
    finally:
        drill.stop()
    output = drill.log.read_text(encoding="utf-8")
    assert code == 0, output
    assert switches_with_the_follower_flowing(output) == [
        "planned: primary → secondary (planned)",
        "planned back: secondary → primary (drained)",
        "killed (goal: decided within 16s): primary → secondary (failover)",
        "failback: secondary → primary (drained)",
    ], output
    status = read_json(drill.state / "tasks" / "default" / "orders-archive" / "status.json")
    assert status is not None
    assert status["targets"]["archive"]["eventsOut"] == sent, status  # none lost, none twice
    left = subprocess.run(["pgrep", "-af", str(drill.state)], capture_output=True, text=True).stdout
    assert not left  # the drill stopped the run it started
