"""How local mode reaches the emulator's management plane (docs/emulator.md): its administration API (ATOM)
per namespace and its ARM / Azure DNS endpoint, over HTTPS trusting the CA named in the ready file. The
emulator accepts any bearer token on ARM and DNS, so a fixed one stands in for an Azure login."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from azure.core.credentials import AccessToken
from azure.core.credentials_async import AsyncTokenCredential

from federator.provision.credentials import CredentialSource
from federator.provision.environment import ManagementEnvironment


class EmulatorToken:
    """An `AsyncTokenCredential` for the emulator's ARM and DNS endpoints (it never checks tokens)."""

    async def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken("federator-local", 2**31 - 1)

    async def close(self) -> None:
        return None

    async def __aenter__(self) -> EmulatorToken:
        return self

    async def __aexit__(self, *args: object) -> None:
        return None


def emulator_token(source: CredentialSource) -> AsyncTokenCredential:
    return EmulatorToken()


def emulator_environment(ready: Mapping[str, Any]) -> ManagementEnvironment:
    """The management environment of the running emulator (its ready document)."""
    namespaces: Mapping[str, Any] = ready.get("namespaces") or {}
    return ManagementEnvironment(
        arm_endpoint=str(ready["armEndpoint"]),
        connection_verify=str(ready["caCertificatePath"]),
        credential_factory=emulator_token,
        emulator_management={name: management_connection_string(ns) for name, ns in namespaces.items()},
    )


def management_connection_string(namespace: Mapping[str, Any]) -> str:
    """The namespace's administration endpoint (its HTTPS port) with the key of its AMQP connection
    string: `ServiceBusAdministrationClient` calls `https://<Endpoint host>/`, not the AMQP port."""
    parts = dict(part.split("=", 1) for part in str(namespace["connectionString"]).split(";") if "=" in part)
    return (
        f"Endpoint=sb://{namespace['fullyQualifiedNamespace']};"
        f"SharedAccessKeyName={parts['SharedAccessKeyName']};SharedAccessKey={parts['SharedAccessKey']}"
    )


def amqp_connection_strings(ready: Mapping[str, Any]) -> dict[str, str]:
    """Emulator namespace → the AMQP connection string clients (and probes) use."""
    return {name: str(ns["connectionString"]) for name, ns in (ready.get("namespaces") or {}).items()}
