"""A tenant tries to make Federator hand an Azure token to a host it controls, or to borrow the operator's
own Azure identity: a `workloadIdentity` connection naming its own host (in a task, in a FailoverGroup
the operator probes, in a checkpoint store), or a FailoverGroup in a namespace the installer did not list
signing in as the operator. Each is refused with a reason naming the rule — Stalled for the operator,
a problem or a warning at the field's path for `federator validate` — while Azure's own hosts, the
installer's suffixes and the installer's namespaces keep working (validation/credential_scope.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from tenant_manifests import NAMESPACE, replication_task

from federator.failover.connections import MemberConnection, resolve_connection
from federator.failover.probes import Prober
from federator.failover.runtime import FailoverRuntime
from federator.kube.client import KubeClient
from federator.kube.reads import ClusterReads
from federator.planning.errors import PlanningError
from federator.planning.following import resolve_following
from federator.planning.task import plan_replication_task
from federator.provision.environment import ManagementEnvironment
from federator.provision.secrets import SecretsAtHand
from federator.reasons import (
    EMULATOR_ONLY_IN_LOCAL_MODE,
    ENDPOINT_HOST_NOT_ALLOWED,
    OPERATOR_IDENTITY_NOT_ALLOWED,
)
from federator.reconcile.failovergroup import reconcile
from federator.reconcile.replicationtask_source import SourceProbes, source_reachable
from federator.settings import OperatorSettings
from federator.validation import check_object
from federator.validation.credential_scope import CredentialScope, operator_scope
from federator_contract.api.base import API_VERSION, NamespaceConnection, WorkloadIdentity
from federator_contract.api.replicationtask import ReplicationTaskSpec
from support.kube import KubeServer

NO_SECRETS = SecretsAtHand({})  # these connections carry no Secret
ATTACKER_HOSTS = [
    "collector.attacker.example",
    "servicebus.windows.net.attacker.example",  # an Azure suffix inside the attacker's name
    "attackerservicebus.windows.net",  # the suffix without its dot
    "127.0.0.1:5671",
]
AZURE_HOSTS = [
    "contoso.servicebus.windows.net",
    "contoso.servicebus.windows.net:5671",
    "contoso.z12.eventhubs.azure.net",  # partitioned DNS of new namespaces
    "contoso.z3.servicebus.azure.net",
    "contoso.servicebus.chinacloudapi.cn",
    "contoso.servicebus.usgovcloudapi.net",
]


def identity(host: str) -> dict[str, Any]:
    return {"workloadIdentity": {"fullyQualifiedNamespace": host}}


def task_spec(**connections: dict[str, Any]) -> ReplicationTaskSpec:
    return ReplicationTaskSpec.model_validate(replication_task(**connections)["spec"])


def failover_group(connection: dict[str, Any], namespace: str = NAMESPACE) -> dict[str, Any]:
    members = [
        {"name": m, "endpoint": f"{m}.servicebus.windows.net", "connection": connection}
        for m in ("weu", "neu")
    ]
    return {
        "apiVersion": API_VERSION,
        "kind": "FailoverGroup",
        "metadata": {"name": "orders", "namespace": namespace, "uid": "u-1", "generation": 1},
        "spec": {"primaryMember": "weu", "members": members, "probe": {"entity": {"queueName": "orders"}}},
    }


@pytest.fixture
def installer(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """The operator's environment as the chart sets it; the scope is read again from it."""
    operator_scope.cache_clear()
    yield monkeypatch
    operator_scope.cache_clear()


def installed(installer: pytest.MonkeyPatch, **env: str) -> None:
    for name, value in env.items():
        installer.setenv(f"FEDERATOR_{name.upper()}", value)
    operator_scope.cache_clear()


# ------------------------------------------------------------------------------------------- endpoint hosts


@pytest.mark.parametrize("host", ATTACKER_HOSTS)
def test_a_task_sending_a_token_to_a_host_outside_azure_is_stalled(host: str) -> None:
    spec = task_spec(target=identity(host))
    with pytest.raises(PlanningError) as refused:
        plan_replication_task(name="orders", namespace=NAMESPACE, spec=spec, settings=OperatorSettings())
    assert refused.value.reason == ENDPOINT_HOST_NOT_ALLOWED
    assert refused.value.message.startswith(
        "spec.targets[0].eventHub.connection.workloadIdentity.fullyQualifiedNamespace: "
    )
    assert "is not an Azure endpoint" in refused.value.message


@pytest.mark.parametrize("end", ["source", "target"])
def test_a_task_naming_the_emulator_is_stalled_in_a_cluster(end: str) -> None:
    # The emulator is a developer's stand-in, its keys in a local run's file: in a cluster a connection
    # naming it would reach whatever answers to its name there.
    spec = task_spec(**{end: {"emulator": {"namespace": "orders"}}})
    with pytest.raises(PlanningError) as refused:
        plan_replication_task(name="orders", namespace=NAMESPACE, spec=spec, settings=OperatorSettings())
    assert refused.value.reason == EMULATOR_ONLY_IN_LOCAL_MODE
    field = "source" if end == "source" else "targets[0]"
    assert f"spec.{field}.eventHub.connection" in refused.value.message


@pytest.mark.parametrize("host", ATTACKER_HOSTS)
def test_validate_reports_the_host_at_its_field_path(host: str, installer: pytest.MonkeyPatch) -> None:
    verdict = check_object(replication_task(source=identity(host)))
    found = [(p.path, p.layer) for p in verdict.problems]
    assert found == [("spec.source.eventHub.connection.workloadIdentity.fullyQualifiedNamespace", "policy")]


@pytest.mark.parametrize("host", AZURE_HOSTS)
def test_azure_hosts_of_every_cloud_are_accepted(host: str, installer: pytest.MonkeyPatch) -> None:
    spec = task_spec(target=identity(host))
    plan = plan_replication_task(name="orders", namespace=NAMESPACE, spec=spec, settings=OperatorSettings())
    assert [use.path for use in plan.spark_app.workload_identities] == ["spec.targets[0].eventHub.connection"]
    assert check_object(replication_task(target=identity(host))).problems == []


def test_the_installer_adds_suffixes_for_an_emulator_or_a_private_zone(installer: pytest.MonkeyPatch) -> None:
    host = "messaging.emulator.svc.cluster.local:5671"
    settings = OperatorSettings(allowed_endpoint_suffixes=".svc.cluster.local, privatelink.contoso.net")
    plan_replication_task(
        name="orders", namespace=NAMESPACE, spec=task_spec(source=identity(host)), settings=settings
    )
    assert check_object(replication_task(source=identity(host))).problems != []
    installed(installer, allowed_endpoint_suffixes=".svc.cluster.local")
    assert check_object(replication_task(source=identity(host))).problems == []


@pytest.mark.parametrize(
    "endpoint", ["https://evil.example", "https://contoso.blob.core.windows.net@evil.example"]
)
def test_a_checkpoint_store_token_goes_to_azure_blob_storage_only(endpoint: str) -> None:
    store = {"containerName": "ckpt", "connection": {"workloadIdentity": {"blobEndpoint": endpoint}}}
    translation = {"consumerGroups": ["app"], "checkpointStore": store}
    spec = task_spec(checkpointTranslation=translation)
    with pytest.raises(PlanningError) as refused:
        plan_replication_task(name="orders", namespace=NAMESPACE, spec=spec, settings=OperatorSettings())
    assert refused.value.reason == ENDPOINT_HOST_NOT_ALLOWED
    assert refused.value.message.startswith(
        "spec.checkpointTranslation.checkpointStore.connection.workloadIdentity.blobEndpoint: 'evil.example'"
    )
    azure = {
        **store,
        "connection": {"workloadIdentity": {"blobEndpoint": "https://contoso.blob.core.windows.net"}},
    }
    translation = {**translation, "checkpointStore": azure}
    plan_replication_task(
        name="orders",
        namespace=NAMESPACE,
        spec=task_spec(checkpointTranslation=translation),
        settings=OperatorSettings(),
    )


def test_a_task_following_a_group_with_an_attackers_member_is_stalled() -> None:
    spec = task_spec(source={"failoverGroupRef": {"name": "orders"}})
    group = failover_group(identity("collector.attacker.example"))
    group["status"] = {"producerMember": "weu", "consumerMember": "weu"}
    following = resolve_following(spec, {"orders": group})
    with pytest.raises(PlanningError) as refused:
        plan_replication_task(
            name="orders",
            namespace=NAMESPACE,
            spec=following.spec,
            settings=OperatorSettings(),
            following=following,
        )
    assert refused.value.reason == ENDPOINT_HOST_NOT_ALLOWED


# ------------------------------------------------------------------------------------ the operator's identity


@pytest_asyncio.fixture
async def cluster(kube: KubeServer) -> AsyncIterator[ClusterReads]:
    client = KubeClient(kube.url, aiohttp.ClientSession(headers={"Accept": "application/json"}))
    yield ClusterReads.direct(client)
    await client.close()


def stalled(conditions: list[dict[str, Any]]) -> tuple[str, str, str]:
    found = next(c for c in conditions if c["type"] == "Stalled")
    return found["status"], found["reason"], found["message"]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("collector.attacker.example", ENDPOINT_HOST_NOT_ALLOWED),
        ("contoso.servicebus.windows.net", OPERATOR_IDENTITY_NOT_ALLOWED),
    ],
)
async def test_a_group_the_operator_would_probe_as_itself_is_stalled(
    cluster: ClusterReads, host: str, reason: str
) -> None:
    scope = CredentialScope.from_settings(OperatorSettings(operator_identity_namespaces="platform,team-b-*"))
    runtime = FailoverRuntime(ManagementEnvironment(arm_endpoint="https://management.azure.com"), scope=scope)
    try:
        result = (await reconcile(cluster, runtime, failover_group(identity(host)))).result
    finally:
        await runtime.close()
    status, found, message = stalled(result.conditions)
    assert (status, found) == ("True", reason)
    assert message.startswith("member weu")
    if reason == OPERATOR_IDENTITY_NOT_ALLOWED:
        assert "(platform, team-b-*), not in 'team-a'" in message and "use secretRef" in message


@pytest.mark.asyncio
async def test_the_installers_namespaces_may_use_the_operators_identity() -> None:
    scope = CredentialScope(identity_namespaces=("platform", "team-*"))
    connection = WorkloadIdentity(fully_qualified_namespace="contoso.servicebus.windows.net")
    found = await resolve_connection(
        NO_SECRETS,
        NAMESPACE,
        NamespaceConnection(workload_identity=connection),
        where="member weu",
        scope=scope,
    )
    assert found == MemberConnection(fully_qualified_namespace="contoso.servicebus.windows.net")
    with pytest.raises(PlanningError) as refused:
        await resolve_connection(
            NO_SECRETS,
            "payments",
            NamespaceConnection(workload_identity=connection),
            where="member weu",
            scope=scope,
        )
    assert refused.value.reason == OPERATOR_IDENTITY_NOT_ALLOWED


@pytest.mark.asyncio
async def test_a_tasks_source_is_not_probed_as_the_operator_outside_the_installers_namespaces() -> None:
    spec = task_spec(source=identity("contoso.servicebus.windows.net"))
    probes = SourceProbes(Prober(), CredentialScope(identity_namespaces=("platform",)), ttl=1)
    update = await source_reachable(NO_SECRETS, probes, NAMESPACE, spec)
    assert (update.status, update.reason) == ("Unknown", OPERATOR_IDENTITY_NOT_ALLOWED)
    assert update.message.startswith(
        "spec.source.eventHub.connection signs in with workload identity, as the operator"
    )


def test_validate_warns_where_the_operator_would_sign_in_as_itself(installer: pytest.MonkeyPatch) -> None:
    installed(installer, operator_identity_namespaces="platform")
    group = check_object(failover_group(identity("contoso.servicebus.windows.net")))
    assert group.problems == []
    assert [w.path for w in group.warnings] == [
        "spec.members[0].connection.workloadIdentity",
        "spec.members[1].connection.workloadIdentity",
    ]
    assert "the group is Stalled (OperatorIdentityNotAllowed)" in group.warnings[0].message
    task = check_object(replication_task(source=identity("contoso.servicebus.windows.net")))
    assert [w.path for w in task.warnings] == ["spec.source.eventHub.connection.workloadIdentity"]
    assert "SourceReachable Unknown" in task.warnings[0].message
    installed(installer, operator_identity_namespaces="team-*")
    assert check_object(failover_group(identity("contoso.servicebus.windows.net"))).warnings == []
    with_secrets = check_object(failover_group({"secretRef": {"name": "weu"}}, namespace="elsewhere"))
    assert with_secrets.warnings == [], "a group that brings its own credential needs no permission"


def test_local_mode_signs_in_as_the_developer_and_refuses_nothing() -> None:
    scope = CredentialScope(local=True)
    spec = task_spec(source=identity("localhost:5671"))
    assert scope.host_findings(spec) == [] and scope.identity_findings(spec, "anywhere") == []
    assert CredentialScope().host_findings(spec) != [], "the same spec in a cluster"
