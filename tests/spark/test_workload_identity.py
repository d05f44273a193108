"""A `workloadIdentity` connection signs in with Microsoft Entra workload identity, from the environment
the AKS webhook injects (AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_FEDERATED_TOKEN_FILE,
AZURE_AUTHORITY_HOST), and says plainly when a pod lacks it."""

from __future__ import annotations

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
