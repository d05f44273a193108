"""Running the operator: kopf with Federator's handlers, namespaces, liveness and peering."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import kopf

from federator.handlers.context import OperatorContext
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

    asyncio.run(
        kopf.operator(
            clusterwide=all_namespaces,
            namespaces=list(namespaces),
            settings=kopf_settings(namespaces, all_namespaces),
            liveness_endpoint=liveness_endpoint,
            # With replicas > 1, peering elects one active instance; alone, no peering objects are needed.
            standalone=peering is None,
            peering_name=peering,
            memo=OperatorContext(settings),
        )
    )


def kopf_settings(namespaces: Sequence[str], all_namespaces: bool) -> kopf.OperatorSettings:
    """kopf's settings before the startup handler adds Federator's own."""
    settings = kopf.OperatorSettings()
    # Named namespaces need no namespace list. Scanning asks for a cluster-wide list, which the
    # namespaced Role of a `--namespace` install does not grant: kopf retried the 403 nine times (about
    # 50 s) before any handler ran. Patterns (globs, exclusions) still need the scan.
    settings.scanning.disabled = not all_namespaces and all(_exact(n) for n in namespaces)
    return settings


def _exact(pattern: str) -> bool:
    return not any(mark in pattern for mark in "!*?,")
