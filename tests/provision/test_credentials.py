"""Who provisioning logs in as, and how credential problems surface: never with a secret's value."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from provision_helpers import (
    K8S_NS,
    RecordingFactory,
    all_active,
    arm_member,
    data_plane_member,
    emulator_member,
    management_connection_string,
)

from federator.kube.client import KubeClient
from federator.planning.mirror import plan_mirror
from federator.provision.credentials import ServicePrincipal, WorkloadIdentityLogin, azure_identity
from federator.provision.environment import ManagementEnvironment
from federator.provision.members import MemberOutcome, provision_member
from federator.provision.model import desired_by_member
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec
from federator_emulator.server import RunningEmulator
from support.azure_clients import with_key
from support.kube import KubeServer

CLIENT_SECRET = "s3cr3t-value-never-shown"


def put_secret(kube: KubeServer, name: str, data: dict[str, str]) -> None:
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": data}
    assert kube.request("POST", f"/api/v1/namespaces/{K8S_NS}/secrets", body)[0] in (200, 201)


async def provision(
    client: KubeClient, env: ManagementEnvironment, spec: ServiceBusMirrorSpec, name: str, **changes: Any
) -> MemberOutcome:
    plan = plan_mirror(name="orders", namespace=K8S_NS, spec=spec)
    member = next(m for m in spec.members if m.name == name)
    desired = desired_by_member(plan, [m.name for m in spec.members])[name]
    return await provision_member(
        client, K8S_NS, member, desired, (), ManagementEnvironment(**{**env.__dict__, **changes})
    )


def service_principal_member() -> dict[str, Any]:
    spec = arm_member("west", "sbwest")
    spec["management"]["arm"]["credential"] = {"servicePrincipalSecretRef": {"name": "west-sp"}}
    return spec


@pytest.mark.asyncio
async def test_a_service_principal_is_read_from_its_secret(
    kube: KubeServer, kube_client: KubeClient, env: ManagementEnvironment, credentials: RecordingFactory
) -> None:
    put_secret(
        kube, "west-sp", {"tenantId": "tenant-1", "clientId": "client-1", "clientSecret": CLIENT_SECRET}
    )
    spec = all_active(service_principal_member(), arm_member("east", "sbeast"))
    outcome = await provision(kube_client, env, spec, "west")
    assert outcome.state == "Provisioned"
    assert credentials.sources == [ServicePrincipal("tenant-1", "client-1", CLIENT_SECRET)]
    assert CLIENT_SECRET not in repr(credentials.sources[0])


@pytest.mark.asyncio
async def test_workload_identity_passes_the_client_id(
    kube_client: KubeClient, env: ManagementEnvironment, credentials: RecordingFactory
) -> None:
    west = arm_member("west", "sbwest")
    west["management"]["arm"]["credential"]["workloadIdentity"]["clientId"] = (
        "11111111-2222-3333-4444-555555555555"
    )
    outcome = await provision(kube_client, env, all_active(west, arm_member("east", "sbeast")), "west")
    assert outcome.state == "Provisioned"
    assert credentials.sources == [WorkloadIdentityLogin("11111111-2222-3333-4444-555555555555")]


@pytest.mark.asyncio
async def test_missing_secrets_and_keys_are_named(
    kube: KubeServer, kube_client: KubeClient, env: ManagementEnvironment
) -> None:
    spec = all_active(service_principal_member(), arm_member("east", "sbeast"))
    missing = await provision(kube_client, env, spec, "west")
    assert (missing.reason, missing.state) == ("SecretNotFound", "Failed")
    assert "Secret default/west-sp" in missing.message
    put_secret(kube, "west-sp", {"tenantId": "t", "clientId": "c"})
    no_key = await provision(kube_client, env, spec, "west")
    assert no_key.reason == "SecretKeyNotFound" and "'clientSecret'" in no_key.message


@pytest.mark.asyncio
async def test_refused_credentials_are_management_auth_failed_without_the_key(
    kube: KubeServer,
    kube_client: KubeClient,
    env: ManagementEnvironment,
    sb: RunningEmulator,
    credentials: RecordingFactory,
) -> None:
    credentials.token = ""  # the emulator's ARM refuses an empty bearer token with 401
    arm = await provision(
        kube_client, env, all_active(arm_member("west", "sbwest"), arm_member("east", "sbeast")), "west"
    )
    assert (arm.state, arm.reason, arm.transient) == ("Failed", "ManagementAuthFailed", False)
    assert "member west" in arm.message

    wrong_key = with_key(management_connection_string(sb, "sbwest"), CLIENT_SECRET)
    put_secret(kube, "west-conn", {"connectionString": wrong_key})
    data = await provision(
        kube_client, env, all_active(data_plane_member("west"), data_plane_member("east")), "west"
    )
    assert (data.state, data.reason, data.transient) == ("Failed", "ManagementAuthFailed", False)
    assert CLIENT_SECRET not in data.message


@pytest.mark.asyncio
async def test_a_secret_that_is_no_connection_string_is_reported_without_its_value(
    kube: KubeServer, kube_client: KubeClient, env: ManagementEnvironment
) -> None:
    put_secret(kube, "west-conn", {"connectionString": CLIENT_SECRET})
    outcome = await provision(
        kube_client, env, all_active(data_plane_member("west"), data_plane_member("east")), "west"
    )
    assert (outcome.reason, outcome.transient) == ("ConnectionStringInvalid", False)
    assert "Secret default/west-conn key 'connectionString'" in outcome.message
    assert CLIENT_SECRET not in outcome.message


@pytest.mark.asyncio
async def test_emulator_members_are_provisioned_only_where_the_emulator_is_known(
    kube_client: KubeClient, env: ManagementEnvironment
) -> None:
    spec = all_active(emulator_member("west", "sbwest"), emulator_member("east", "sbeast"))
    local = await provision(kube_client, env, spec, "west")
    assert local.state == "Provisioned"
    cluster = await provision(kube_client, env, spec, "west", emulator_management={})
    assert (cluster.state, cluster.reason) == ("Failed", "EmulatorOnlyInLocalMode")


@pytest.mark.slow  # azure-identity retries the token request on its own (about 15 s)
@pytest.mark.asyncio
async def test_the_real_azure_identity_credential_without_a_reachable_authority_is_transient(
    kube: KubeServer, kube_client: KubeClient, env: ManagementEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Bound but not listening until the test ends: connections are refused, and no other process takes it.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        monkeypatch.setenv("AZURE_AUTHORITY_HOST", f"https://127.0.0.1:{closed.getsockname()[1]}")
        put_secret(
            kube,
            "west-sp",
            {
                "tenantId": "00000000-0000-0000-0000-000000000001",
                "clientId": "c",
                "clientSecret": CLIENT_SECRET,
            },
        )
        spec = all_active(service_principal_member(), arm_member("east", "sbeast"))
        outcome = await provision(kube_client, env, spec, "west", credential_factory=azure_identity)
    assert (outcome.state, outcome.reason, outcome.transient) == ("Failed", "ManagementUnavailable", True)
    assert CLIENT_SECRET not in outcome.message


@pytest.mark.asyncio
async def test_workload_identity_outside_a_configured_pod_is_management_auth_failed(
    kube_client: KubeClient, env: ManagementEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_FEDERATED_TOKEN_FILE"):
        monkeypatch.delenv(variable, raising=False)
    spec = all_active(arm_member("west", "sbwest"), arm_member("east", "sbeast"))
    outcome = await provision(kube_client, env, spec, "west", credential_factory=azure_identity)
    assert (outcome.state, outcome.reason) == ("Failed", "ManagementAuthFailed")
    assert "workload identity" in outcome.message
