"""How local mode reaches the emulator's management plane (docs/emulator.md): its administration API (ATOM)
per namespace and its ARM / Azure DNS endpoint, over HTTPS trusting the CA named in the ready file. ARM and
DNS verify bearer tokens from the emulator's own Microsoft Entra tenant: local mode signs in there as the
emulator's built-in administrator (named in the ready file), whatever login the resource's spec names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from azure.core.credentials_async import AsyncTokenCredential

from federator.provision.credentials import CredentialFactory, CredentialSource
from federator.provision.environment import ManagementEnvironment


def emulator_login(ready: Mapping[str, Any]) -> CredentialFactory:
    """Credentials of the emulator's administrator, from its token endpoint (the ready file's `identity`)."""
    identity: Mapping[str, Any] = ready["identity"]
    verify = str(ready["caCertificatePath"])

    def login(source: CredentialSource) -> AsyncTokenCredential:
        from azure.identity.aio import ClientSecretCredential

        return ClientSecretCredential(
            str(identity["tenantId"]),
            str(identity["adminClientId"]),
            str(identity["adminClientSecret"]),
            authority=str(identity["authorityHost"]),
            connection_verify=verify,
            # Instance discovery would ask login.microsoftonline.com about the emulator's host.
            disable_instance_discovery=True,
        )

    return login


def emulator_environment(ready: Mapping[str, Any]) -> ManagementEnvironment:
    """The management environment of the running emulator (its ready document)."""
    namespaces: Mapping[str, Any] = ready.get("namespaces") or {}
    return ManagementEnvironment(
        arm_endpoint=str(ready["armEndpoint"]),
        connection_verify=str(ready["caCertificatePath"]),
        credential_factory=emulator_login(ready),
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
