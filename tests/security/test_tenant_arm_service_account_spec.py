"""A tenant names a ServiceAccount of its own namespace as the Azure Resource Manager credential of a
ServiceBusMirror member (`management.arm.credential.serviceAccount`) and of a FailoverGroup's DNS zone
(`spec.publishing.dns.zone.credential.serviceAccount`). The operator requests that account's token in the
resource's namespace for the audience the spec names (TokenRequest) and signs in with it through the real
`ClientAssertionCredential` against the emulator's Microsoft Entra ID, never as itself; every request it
makes is one the chart's Role grants (the suite's `operator_stays_within_its_role` check, here with the
TokenRequest). Naming another namespace's account is refused before anything is read or signed in, even
where that account's identity would be accepted, and so is an account of its own namespace that the
installer's list (chart `credentials.serviceAccounts`) does not allow (provision/login.py,
provision/serviceaccount.py, validation/credential_scope.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from azure.core.credentials_async import AsyncTokenCredential
from azure.mgmt.dns import DnsManagementClient
from tenant_manifests import NAMESPACE

from federator.failover.dns import DnsPublisher
from federator.failover.publishing import RecordSet
from federator.kube.cached import CachedObjects
from federator.kube.children import DirectChildren
from federator.kube.client import KubeClient
from federator.kube.reads import ClusterReads
from federator.provision.credentials import CredentialSource, ServiceAccountLogin, azure_identity_factory
from federator.provision.environment import ManagementEnvironment
from federator.provision.errors import ManagementError
from federator.provision.login import arm_login
from federator.provision.secrets import SecretsAtHand
from federator.provision.serviceaccount import (
    CLIENT_ID_ANNOTATION,
    TENANT_ID_ANNOTATION,
    TOKEN_SECONDS,
    NamespaceCredentials,
)
from federator.reasons import (
    CREDENTIAL_SERVICE_ACCOUNT_NOT_ALLOWED,
    CROSS_NAMESPACE_SERVICE_ACCOUNT,
    MANAGEMENT_AUTH_FAILED,
)
from federator.reconcile.servicebusmirror import reconcile
from federator.settings import OperatorSettings
from federator.validation.credential_scope import ACCOUNTS_VARIABLE
from federator_contract.api.base import API_VERSION
from federator_contract.api.failovergroup import DnsZone
from federator_contract.api.servicebusmirror import TOKEN_EXCHANGE_AUDIENCE, ArmCredential
from federator_emulator.server import RunningEmulator, start_emulator
from federator_emulator.testing import EmulatorCredential
from support.kube import KubeServer
from support.token_requests import token_issuing_kube

SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"  # the emulator's
MIRROR_APP = "aaaaaaaa-0000-0000-0000-00000000000a"
DNS_APP = "aaaaaaaa-0000-0000-0000-00000000000d"
DNS_AUDIENCE = "api://federator-dns"  # the DNS identity's federated credential names its own audience
ZONE = "federator.test"
OTHER_NAMESPACE = "team-b"
# Another workload of team-a, whose identity also trusts its account: the installer keeps it out of ARM work.
DEPLOYER = "payments-deployer"
# The installer of a multi-tenant cluster lists the accounts meant for Federator's ARM work.
INSTALLER_ACCOUNTS = "*/arm-provisioner,team-a/dns-*"


def subject(namespace: str, account: str) -> str:
    return f"system:serviceaccount:{namespace}:{account}"


@pytest.fixture(scope="module")
def azure() -> Iterator[RunningEmulator]:
    """Team A's mirror identity trusts `arm-provisioner` of team-a and of team-b, and team-a's deployer
    (so that only Federator's own rules stand between team-a and those accounts); its DNS identity trusts
    `dns-writer` of team-a for its own audience. Each has a role only where it works."""
    federated = [{"subject": subject(ns, "arm-provisioner")} for ns in (NAMESPACE, OTHER_NAMESPACE)]
    federated.append({"subject": subject(NAMESPACE, DEPLOYER)})
    dns_writer = {"subject": subject(NAMESPACE, "dns-writer"), "audience": DNS_AUDIENCE}
    config = {
        "identity": {
            "applications": [
                {"name": "mirror", "clientId": MIRROR_APP, "federatedCredentials": federated},
                {"name": "dns", "clientId": DNS_APP, "federatedCredentials": [dns_writer]},
            ]
        },
        "namespaces": [
            {
                "name": name,
                "topics": [{"name": "orders"}],
                "roleAssignments": [{"principal": "mirror", "role": "Contributor"}],
            }
            for name in ("sbwest", "sbeast")
        ],
        "dnsZones": [
            {"name": ZONE, "roleAssignments": [{"principal": "dns", "role": "DNS Zone Contributor"}]}
        ],
    }
    with start_emulator(config) as emulator:
        yield emulator


@pytest.fixture
def kube(azure: RunningEmulator) -> Iterator[KubeServer]:
    """The API server, issuing ServiceAccount tokens as the issuer the emulator's Entra trusts. Named
    `kube`: every request the operator's client makes here is checked against the chart's Role."""
    with token_issuing_kube(azure.workload_identity_token) as server:
        yield server


@pytest_asyncio.fixture
async def client(kube: KubeServer) -> AsyncIterator[KubeClient]:
    headers = {"Accept": "application/json", "User-Agent": "federator-operator"}
    api = KubeClient(kube.url, aiohttp.ClientSession(headers=headers))
    yield api
    await api.close()


def production_reads(client: KubeClient) -> ClusterReads:
    """Reads as the operator's context makes them: Secrets and ServiceAccounts through the cache."""
    return ClusterReads(client, DirectChildren(client), CachedObjects(client, 30), CachedObjects(client, 30))


class Logins:
    """The real azure-identity factory at the emulator's Entra, recording who signed in."""

    def __init__(self, azure: RunningEmulator, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("AZURE_AUTHORITY_HOST", azure.authority_host)
        self.verify = str(azure.ca_path)
        self.real = azure_identity_factory(connection_verify=self.verify)
        self.sources: list[CredentialSource] = []

    def __call__(self, source: CredentialSource) -> AsyncTokenCredential:
        self.sources.append(source)
        return self.real(source)

    def environment(self, azure: RunningEmulator) -> ManagementEnvironment:
        """The operator's environment with the scope of its settings as the test sets them (the chart's
        defaults: its own identity lent nowhere)."""
        return ManagementEnvironment(
            arm_endpoint=azure.arm_endpoint,
            connection_verify=self.verify,
            credential_factory=self,
            scope=ManagementEnvironment.for_operator(OperatorSettings.from_env()).scope,
        )


@pytest.fixture
def logins(azure: RunningEmulator, monkeypatch: pytest.MonkeyPatch) -> Logins:
    return Logins(azure, monkeypatch)


def service_account(kube: KubeServer, namespace: str, name: str, annotations: dict[str, str]) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": name, "annotations": annotations},
    }
    assert kube.request("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", body)[0] in (200, 201)


def provisioner(
    kube: KubeServer, azure: RunningEmulator, namespace: str, name: str = "arm-provisioner"
) -> None:
    """Account `name` of `namespace`, annotated with the mirror identity, as workload identity users
    annotate one."""
    annotations = {CLIENT_ID_ANNOTATION: MIRROR_APP, TENANT_ID_ANNOTATION: azure.tenant_id}
    service_account(kube, namespace, name, annotations)


def mirror(credential: dict[str, Any]) -> dict[str, Any]:
    """Team A's mirror, both members provisioned through ARM with `credential`."""

    def member(name: str, emulated: str) -> dict[str, Any]:
        arm = {
            "subscriptionId": SUBSCRIPTION,
            "resourceGroup": "emulator",
            "namespaceName": emulated,
            "credential": credential,
        }
        return {
            "name": name,
            "connection": {"secretRef": {"name": f"{name}-conn"}},
            "management": {"arm": arm},
        }

    return {
        "apiVersion": API_VERSION,
        "kind": "ServiceBusMirror",
        "metadata": {"name": "orders", "namespace": NAMESPACE, "uid": "u-1", "generation": 1},
        "spec": {
            "pattern": "allActive",
            "topicName": "orders",
            "members": [member("west", "sbwest"), member("east", "sbeast")],
        },
    }


def issued(kube: KubeServer) -> list[tuple[str, tuple[str, ...], int]]:
    return list(kube.emulator.issued)  # type: ignore[attr-defined]


def conditions(result: Any) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in result.conditions}


def refused_before_any_token(result: Any, kube: KubeServer, logins: Logins, reason: str) -> str:
    """The Stalled message of a mirror refused with ``reason`` before any token was requested."""
    stalled = conditions(result)["Stalled"]
    assert (stalled["status"], stalled["reason"]) == ("True", reason)
    assert issued(kube) == [], "no token of any account was requested"
    assert logins.sources == [], "nobody signed in"
    return str(stalled["message"])


# ------------------------------------------------------------------------------------------------- mirrors


@pytest.mark.asyncio
async def test_a_mirror_provisions_as_the_service_account_its_spec_names(
    azure: RunningEmulator, kube: KubeServer, client: KubeClient, logins: Logins
) -> None:
    provisioner(kube, azure, NAMESPACE)
    body = mirror({"serviceAccount": {"name": "arm-provisioner"}})
    result = await reconcile(production_reads(client), logins.environment(azure), body, provision=True)
    members = {m["name"]: m for m in result.status_patch["members"]}
    for name in ("west", "east"):
        assert members[name]["state"] == "Provisioned", members[name]["message"]
        assert members[name]["entities"], "the subscriptions were written in the emulator's ARM"
    assert conditions(result)["Stalled"]["status"] == "False"
    # Each member signed in once, as team-a's account, with a token for Entra's exchange from team-a.
    assert (
        issued(kube)
        == [(subject(NAMESPACE, "arm-provisioner"), (TOKEN_EXCHANGE_AUDIENCE,), TOKEN_SECONDS)] * 2
    )
    assert {type(s) for s in logins.sources} == {ServiceAccountLogin}, "never the operator's identity"
    assert {(s.namespace, s.client_id) for s in logins.sources if isinstance(s, ServiceAccountLogin)} == {
        (NAMESPACE, MIRROR_APP)
    }


@pytest.mark.asyncio
async def test_a_mirror_naming_another_namespaces_service_account_is_stalled(
    azure: RunningEmulator, kube: KubeServer, client: KubeClient, logins: Logins
) -> None:
    provisioner(kube, azure, OTHER_NAMESPACE)  # Entra would accept its token
    body = mirror({"serviceAccount": {"name": "arm-provisioner", "namespace": OTHER_NAMESPACE}})
    result = await reconcile(production_reads(client), logins.environment(azure), body, provision=True)
    message = refused_before_any_token(result, kube, logins, CROSS_NAMESPACE_SERVICE_ACCOUNT)
    for name in ("west", "east"):
        field = f"member {name}: management.arm.credential.serviceAccount.namespace is {OTHER_NAMESPACE!r}"
        assert field in message
    assert f"only as a ServiceAccount of the resource's own namespace ({NAMESPACE!r})" in message


@pytest.fixture
def provisioned_as(
    azure: RunningEmulator,
    kube: KubeServer,
    client: KubeClient,
    logins: Logins,
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[[str], Awaitable[Any]]:
    """Where the installer lists its accounts: the tenant's mirror reconciled with its credential naming
    account `name` of its own namespace (created, annotated with the mirror identity, which trusts it)."""
    monkeypatch.setenv(ACCOUNTS_VARIABLE, INSTALLER_ACCOUNTS)

    async def reconciled(name: str) -> Any:
        provisioner(kube, azure, NAMESPACE, name)
        body = mirror({"serviceAccount": {"name": name}})
        return await reconcile(production_reads(client), logins.environment(azure), body, provision=True)

    return reconciled


@pytest.mark.asyncio
async def test_a_mirror_naming_an_account_the_installer_does_not_list_is_stalled(
    provisioned_as: Callable[[str], Awaitable[Any]], kube: KubeServer, logins: Logins
) -> None:
    result = await provisioned_as(DEPLOYER)  # its own namespace's, and Entra would accept its token
    message = refused_before_any_token(result, kube, logins, CREDENTIAL_SERVICE_ACCOUNT_NOT_ALLOWED)
    for name in ("west", "east"):
        assert f"member {name}: management.arm.credential.serviceAccount.name is {DEPLOYER!r}" in message
    assert f"({INSTALLER_ACCOUNTS.replace(',', ', ')}), not {NAMESPACE}/{DEPLOYER}" in message
    assert "chart value credentials.serviceAccounts" in message


@pytest.mark.asyncio
async def test_a_mirror_naming_an_account_the_installer_lists_provisions(
    provisioned_as: Callable[[str], Awaitable[Any]], kube: KubeServer
) -> None:
    result = await provisioned_as("arm-provisioner")
    assert conditions(result)["Stalled"]["status"] == "False", conditions(result)["Stalled"]["message"]
    assert [s[0] for s in issued(kube)] == [subject(NAMESPACE, "arm-provisioner")] * 2


# -------------------------------------------------------------------------------------------------- DNS


def dns_writer(kube: KubeServer, where: str, **credential: str) -> DnsZone:
    """Account `dns-writer` of namespace `where`, annotated with the DNS identity's client ID, and the zone
    whose credential names it (for the DNS identity's audience) with `credential`'s further fields."""
    service_account(kube, where, "dns-writer", {CLIENT_ID_ANNOTATION: DNS_APP})
    account = {"name": "dns-writer", "audience": DNS_AUDIENCE, **credential}
    return DnsZone.model_validate(
        {
            "subscriptionId": SUBSCRIPTION,
            "resourceGroup": "emulator",
            "zoneName": ZONE,
            "credential": {"serviceAccount": account},
        }
    )


RECORDS = [RecordSet("orders-send", "CNAME", 30, cname="sbwest.servicebus.windows.net")]


def cname(azure: RunningEmulator, name: str) -> str:
    """The record as Azure DNS holds it, read as the emulator's administrator."""
    dns = DnsManagementClient(
        EmulatorCredential(azure),
        SUBSCRIPTION,
        base_url=azure.arm_endpoint,
        connection_verify=str(azure.ca_path),
    )
    with dns:
        record = dns.record_sets.get("emulator", ZONE, name, "CNAME").cname_record
    assert record is not None, f"no CNAME {name}"
    return str(record.cname)


@pytest.mark.asyncio
async def test_a_groups_dns_records_are_written_as_its_service_account_for_the_audience_it_names(
    azure: RunningEmulator, kube: KubeServer, client: KubeClient, logins: Logins
) -> None:
    # The account names its identity; the tenant comes from the spec (no tenant annotation).
    written = dns_writer(kube, NAMESPACE, tenantId=azure.tenant_id)
    reads = NamespaceCredentials(CachedObjects(client, 30), client)  # as the group's round reads
    publisher = DnsPublisher(logins.environment(azure))
    assert await publisher.publish(reads, NAMESPACE, "orders", written, RECORDS)
    assert cname(azure, "orders-send") == "sbwest.servicebus.windows.net"
    assert issued(kube) == [(subject(NAMESPACE, "dns-writer"), (DNS_AUDIENCE,), TOKEN_SECONDS)]
    assert [
        (s.namespace, s.tenant_id, s.client_id) for s in logins.sources if isinstance(s, ServiceAccountLogin)
    ] == [(NAMESPACE, azure.tenant_id, DNS_APP)]


@pytest.mark.asyncio
async def test_a_groups_dns_zone_naming_another_namespaces_service_account_is_refused(
    azure: RunningEmulator, kube: KubeServer, client: KubeClient, logins: Logins
) -> None:
    borrowed = dns_writer(kube, OTHER_NAMESPACE, namespace=OTHER_NAMESPACE)
    publisher = DnsPublisher(logins.environment(azure))
    with pytest.raises(ManagementError) as refused:
        await publisher.publish(client, NAMESPACE, "orders", borrowed, RECORDS)
    assert refused.value.reason == CROSS_NAMESPACE_SERVICE_ACCOUNT and not refused.value.retryable
    assert refused.value.message.startswith(
        f"spec.publishing.dns.zone.credential.serviceAccount.namespace is {OTHER_NAMESPACE!r}"
    )
    assert issued(kube) == [] and logins.sources == []


@pytest.mark.asyncio
async def test_a_groups_dns_zone_naming_an_account_the_installer_does_not_list_is_refused(
    azure: RunningEmulator,
    kube: KubeServer,
    client: KubeClient,
    logins: Logins,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ACCOUNTS_VARIABLE, "*/arm-provisioner")  # nothing for DNS in any namespace
    written = dns_writer(kube, NAMESPACE, tenantId=azure.tenant_id)
    publisher = DnsPublisher(logins.environment(azure))
    with pytest.raises(ManagementError) as refused:
        await publisher.publish(client, NAMESPACE, "orders", written, RECORDS)
    assert refused.value.reason == CREDENTIAL_SERVICE_ACCOUNT_NOT_ALLOWED and not refused.value.retryable
    assert refused.value.message.startswith(
        "spec.publishing.dns.zone.credential.serviceAccount.name is 'dns-writer': the installer allows only"
    )
    assert issued(kube) == [] and logins.sources == []


# ------------------------------------------------------------------------------------------- local mode


@pytest.mark.asyncio
async def test_without_a_cluster_a_service_account_cannot_sign_in_and_says_so(logins: Logins) -> None:
    credential = ArmCredential.model_validate({"serviceAccount": {"name": "arm-provisioner"}})
    local_secrets = SecretsAtHand({})  # local mode's sources read Secrets and request no tokens
    with pytest.raises(ManagementError) as refused:
        await arm_login(
            local_secrets, NAMESPACE, credential, SUBSCRIPTION, ManagementEnvironment(), "member west"
        )
    assert refused.value.reason == MANAGEMENT_AUTH_FAILED
    assert refused.value.message.startswith("member west.serviceAccount: a ServiceAccount's token comes from")
    assert "use servicePrincipalSecretRef" in refused.value.message
    assert logins.sources == []


@pytest.mark.asyncio
async def test_a_tenant_id_the_account_contradicts_is_refused_before_a_token_is_requested(
    azure: RunningEmulator, kube: KubeServer, client: KubeClient, logins: Logins
) -> None:
    provisioner(kube, azure, NAMESPACE)
    other_tenant = "bbbbbbbb-0000-0000-0000-00000000000b"
    credential = ArmCredential.model_validate(
        {"serviceAccount": {"name": "arm-provisioner", "tenantId": other_tenant}}
    )
    with pytest.raises(ManagementError) as refused:
        await arm_login(client, NAMESPACE, credential, SUBSCRIPTION, logins.environment(azure), "member west")
    assert refused.value.reason == MANAGEMENT_AUTH_FAILED
    assert refused.value.message == (
        f"member west.serviceAccount: ServiceAccount {NAMESPACE}/arm-provisioner is annotated with tenant ID "
        f"{azure.tenant_id}, not {other_tenant} as the spec says"
    )
    assert issued(kube) == [] and logins.sources == []
