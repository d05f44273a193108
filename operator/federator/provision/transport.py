"""The HTTP transport of both management clients, counting every request (retries included) by API and
method: ARM throttles per subscription and hour, so the operator shows how much of that it uses."""

from __future__ import annotations

from typing import Any

from azure.core.pipeline.transport import AioHttpTransport

from federator import metrics


class CountingTransport(AioHttpTransport):  # type: ignore[misc]  # re-exported lazily, seen as Any
    def __init__(self, api: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._api = api

    async def send(self, request: Any, **kwargs: Any) -> Any:
        metrics.MANAGEMENT_REQUESTS.labels(self._api, request.method).inc()
        return await super().send(request, **kwargs)
