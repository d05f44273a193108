"""A tenant tries to provision Service Bus entities with the operator's own Azure identity: a
ServiceBusMirror member whose `management.arm.credential` is `workloadIdentity` (the operator pod's
federated token), in a namespace the installer did not list, or on a subscription the installer did not
list. Each is refused before anything is signed in or written — the mirror is Stalled with
`OperatorIdentityNotAllowed` naming the member's field — while the tenant's own service principal (a
Secret of its namespace) and the installer's namespaces and subscriptions keep provisioning, here in the
emulator's Azure Resource Manager (provision/scope.py, provision/login.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from azure.core.credentials_async import AsyncTokenCredential
from tenant_manifests import NAMESPACE

from federator.kube.client import KubeClient
from federator.kube.reads import ClusterReads
from federator.planning.mirror import plan_mirror
from federator.provision.credentials import CredentialSource, ServicePrincipal
from federator.provision.environment import ManagementEnvironment
from federator.provision.members import MemberOutcome, provision_member
from federator.provision.model import desired_by_member
from federator.provision.scope import ArmScope
from federator.provision.secrets import SecretsAtHand
from federator.reasons import OPERATOR_IDENTITY_NOT_ALLOWED
from federator.reconcile.servicebusmirror import reconcile
from federator.settings import OperatorSettings
from federator_contract.api.base import API_VERSION
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec
from federator_emulator.server import RunningEmulator, start_emulator
from federator_emulator.testing import AsyncEmulatorCredential
from support.kube import KubeServer

SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"  # the emulator's
OTHER_SUBSCRIPTION = "11111111-2222-3333-4444-555555555555"
EMULATED = ("sbwest", "sbeast")


@pytest.fixture(scope="module")
def azure() -> Iterator[RunningEmulator]:
    config = {"namespaces": [{"name": n, "topics": [{"name": "orders"}]} for n in EMULATED]}
    with start_emulator(config) as emulator:
        yield emulator


class Logins:
    """The credential factory of the operator's environment: records who signed in, as what."""

    def __init__(self, azure: RunningEmulator) -> None:
        self.azure = azure
        self.sources: list[CredentialSource] = []

    def __call__(self, source: CredentialSource) -> AsyncTokenCredential:
        self.sources.append(source)
        return AsyncEmulatorCredential(self.azure)


def operator_environment(azure: RunningEmulator, logins: Logins, **settings: str) -> ManagementEnvironment:
    """The environment the operator builds from the installer's settings, with ARM at the emulator."""
    installed = ManagementEnvironment.for_operator(OperatorSettings(**settings))  # type: ignore[arg-type]
    return ManagementEnvironment(
        **{
            **installed.__dict__,
            "arm_endpoint": azure.arm_endpoint,
            "connection_verify": str(azure.ca_path),
            "credential_factory": logins,
        }
    )


def member(name: str, namespace: str, credential: dict[str, Any]) -> dict[str, Any]:
    arm = {
        "subscriptionId": SUBSCRIPTION,
        "resourceGroup": "emulator",
        "namespaceName": namespace,
        "credential": credential,
    }
    return {"name": name, "connection": {"secretRef": {"name": f"{name}-conn"}}, "management": {"arm": arm}}


AS_THE_OPERATOR = {"workloadIdentity": {"fullyQualifiedNamespace": "sbwest.servicebus.windows.net"}}
OWN_PRINCIPAL = {"servicePrincipalSecretRef": {"name": "team-a-arm"}}
PRINCIPAL_SECRET = {
    f"/api/v1/namespaces/{NAMESPACE}/secrets/team-a-arm": {
        "stringData": {"tenantId": "team-a-tenant", "clientId": "team-a-app", "clientSecret": "never-shown"}
    }
}


def mirror_spec(*members: dict[str, Any]) -> ServiceBusMirrorSpec:
    return ServiceBusMirrorSpec.model_validate(
        {"pattern": "allActive", "topicName": "orders", "members": list(members)}
    )


async def provision(
    azure: RunningEmulator, credential: dict[str, Any], **installed: str
) -> tuple[MemberOutcome, Logins]:
    """Provision member west of a mirror in the tenant's namespace, both members signing in with
    `credential`, as the operator installed with `installed` would; and who signed in."""
    logins = Logins(azure)
    spec = mirror_spec(member("west", "sbwest", credential), member("east", "sbeast", credential))
    plan = plan_mirror(name="orders", namespace=NAMESPACE, spec=spec)
    west = spec.members[0]
    desired = desired_by_member(plan, [m.name for m in spec.members])[west.name]
    env = operator_environment(azure, logins, **installed)
    outcome = await provision_member(SecretsAtHand(PRINCIPAL_SECRET), NAMESPACE, west, desired, (), env)
    return outcome, logins


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "installed",
    [
        {},  # the chart's default: the operator's identity lent nowhere
        {"operator_identity_namespaces": "platform,team-b-*"},
        {"operator_identity_subscriptions": SUBSCRIPTION},  # subscriptions alone lend nothing
    ],
)
async def test_provisioning_as_the_operator_outside_the_installers_namespaces_is_refused(
    azure: RunningEmulator, installed: dict[str, str]
) -> None:
    outcome, logins = await provision(azure, AS_THE_OPERATOR, **installed)
    assert (outcome.state, outcome.reason) == ("Failed", OPERATOR_IDENTITY_NOT_ALLOWED)
    assert not outcome.transient, "Stalled until the installer or the tenant acts"
    assert outcome.message.startswith(
        "member west: management.arm.credential.workloadIdentity signs in to Azure Resource Manager as the"
        " operator; the installer allows that only in the namespaces listed in"
        " FEDERATOR_OPERATOR_IDENTITY_NAMESPACES"
    )
    assert f"not in {NAMESPACE!r}" in outcome.message
    assert outcome.message.endswith("use servicePrincipalSecretRef with a Secret of this namespace")
    assert logins.sources == [], "refused before the operator signed in"
    assert outcome.done == ()


@pytest.mark.asyncio
async def test_provisioning_as_the_operator_on_a_subscription_the_installer_did_not_list_is_refused(
    azure: RunningEmulator,
) -> None:
    outcome, logins = await provision(
        azure,
        AS_THE_OPERATOR,
        operator_identity_namespaces="team-*",
        operator_identity_subscriptions=OTHER_SUBSCRIPTION,
    )
    assert (outcome.state, outcome.reason) == ("Failed", OPERATOR_IDENTITY_NOT_ALLOWED)
    listed = f"FEDERATOR_OPERATOR_IDENTITY_SUBSCRIPTIONS ({OTHER_SUBSCRIPTION}), not on {SUBSCRIPTION}"
    assert f"only on the subscriptions listed in {listed}" in outcome.message
    assert logins.sources == []


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "installed",
    [
        {"operator_identity_namespaces": "team-*"},
        {"operator_identity_namespaces": NAMESPACE, "operator_identity_subscriptions": SUBSCRIPTION.upper()},
    ],
)
async def test_the_installers_namespaces_and_subscriptions_provision_as_the_operator(
    azure: RunningEmulator, installed: dict[str, str]
) -> None:
    outcome, logins = await provision(azure, AS_THE_OPERATOR, **installed)
    assert (outcome.state, outcome.reason) == ("Provisioned", "Provisioned"), outcome.message
    assert len(logins.sources) == 1


@pytest.mark.asyncio
async def test_a_tenant_provisions_with_its_own_service_principal_wherever_it_is(
    azure: RunningEmulator,
) -> None:
    outcome, logins = await provision(azure, OWN_PRINCIPAL)
    assert (outcome.state, outcome.reason) == ("Provisioned", "Provisioned"), outcome.message
    assert logins.sources == [ServicePrincipal("team-a-tenant", "team-a-app", "never-shown")]


# --------------------------------------------------------------------------------- as the operator reports it


@pytest_asyncio.fixture
async def cluster(kube: KubeServer) -> AsyncIterator[ClusterReads]:
    client = KubeClient(kube.url, aiohttp.ClientSession(headers={"Accept": "application/json"}))
    yield ClusterReads.direct(client)
    await client.close()


@pytest.mark.asyncio
async def test_the_mirror_is_stalled_naming_each_members_field(
    azure: RunningEmulator, cluster: ClusterReads
) -> None:
    logins = Logins(azure)
    body = {
        "apiVersion": API_VERSION,
        "kind": "ServiceBusMirror",
        "metadata": {"name": "orders", "namespace": NAMESPACE, "uid": "u-1", "generation": 1},
        "spec": mirror_spec(
            member("west", "sbwest", AS_THE_OPERATOR), member("east", "sbeast", AS_THE_OPERATOR)
        ).model_dump(by_alias=True, exclude_none=True),
    }
    env = operator_environment(azure, logins, operator_identity_namespaces="platform")
    conditions = (await reconcile(cluster, env, body, provision=True)).conditions
    stalled = next(c for c in conditions if c["type"] == "Stalled")
    assert (stalled["status"], stalled["reason"]) == ("True", OPERATOR_IDENTITY_NOT_ALLOWED)
    for name in ("west", "east"):
        assert f"member {name}: management.arm.credential.workloadIdentity" in stalled["message"]
    assert logins.sources == []


def test_the_operators_environment_carries_the_installers_scope() -> None:
    settings = OperatorSettings.from_env(
        {
            "FEDERATOR_OPERATOR_IDENTITY_NAMESPACES": "platform",
            "FEDERATOR_OPERATOR_IDENTITY_SUBSCRIPTIONS": f"{SUBSCRIPTION}, {OTHER_SUBSCRIPTION}",
        }
    )
    scope = ManagementEnvironment.for_operator(settings).scope
    assert scope == ArmScope.from_settings(settings)
    assert scope.subscriptions == (SUBSCRIPTION, OTHER_SUBSCRIPTION)
    assert scope.refusal("platform", OTHER_SUBSCRIPTION) is None
    assert scope.refusal(NAMESPACE, SUBSCRIPTION) is not None
    assert ManagementEnvironment.for_operator(OperatorSettings()).scope.refusal("platform", SUBSCRIPTION)
