"""Running the operator: kopf with Federator's handlers, namespaces, liveness and peering."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import kopf

from federator.settings import OperatorSettings


def run(
    *,
    namespaces: Sequence[str],
    all_namespaces: bool,
    liveness_endpoint: str | None,
    peering: str | None,
    settings: OperatorSettings | None = None,
) -> None:
    """Blocks until the operator is stopped (SIGTERM/SIGINT)."""
    import federator.handlers  # noqa: F401 — registers the handlers with kopf's default registry

    memo: Any = kopf.Memo(federator=settings or OperatorSettings.from_env())
    asyncio.run(
        kopf.operator(
            clusterwide=all_namespaces,
            namespaces=list(namespaces),
            liveness_endpoint=liveness_endpoint,
            # With replicas > 1, peering elects one active instance; alone, no peering objects are needed.
            standalone=peering is None,
            peering_name=peering,
            memo=memo,
        )
    )
