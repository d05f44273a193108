"""The walk-through of docs/patterns/failover.md ("What your consumers do"), end to end as a user runs
it: `federator run` of examples/eh-failover-consumers.yaml (the emulator, Azurite and the replication
app, started by it); a producer and a consumer with the unmodified `azure-eventhub` and
`azure-eventhub-checkpointstoreblob` on the primary; a failover by editing the FailoverGroup; the
consumer started again on the member the group publishes. Nothing is lost, and what the consumer sees
twice is exactly what it processed after its last checkpoints — with equal partition counts and with
the secondary's hub re-hashed to 2 partitions. The lag in the task's status matches the hubs' own
counts."""

from __future__ import annotations

import json
import os
import signal
from collections import Counter
from pathlib import Path

import pytest
import yaml
from azure.eventhub import EventHubConsumerClient
from azure.storage.blob import ContainerClient
from consumers import consume, produce_rounds

from local.run_helpers import federator, stop, survivors, wait_for
from support.polling import eventually

pytestmark = [pytest.mark.slow, pytest.mark.jvm, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "eh-failover-consumers.yaml"
TASK = "default/orders-to-secondary"
GROUP = "orders-app"
PARTITIONS = 4


def tails(connection: str) -> dict[str, int]:
    """Each partition's last sequence number, from the hub itself."""
    with EventHubConsumerClient.from_connection_string(
        connection, consumer_group="$Default", eventhub_name="orders"
    ) as client:
        ids = client.get_partition_ids()
        return {p: client.get_partition_properties(p)["last_enqueued_sequence_number"] for p in ids}


def task_file(state: Path, name: str) -> dict:
    path = state / "tasks" / "default" / "orders-to-secondary" / name
    return json.loads(path.read_text()) if path.exists() else {}


def translated(state: Path) -> dict:
    return task_file(state, "translation.json").get("groups", {}).get(GROUP, {})


I_TO_I_IN_CI = (
    "a replication app run of 50-80 s on the JVM lane; CI walks the same failover with a re-hash "
    "(rehashed-4-to-2, below) and resumes the same SDK consumer from i -> i translated checkpoints "
    "(test_translator.py[i-to-i])"
)


@pytest.mark.parametrize(
    "target_partitions",
    [
        pytest.param(4, id="i-to-i", marks=pytest.mark.full(why=I_TO_I_IN_CI)),
        pytest.param(2, id="rehashed-4-to-2"),
    ],
)
def test_a_consumer_follows_the_failover_without_loss(tmp_path: Path, target_partitions: int) -> None:
    state, log = tmp_path / "state", tmp_path / "run.log"
    manifest = tmp_path / "orders.yaml"
    manifest.write_text(EXAMPLE.read_text())
    emulator = tmp_path / "emulator.yaml"
    hub = {"name": "orders", "partitionCount": target_partitions}
    emulator.write_text(yaml.safe_dump({"namespaces": [{"name": "secondary", "eventHubs": [hub]}]}))
    run = federator(
        "run", "-f", str(manifest), "--emulator-config", str(emulator), "--state-dir", str(state), log=log
    )
    try:
        wait_for(f"{TASK}: Ready (Running)", log, run)
        namespaces = json.loads((state / "emulator" / "ready.json").read_text())["namespaces"]
        primary, secondary = (namespaces[n]["connectionString"] for n in ("primary", "secondary"))
        azurite = json.loads((state / "azurite" / "ready.json").read_text())["connectionString"]
        store = (azurite, "checkpoints")
        ContainerClient.from_connection_string(azurite, "checkpoints").create_container()

        # A burst, replicated; the application consumes it with checkpoints every 5 events (the last one
        # at round 19) and two rounds more, then stops without checkpointing them, as a crash would.
        produce_rounds(primary, "orders", range(20), PARTITIONS)
        eventually(lambda: task_file(state, "lag.json").get("eventsBehind") == 0, 120, "replication lags")
        produce_rounds(primary, "orders", range(20, 30), PARTITIONS)
        before = consume(primary, "orders", GROUP, store, stop_at={str(p): 22 for p in range(PARTITIONS)})
        assert before.checkpointed == {str(p): 19 for p in range(PARTITIONS)}

        # The lag in status against the hubs' own counts.
        def caught_up() -> bool:
            lag, source = task_file(state, "lag.json"), tails(primary)
            at_source = {p: e["sourceSequence"] for p, e in lag.get("partitions", {}).items()}
            return lag.get("eventsBehind") == 0 and at_source == source

        eventually(caught_up, 120, "the lag never matched the source's tails")
        assert sum(s + 1 for s in tails(secondary).values()) == PARTITIONS * 30
        assert task_file(state, "lag.json")["rpoSeconds"] == 0.0

        # A translation cycle after the consumer's last checkpoint, then the failover.
        eventually(lambda: translated(state).get("source_checkpoints") == PARTITIONS, 60, "no translation")
        written = task_file(state, "translation.json")["at"]
        eventually(lambda: task_file(state, "translation.json")["at"] > written, 30, "no further cycle")
        manifest.write_text(
            EXAMPLE.read_text().replace("  mode: manual\n", "  mode: manual\n  activeMember: secondary\n")
        )
        endpoints = state / "groups" / "default" / "orders-consumers" / "endpoints.json"
        eventually(
            lambda: json.loads(endpoints.read_text()).get("consumerMember") == "secondary", 60, "no switch"
        )
        member = json.loads(endpoints.read_text())["consumerMember"]

        after = consume(namespaces[member]["connectionString"], "orders", GROUP, store, origin_of="copy")
        code, tree = stop(run, log)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()

    everything = {f"{p}/{s}" for p in range(PARTITIONS) for s in range(30)}
    assert everything - set(before.origins) - set(after.origins) == set(), "events were lost"
    assert Counter(after.origins).most_common(1)[0][1] == 1
    assert set(before.origins) & set(after.origins) == before.after_checkpoints()
    assert code == 0, log.read_text()[-3000:]
    assert survivors(tree) == []
