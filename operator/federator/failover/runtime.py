"""What failover keeps between rounds, once per operator: the prober (token credentials), what DNS holds,
and where ARM is."""

from __future__ import annotations

from dataclasses import dataclass, field

from federator.failover.dns import DnsPublisher
from federator.failover.probes import Prober
from federator.provision.environment import ManagementEnvironment


@dataclass
class FailoverRuntime:
    management: ManagementEnvironment = field(default_factory=ManagementEnvironment)
    prober: Prober = field(default_factory=Prober)
    dns: DnsPublisher = field(init=False)

    def __post_init__(self) -> None:
        self.dns = DnsPublisher(self.management)

    async def close(self) -> None:
        await self.prober.close()
