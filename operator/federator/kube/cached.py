"""Objects read by name through a short-lived cache: Secrets, and the ServiceAccounts and checkpoint claims
the tasks' pods use. The operator may only `get` Secrets (never list or watch them:
charts/federator/templates/_rbac.tpl), and a thousand tasks sharing one connection string, one service
account or one checkpoint claim must not read it a thousand times per observe interval. An object found is
kept for `ttl` seconds; a missing one is asked for again at every read, so a task waiting for it starts as
soon as it exists."""

from __future__ import annotations

from typing import Any

from federator.kube.client import KubeClient
from federator.recent import Recent


class CachedObjects:
    """A `SecretSource` (kube/reads.py) over the API."""

    def __init__(self, client: KubeClient, ttl: float) -> None:
        self._client = client
        self._recent: Recent[str, dict[str, Any] | None] = Recent(ttl, keep=lambda found: found is not None)

    async def get(self, path: str) -> dict[str, Any] | None:
        return await self._recent.get(path, lambda: self._client.get(path))
