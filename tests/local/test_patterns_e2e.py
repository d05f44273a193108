"""The Service Bus patterns with `federator run`, end to end: the CLI in a subprocess provisions the mirror
on the emulator and runs its generated tasks (one Spark application with the Service Bus source and
sink), or probes a failover group and runs the task that follows it; messages are sent and read with the
real SDK; then SIGINT, and no process of the run may be left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from azure.eventhub import EventHubProducerClient
from azure.servicebus import (
    ServiceBusClient,
    ServiceBusMessage,
    ServiceBusReceivedMessage,
    ServiceBusSubQueue,
)
from run_helpers import commands, federator, process_tree, stop, survivors, wait_for

from support.polling import eventually

pytestmark = [
    pytest.mark.slow,
    pytest.mark.jvm,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc"),
]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SPARK_SUBMIT = "org.apache.spark.deploy.SparkSubmit"
MEMBERS = ("west", "east", "north")
PER_MEMBER = 2


def ready_namespaces(state: Path) -> dict[str, Any]:
    return dict(json.loads((state / "emulator" / "ready.json").read_text())["namespaces"])


def events_out(state: Path, task: str) -> int:
    status = state / "tasks" / "default" / task / "status.json"
    if not status.exists():
        return 0
    return sum(int(t["eventsOut"]) for t in json.loads(status.read_text())["targets"].values())


def user_subscriptions(tmp_path: Path, topic: str, members: tuple[str, ...]) -> Path:
    """The consumers' subscriptions are the user's: declared, as a user would, with --emulator-config."""
    config = {
        "fsync": False,
        "namespaces": [
            {"name": m, "topics": [{"name": topic, "subscriptions": [{"name": "app"}]}]} for m in members
        ],
    }
    path = tmp_path / "emulator.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@contextmanager
def running(
    manifest: Path, state: Path, log: Path, config: Path | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """`federator run` on ``manifest``; whatever the test's outcome, nothing of it outlives the test."""
    emulator = ["--emulator-config", str(config)] if config else []
    run = federator("run", "-f", str(manifest), *emulator, "--state-dir", str(state), log=log)
    try:
        yield run
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()


def client_of(state: Path, member: str) -> ServiceBusClient:
    return ServiceBusClient.from_connection_string(ready_namespaces(state)[member]["connectionString"])


def text_properties(message: ServiceBusReceivedMessage) -> dict[str, Any]:
    def text(value: Any) -> Any:
        return value.decode() if isinstance(value, bytes) else value

    return {text(k): text(v) for k, v in (message.application_properties or {}).items()}


def test_all_active_delivers_each_message_once_to_every_other_topic_and_never_back(tmp_path: Path) -> None:
    state, log = tmp_path / "state", tmp_path / "run.log"
    config = user_subscriptions(tmp_path, "orders", MEMBERS)
    received: dict[str, list[tuple[str, Any]]] = {m: [] for m in MEMBERS}
    with running(EXAMPLES / "sb-all-active.yaml", state, log, config) as run:
        wait_for("mirror default/orders: Ready (Mirroring)", log, run)
        for member in MEMBERS:
            client = client_of(state, member)
            with client, client.get_topic_sender("orders") as sender:
                sender.send_messages(
                    [
                        ServiceBusMessage(f"{member}-{i}", message_id=f"{member}-{i}")
                        for i in range(PER_MEMBER)
                    ]
                )

        def read_all() -> bool:
            for member in MEMBERS:
                client = client_of(state, member)
                with client, client.get_subscription_receiver("orders", "app", max_wait_time=1) as receiver:
                    for message in receiver.receive_messages(max_message_count=50, max_wait_time=1):
                        properties = message.application_properties or {}
                        received[member].append((str(message.message_id), properties.get(b"replication")))
                        receiver.complete_message(message)
            return all(len(r) >= PER_MEMBER * len(MEMBERS) for r in received.values())

        eventually(read_all, 180, f"not every topic got every message: {received}")
        tasks = [f"orders-{a}-{b}" for a in MEMBERS for b in MEMBERS if a != b]
        eventually(
            lambda: all(events_out(state, t) == PER_MEMBER for t in tasks),
            60,
            "the batches were not committed",
        )
        read_all()  # a copy coming back would arrive now
        code, tree = stop(run, log)

    output = log.read_text()
    every_id = {f"{m}-{i}" for m in MEMBERS for i in range(PER_MEMBER)}
    for member, messages in received.items():
        assert Counter(message_id for message_id, _ in messages) == dict.fromkeys(every_id, 1), member
        for message_id, marker in messages:  # copies are marked, the member's own messages are not
            assert (marker is not None) == (not message_id.startswith(member)), (member, message_id, marker)
    assert [events_out(state, t) for t in tasks] == [PER_MEMBER] * len(tasks)  # no task copied a copy
    assert code == 0, output
    assert "mirror default/orders: Ready (Mirroring) - 3 members provisioned, 6 pairs replicating" in output
    assert "mirror default/orders: members provisioned: west, east, north of 3" in output  # the final table
    # One Spark application (one JVM) runs the mirror's six tasks.
    assert "federator_spark.host" in commands(tree)
    assert len([c for _, c in tree.values() if c.split(" ", 1)[0].endswith("/java")]) == 1
    assert survivors(tree) == []


TIME_TO_LIVE = 30  # long enough for a copy to reach the secondary on a busy machine, short enough to wait


def test_active_passive_copies_reach_the_secondary_with_the_failover_window_and_expire_there(
    tmp_path: Path,
) -> None:
    state, log, manifest = tmp_path / "state", tmp_path / "run.log", tmp_path / "sb-active-passive.yaml"
    manifest.write_text(
        (EXAMPLES / "sb-active-passive.yaml")
        .read_text()
        .replace("timeToLiveSeconds: 120", f"timeToLiveSeconds: {TIME_TO_LIVE}")
    )
    config = user_subscriptions(tmp_path, "invoices", ("primary", "secondary"))
    with running(manifest, state, log, config) as run:
        wait_for("mirror default/billing: Ready (Mirroring)", log, run)
        with client_of(state, "primary") as client, client.get_topic_sender("invoices") as sender:
            sender.send_messages([ServiceBusMessage(f"invoice-{i}", message_id=f"invoice-{i}") for i in "12"])
        eventually(
            lambda: events_out(state, "billing-primary-secondary") == 2, 120, "the copies were not sent"
        )
        with (
            client_of(state, "secondary") as client,
            client.get_subscription_receiver("invoices", "app") as receiver,
        ):
            [first] = receiver.receive_messages(max_message_count=1, max_wait_time=5)
            receiver.complete_message(first)

            def expired() -> bool:  # the second copy is never consumed: it expires within the window
                return not receiver.peek_messages(max_message_count=5)

            eventually(expired, TIME_TO_LIVE + 30, "the unconsumed copy did not expire in the secondary")
        with (
            client_of(state, "primary") as client,
            client.get_subscription_receiver("invoices", "app") as receiver,
        ):
            primary = receiver.receive_messages(max_message_count=5, max_wait_time=2)
        code, tree = stop(run, log)

    assert code == 0, log.read_text()
    assert first.time_to_live == timedelta(seconds=TIME_TO_LIVE)
    assert text_properties(first)["replication"] == 1  # the rule's number, still a number
    assert first.message_id == "invoice-1"  # the copy keeps the source's MessageId: dedupe works downstream
    # The primary's consumers see the originals, without the window; nothing is copied back.
    assert sorted(str(m) for m in primary) == ["invoice-1", "invoice-2"]
    assert all(m.time_to_live != timedelta(seconds=TIME_TO_LIVE) for m in primary)
    assert "replication" not in text_properties(primary[0])
    assert survivors(tree) == []


def consumer_fails(state: Path, member: str) -> ServiceBusReceivedMessage:
    """A consumer that cannot process its message: it dead-letters it, as the pattern expects."""
    with client_of(state, member) as client, client.get_queue_receiver("shipments") as receiver:
        messages: list[ServiceBusReceivedMessage] = []

        def received() -> bool:
            messages.extend(receiver.receive_messages(max_message_count=1, max_wait_time=2))
            return bool(messages)

        eventually(received, 120, f"nothing reached {member}'s queue")
        receiver.dead_letter_message(messages[0], reason="ConsumerDown")
        return messages[0]


def left_in(state: Path, member: str, queue: str, sub_queue: ServiceBusSubQueue | None = None) -> list[str]:
    client = client_of(state, member)
    with client, client.get_queue_receiver(queue, sub_queue=sub_queue) as receiver:
        return [str(m) for m in receiver.peek_messages(max_message_count=10)]


def test_spillover_moves_a_dead_letter_to_the_peer_once_then_parks_it_in_the_auxiliary_queue(
    tmp_path: Path,
) -> None:
    state, log = tmp_path / "state", tmp_path / "run.log"
    with running(EXAMPLES / "sb-spillover.yaml", state, log) as run:
        wait_for("mirror default/shipments: Ready (Mirroring)", log, run)
        with client_of(state, "left") as client, client.get_queue_sender("shipments") as sender:
            sender.send_messages(ServiceBusMessage("job-1", message_id="job-1"))
        consumer_fails(state, "left")
        spilled = consumer_fails(state, "right")  # spilled to the peer, and failing there too

        def parked() -> bool:
            return left_in(state, "right", "shipments-aux") == ["job-1"]

        eventually(parked, 120, "the twice dead-lettered message was not parked in the auxiliary queue")
        eventually(lambda: events_out(state, "shipments-right-left") == 1, 60, "the batch was not committed")
        remaining = {
            (member, queue, str(sub)): left_in(state, member, queue, sub)
            for member in ("left", "right")
            for queue, sub in (
                ("shipments", None),
                ("shipments", ServiceBusSubQueue.DEAD_LETTER),
                ("shipments-aux", None),
            )
        }
        code, tree = stop(run, log)

    assert code == 0, log.read_text()
    assert (str(spilled), text_properties(spilled)["repl-spilled"]) == ("job-1", "1")
    assert spilled.message_id == "job-1"
    # Once spilled, once parked; nothing bounced back to the left, every dead-letter queue drained.
    assert {k: v for k, v in remaining.items() if v} == {("right", "shipments-aux", "None"): ["job-1"]}
    assert [events_out(state, t) for t in ("shipments-left-right", "shipments-right-left")] == [1, 1]
    assert survivors(tree) == []


def archived(state: Path) -> int:
    connection = ready_namespaces(state)["archive"]["connectionString"]
    with EventHubProducerClient.from_connection_string(connection, eventhub_name="orders-archive") as client:
        return sum(
            client.get_partition_properties(p)["last_enqueued_sequence_number"] + 1
            for p in client.get_partition_ids()
        )


def send_orders(state: Path, member: str, count: int) -> None:
    connection = ready_namespaces(state)[member]["connectionString"]
    with (
        ServiceBusClient.from_connection_string(connection) as client,
        client.get_queue_sender("orders") as sender,
    ):
        sender.send_messages(
            [ServiceBusMessage(f"{member}-{i}", message_id=f"{member}-{i}") for i in range(count)]
        )


def spark_jvms(run: subprocess.Popen[bytes]) -> set[tuple[int, str]]:
    """The run's Spark JVMs: (pid, start time), so that a JVM started again under a reused pid differs."""
    tree = process_tree(run.pid)
    return {(pid, start) for pid, (start, command) in tree.items() if SPARK_SUBMIT in command}


def test_a_task_following_a_group_moves_its_query_to_the_member_the_group_switches_to_in_the_same_jvm(
    tmp_path: Path,
) -> None:
    state, log, manifest = tmp_path / "state", tmp_path / "run.log", tmp_path / "failover-group.yaml"
    manifest.write_text((EXAMPLES / "failover-group.yaml").read_text())
    endpoints_file = state / "groups" / "default" / "orders" / "endpoints.json"
    with running(manifest, state, log) as run:
        wait_for("default/orders-archive: Ready (Running)", log, run)
        send_orders(state, "primary", 3)
        eventually(lambda: archived(state) == 3, 120, "the primary's messages were not archived")
        jvms = spark_jvms(run)

        # The local `kubectl apply`: the group reads its edited manifest and switches.
        text = manifest.read_text().replace(
            "  primaryMember: primary\n", "  primaryMember: primary\n  activeMember: secondary\n"
        )
        manifest.write_text(text)
        eventually(lambda: consumer_member(endpoints_file) == "secondary", 60, "the group did not switch")
        published = endpoints_file.stat().st_mtime  # the round that decides the switch publishes it
        send_orders(state, "secondary", 2)
        eventually(lambda: archived(state) == 5, 240, "the secondary's messages were not archived")
        replicated = time.time()
        wait_for("default/orders-archive: Reconciling (FollowedMemberSwitching)", log, run, timeout=5)
        eventually(lambda: log.read_text().count("default/orders-archive: Ready (Running)") == 2, 60)
        after = spark_jvms(run)
        task = json.loads((state / "tasks" / "default" / "orders-archive" / "task.json").read_text())
        code, tree = stop(run, log)

    output = log.read_text()
    print(f"switch published -> first event replicated on the new member: {replicated - published:.1f} s")
    assert code == 0, output
    assert len(jvms) == 1 and after == jvms, "the switch started another JVM"
    assert "SparkApplicationRestarting" not in output
    assert task["following"]["member"] == "secondary"
    assert task["spec"]["source"]["serviceBus"]["connection"] == {"emulator": {"namespace": "secondary"}}
    events = (state / "groups" / "default" / "orders" / "events.log").read_text()
    assert "Switched: producers and consumers switched from member primary to secondary" in events
    assert survivors(tree) == []


def consumer_member(endpoints: Path) -> str | None:
    try:
        return str(json.loads(endpoints.read_text())["consumerMember"])
    except (FileNotFoundError, ValueError):  # not published yet, or read while it is replaced
        return None
