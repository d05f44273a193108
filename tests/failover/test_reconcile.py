"""One FailoverGroup round against the fake API server and an emulator: what it publishes, and how it
reports problems a human must fix (Stalled) apart from the switching, which goes on."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from federator.failover.runtime import FailoverRuntime
from federator.failover.state import GroupState
from federator.kube.client import KubeClient
from federator.kube.reads import ClusterReads
from federator.provision.environment import ManagementEnvironment
from federator.reconcile.failovergroup import (
    ConfigMapEndpoints,
    GroupPorts,
    delete_children,
    group_round,
    reconcile,
)
from federator.validation.credential_scope import CredentialScope
from federator_contract.api.failovergroup import FailoverGroupSpec
from federator_emulator.server import RunningEmulator
from federator_emulator.testing import AsyncEmulatorCredential, AsyncFakeCredential, EmulatorFactory
from support.kube import KubeServer

pytestmark = [pytest.mark.slow, pytest.mark.asyncio]

NS = "default"
SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"


@pytest.fixture
def emulator(emulator_factory: EmulatorFactory) -> RunningEmulator:
    return emulator_factory(
        {
            "dnsZones": [{"name": "federator.test"}],
            "namespaces": [{"name": n, "queues": [{"name": "orders"}]} for n in ("weu", "neu")],
        }
    )


@pytest_asyncio.fixture
async def client(kube: KubeServer, emulator: RunningEmulator) -> AsyncIterator[KubeClient]:
    found = KubeClient(kube.url, aiohttp.ClientSession(headers={"Accept": "application/json"}))
    for name in ("weu", "neu"):
        await found.create(
            f"/api/v1/namespaces/{NS}/secrets",
            {
                "metadata": {"name": name},
                "stringData": {"connectionString": emulator.connection_string(name)},
            },
        )
    await found.create(
        f"/api/v1/namespaces/{NS}/secrets",
        {
            "metadata": {"name": "dns-sp"},
            "stringData": {"tenantId": "t", "clientId": "c", "clientSecret": "s"},
        },
    )
    yield found
    await found.close()


TaskLister = Callable[[str], Awaitable[list[dict[str, Any]]]]


def runtime(emulator: RunningEmulator, token: str | None = None) -> FailoverRuntime:
    """Management through the emulator, signed in as its administrator (or with a fixed ``token``)."""
    return FailoverRuntime(
        management=ManagementEnvironment(
            arm_endpoint=emulator.arm_endpoint,
            connection_verify=str(emulator.ca_path),
            credential_factory=lambda source: (
                AsyncEmulatorCredential(emulator) if token is None else AsyncFakeCredential(token)
            ),
        )
    )


def local_ports(client: KubeClient, emulator: RunningEmulator, tasks: TaskLister | None = None) -> GroupPorts:
    """A group round's ports as local mode gives them: the emulator's namespaces weu and neu, no DNS, and the
    developer's own identity."""
    return GroupPorts(
        client,
        runtime(emulator).prober,
        ConfigMapEndpoints(ClusterReads.direct(client)),
        dns=None,
        scope=CredentialScope(local=True),
        emulators={m: emulator.connection_string(m) for m in ("weu", "neu")},
        tasks=tasks,
    )


def body(**spec: Any) -> dict[str, Any]:
    connection = spec.pop("connection", lambda m: {"secretRef": {"name": m}})
    return {
        "metadata": {"name": "orders", "namespace": NS, "uid": "u-1", "generation": 1},
        "spec": {
            "primaryMember": "weu",
            "members": [
                {"name": m, "endpoint": f"{m}.servicebus.windows.net", "connection": connection(m)}
                for m in ("weu", "neu")
            ],
            "probe": {"entity": {"queueName": "orders"}, "timeoutSeconds": 5},
            **spec,
        },
    }


def dns(zone: str = "federator.test") -> dict[str, Any]:
    return {
        "dns": {
            "zone": {
                "subscriptionId": SUBSCRIPTION,
                "resourceGroup": "emulator",
                "zoneName": zone,
                "credential": {"servicePrincipalSecretRef": {"name": "dns-sp"}},
            },
            "producerRecordName": "orders-send",
            "consumerRecordName": "orders-receive",
        }
    }


def by_type(conditions: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in conditions}


async def test_a_round_publishes_the_endpoints_and_a_second_one_writes_nothing(
    client: KubeClient, emulator: RunningEmulator
) -> None:
    group = body(publishing=dns())
    first = (await reconcile(ClusterReads.direct(client), runtime(emulator), group)).result
    assert by_type(first.conditions)["Ready"] == ("True", "Active")
    assert first.status_patch["phase"] == "Normal" and first.status_patch["observedGeneration"] == 1
    config_map = await client.get(f"/api/v1/namespaces/{NS}/configmaps/orders-endpoints")
    assert config_map is not None and config_map["data"]["producerMember"] == "weu"
    assert config_map["metadata"]["ownerReferences"][0]["uid"] == "u-1"

    settled = {**group, "status": first.status_patch}
    second = await reconcile(ClusterReads.direct(client), runtime(emulator), settled)
    assert second.result.status_patch == {} and second.result.notes == [] and second.switches == []


async def test_a_config_map_the_group_did_not_create_is_neither_written_onto_nor_deleted(
    client: KubeClient, emulator: RunningEmulator
) -> None:
    theirs = f"/api/v1/namespaces/{NS}/configmaps/settings"
    await client.create(
        f"/api/v1/namespaces/{NS}/configmaps", {"metadata": {"name": "settings"}, "data": {"mine": "yes"}}
    )
    group = body(publishing={"configMapName": "settings"})
    done = await reconcile(ClusterReads.direct(client), runtime(emulator), group)
    stalled = next(c for c in done.result.conditions if c["type"] == "Stalled")
    assert (stalled["status"], stalled["reason"]) == ("True", "ConfigMapNotOwned")
    assert "spec.publishing.configMapName names ConfigMap settings" in stalled["message"]
    assert done.switches == [] and "producerMember" not in done.result.status_patch, "nothing switched"
    kept = await client.get(theirs)
    assert kept is not None and kept["data"] == {"mine": "yes"} and "ownerReferences" not in kept["metadata"]
    deleted, failed = await delete_children(client, runtime(emulator), group)
    assert (deleted, failed) == ([], []) and await client.get(theirs) is not None
    # The group's own ConfigMap is published and deleted with it.
    own = body()
    await reconcile(ClusterReads.direct(client), runtime(emulator), own)
    assert (await delete_children(client, runtime(emulator), own))[0] == ["ConfigMap orders-endpoints"]
    assert await client.get(f"/api/v1/namespaces/{NS}/configmaps/orders-endpoints") is None


async def test_a_missing_member_secret_stalls_the_group_before_anything_is_published(
    client: KubeClient, emulator: RunningEmulator
) -> None:
    result = (
        await reconcile(
            ClusterReads.direct(client),
            runtime(emulator),
            body(connection=lambda m: {"secretRef": {"name": f"x{m}"}}),
        )
    ).result
    assert by_type(result.conditions)["Stalled"] == ("True", "SecretNotFound")
    assert "xweu" in result.conditions[0]["message"]
    assert await client.get(f"/api/v1/namespaces/{NS}/configmaps/orders-endpoints") is None


async def test_emulator_members_need_local_mode(client: KubeClient, emulator: RunningEmulator) -> None:
    group = body(connection=lambda m: {"emulator": {"namespace": m}})
    in_cluster = (await reconcile(ClusterReads.direct(client), runtime(emulator), group)).result
    assert by_type(in_cluster.conditions)["Stalled"] == ("True", "EmulatorOnlyInLocalMode")
    # Local mode runs the same round, knowing the emulator's namespaces.
    ports = local_ports(client, emulator)
    local = await group_round(
        ports,
        name="orders",
        namespace=NS,
        uid=None,
        spec=FailoverGroupSpec.model_validate(group["spec"]),
        state=GroupState(),
        now=datetime.now(UTC),
    )
    ready = next(u for u in local.findings.condition_updates if u.type == "Ready")
    assert (ready.status, ready.reason) == ("True", "Active")


@pytest.mark.parametrize(
    ("zone", "token", "reason", "detail"),
    [
        ("nowhere.test", None, "EntityNotFound", "nowhere.test"),
        ("federator.test", "", "ManagementAuthFailed", "authentication failed"),
    ],
)
async def test_dns_problems_stall_the_group_but_the_config_map_is_published(
    client: KubeClient, emulator: RunningEmulator, zone: str, token: str | None, reason: str, detail: str
) -> None:
    result = (
        await reconcile(ClusterReads.direct(client), runtime(emulator, token), body(publishing=dns(zone)))
    ).result
    stalled = next(c for c in result.conditions if c["type"] == "Stalled")
    assert (stalled["status"], stalled["reason"]) == ("True", reason)
    assert detail in stalled["message"] and "endpoints ConfigMap published" in stalled["message"]
    assert result.status_patch["producerMember"] == "weu", "the state machine ran"
    assert await client.get(f"/api/v1/namespaces/{NS}/configmaps/orders-endpoints") is not None
