"""`federator validate` on a tenant's Azure Resource Manager credentials, before anything is applied: a
mirror member's `management.arm.credential` and a FailoverGroup's `spec.publishing.dns.zone.credential`.

- `workloadIdentity` there is the operator's own identity. Where the installer's values would refuse it
  (by default: everywhere) validate warns — the operator would stall the resource with
  `OperatorIdentityNotAllowed` — naming the field and the chart value that allows it; it does not refuse,
  because the cluster's values decide.
- `serviceAccount` naming another namespace than the manifest's is refused (the operator refuses it in
  any cluster), and warned about when the manifest names no namespace.
- `serviceAccount` naming an account the installer's list (chart `credentials.serviceAccounts`, read from
  the environment as the pod policy is) does not allow in the manifest's namespace is refused at its name,
  and warned about when the manifest names no namespace.
- Exactly one credential kind: the CRD's rule, the model and validate say the same, once, at the field."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import ValidationError
from tenant_manifests import NAMESPACE

from federator.validation import Verdict, check_object
from federator.validation.credential_scope import ACCOUNTS_VARIABLE, operator_scope
from federator_contract.api.base import API_VERSION
from federator_contract.api.servicebusmirror import ArmCredential

SUBSCRIPTION = "0b1f6471-1bf0-4dda-aec3-cb9272f09590"
AS_THE_OPERATOR = {"workloadIdentity": {"fullyQualifiedNamespace": "contoso-weu.servicebus.windows.net"}}
OWN_ACCOUNT = {"serviceAccount": {"name": "arm-provisioner"}}
MEMBER_CREDENTIAL = "spec.members[0].management.arm.credential"
ZONE_CREDENTIAL = "spec.publishing.dns.zone.credential"
EXACTLY_ONE = "exactly one of servicePrincipalSecretRef, serviceAccount, workloadIdentity must be set"


@pytest.fixture(autouse=True)
def installer(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """The operator's settings as the chart's defaults give them; a test lists what it installs."""
    for name in ("NAMESPACES", "SUBSCRIPTIONS"):
        monkeypatch.delenv(f"FEDERATOR_OPERATOR_IDENTITY_{name}", raising=False)
    monkeypatch.delenv(ACCOUNTS_VARIABLE, raising=False)
    operator_scope.cache_clear()
    yield monkeypatch
    operator_scope.cache_clear()


def installed(installer: pytest.MonkeyPatch, namespaces: str, subscriptions: str = "") -> None:
    installer.setenv("FEDERATOR_OPERATOR_IDENTITY_NAMESPACES", namespaces)
    installer.setenv("FEDERATOR_OPERATOR_IDENTITY_SUBSCRIPTIONS", subscriptions)
    operator_scope.cache_clear()


def metadata(namespace: str | None) -> dict[str, Any]:
    return {"name": "orders", **({"namespace": namespace} if namespace else {})}


def mirror(credential: dict[str, Any], namespace: str | None = NAMESPACE) -> dict[str, Any]:
    arm = {
        "subscriptionId": SUBSCRIPTION,
        "resourceGroup": "messaging",
        "namespaceName": "contoso-weu",
        "credential": credential,
    }
    members = [
        {"name": "weu", "connection": {"secretRef": {"name": "weu"}}, "management": {"arm": arm}},
        {"name": "neu", "connection": {"secretRef": {"name": "neu"}}, "management": {"dataPlane": {}}},
    ]
    spec = {"pattern": "allActive", "topicName": "orders", "members": members}
    return {
        "apiVersion": API_VERSION,
        "kind": "ServiceBusMirror",
        "metadata": metadata(namespace),
        "spec": spec,
    }


def group(credential: dict[str, Any], namespace: str | None = NAMESPACE) -> dict[str, Any]:
    members = [
        {
            "name": m,
            "endpoint": f"contoso-{m}.servicebus.windows.net",
            "connection": {"secretRef": {"name": m}},
        }
        for m in ("weu", "neu")
    ]
    zone = {
        "subscriptionId": SUBSCRIPTION,
        "resourceGroup": "dns",
        "zoneName": "messaging.contoso.com",
        "credential": credential,
    }
    dns = {"zone": zone, "producerRecordName": "orders-send", "consumerRecordName": "orders-receive"}
    spec = {
        "primaryMember": "weu",
        "members": members,
        "probe": {"entity": {"queueName": "orders"}},
        "publishing": {"dns": dns},
    }
    return {"apiVersion": API_VERSION, "kind": "FailoverGroup", "metadata": metadata(namespace), "spec": spec}


def paths(found: list[Any]) -> list[str]:
    return [p.path for p in found]


# ------------------------------------------------------------------------------- the operator's identity


@pytest.mark.parametrize(("manifest", "field"), [(mirror, MEMBER_CREDENTIAL), (group, ZONE_CREDENTIAL)])
def test_the_operators_identity_for_arm_warns_where_the_installers_defaults_refuse_it(
    manifest: Any, field: str
) -> None:
    verdict = check_object(manifest(AS_THE_OPERATOR))
    assert verdict.problems == [], "a warning: the cluster's values decide"
    assert paths(verdict.warnings) == [f"{field}.workloadIdentity"]
    message = verdict.warnings[0].message
    assert "Azure Resource Manager work would sign in as the operator" in message
    assert "chart value credentials.operatorIdentityNamespaces" in message
    assert f"not in {NAMESPACE!r}" in message and "(OperatorIdentityNotAllowed)" in message
    assert message.endswith(
        "name a ServiceAccount of this namespace in serviceAccount, or use servicePrincipalSecretRef with a"
        " Secret of this namespace"
    )


def test_a_subscription_the_installer_did_not_list_warns_naming_the_subscriptions_value(
    installer: pytest.MonkeyPatch,
) -> None:
    installed(installer, "team-*", subscriptions="11111111-2222-3333-4444-555555555555")
    [warning] = check_object(mirror(AS_THE_OPERATOR)).warnings
    assert warning.path == f"{MEMBER_CREDENTIAL}.workloadIdentity"
    assert f"not on {SUBSCRIPTION} (chart value credentials.operatorIdentitySubscriptions)" in warning.message
    assert "member weu is not provisioned" in warning.message


@pytest.mark.parametrize("subscriptions", ["", SUBSCRIPTION.upper()])
def test_where_the_installer_lends_its_identity_nothing_is_said(
    installer: pytest.MonkeyPatch, subscriptions: str
) -> None:
    installed(installer, "team-*", subscriptions)
    assert check_object(mirror(AS_THE_OPERATOR)).warnings == []
    assert check_object(group(AS_THE_OPERATOR)).warnings == []


@pytest.mark.parametrize("manifest", [mirror, group])
def test_a_credential_of_the_tenants_own_namespace_needs_no_permission(manifest: Any) -> None:
    for credential in (OWN_ACCOUNT, {"servicePrincipalSecretRef": {"name": "team-a-arm"}}):
        verdict = check_object(manifest(credential))
        assert (verdict.problems, verdict.warnings) == ([], []), credential


# ------------------------------------------------------------------------- another namespace's account


def cross_namespace(namespace: str) -> dict[str, Any]:
    return {"serviceAccount": {"name": "arm-provisioner", "namespace": namespace}}


@pytest.mark.parametrize(("manifest", "field"), [(mirror, MEMBER_CREDENTIAL), (group, ZONE_CREDENTIAL)])
def test_a_service_account_of_another_namespace_is_a_problem(manifest: Any, field: str) -> None:
    verdict = check_object(manifest(cross_namespace("team-b")))
    assert paths(verdict.problems) == [f"{field}.serviceAccount.namespace"]
    message = verdict.problems[0].message
    assert "only as a ServiceAccount of the resource's own namespace" in message
    assert f"'team-b' is not the resource's ({NAMESPACE!r})" in message
    assert "(CrossNamespaceServiceAccount)" in message


def test_an_account_namespace_is_a_warning_when_the_manifest_names_none() -> None:
    verdict = check_object(mirror(cross_namespace(NAMESPACE), namespace=None))
    assert verdict.problems == []
    assert paths(verdict.warnings) == [f"{MEMBER_CREDENTIAL}.serviceAccount.namespace"]
    assert "not the one the manifest is applied in" in verdict.warnings[0].message


def test_the_resources_own_namespace_written_out_is_fine() -> None:
    verdict = check_object(mirror(cross_namespace(NAMESPACE)))
    assert (verdict.problems, verdict.warnings) == ([], [])


# ------------------------------------------------------------------- accounts the installer does not list


def listed_accounts(installer: pytest.MonkeyPatch, accounts: str) -> None:
    installer.setenv(ACCOUNTS_VARIABLE, accounts)
    operator_scope.cache_clear()


DEPLOYER = {"serviceAccount": {"name": "payments-deployer"}}


@pytest.mark.parametrize(("manifest", "field"), [(mirror, MEMBER_CREDENTIAL), (group, ZONE_CREDENTIAL)])
def test_an_account_the_installer_does_not_list_is_a_policy_problem_at_its_name(
    installer: pytest.MonkeyPatch, manifest: Any, field: str
) -> None:
    listed_accounts(installer, "team-a/arm-*,*/federator-arm")
    verdict = check_object(manifest(DEPLOYER))
    assert [(p.path, p.layer) for p in verdict.problems] == [(f"{field}.serviceAccount.name", "policy")]
    message = verdict.problems[0].message
    assert f"(team-a/arm-*, */federator-arm), not {NAMESPACE}/payments-deployer" in message
    assert "(chart value credentials.serviceAccounts)" in message
    assert "(CredentialServiceAccountNotAllowed)" in message


def test_an_account_listed_for_another_namespace_is_not_allowed_in_this_one(
    installer: pytest.MonkeyPatch,
) -> None:
    listed_accounts(installer, "team-b/arm-provisioner")
    verdict = check_object(mirror(OWN_ACCOUNT))
    assert paths(verdict.problems) == [f"{MEMBER_CREDENTIAL}.serviceAccount.name"]


def test_an_unlisted_account_is_a_warning_when_the_manifest_names_no_namespace(
    installer: pytest.MonkeyPatch,
) -> None:
    listed_accounts(installer, "team-a/arm-*")
    verdict = check_object(mirror(OWN_ACCOUNT, namespace=None))
    assert verdict.problems == [], "the namespace it is applied in decides"
    assert paths(verdict.warnings) == [f"{MEMBER_CREDENTIAL}.serviceAccount.name"]
    assert "not 'arm-provisioner' (the manifest names no namespace)" in verdict.warnings[0].message


@pytest.mark.parametrize("accounts", ["team-a/arm-*", "arm-provisioner", "*/arm-provisioner", "*"])
def test_an_account_the_installer_lists_passes(installer: pytest.MonkeyPatch, accounts: str) -> None:
    listed_accounts(installer, accounts)
    verdict = check_object(mirror(OWN_ACCOUNT))
    assert (verdict.problems, verdict.warnings) == ([], [])


# ----------------------------------------------------------------------------------- one kind, one voice


@pytest.mark.parametrize(
    "credential",
    [
        {},
        {**OWN_ACCOUNT, "servicePrincipalSecretRef": {"name": "team-a-arm"}},
        {**OWN_ACCOUNT, **AS_THE_OPERATOR},
    ],
    ids=["none", "account-and-secret", "account-and-operator"],
)
def test_exactly_one_credential_kind_cel_model_and_validate_agree(credential: dict[str, Any]) -> None:
    verdict: Verdict = check_object(mirror(credential))
    assert [(p.path, p.message) for p in verdict.problems] == [(MEMBER_CREDENTIAL, EXACTLY_ONE)]
    assert verdict.problems[0].layer == "cel", "the API server refuses it at apply time"
    with pytest.raises(ValidationError) as refused:
        ArmCredential.model_validate(credential)
    assert EXACTLY_ONE in str(refused.value), "the operator's model says the same"


@pytest.mark.parametrize(
    ("account", "field"),
    [
        ({"name": "Arm_Provisioner"}, "name"),  # not a Kubernetes name
        ({"name": "arm", "namespace": "team-b/evil"}, "namespace"),
        ({"name": "arm", "clientId": "not-a-guid"}, "clientId"),
        ({"name": "arm", "audience": "api://two words"}, "audience"),
    ],
)
def test_a_malformed_service_account_credential_is_refused_at_its_field(
    account: dict[str, Any], field: str
) -> None:
    verdict = check_object(mirror({"serviceAccount": account}))
    assert paths(verdict.problems) == [f"{MEMBER_CREDENTIAL}.serviceAccount.{field}"]
