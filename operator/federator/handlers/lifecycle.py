"""Operator start and stop: login, kopf's settings, the context's API client and the metrics endpoint."""

from __future__ import annotations

import logging
from typing import Any

import kopf

from federator import metrics
from federator.handlers.context import OperatorContext


def _connection(settings: kopf.OperatorSettings) -> kopf.ConnectionInfo:
    info = kopf.login_with_service_account(settings=settings) or kopf.login_with_kubeconfig(settings=settings)
    if info is None:
        raise kopf.PermanentError("no Kubernetes credentials: neither a service account nor a kubeconfig")
    return info


@kopf.on.login(errors=kopf.ErrorsMode.PERMANENT)
def login(settings: kopf.OperatorSettings, **_: Any) -> kopf.ConnectionInfo:
    return _connection(settings)


@kopf.on.startup(backoff=1)
async def startup(
    settings: kopf.OperatorSettings,
    memo: object,
    logger: logging.Logger | logging.LoggerAdapter[Any],
    **_: Any,
) -> None:
    if not isinstance(memo, OperatorContext):
        raise kopf.PermanentError(
            "Federator's handlers need its OperatorContext as kopf's memo: run `federator operator`"
        )
    # Federator's own names for kopf's bookkeeping, so users recognise it on their objects.
    settings.persistence.finalizer = "federator.io/finalizer"
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="federator.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix="federator.io", key="last-handled-configuration"
    )
    settings.posting.level = logging.INFO
    await memo.start(_connection(settings))
    if memo.serve_metrics:
        metrics.serve(memo.settings.metrics_port, memo.settings.metrics_address)
        logger.info("metrics on %s:%d/metrics", memo.settings.metrics_address, memo.settings.metrics_port)


@kopf.on.cleanup()
async def cleanup(memo: OperatorContext, **_: Any) -> None:
    await memo.close()
