"""Shared helpers of the provisioning tests: the emulator's namespaces, member specs, the management
request counter."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from azure.core.credentials_async import AsyncTokenCredential

from federator import metrics
from federator.provision.credentials import CredentialSource
from federator_contract.api.servicebusmirror import MirrorMember, ServiceBusMirrorSpec
from federator_emulator.server import RunningEmulator
from federator_emulator.testing import AsyncEmulatorCredential, AsyncFakeCredential
from support import azure_clients

NAMESPACES = ("sbwest", "sbeast", "sbnorth")
SUBSCRIPTION_ID = "00000000-0000-0000-0000-000000000000"
K8S_NS = "default"


def emulator_config() -> dict[str, Any]:
    return {
        "namespaces": [
            {
                "name": name,
                "topics": [{"name": "orders", "subscriptions": [{"name": "app"}]}],
                "queues": [{"name": "jobs", "maxDeliveryCount": 1}],
            }
            for name in NAMESPACES
        ]
    }


def management_connection_string(emu: RunningEmulator, namespace: str) -> str:
    """The ATOM endpoint (HTTPS port) with the namespace's Manage key; not the AMQP connection string."""
    return azure_clients.management_connection_string(emu, namespace)


def arm_member(name: str, namespace: str) -> dict[str, Any]:
    return {
        "name": name,
        "connection": {"secretRef": {"name": f"{name}-conn"}},
        "management": {
            "arm": {
                "subscriptionId": SUBSCRIPTION_ID,
                "resourceGroup": "emulator",
                "namespaceName": namespace,
                "credential": {"workloadIdentity": {"fullyQualifiedNamespace": f"{namespace}.example"}},
            }
        },
    }


def data_plane_member(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "connection": {"secretRef": {"name": f"{name}-conn"}},
        "management": {"dataPlane": {}},
    }


def emulator_member(name: str, namespace: str) -> dict[str, Any]:
    return {"name": name, "connection": {"emulator": {"namespace": namespace}}}


def all_active(*members: dict[str, Any]) -> ServiceBusMirrorSpec:
    return ServiceBusMirrorSpec.model_validate(
        {"pattern": "allActive", "topicName": "orders", "members": members}
    )


def member(spec: ServiceBusMirrorSpec, name: str) -> MirrorMember:
    return next(m for m in spec.members if m.name == name)


def writes(api: str) -> float:
    """Management writes sent so far (PUT and DELETE), as the operator's own metric counts them."""
    return sum(
        metrics.REGISTRY.get_sample_value("federator_management_requests_total", {"api": api, "method": m})
        or 0
        for m in ("PUT", "DELETE")
    )


def requests(api: str) -> float:
    return sum(
        metrics.REGISTRY.get_sample_value("federator_management_requests_total", {"api": api, "method": m})
        or 0
        for m in ("GET", "PUT", "DELETE")
    )


@dataclass
class RecordingFactory:
    """A credential factory that records who asked and signs in as the emulator's administrator (or hands
    out a fixed ``token``, which the emulator refuses)."""

    emulator: RunningEmulator
    sources: list[CredentialSource] = field(default_factory=list)
    token: str | None = None

    def __call__(self, source: CredentialSource) -> AsyncTokenCredential:
        self.sources.append(source)
        if self.token is not None:
            return AsyncFakeCredential(self.token)
        return AsyncEmulatorCredential(self.emulator)
