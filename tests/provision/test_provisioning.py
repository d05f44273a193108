"""Provisioning a member against the emulator's management planes with the real clients: Azure Resource
Manager (`azure-mgmt-servicebus` over HTTPS) and the administration API (`ServiceBusAdministrationClient`,
ATOM). Both behave the same: idempotent, drift repaired, ownership respected, deletion exact."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from azure.servicebus.management import ServiceBusAdministrationClient, SqlRuleFilter
from provision_helpers import (
    K8S_NS,
    all_active,
    arm_member,
    data_plane_member,
    management_connection_string,
    requests,
    writes,
)

from federator.kube.client import KubeClient
from federator.planning.mirror import plan_mirror
from federator.provision.environment import ManagementEnvironment
from federator.provision.members import MemberOutcome, deprovision_member, provision_member
from federator.provision.model import desired_by_member
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec
from federator_emulator.server import RunningEmulator
from support.kube import KubeServer

MARKER = "federator.io/servicebusmirror=default/orders"
Provision = Callable[..., Awaitable[MemberOutcome]]


@pytest.fixture(params=["arm", "dataPlane"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def spec(mode: str, sb: RunningEmulator, kube: KubeServer) -> ServiceBusMirrorSpec:
    """west (sbwest) and east (sbeast), managed through `mode`."""
    if mode == "arm":
        return all_active(arm_member("west", "sbwest"), arm_member("east", "sbeast"))
    for name, namespace in (("west", "sbwest"), ("east", "sbeast")):
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"{name}-conn"},
            "stringData": {"connectionString": management_connection_string(sb, namespace)},
        }
        assert kube.request("POST", f"/api/v1/namespaces/{K8S_NS}/secrets", secret)[0] in (200, 201)
    return all_active(data_plane_member("west"), data_plane_member("east"))


@pytest.fixture
def provision(kube_client: KubeClient, env: ManagementEnvironment) -> Provision:
    async def run(
        spec: ServiceBusMirrorSpec,
        name: str,
        recorded: tuple[str, ...] = (),
        *,
        delete: bool = False,
        **env_changes: Any,
    ) -> MemberOutcome:
        plan = plan_mirror(name="orders", namespace=K8S_NS, spec=spec)
        desired = desired_by_member(plan, [m.name for m in spec.members])[name]
        member = next(m for m in spec.members if m.name == name)
        used = ManagementEnvironment(**{**env.__dict__, **env_changes})
        action = deprovision_member if delete else provision_member
        return await action(kube_client, K8S_NS, member, desired, recorded, used)

    return run


def admin(sb: RunningEmulator, namespace: str = "sbwest") -> ServiceBusAdministrationClient:
    return ServiceBusAdministrationClient.from_connection_string(
        management_connection_string(sb, namespace), connection_verify=str(sb.ca_path)
    )


def rules_of(
    sb: RunningEmulator, subscription: str, namespace: str = "sbwest"
) -> dict[str, tuple[str, str | None]]:
    with admin(sb, namespace) as client:
        return {
            r.name: (r.filter.sql_expression, r.action.sql_expression if r.action else None)  # type: ignore[union-attr]
            for r in client.list_rules("orders", subscription)
        }


@pytest.mark.asyncio
async def test_a_member_gets_its_marked_replication_subscription_with_only_the_loop_rule(
    spec: ServiceBusMirrorSpec, provision: Provision, sb: RunningEmulator, mode: str
) -> None:
    before = writes(mode)
    outcome = await provision(spec, "west")
    assert (outcome.state, outcome.reason) == ("Provisioned", "Provisioned")
    assert outcome.entities == ("topics/orders/subscriptions/repl-east",)
    assert writes(mode) - before == 3  # subscription, rule, $Default removed
    with admin(sb) as client:
        subscriptions = {s.name: s.user_metadata for s in client.list_subscriptions("orders")}
    assert subscriptions == {"app": None, "repl-east": MARKER}
    assert rules_of(sb, "repl-east") == {"replication": ("replication IS NULL", "SET replication = 1")}


@pytest.mark.asyncio
async def test_a_second_pass_reads_but_writes_nothing(
    spec: ServiceBusMirrorSpec, provision: Provision, mode: str
) -> None:
    first = await provision(spec, "west")
    before, read_before = writes(mode), requests(mode)
    again = await provision(spec, "west", first.entities)
    assert again.state == "Provisioned" and again.done == () and again.drift == ()
    assert writes(mode) == before
    assert requests(mode) > read_before, "the second pass must have looked"


@pytest.mark.asyncio
async def test_rules_changed_by_hand_and_a_deleted_subscription_are_put_back(
    spec: ServiceBusMirrorSpec, provision: Provision, sb: RunningEmulator
) -> None:
    first = await provision(spec, "west")
    with admin(sb) as client:
        rule = client.get_rule("orders", "repl-east", "replication")
        rule.filter = SqlRuleFilter("1=1")
        client.update_rule("orders", "repl-east", rule)
        client.create_rule("orders", "repl-east", "sneaky")
    repaired = await provision(spec, "west", first.entities)
    assert repaired.state == "Provisioned"
    assert repaired.drift == (
        "rule replication of orders/repl-east was changed",
        "rule sneaky was added to orders/repl-east",
    )
    assert rules_of(sb, "repl-east") == {"replication": ("replication IS NULL", "SET replication = 1")}

    with admin(sb) as client:
        client.delete_subscription("orders", "repl-east")
    recreated = await provision(spec, "west", repaired.entities)
    assert recreated.drift == ("subscription repl-east on topic orders was deleted",)
    assert rules_of(sb, "repl-east") == {"replication": ("replication IS NULL", "SET replication = 1")}


@pytest.mark.asyncio
async def test_a_foreign_subscription_with_the_planned_name_is_reported_and_left_alone(
    spec: ServiceBusMirrorSpec, provision: Provision, sb: RunningEmulator
) -> None:
    with admin(sb) as client:
        client.create_subscription("orders", "repl-east", user_metadata="team-x")
        client.create_subscription("orders", "audit")
    outcome = await provision(spec, "west")
    assert (outcome.state, outcome.reason, outcome.transient) == ("Failed", "EntityNotOwned", False)
    assert "member west" in outcome.message and "topics/orders/subscriptions/repl-east" in outcome.message
    assert rules_of(sb, "repl-east") == {"$Default": ("1=1", None)}
    assert rules_of(sb, "audit") == {"$Default": ("1=1", None)}
    with admin(sb) as client:
        assert client.get_subscription("orders", "repl-east").user_metadata == "team-x"


@pytest.mark.asyncio
async def test_deprovisioning_deletes_exactly_what_the_mirror_created(
    spec: ServiceBusMirrorSpec, provision: Provision, sb: RunningEmulator
) -> None:
    with admin(sb) as client:
        client.create_subscription("orders", "audit")
    first = await provision(spec, "west")
    gone = await provision(spec, "west", first.entities, delete=True)
    assert gone.state == "Provisioned" and gone.entities == ()
    assert gone.done == ("deleted subscription repl-east from topic orders",)
    with admin(sb) as client:
        assert sorted(s.name for s in client.list_subscriptions("orders")) == ["app", "audit"]


@pytest.mark.asyncio
async def test_a_missing_topic_is_entity_not_found_naming_topic_and_member(
    spec: ServiceBusMirrorSpec, provision: Provision
) -> None:
    renamed = spec.model_copy(update={"topic_name": "invoices"})
    outcome = await provision(renamed, "west")
    assert (outcome.state, outcome.reason, outcome.transient) == ("Failed", "EntityNotFound", False)
    assert "member west" in outcome.message and "topic invoices does not exist" in outcome.message


@pytest.mark.asyncio
async def test_an_unreachable_management_endpoint_is_transient(
    spec: ServiceBusMirrorSpec, provision: Provision, sb: RunningEmulator, mode: str, kube: KubeServer
) -> None:
    import socket

    # Bound but not listening until the test ends: connections are refused, and no other process takes it.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        if mode == "dataPlane":
            dead = f"Endpoint=sb://127.0.0.1:{port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=x"
            patch = {"stringData": {"connectionString": dead}}
            kube.request(
                "PATCH",
                f"/api/v1/namespaces/{K8S_NS}/secrets/west-conn",
                patch,
                "application/merge-patch+json",
            )
        outcome = await provision(spec, "west", arm_endpoint=f"https://127.0.0.1:{port}", retry_total=0)
        assert (outcome.state, outcome.reason, outcome.transient) == ("Failed", "ManagementUnavailable", True)
        assert "member west" in outcome.message
        assert "SharedAccessKey=" not in outcome.message


@pytest.mark.asyncio
async def test_a_namespace_arm_does_not_know_is_entity_not_found_with_azures_words(
    provision: Provision, sb: RunningEmulator
) -> None:
    spec = all_active(arm_member("west", "sbsouth"), arm_member("east", "sbeast"))
    outcome = await provision(spec, "west")
    assert (outcome.state, outcome.reason) == ("Failed", "EntityNotFound")
    assert "namespace sbsouth (resource group emulator) [" in outcome.message
    assert "'Microsoft.ServiceBus/namespaces/sbsouth'" in outcome.message, "Azure's own words are kept"
