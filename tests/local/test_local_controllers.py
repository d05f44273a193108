"""Local mode's controllers against a real emulator (in-process, no Spark): a mirror provisioned through
the emulator's administration API by the operator's own provisioning code, and a failover group probed,
switched by an edit of its manifest file, failed back after the drain, and published to a file and to
the emulator's Azure DNS zone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from azure.mgmt.dns import DnsManagementClient
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus.management import ServiceBusAdministrationClient, SqlRuleAction, SqlRuleFilter

from federator import reasons
from federator.failover.probes import Prober
from federator.local.controller import Controller
from federator.local.groups import GroupLoop, group_row
from federator.local.management import (
    amqp_connection_strings,
    emulator_environment,
    management_connection_string,
)
from federator.local.model import LocalPlan, TaskRun
from federator.local.plan import plan_local_run
from federator.local.state import StateDir
from federator.validation.documents import load_documents
from federator_contract.emulatorconfig import EmulatorConfig
from federator_emulator.server import RunningEmulator
from federator_emulator.testing import EmulatorCredential, EmulatorFactory
from support.polling import eventually

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ZONE = "messaging.example.com"
DNS = f"""\
  publishing:
    configMapName: orders-endpoints
    dns:
      zone:
        subscriptionId: 00000000-0000-0000-0000-000000000000
        resourceGroup: emulator
        zoneName: {ZONE}
        credential: {{workloadIdentity: {{fullyQualifiedNamespace: dns.example.com}}}}
      producerRecordName: orders-send
      consumerRecordName: orders-receive
"""


def planned(path: Path, state: StateDir, emulator: EmulatorConfig | None = None) -> LocalPlan:
    plan = plan_local_run(list(load_documents(path)), state=state, environ={}, emulator_config=emulator)
    assert not plan.failed and plan.emulator is not None
    return plan


def admin(emulator: RunningEmulator, namespace: str) -> ServiceBusAdministrationClient:
    entry = emulator.ready_document()["namespaces"][namespace]
    return ServiceBusAdministrationClient.from_connection_string(
        management_connection_string(entry), connection_verify=entry["caCertificatePath"]
    )


def test_a_mirror_is_provisioned_on_the_emulator_and_a_second_run_finds_it_done(
    tmp_path: Path, emulator_factory: EmulatorFactory
) -> None:
    state = StateDir(tmp_path / "state")
    plan = planned(EXAMPLES / "sb-all-active.yaml", state)
    emulator = emulator_factory(plan.emulator)
    ready = emulator.ready_document()

    first = Controller(plan.mirrors, [], state, ready)
    first.start()
    first.stop()

    outcomes = first.outcomes["default/orders"]
    assert [(o.name, o.state) for o in outcomes] == [(m, "Provisioned") for m in ("west", "east", "north")]
    west = next(o for o in outcomes if o.name == "west")
    assert "removed rule $Default from orders/repl-east" in west.done
    with admin(emulator, "west") as client:
        subscriptions = {s.name: s.user_metadata for s in client.list_subscriptions("orders")}
        rules = [(r.name, r.filter, r.action) for r in client.list_rules("orders", "repl-east")]
    assert subscriptions == {
        "repl-east": "federator.io/servicebusmirror=default/orders",
        "repl-north": "federator.io/servicebusmirror=default/orders",
    }
    ((name, sql_filter, action),) = rules
    assert (
        name == "replication" and isinstance(sql_filter, SqlRuleFilter) and isinstance(action, SqlRuleAction)
    )
    assert (sql_filter.sql_expression, action.sql_expression) == (
        "replication IS NULL",
        "SET replication = 1",
    )

    second = Controller(plan.mirrors, [], state, ready)
    second.start()
    second.stop()
    assert [(o.state, o.done) for o in second.outcomes["default/orders"]] == [("Provisioned", ())] * 3
    assert (state.mirror_dir("default", "orders") / "status.json").exists()


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def endpoints(loop: GroupLoop) -> dict[str, Any]:
    return dict(json.loads((loop.directory / "endpoints.json").read_text()))


@pytest.mark.slow
@pytest.mark.asyncio
async def test_a_group_switches_on_an_edit_of_its_file_and_fails_back_once_drained(
    tmp_path: Path, emulator_factory: EmulatorFactory
) -> None:
    manifest = tmp_path / "group.yaml"
    shutil.copy(EXAMPLES / "failover-group.yaml", manifest)
    state = StateDir(tmp_path / "state")
    plan = planned(manifest, state)
    emulator = emulator_factory(plan.emulator)
    ready = emulator.ready_document()
    prober = Prober()
    loop = GroupLoop(plan.groups[0], state, amqp_connection_strings(ready), prober, None)
    (following,) = plan.following

    def source_of_task() -> str:
        run = following.replan({"orders": loop.object()})
        assert isinstance(run, TaskRun)
        return str(run.followed_members["spec.source.serviceBus"])

    try:
        first = await loop.round()
        assert (first.state.phase, first.state.producer, first.state.consumer) == (
            "Normal",
            "primary",
            "primary",
        )
        assert group_row(loop).condition == "Ready" and "no DNS publishing" in group_row(loop).info
        assert endpoints(loop)["consumerMember"] == "primary" and source_of_task() == "orders/primary"

        edit(manifest, "  primaryMember: primary\n", "  primaryMember: primary\n  activeMember: secondary\n")
        switched = await loop.round()
        assert (switched.state.phase, switched.state.producer, switched.state.consumer) == (
            "FailedOver",
            "secondary",
            "secondary",
        )
        assert switched.version == first.version + 1 and source_of_task() == "orders/secondary"
        assert endpoints(loop)["producerMember"] == "secondary"

        secondary = ready["namespaces"]["secondary"]["connectionString"]
        with (
            ServiceBusClient.from_connection_string(secondary) as client,
            client.get_queue_sender("orders") as s,
        ):
            s.send_messages(ServiceBusMessage("still on the secondary"))
        edit(manifest, "  activeMember: secondary\n", "  activeMember: primary\n")
        failing_back = await loop.round()
        assert (failing_back.state.phase, failing_back.state.producer, failing_back.state.consumer) == (
            "FailingBack",
            "primary",
            "secondary",
        )
        assert group_row(loop).reason == reasons.FAILING_BACK and source_of_task() == "orders/secondary"

        with (
            ServiceBusClient.from_connection_string(secondary) as client,
            client.get_queue_receiver("orders", max_wait_time=5) as receiver,
        ):
            for message in receiver.receive_messages(max_message_count=1, max_wait_time=5):
                receiver.complete_message(message)
        drained = await loop.round()  # the drain check comes first: consumers follow in this round
    finally:
        await prober.close()

    assert (drained.state.phase, drained.state.consumer) == ("Normal", "primary")
    assert source_of_task() == "orders/primary"
    events = (loop.directory / "events.log").read_text()
    for reason in ("Activated", "SpecReloaded", "Switched", "FailingBack", "FailbackComplete"):
        assert f" {reason}: " in events
    # Each switch measured as far as local mode sees (its tasks' status is not read by groups), kept in
    # the state dir's status across runs.
    kept = json.loads((loop.directory / "status.json").read_text())["switches"]
    assert [(r["target"], r["roles"], r["cause"], r["complete"]) for r in kept] == [
        ("secondary", "both", "requested", True),
        ("primary", "producers", "requested", True),
        ("primary", "consumers", "drained", True),
    ]
    assert all(r["publishedSeconds"] >= 0 for r in kept)
    assert events.count(" SwitchMeasured: switch ") == 3


@pytest.mark.slow
def test_the_controllers_tell_of_a_switch_once_the_group_publishes_the_new_member_and_not_otherwise(
    tmp_path: Path, emulator_factory: EmulatorFactory
) -> None:
    manifest = tmp_path / "group.yaml"
    shutil.copy(EXAMPLES / "failover-group.yaml", manifest)
    edit(manifest, "    periodSeconds: 5\n", "    periodSeconds: 1\n")
    state = StateDir(tmp_path / "state")
    plan = planned(manifest, state)
    emulator = emulator_factory(plan.emulator)
    told: list[str] = []  # the consumers' member a following task reads when the session is told

    def on_switch() -> None:
        group = controller.group_object("default", "orders")
        told.append(group["status"]["consumerMember"] if group else "nothing published")

    controller = Controller([], plan.groups, state, emulator.ready_document(), on_switch=on_switch)
    (loop,) = controller.groups

    def rounds(count: int) -> None:
        for _ in range(count):
            made = loop.snapshot  # each round keeps a new snapshot
            eventually(lambda made=made: loop.snapshot is not made, timeout=10, message="no round made")

    controller.start()
    try:
        assert told == ["primary"], "the first round chose the members"
        rounds(2)
        assert told == ["primary"], "a round that moves nobody tells nothing"
        edit(manifest, "  primaryMember: primary\n", "  primaryMember: primary\n  activeMember: secondary\n")
        eventually(lambda: len(told) == 2, timeout=10, message="the switch was not told")
        rounds(2)
    finally:
        controller.stop()
    assert told == ["primary", "secondary"]


@pytest.mark.asyncio
async def test_dns_records_go_to_a_zone_the_emulator_serves_and_are_skipped_otherwise(
    tmp_path: Path, emulator_factory: EmulatorFactory
) -> None:
    manifest = tmp_path / "group.yaml"
    manifest.write_text(
        (EXAMPLES / "failover-group.yaml")
        .read_text()
        .replace("  publishing:\n    configMapName: orders-endpoints\n", DNS)
    )
    state = StateDir(tmp_path / "state")
    declared = EmulatorConfig.model_validate(
        {"dnsZones": [{"name": ZONE}], "namespaces": [{"name": "primary"}]}
    )
    plan = planned(manifest, state, declared)  # as with --emulator-config
    emulator = emulator_factory(plan.emulator)
    ready = emulator.ready_document()
    connections = amqp_connection_strings(ready)
    prober = Prober()
    publishing = GroupLoop(plan.groups[0], state, connections, prober, emulator_environment(ready))
    skipping = GroupLoop(plan.groups[0], StateDir(tmp_path / "other"), connections, prober, None)
    try:
        await publishing.round()
        await skipping.round()
    finally:
        await prober.close()

    client = DnsManagementClient(
        EmulatorCredential(emulator),
        "00000000-0000-0000-0000-000000000000",
        base_url=emulator.arm_endpoint,
        connection_verify=str(emulator.ca_path),
    )
    with client:
        record = client.record_sets.get("emulator", ZONE, "orders-send", "CNAME")
    assert record.cname_record is not None and record.cname_record.cname == f"primary.{ZONE}"
    assert f"DNS records in the emulator's zone {ZONE}" in group_row(publishing).info
    assert group_row(skipping).condition == "Ready"
    assert f"DNS skipped: zone {ZONE} is not served by the emulator" in group_row(skipping).info
