"""A tenant signs in to Azure Resource Manager as a ServiceAccount of its own namespace — not as the
operator: the operator asks the API server for the account's token (TokenRequest, audience
`api://AzureADTokenExchange`, 10 minutes) and presents it to Microsoft Entra as a client assertion for the
identity the account is annotated with (provision/serviceaccount.py). Here Entra and ARM are the
emulator's, and the test API server issues the tokens as the cluster's OIDC issuer the emulator trusts.

What the tenant's identity may do is its own grant: it provisions where its identity has a role, is
refused where it has none, and another namespace cannot borrow it by copying the annotations — Entra
accepts the token only for the subject its federated credential names."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from azure.core.exceptions import ClientAuthenticationError, HttpResponseError
from tenant_manifests import NAMESPACE

from federator.kube.client import KubeClient
from federator.provision.arm import ArmManagement
from federator.provision.credentials import ServiceAccountLogin, azure_identity_factory, build_credential
from federator.provision.environment import ManagementEnvironment
from federator.provision.errors import ManagementError
from federator.provision.model import CreateSubscription
from federator.provision.serviceaccount import (
    CLIENT_ID_ANNOTATION,
    TENANT_ID_ANNOTATION,
    TOKEN_EXCHANGE_AUDIENCE,
    TOKEN_SECONDS,
    service_account_login,
)
from federator.reasons import (
    SERVICE_ACCOUNT_NOT_FOUND,
    WORKLOAD_IDENTITY_CLIENT_ID_MISMATCH,
    WORKLOAD_IDENTITY_CLIENT_ID_MISSING,
)
from federator_contract.api.servicebusmirror import ArmManagement as ArmCoordinates
from federator_emulator.server import RunningEmulator, start_emulator
from support.kube import KubeServer
from support.token_requests import token_issuing_kube

TEAM_A_APP = "aaaaaaaa-0000-0000-0000-00000000000a"
ACCOUNT = "arm-provisioner"
SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"


@pytest.fixture(scope="module")
def azure() -> Iterator[RunningEmulator]:
    """Team A's identity trusts its own ServiceAccount only, and is Contributor on sbwest only."""
    subject = f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}"
    config = {
        "identity": {
            "applications": [
                {"name": "team-a", "clientId": TEAM_A_APP, "federatedCredentials": [{"subject": subject}]}
            ]
        },
        "namespaces": [
            {
                "name": "sbwest",
                "topics": [{"name": "orders"}],
                "roleAssignments": [{"principal": "team-a", "role": "Contributor"}],
            },
            {"name": "sbeast", "topics": [{"name": "orders"}]},
        ],
    }
    with start_emulator(config) as emulator:
        yield emulator


@pytest.fixture
def cluster(azure: RunningEmulator) -> Iterator[KubeServer]:
    with token_issuing_kube(azure.workload_identity_token) as kube:
        yield kube


@pytest_asyncio.fixture
async def client(cluster: KubeServer) -> AsyncIterator[KubeClient]:
    kube = KubeClient(cluster.url, aiohttp.ClientSession(headers={"Accept": "application/json"}))
    yield kube
    await kube.close()


@pytest.fixture
def entra(azure: RunningEmulator, monkeypatch: pytest.MonkeyPatch) -> ManagementEnvironment:
    """The operator's management environment, with Entra and ARM at the emulator."""
    monkeypatch.setenv("AZURE_AUTHORITY_HOST", azure.authority_host)
    verify = str(azure.ca_path)
    return ManagementEnvironment(
        arm_endpoint=azure.arm_endpoint,
        connection_verify=verify,
        credential_factory=azure_identity_factory(connection_verify=verify),
    )


def service_account(kube: KubeServer, namespace: str, annotations: dict[str, str]) -> None:
    metadata = {"name": ACCOUNT, "annotations": annotations}
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata}
    assert kube.request("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", body)[0] in (200, 201)


def team_a_annotations(azure: RunningEmulator) -> dict[str, str]:
    return {CLIENT_ID_ANNOTATION: TEAM_A_APP, TENANT_ID_ANNOTATION: azure.tenant_id}


async def arm_as(
    client: KubeClient, env: ManagementEnvironment, namespace: str, emulated: str
) -> ArmManagement:
    login = await service_account_login(client, namespace, ACCOUNT)
    coordinates = ArmCoordinates.model_validate(
        {
            "subscriptionId": SUBSCRIPTION,
            "resourceGroup": "emulator",
            "namespaceName": emulated,
            "credential": {"servicePrincipalSecretRef": {"name": "unused"}},
        }
    )
    return ArmManagement.open(build_credential(login, env.credential_factory), coordinates, env)


@pytest.mark.asyncio
async def test_a_tenant_provisions_as_its_own_service_account(
    azure: RunningEmulator, cluster: KubeServer, client: KubeClient, entra: ManagementEnvironment
) -> None:
    service_account(cluster, NAMESPACE, team_a_annotations(azure))
    management = await arm_as(client, entra, NAMESPACE, "sbwest")
    try:
        await management.apply(CreateSubscription("orders", "team-a-copy", "federator:team-a"))
        assert ("team-a-copy", "federator:team-a") in await management.subscriptions("orders")
    finally:
        await management.close()
    subject = f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}"
    issued = cluster.emulator.issued  # type: ignore[attr-defined]
    assert issued == [(subject, (TOKEN_EXCHANGE_AUDIENCE,), TOKEN_SECONDS)]


@pytest.mark.asyncio
async def test_the_service_account_has_its_identitys_grants_and_no_more(
    azure: RunningEmulator, cluster: KubeServer, client: KubeClient, entra: ManagementEnvironment
) -> None:
    service_account(cluster, NAMESPACE, team_a_annotations(azure))
    management = await arm_as(client, entra, NAMESPACE, "sbeast")  # no role there
    try:
        with pytest.raises(HttpResponseError) as refused:
            await management.apply(CreateSubscription("orders", "team-a-copy", "federator:team-a"))
    finally:
        await management.close()
    assert refused.value.status_code == 403


@pytest.mark.asyncio
async def test_another_namespace_cannot_borrow_the_identity_by_copying_its_annotations(
    azure: RunningEmulator, cluster: KubeServer, client: KubeClient, entra: ManagementEnvironment
) -> None:
    service_account(cluster, "team-b", team_a_annotations(azure))
    management = await arm_as(client, entra, "team-b", "sbwest")
    try:
        with pytest.raises(ClientAuthenticationError) as refused:
            await management.subscriptions("orders")
    finally:
        await management.close()
    assert "AADSTS70021" in str(refused.value)  # no federated credential for team-b's subject


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("annotations", "client_id", "reason", "words"),
    [
        (None, None, SERVICE_ACCOUNT_NOT_FOUND, f"ServiceAccount {NAMESPACE}/{ACCOUNT} does not exist"),
        ({}, None, WORKLOAD_IDENTITY_CLIENT_ID_MISSING, f"no annotation {CLIENT_ID_ANNOTATION}"),
        (
            {CLIENT_ID_ANNOTATION: TEAM_A_APP},
            "bbbbbbbb-0000-0000-0000-00000000000b",
            WORKLOAD_IDENTITY_CLIENT_ID_MISMATCH,
            f"annotated with client ID {TEAM_A_APP}, not bbbbbbbb-0000-0000-0000-00000000000b",
        ),
        (
            {CLIENT_ID_ANNOTATION: TEAM_A_APP},
            None,
            "ManagementAuthFailed",
            f"no annotation {TENANT_ID_ANNOTATION}",
        ),
    ],
)
async def test_an_account_that_cannot_sign_in_is_named_with_its_reason(
    cluster: KubeServer,
    client: KubeClient,
    annotations: dict[str, str] | None,
    client_id: str | None,
    reason: str,
    words: str,
) -> None:
    if annotations is not None:
        service_account(cluster, NAMESPACE, annotations)
    with pytest.raises(ManagementError) as refused:
        await service_account_login(client, NAMESPACE, ACCOUNT, client_id)
    assert refused.value.reason == reason and words in refused.value.message
    issued = cluster.emulator.issued  # type: ignore[attr-defined]
    assert issued == [], "no token is requested for an account that cannot sign in"


def test_the_token_never_shows(azure: RunningEmulator) -> None:
    login = ServiceAccountLogin(NAMESPACE, ACCOUNT, azure.tenant_id, TEAM_A_APP, "eyJ-secret-token")
    assert "eyJ-secret-token" not in repr(login)
