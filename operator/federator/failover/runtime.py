"""What failover keeps between rounds, once per operator: the prober (token credentials), what DNS holds,
and where ARM is."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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


def runtime_of(memo: Any) -> FailoverRuntime:
    """The operator's runtime, created on first use from `memo.management` (ARM endpoint and credentials;
    tests set it)."""
    if memo.get("failover") is None:
        memo.failover = FailoverRuntime(
            management=memo.get("management") or ManagementEnvironment(),
        )
    found: FailoverRuntime = memo.failover
    return found
