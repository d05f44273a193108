"""A `workloadIdentity` connection signs in with Microsoft Entra workload identity, from the environment
the AKS webhook injects (AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_FEDERATED_TOKEN_FILE,
AZURE_AUTHORITY_HOST), and says plainly when a pod lacks it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import azure.identity
import pytest

from federator_spark import connections
from federator_spark.connections import Connection, WorkloadIdentityNotInjected

TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
ANNOTATED = "6f1c2a4e-3b5d-4c7e-9f80-1a2b3c4d5e6f"
NAMED = "0a0b0c0d-1111-4222-8333-444455556666"


class Recorded:
    """Stands in for azure-identity's WorkloadIdentityCredential here, to show what it is given (the real
    credential signs in against the emulator's Entra ID endpoint in the end-to-end test)."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


@pytest.fixture
def webhook_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """The environment the webhook injects, with a projected token file."""
    monkeypatch.setattr(azure.identity, "WorkloadIdentityCredential", Recorded)
    connections._workload_identity_credential.cache_clear()
    token = tmp_path / "azure-identity-token"
    token.write_text("eyJhbGciOiJSUzI1NiJ9.e30.c2ln", encoding="utf-8")
    monkeypatch.setenv("AZURE_TENANT_ID", TENANT)
    monkeypatch.setenv("AZURE_CLIENT_ID", ANNOTATED)
    monkeypatch.setenv("AZURE_FEDERATED_TOKEN_FILE", str(token))
    monkeypatch.setenv("AZURE_AUTHORITY_HOST", "https://login.microsoftonline.com/")
    yield token
    connections._workload_identity_credential.cache_clear()  # no stand-in outlives the test


def _connection(client_id: str | None = None) -> Connection:
    return Connection(fully_qualified_namespace="contoso-neu.servicebus.windows.net", client_id=client_id)


def test_the_pod_signs_in_as_its_service_accounts_identity(webhook_env: Path) -> None:
    assert connections._credential(_connection()).kwargs == {
        "tenant_id": TENANT,
        "client_id": ANNOTATED,
        "token_file_path": str(webhook_env),
        "authority": "https://login.microsoftonline.com/",
    }


def test_a_connections_client_id_names_the_identity(webhook_env: Path) -> None:
    assert connections._credential(_connection(NAMED)).kwargs["client_id"] == NAMED


def test_a_ca_bundle_of_the_pod_is_trusted_for_the_token_endpoint(
    webhook_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FEDERATOR_CA_BUNDLE", str(tmp_path / "ca.pem"))
    assert connections._credential(_connection()).kwargs["connection_verify"] == str(tmp_path / "ca.pem")


def test_without_an_authority_host_azure_identity_chooses_the_public_cloud(
    webhook_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AZURE_AUTHORITY_HOST")
    assert connections._credential(_connection()).kwargs["authority"] is None


def test_one_credential_per_identity_is_shared_by_the_clients_of_a_process(webhook_env: Path) -> None:
    assert connections._credential(_connection()) is connections._credential(_connection())
    assert connections._credential(_connection()) is not connections._credential(_connection(NAMED))


@pytest.mark.parametrize("unset", ["AZURE_TENANT_ID", "AZURE_FEDERATED_TOKEN_FILE", "AZURE_CLIENT_ID"])
def test_a_pod_the_webhook_did_not_prepare_is_told_why(
    webhook_env: Path, monkeypatch: pytest.MonkeyPatch, unset: str
) -> None:
    monkeypatch.delenv(unset)
    with pytest.raises(WorkloadIdentityNotInjected) as raised:
        connections._credential(_connection())
    message = str(raised.value)
    assert unset in message and "azure.workload.identity/use" in message
    assert "contoso-neu.servicebus.windows.net" in message


def test_a_connection_that_names_its_client_id_needs_no_annotation(
    webhook_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AZURE_CLIENT_ID")
    assert connections._credential(_connection(NAMED)).kwargs["client_id"] == NAMED


# ------------------------------------------------------------------------------ end to end

REPLICATOR = "33333333-3333-3333-3333-333333333333"
SERVICE_ACCOUNT = "system:serviceaccount:default:federator-spark"
# The emulator as a Microsoft Entra tenant: the replicator's managed identity trusts the service account
# of the Spark pods, and may only read the source and write the target.
ENTRA_CONFIG = {
    "identity": {
        "applications": [
            {
                "name": "replicator",
                "clientId": REPLICATOR,
                "federatedCredentials": [{"subject": SERVICE_ACCOUNT}],
            }
        ]
    },
    "namespaces": [
        {
            "name": "ns1",
            "eventHubs": [{"name": "src", "partitionCount": 2}, {"name": "dst", "partitionCount": 2}],
            "roleAssignments": [
                {"principal": "replicator", "role": "Azure Event Hubs Data Receiver", "scope": "src"},
                {"principal": "replicator", "role": "Azure Event Hubs Data Sender", "scope": "dst"},
            ],
        }
    ],
}


def _pod_env(emulator: Any, token_file: Path) -> dict[str, str]:
    """What the AKS webhook injects into a labelled pod, and the emulator's CA to trust (for AMQP over
    TLS and for the token endpoint) where a pod trusts Azure's public CAs."""
    return {
        "AZURE_TENANT_ID": emulator.tenant_id,
        "AZURE_CLIENT_ID": REPLICATOR,
        "AZURE_FEDERATED_TOKEN_FILE": str(token_file),
        "AZURE_AUTHORITY_HOST": emulator.authority_host,
        "FEDERATOR_CA_BUNDLE": str(emulator.ca_path),
    }


@pytest.mark.slow
@pytest.mark.jvm
def test_a_workload_identity_task_replicates_with_a_projected_token(
    emulator_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from spark_helpers import read_all, run_app_to_end, send, task_config

    emulator = emulator_factory(ENTRA_CONFIG)
    cs = emulator.connection_string("ns1")
    send(cs, "src", [{"body": f"e{i}", "key": f"k{i % 5}"} for i in range(40)])
    # Play the AKS webhook: project the service account's token into the "pod".
    token_file = tmp_path / "azure-identity-token"
    token_file.write_text(emulator.workload_identity_token(SERVICE_ACCOUNT), encoding="utf-8")
    fqdn = emulator.namespace().fully_qualified_namespace  # localhost:<TLS port>
    spec = {
        # The source signs in as the service account's identity (AZURE_CLIENT_ID), the target names it.
        "source": {
            "eventHub": {
                "connection": {"workloadIdentity": {"fullyQualifiedNamespace": fqdn}},
                "eventHubName": "src",
            }
        },
        "targets": [
            {
                "name": "dst",
                "eventHub": {
                    "connection": {
                        "workloadIdentity": {"fullyQualifiedNamespace": fqdn, "clientId": REPLICATOR}
                    },
                    "eventHubName": "dst",
                },
            }
        ],
        "delivery": {"effectivelyOnce": True},
    }
    config = task_config(tmp_path, emulator, spec, namespaces=())
    config_path = tmp_path / "task.json"
    config_path.write_text(json.dumps(config), encoding="utf-8")
    for name, value in _pod_env(emulator, token_file).items():
        monkeypatch.setenv(name, value)

    run_app_to_end(config_path, tmp_path / "replicate.log")
    replicated = sorted(e.body_as_str() for events in read_all(cs, "dst").values() for e in events)
    assert replicated == sorted(f"e{i}" for i in range(40))
