"""What a task's Spark driver reports about itself — counts, lag per source partition, the last checkpoint
translation — read from its `/status` on the metrics port, at the driver pod's IP (the port Prometheus
scrapes). Only the pod's own address is called, without the operator's API credentials."""

from __future__ import annotations

import ipaddress
import logging
from typing import Any
from urllib.parse import quote

import aiohttp

from federator.kube.client import KubeClient
from federator.kube.resources import PODS
from federator_contract.driverstatus import STATUS_PATH, task_status_fields

logger = logging.getLogger(__name__)

TASK_LABEL = "federator.io/replication-task"
_TIMEOUT = aiohttp.ClientTimeout(total=3)


async def driver_status_fields(client: KubeClient, namespace: str, task: str, port: int) -> dict[str, Any]:
    """The task's status fields from its running driver; empty when there is none or it does not answer
    (the figures in status then stay as last written)."""
    selector = quote(f"{TASK_LABEL}={task},spark-role=driver")
    pods = await client.get(f"{PODS.path(namespace)}?labelSelector={selector}")
    addresses = [
        (p.get("status") or {}).get("podIP")
        for p in (pods or {}).get("items", [])
        if (p.get("status") or {}).get("phase") == "Running"
        and not (p.get("metadata") or {}).get("deletionTimestamp")
    ]
    for address in filter(None, addresses):
        document = await _fetch(_url(address, port))
        if document is not None:
            return task_status_fields(document)
    return {}


def _url(address: str, port: int) -> str:
    host = f"[{address}]" if ipaddress.ip_address(address).version == 6 else address
    return f"http://{host}:{port}{STATUS_PATH}"


async def _fetch(url: str) -> dict[str, Any] | None:
    try:
        async with aiohttp.ClientSession(timeout=_TIMEOUT) as session, session.get(url) as response:
            if response.status != 200:
                return None
            document = await response.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError) as error:
        logger.debug("driver status %s: %r", url, error)
        return None
    return document if isinstance(document, dict) else None
