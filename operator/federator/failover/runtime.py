"""What failover keeps between rounds, once per operator: the prober (token credentials), what DNS holds,
where ARM is, and whose tokens the operator may send where (the installer's credential scope)."""

from __future__ import annotations

from dataclasses import dataclass, field

from federator.failover.dns import DnsPublisher
from federator.failover.probes import Prober
from federator.provision.environment import ManagementEnvironment
from federator.validation.credential_scope import CredentialScope


@dataclass
class FailoverRuntime:
    management: ManagementEnvironment = field(default_factory=ManagementEnvironment)
    prober: Prober = field(default_factory=Prober)
    scope: CredentialScope = field(default_factory=CredentialScope)
    """The default allows the operator's own identity nowhere, as the operator's default settings."""
    dns: DnsPublisher = field(init=False)

    def __post_init__(self) -> None:
        self.dns = DnsPublisher(self.management)

    async def close(self) -> None:
        await self.prober.close()
