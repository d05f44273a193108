"""How clients reach one namespace of the emulator: its host, ports, connection strings and CA, and its
entry in the ready file that local mode, the tests and other languages' SDK samples read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from federator_contract.emulatorconfig import ArmCoordinates


@dataclass(frozen=True)
class NamespaceEndpoint:
    """How clients reach one namespace (what the ready file lists)."""

    name: str
    host: str
    amqp_port: int
    connection_strings: dict[str, str]  # SAS key name -> connection string
    https_port: int  # the TLS port: HTTPS management, AMQP over TLS and AMQP over WebSockets
    ca_path: Path  # the CA that issued the TLS certificate (clients' ``connection_verify``)
    arm: ArmCoordinates  # with ``namespace_name`` filled in
    amqps_port: int | None = None  # a second TLS port with the same services, if configured

    @property
    def https_endpoint(self) -> str:
        """ATOM for this namespace; ARM and DNS for all (same server, see ``mgmt.server``)."""
        return f"https://{self.host}:{self.https_port}"

    @property
    def fully_qualified_namespace(self) -> str:
        """What ``ServiceBusAdministrationClient`` takes: it always prepends ``https://``."""
        return f"{self.host}:{self.https_port}"

    @property
    def connection_string(self) -> str:
        """The connection string of the first configured key."""
        return next(iter(self.connection_strings.values()))

    @property
    def custom_endpoint_address(self) -> str:
        """What the SDKs take as ``custom_endpoint_address`` to reach the TLS port: with TLS they
        ignore the port in the namespace and would dial Azure's 5671 (or 443 for WebSockets)."""
        return f"sb://{self.host}:{self.https_port}"

    def ready_entry(self) -> dict[str, Any]:
        return {
            "amqpHost": self.host,
            "amqpPort": self.amqp_port,
            "connectionStrings": self.connection_strings,
            "connectionString": self.connection_string,
            "httpsEndpoint": self.https_endpoint,
            "armEndpoint": self.https_endpoint,
            "fullyQualifiedNamespace": self.fully_qualified_namespace,
            "caCertificatePath": str(self.ca_path),
            "customEndpointAddress": self.custom_endpoint_address,
            "amqpsPort": self.amqps_port,
            "subscriptionId": self.arm.subscription_id,
            "resourceGroup": self.arm.resource_group,
            "namespaceName": self.arm.namespace_name,
        }
