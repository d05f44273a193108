"""How executors reach a namespace: a picklable, JSON-serialisable description plus client factories.

Spark data source options are strings and travel inside the query plan, so a connection is passed
as JSON that names *where* the credential is (an environment variable, workload identity) rather
than the secret itself. Only emulator connection strings (local mode) travel inline.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from typing import Any

from federator_contract.api.base import EndpointConnection
from federator_contract.taskconfig import TaskConfig, TaskConfigError

_ENDPOINT = re.compile(r"Endpoint=sb://([^/;]+)/?", re.IGNORECASE)


@dataclass(frozen=True)
class Connection:
    """Exactly one of ``connection_string``, ``connection_string_env`` or ``fully_qualified_namespace``."""

    connection_string: str | None = None
    connection_string_env: str | None = None
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
        if (
            sum(
                v is not None
                for v in (
                    raw.get("connection_string"),
                    raw.get("connection_string_env"),
                    raw.get("fully_qualified_namespace"),
                )
            )
            != 1
        ):
            raise ValueError(
                "option 'connection' needs exactly one of connection_string, "
                "connection_string_env, fully_qualified_namespace"
            )
        return connection

    def resolved_connection_string(self) -> str | None:
        if self.connection_string is not None:
            return self.connection_string
        if self.connection_string_env is not None:
            value = os.environ.get(self.connection_string_env)
            if not value:
                raise RuntimeError(f"environment variable {self.connection_string_env} is not set")
            return value
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


def connection_for(config: TaskConfig, endpoint: EndpointConnection) -> Connection:
    """How executors reach ``endpoint``'s namespace."""
    if endpoint.secret_ref is not None:
        return Connection(connection_string_env=config.secret_env_for(endpoint.secret_ref))
    if endpoint.workload_identity is not None:
        identity = endpoint.workload_identity
        return Connection(
            fully_qualified_namespace=identity.fully_qualified_namespace, client_id=identity.client_id
        )
    if endpoint.emulator is not None:
        text = config.emulator_connections.get(endpoint.emulator.namespace)
        if text is None:
            raise TaskConfigError(
                f"emulatorConnections has no connection for emulator namespace "
                f"{endpoint.emulator.namespace!r} (emulator connections exist in local mode only)"
            )
        return Connection(connection_string=text)
    raise TaskConfigError(
        "a failoverGroupRef connection reaches the app unresolved: the operator writes the followed "
        "member's connection into the task config"
    )


def _credential(connection: Connection) -> Any:
    from azure.identity import DefaultAzureCredential

    return DefaultAzureCredential(managed_identity_client_id=connection.client_id)


def eventhub_producer(connection: Connection, event_hub: str) -> Any:
    from azure.eventhub import EventHubProducerClient

    text = connection.resolved_connection_string()
    if text is not None:
        return EventHubProducerClient.from_connection_string(text, eventhub_name=event_hub)
    return EventHubProducerClient(connection.host, event_hub, _credential(connection))


def eventhub_consumer(connection: Connection, event_hub: str, consumer_group: str) -> Any:
    from azure.eventhub import EventHubConsumerClient

    text = connection.resolved_connection_string()
    if text is not None:
        return EventHubConsumerClient.from_connection_string(
            text, consumer_group=consumer_group, eventhub_name=event_hub
        )
    return EventHubConsumerClient(connection.host, event_hub, consumer_group, _credential(connection))


def servicebus_client(connection: Connection) -> Any:
    from azure.servicebus import ServiceBusClient

    text = connection.resolved_connection_string()
    if text is not None:
        return ServiceBusClient.from_connection_string(text)
    return ServiceBusClient(connection.host, _credential(connection))
