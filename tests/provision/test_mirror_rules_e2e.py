"""The provisioned rules do what the federation patterns promise, end to end over AMQP with the real
`azure-servicebus` SDK on three emulator namespaces.

What is under test is the provisioning and the rules, so `run_task` plays the generated ReplicationTasks'
part with the SDK, without a Spark JVM: it reads the task's source (a replication subscription, or a
dead-letter queue), applies its routing (condition, setProperties, unrouted) and sends copies to the
target, as the reference pattern's forwarding step does. The same patterns with the real Spark tasks run
through `federator run` in `tests/local/test_patterns_e2e.py`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
import pytest_asyncio
from azure.servicebus import ServiceBusMessage, ServiceBusReceivedMessage, ServiceBusSubQueue
from azure.servicebus.aio import ServiceBusClient
from azure.servicebus.management import ServiceBusAdministrationClient
from provision_helpers import K8S_NS, NAMESPACES, emulator_member, management_connection_string

from federator.kube.client import KubeClient
from federator.planning.mirror import MirrorPlan, plan_mirror
from federator.provision.environment import ManagementEnvironment
from federator.provision.members import provision_member
from federator.provision.model import desired_by_member
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec
from federator_contract.sql import Dialect, SqlMessage, parse_filter
from federator_emulator.server import RunningEmulator

WAIT = 1.0


@pytest_asyncio.fixture
async def clients(sb: RunningEmulator) -> AsyncIterator[dict[str, ServiceBusClient]]:
    opened = {ns: ServiceBusClient.from_connection_string(sb.connection_string(ns)) for ns in NAMESPACES}
    yield opened
    for client in opened.values():
        await client.close()


async def provision_all(
    client: KubeClient, env: ManagementEnvironment, raw: dict[str, Any]
) -> MirrorPlan:
    spec = ServiceBusMirrorSpec.model_validate(raw)
    plan = plan_mirror(name="orders", namespace=K8S_NS, spec=spec)
    desired = desired_by_member(plan, [m.name for m in spec.members])
    outcomes = [await provision_member(client, K8S_NS, m, desired[m.name], (), env) for m in spec.members]
    assert [o.state for o in outcomes] == ["Provisioned"] * len(spec.members)
    return plan


def admin(sb: RunningEmulator, namespace: str) -> ServiceBusAdministrationClient:
    return ServiceBusAdministrationClient.from_connection_string(
        management_connection_string(sb, namespace), connection_verify=str(sb.ca_path)
    )


def properties(message: ServiceBusReceivedMessage) -> dict[str, Any]:
    def text(value: Any) -> Any:
        return value.decode() if isinstance(value, bytes) else value

    return {text(k): text(v) for k, v in (message.application_properties or {}).items()}


def copy(message: ServiceBusReceivedMessage, extra: dict[str, str]) -> ServiceBusMessage:
    return ServiceBusMessage(
        b"".join(message.body),
        application_properties={**properties(message), **extra},
        message_id=message.message_id,
        time_to_live=message.time_to_live,
    )


async def run_task(clients: dict[str, ServiceBusClient], task: dict[str, Any]) -> int:
    """One pass of a generated task's source → routing → targets; returns how many messages it moved."""
    spec = task["spec"]
    source = spec["source"]["serviceBus"]
    client = clients[source["connection"]["emulator"]["namespace"]]
    sub_queue = ServiceBusSubQueue.DEAD_LETTER if source.get("subQueue") == "deadLetter" else None
    if "subscriptionName" in source:
        receiver = client.get_subscription_receiver(
            source["topicName"], source["subscriptionName"], sub_queue=sub_queue
        )
    else:
        receiver = client.get_queue_receiver(source["queueName"], sub_queue=sub_queue)
    outgoing: dict[tuple[str, str, str], list[ServiceBusMessage]] = {}
    async with receiver:
        messages = await receiver.receive_messages(max_message_count=50, max_wait_time=WAIT)
        for message in messages:
            user = properties(message)
            routes = [
                (t["serviceBus"], t.get("setProperties", {}))
                for t in spec["targets"]
                if "condition" not in t
                or parse_filter(t["condition"], Dialect.FEDERATOR).matches(SqlMessage(system={}, user=user))
            ]
            if not routes and "unrouted" in spec:
                routes = [(spec["unrouted"]["serviceBus"], {})]
            for endpoint, extra in routes:
                kind = "queue" if "queueName" in endpoint else "topic"
                key = (endpoint["connection"]["emulator"]["namespace"], kind, endpoint[f"{kind}Name"])
                outgoing.setdefault(key, []).append(copy(message, extra))
        for (namespace, kind, entity), batch in outgoing.items():
            target = clients[namespace]
            sender = target.get_queue_sender(entity) if kind == "queue" else target.get_topic_sender(entity)
            async with sender:
                await sender.send_messages(batch)
        for message in messages:  # settled only once forwarded: at-least-once, like the real task
            await receiver.complete_message(message)
    return len(messages)


async def drain(client: ServiceBusClient, topic: str, subscription: str) -> list[ServiceBusReceivedMessage]:
    async with client.get_subscription_receiver(topic, subscription) as receiver:
        got = await receiver.receive_messages(max_message_count=50, max_wait_time=WAIT)
        for message in got:
            await receiver.complete_message(message)
    return got


@pytest.mark.slow
@pytest.mark.asyncio
async def test_all_active_delivers_every_message_once_to_every_other_topic_and_never_back(
    kube_client: KubeClient,
    env: ManagementEnvironment,
    clients: dict[str, ServiceBusClient],
    sb: RunningEmulator,
) -> None:
    names = (("west", "sbwest"), ("east", "sbeast"), ("north", "sbnorth"))
    members = [emulator_member(name, ns) for name, ns in names]
    raw = {"pattern": "allActive", "topicName": "orders", "members": members}
    plan = await provision_all(kube_client, env, raw)

    async def send(ns: str) -> None:
        async with clients[ns].get_topic_sender("orders") as sender:
            await sender.send_messages(ServiceBusMessage(f"from-{ns}", message_id=f"m-{ns}"))

    await asyncio.gather(*(send(ns) for ns in NAMESPACES))
    tasks = plan.tasks
    moved = await asyncio.gather(*(run_task(clients, task) for task in tasks))
    assert sum(moved) == 6  # 3 messages, each to 2 peers
    for ns in NAMESPACES:  # the copies arrived marked: no replication subscription took them again
        with admin(sb, ns) as client:
            runtime = client.list_subscriptions_runtime_properties("orders")
            left = {s.name: s.total_message_count for s in runtime if s.name.startswith("repl-")}
        assert len(left) == 2 and set(left.values()) == {0}, f"{ns} would send a copy back: {left}"

    received = await asyncio.gather(*(drain(clients[ns], "orders", "app") for ns in NAMESPACES))
    for ns, messages in zip(NAMESPACES, received, strict=True):
        bodies = sorted(str(m) for m in messages)
        assert bodies == sorted(f"from-{n}" for n in NAMESPACES), f"{ns} must see every message exactly once"


@pytest.mark.slow
@pytest.mark.asyncio
async def test_active_passive_copies_carry_the_failover_window_as_time_to_live_and_expire(
    kube_client: KubeClient,
    env: ManagementEnvironment,
    clients: dict[str, ServiceBusClient],
    sb: RunningEmulator,
) -> None:
    members = [emulator_member("west", "sbwest"), emulator_member("east", "sbeast")]
    raw = {
        "pattern": "activePassive",
        "topicName": "orders",
        "activePassive": {"primaryMember": "west", "timeToLiveSeconds": 6},
        "members": members,
    }
    plan = await provision_all(kube_client, env, raw)
    with admin(sb, "sbeast") as client:
        assert [s.name for s in client.list_subscriptions("orders")] == ["app"], (
            "the secondary replicates nothing"
        )
    async with clients["sbwest"].get_topic_sender("orders") as sender:
        await sender.send_messages([ServiceBusMessage("first"), ServiceBusMessage("second")])

    [task] = [pair.task for pair in plan.pairs]
    assert await run_task(clients, task) == 2
    async with clients["sbeast"].get_subscription_receiver("orders", "app") as receiver:
        [first] = await receiver.receive_messages(max_message_count=1, max_wait_time=WAIT)
        assert first.time_to_live == timedelta(seconds=6)
        assert properties(first)["replication"] == 1
        await receiver.complete_message(first)
    with admin(sb, "sbeast") as client:
        for _ in range(100):  # the second copy is never consumed: it expires within the failover window
            if client.get_subscription_runtime_properties("orders", "app").total_message_count == 0:
                break
            await asyncio.sleep(0.1)
        else:
            pytest.fail("the unconsumed copy did not expire in the secondary")
    primary = await drain(clients["sbwest"], "orders", "app")
    assert [str(m) for m in primary] == ["first", "second"]
    assert all(m.time_to_live != timedelta(seconds=6) for m in primary), "only copies carry the window"


@pytest.mark.slow
@pytest.mark.asyncio
async def test_spillover_moves_a_dead_letter_to_the_peer_once_then_to_the_auxiliary_queue(
    kube_client: KubeClient,
    env: ManagementEnvironment,
    clients: dict[str, ServiceBusClient],
    sb: RunningEmulator,
) -> None:
    members = [emulator_member("left", "sbwest"), emulator_member("right", "sbeast")]
    raw = {"pattern": "spillover", "spillover": {"entities": [{"queueName": "jobs"}]}, "members": members}
    plan = await provision_all(kube_client, env, raw)
    by_source = {pair.source: pair.task for pair in plan.pairs}

    async def consumer_fails(ns: str) -> ServiceBusReceivedMessage:
        async with clients[ns].get_queue_receiver("jobs") as receiver:
            [message] = await receiver.receive_messages(max_message_count=1, max_wait_time=WAIT)
            await receiver.dead_letter_message(message, reason="ConsumerDown")
        return message

    async with clients["sbwest"].get_queue_sender("jobs") as sender:
        await sender.send_messages(ServiceBusMessage("job-1"))
    await consumer_fails("sbwest")
    assert await run_task(clients, by_source["left"]) == 1
    spilled = await consumer_fails("sbeast")
    assert (str(spilled), properties(spilled)["repl-spilled"]) == ("job-1", "1")
    assert await run_task(clients, by_source["right"]) == 1

    counts = {}
    for ns in ("sbwest", "sbeast"):
        with admin(sb, ns) as client:
            for queue in ("jobs", "spillover-aux"):
                runtime = client.get_queue_runtime_properties(queue)
                counts[f"{ns}/{queue}"] = (runtime.active_message_count, runtime.dead_letter_message_count)
    assert counts == {
        "sbwest/jobs": (0, 0),
        "sbwest/spillover-aux": (0, 0),
        "sbeast/jobs": (0, 0),
        "sbeast/spillover-aux": (1, 0),  # dead-lettered twice: parked, not bounced back
    }
    async with clients["sbeast"].get_queue_receiver("spillover-aux") as receiver:
        [parked] = await receiver.receive_messages(max_message_count=1, max_wait_time=WAIT)
    assert str(parked) == "job-1"
