"""How executors reach a namespace: a picklable, JSON-serialisable description plus client factories.

Spark data source options are strings and travel inside the query plan, so a connection is passed
as JSON that names *where* the credential is (an environment variable, a file, workload identity)
rather than the secret itself. Only a connection string given to a data source by hand travels inline.
Which connection a task's endpoint has is planned from the task config (``planning.connection_for``): this
module stays free of the task's models, whose import (pydantic) cost every query's source process a
third of a second.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

_ENDPOINT = re.compile(r"Endpoint=sb://([^/;]+)/?", re.IGNORECASE)


_SOURCES = (
    "connection_string",
    "connection_string_env",
    "connection_string_file",
    "fully_qualified_namespace",
)


@dataclass(frozen=True)
class Connection:
    """Exactly one of ``connection_string``, ``connection_string_env``, ``connection_string_file`` or
    ``fully_qualified_namespace``."""

    connection_string: str | None = None
    connection_string_env: str | None = None
    connection_string_file: str | None = None
    fully_qualified_namespace: str | None = None
    client_id: str | None = None

    def to_option(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if v is not None}, sort_keys=True)

    @classmethod
    def from_option(cls, text: str) -> Connection:
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"option 'connection' is not JSON: {error}") from None
        connection = cls(**raw)
        if sum(raw.get(name) is not None for name in _SOURCES) != 1:
            raise ValueError(f"option 'connection' needs exactly one of {', '.join(_SOURCES)}")
        return connection

    def resolved_connection_string(self) -> str | None:
        if self.connection_string is not None:
            return self.connection_string
        if self.connection_string_env is not None:
            value = os.environ.get(self.connection_string_env)
            if not value:
                raise RuntimeError(f"environment variable {self.connection_string_env} is not set")
            return value
        if self.connection_string_file is not None:
            try:
                return Path(self.connection_string_file).read_text(encoding="utf-8").strip()
            except OSError as error:
                raise RuntimeError(f"cannot read the connection string file: {error}") from None
        return None

    @property
    def host(self) -> str:
        """The namespace's host, which names entities in provenance and loop-prevention markers."""
        if self.fully_qualified_namespace is not None:
            return self.fully_qualified_namespace
        match = _ENDPOINT.search(self.resolved_connection_string() or "")
        if match is None:
            raise ValueError("connection string has no Endpoint=sb://<host>")
        return match.group(1)


# A PEM file of the certificate authorities to trust for TLS to the namespaces and to Microsoft Entra ID
# instead of the public ones (a TLS-inspecting proxy, a private CA): the SDKs read only their own bundle.
CA_BUNDLE_ENV = "FEDERATOR_CA_BUNDLE"


class WorkloadIdentityNotInjected(RuntimeError):
    """A workload identity connection in a pod the AKS webhook did not prepare."""


def _credential(connection: Connection) -> Any:
    """Microsoft Entra workload identity, from what the AKS webhook sets in a pod labelled
    `azure.workload.identity/use: "true"`: AZURE_TENANT_ID, AZURE_CLIENT_ID (the service account's
    annotation; a connection's clientId wins), AZURE_FEDERATED_TOKEN_FILE (the projected service account
    token, exchanged for the identity's) and AZURE_AUTHORITY_HOST (the cloud's Entra ID; the public
    cloud's when unset)."""
    env = os.environ
    client_id = connection.client_id or env.get("AZURE_CLIENT_ID")
    found = {
        "AZURE_TENANT_ID": env.get("AZURE_TENANT_ID"),
        "AZURE_CLIENT_ID": client_id,
        "AZURE_FEDERATED_TOKEN_FILE": env.get("AZURE_FEDERATED_TOKEN_FILE"),
    }
    missing = [name for name, value in found.items() if not value]
    if missing:
        raise WorkloadIdentityNotInjected(
            f"workload identity for {connection.host}: {', '.join(missing)} not set. The AKS workload "
            "identity webhook sets them in pods labelled azure.workload.identity/use=true whose service "
            "account is annotated azure.workload.identity/client-id (the operator labels the pods and "
            "checks the annotation): is the webhook installed in this cluster?"
        )
    return _workload_identity_credential(
        env["AZURE_TENANT_ID"],
        str(client_id),
        env["AZURE_FEDERATED_TOKEN_FILE"],
        env.get("AZURE_AUTHORITY_HOST"),
        env.get(CA_BUNDLE_ENV) or None,
    )


@cache
def _workload_identity_credential(
    tenant_id: str, client_id: str, token_file: str, authority: str | None, ca_bundle: str | None
) -> Any:
    """One credential per identity and process: every client of a worker shares its token cache."""
    from azure.identity import WorkloadIdentityCredential

    return WorkloadIdentityCredential(
        tenant_id=tenant_id,
        client_id=client_id,
        token_file_path=token_file,
        authority=authority or None,
        **({"connection_verify": ca_bundle} if ca_bundle else {}),
    )


def _tls() -> dict[str, Any]:
    """The SDK clients' trust: FEDERATOR_CA_BUNDLE when set, else the SDKs' own bundle."""
    bundle = os.environ.get(CA_BUNDLE_ENV)
    return {"connection_verify": bundle} if bundle else {}


def _endpoint(connection: Connection, transport_type: Any) -> dict[str, Any]:
    """Where and with what trust a credential-based client dials its namespace. One named with a port (a
    gateway in front of Azure, the emulator's TLS port) is dialled there: the SDKs otherwise dial AMQP's
    5671 whatever the port, and read a custom endpoint without a transport type as WebSockets."""
    if ":" not in connection.host:
        return _tls()
    return {"custom_endpoint_address": f"sb://{connection.host}", "transport_type": transport_type, **_tls()}


def eventhub_producer(connection: Connection, event_hub: str) -> Any:
    from azure.eventhub import EventHubProducerClient, TransportType

    text = connection.resolved_connection_string()
    if text is not None:
        return EventHubProducerClient.from_connection_string(text, eventhub_name=event_hub, **_tls())
    return EventHubProducerClient(
        connection.host, event_hub, _credential(connection), **_endpoint(connection, TransportType.Amqp)
    )


def eventhub_consumer(connection: Connection, event_hub: str, consumer_group: str) -> Any:
    from azure.eventhub import EventHubConsumerClient, TransportType

    text = connection.resolved_connection_string()
    if text is not None:
        return EventHubConsumerClient.from_connection_string(
            text, consumer_group=consumer_group, eventhub_name=event_hub, **_tls()
        )
    return EventHubConsumerClient(
        connection.host,
        event_hub,
        consumer_group,
        _credential(connection),
        **_endpoint(connection, TransportType.Amqp),
    )


def servicebus_client(connection: Connection) -> Any:
    from azure.servicebus import ServiceBusClient, TransportType

    text = connection.resolved_connection_string()
    if text is not None:
        return ServiceBusClient.from_connection_string(text, **_tls())
    return ServiceBusClient(
        connection.host, _credential(connection), **_endpoint(connection, TransportType.Amqp)
    )
