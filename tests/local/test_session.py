"""A local session's emulator with real processes: started from the plan, stopped with nothing left, and
started again from the same state dir on the same ports with its messages (what lets a second
`federator run` resume: checkpoints name positions in those messages, events name those ports)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from azure.eventhub import EventData, EventHubProducerClient

from federator.local.plan import plan_local_run
from federator.local.session import LocalSession
from federator.local.state import StateDir
from federator_contract.emulatorconfig import EmulatorConfig

pytestmark = pytest.mark.slow

EMULATOR = EmulatorConfig.model_validate({"namespaces": [{"name": "a", "eventHubs": [{"name": "hub"}]}]})


def run_once(state: StateDir, send: int) -> tuple[str, int]:
    """Start the session, send ``send`` events, stop; the connection string and the events held."""
    session = LocalSession(
        plan_local_run([], state=state, environ={}, emulator_config=EMULATOR), state, os.environ
    )
    session.start(threading.Event())
    try:
        connection = session.ready["namespaces"]["a"]["connectionString"]
        with EventHubProducerClient.from_connection_string(connection, eventhub_name="hub") as producer:
            if send:
                batch = producer.create_batch()
                for i in range(send):
                    batch.add(EventData(f"e{i}"))
                producer.send_batch(batch)
            held = sum(
                producer.get_partition_properties(p)["last_enqueued_sequence_number"] + 1
                for p in producer.get_partition_ids()
            )
    finally:
        session.stop()
    assert session.emulator is not None and session.emulator.returncode == 0  # stopped, not killed
    assert not session.emulator.killed and not session.running()
    return connection, held


def test_the_emulator_comes_back_on_the_same_ports_with_its_messages(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state")

    first, held_first = run_once(state, send=10)
    second, held_second = run_once(state, send=0)

    assert (held_first, held_second) == (10, 10)
    assert second == first
    assert not state.emulator_ready.exists()  # nobody reads connection details of a stopped emulator
