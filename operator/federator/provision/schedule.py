"""When a mirror's members are read again: after the drift interval when all went well, sooner with
exponential backoff after a failure (transient or not: a fixed role assignment or Secret is picked up)."""

from __future__ import annotations

from dataclasses import dataclass

from federator.provision.errors import backoff_seconds


@dataclass
class ProvisionSchedule:
    next_at: float = 0.0
    """Monotonic time of the next provisioning pass; 0 means now."""
    failures: int = 0
    """Consecutive passes that left a member failed."""

    def due(self, now: float) -> bool:
        return now >= self.next_at

    def record(self, now: float, failed: bool, retry_seconds: float, drift_interval: float) -> float:
        """Note a pass's result; returns the seconds until the next one."""
        self.failures = self.failures + 1 if failed else 0
        wait = backoff_seconds(self.failures - 1, retry_seconds, drift_interval) if failed else drift_interval
        self.next_at = now + wait
        return wait
