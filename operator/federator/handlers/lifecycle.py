"""Operator start and stop: login, settings, the API client and the metrics endpoint."""

from __future__ import annotations

import logging
from typing import Any

import kopf

from federator import metrics
from federator.kube.client import KubeClient
from federator.provision.environment import ManagementEnvironment
from federator.settings import OperatorSettings


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
    settings: kopf.OperatorSettings, memo: Any, logger: logging.Logger | logging.LoggerAdapter[Any], **_: Any
) -> None:
    # Federator's own names for kopf's bookkeeping, so users recognise it on their objects.
    settings.persistence.finalizer = "federator.io/finalizer"
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="federator.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix="federator.io", key="last-handled-configuration"
    )
    settings.posting.level = logging.INFO
    if "federator" not in memo:
        memo.federator = OperatorSettings.from_env()
    memo.client = KubeClient.from_connection_info(_connection(settings))
    if "management" not in memo:  # tests and local mode bring their own (the emulator's)
        federator: OperatorSettings = memo.federator
        memo.management = ManagementEnvironment(
            arm_endpoint=federator.arm_endpoint,
            connection_verify=federator.ca_bundle or True,
            drift_interval_seconds=federator.drift_interval_seconds,
        )
    if memo.get("serve_metrics", True):
        metrics.serve(memo.federator.metrics_port, memo.federator.metrics_address)
        logger.info("metrics on %s:%d/metrics", memo.federator.metrics_address, memo.federator.metrics_port)


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    client = memo.get("client")
    if client is not None:
        await client.close()
