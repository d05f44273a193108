"""What a task's Spark driver reports about itself — counts, lag per source partition, the last checkpoint
translation — read from its `/status` on the metrics port (a shared application's driver: each member's at
its own path), at the driver pod's IP (the port Prometheus scrapes). Only the pod's own address is
called, without the operator's API credentials."""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp

from federator.kube.client import KubeClient
from federator.kube.resources import PODS
from federator.planning.task import APPLICATION_LABEL, TASK_LABEL
from federator_contract.driverstatus import STATUS_PATH, task_status_fields, task_status_path

logger = logging.getLogger(__name__)

_TIMEOUT = aiohttp.ClientTimeout(total=3)


async def driver_status_fields(client: KubeClient, namespace: str, task: str, port: int) -> dict[str, Any]:
    """The task's status fields from its running driver; empty when there is none or it does not answer
    (the figures in status then stay as last written)."""
    for address in await _drivers(client, namespace, f"{TASK_LABEL}={task}"):
        document = await _fetch(_url(address, port, STATUS_PATH))
        if document is not None:
            return task_status_fields(document)
    return {}


@dataclass(frozen=True)
class MemberReport:
    """What a shared application's driver says about one member task."""

    fields: dict[str, Any]
    """Its status fields (counts, lag, translation), from its own document."""
    query: dict[str, Any] | None
    """Its entry in the driver's `/status` listing (`state`, `reason`, `message`); None: not listed (the
    driver has not read its config yet)."""


async def member_report(
    client: KubeClient, namespace: str, application: str, task: str, port: int
) -> MemberReport | None:
    """A member task's report from its shared application's running driver; None when no driver answers."""
    for address in await _drivers(client, namespace, f"{APPLICATION_LABEL}={application}"):
        listing = await _fetch(_url(address, port, STATUS_PATH))
        if listing is None:
            continue
        entries = [t for t in listing.get("tasks") or [] if isinstance(t, dict)]
        query = next((t for t in entries if (t.get("namespace"), t.get("name")) == (namespace, task)), None)
        document = await _fetch(_url(address, port, task_status_path(namespace, task)))
        return MemberReport(task_status_fields(document or {}), query)
    return None


async def _drivers(client: KubeClient, namespace: str, label: str) -> list[str]:
    """The addresses of the running driver pods labelled ``label``."""
    selector = quote(f"{label},spark-role=driver")
    pods = await client.get(f"{PODS.path(namespace)}?labelSelector={selector}")
    addresses = [
        (p.get("status") or {}).get("podIP")
        for p in (pods or {}).get("items", [])
        if (p.get("status") or {}).get("phase") == "Running"
        and not (p.get("metadata") or {}).get("deletionTimestamp")
    ]
    return [a for a in addresses if a]


def _url(address: str, port: int, path: str) -> str:
    host = f"[{address}]" if ipaddress.ip_address(address).version == 6 else address
    return f"http://{host}:{port}{path}"


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
