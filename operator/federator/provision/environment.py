"""Where and how the operator reaches Azure management: endpoints, TLS trust, the credential factory,
pacing, and where it may sign in as itself. One object, built once per operator (`for_operator`, from the
installer's settings), so tests and local mode can point it at the emulator."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from federator.provision.credentials import CredentialFactory, azure_identity
from federator.provision.scope import ArmScope
from federator.settings import OperatorSettings

PUBLIC_CLOUD_ARM = "https://management.azure.com"


@dataclass(frozen=True)
class ManagementEnvironment:
    arm_endpoint: str = PUBLIC_CLOUD_ARM
    """Azure Resource Manager endpoint (another cloud's, or the emulator's)."""
    connection_verify: str | bool = True
    """TLS trust for both management APIs: True (system CAs) or a CA bundle path (the emulator's CA)."""
    credential_factory: CredentialFactory = azure_identity
    """Turns a service principal or workload identity into a token credential."""
    emulator_management: Mapping[str, str] = field(default_factory=dict)
    """Local mode: emulator namespace → connection string of its management (HTTPS) endpoint. Empty in a
    cluster, where emulator members are refused (EmulatorOnlyInLocalMode)."""
    retry_total: int = 2
    """Retries inside one management call (azure-core's policy). Low on purpose: longer outages are
    retried by the controller with backoff, without holding a handler for minutes."""
    drift_interval_seconds: float = 300
    """How often provisioned members are re-read for drift. Every read is an ARM request per entity, and
    ARM allows about 12,000 reads an hour per subscription: 5 minutes keeps many mirrors far below."""
    scope: ArmScope = field(default_factory=ArmScope.unscoped)
    """Where an `ArmCredential.workloadIdentity` (the operator's own identity) may be used. Unscoped by
    default, for local mode and the emulator's tests; the operator's environment (`for_operator`) carries
    the installer's scope."""

    @classmethod
    def for_operator(cls, settings: OperatorSettings) -> ManagementEnvironment:
        """The operator's environment in a cluster: the installer's ARM endpoint, CA bundle, drift interval
        and credential scope."""
        return cls(
            arm_endpoint=settings.arm_endpoint,
            connection_verify=settings.ca_bundle or True,
            drift_interval_seconds=settings.drift_interval_seconds,
            scope=ArmScope.from_settings(settings),
        )

    @property
    def arm_scope(self) -> str:
        return self.arm_endpoint.rstrip("/") + "/.default"
