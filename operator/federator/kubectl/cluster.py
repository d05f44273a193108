"""What the plugin reads and writes in the cluster, over the operator's own REST client: Federator's three
kinds, the Spark pods and Events around them. Errors become `PluginError`s with a message for a human."""

from __future__ import annotations

import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from federator import __version__
from federator.kube.client import ApiError, KubeClient, ResourceRef
from federator.kubectl.kubeconfig import Target
from federator.planning.task import MANAGED_BY
from federator_contract.api.kinds import BY_KIND, KINDS, Kind

Obj = dict[str, Any]

PODS = ResourceRef("v1", "pods")
EVENTS = ResourceRef("v1", "events")
CONFIGMAPS = ResourceRef("v1", "configmaps")
SECRETS = ResourceRef("v1", "secrets")
SPARK_APPLICATIONS = (
    ResourceRef("sparkoperator.k8s.io/v1beta2", "sparkapplications"),
    ResourceRef("spark.apache.org/v1", "sparkapplications"),
)
TASK_LABEL = "federator.io/replication-task"
# The chart's operator Deployment (charts/federator/templates/_helpers.tpl, selectorLabels).
OPERATOR_SELECTOR = "app.kubernetes.io/name=federator,app.kubernetes.io/component=operator"
MANAGED_SELECTOR = f"app.kubernetes.io/managed-by={MANAGED_BY}"


class PluginError(Exception):
    """A failure the plugin reports in one line and exits 1 for."""


def ref_of(kind: Kind) -> ResourceRef:
    return ResourceRef(kind.api_version, kind.plural)


def kind_named(word: str) -> Kind:
    """`fg`, `failovergroup`, `FailoverGroups`, `failovergroups.federator.io` → the kind."""
    wanted = word.lower().split(".", 1)[0]
    for kind in KINDS:
        if wanted in {kind.plural, kind.singular, *kind.short_names}:
            return kind
    names = ", ".join(f"{k.singular} ({'/'.join(k.short_names)})" for k in KINDS)
    raise PluginError(f"unknown kind {word!r}: use one of {names}")


def parse_reference(text: str) -> tuple[Kind, str]:
    """`KIND/NAME` → (kind, name)."""
    kind, slash, name = text.partition("/")
    if not slash or not name:
        raise PluginError(f"{text!r} is not KIND/NAME (e.g. fg/orders, sbm/orders, rt/orders-archive)")
    return kind_named(kind), name


@dataclass
class Snapshot:
    """Federator's objects in one namespace (or all), read together."""

    groups: list[Obj] = field(default_factory=list)
    mirrors: list[Obj] = field(default_factory=list)
    tasks: list[Obj] = field(default_factory=list)
    spark_pods: list[Obj] = field(default_factory=list)


class Cluster:
    def __init__(self, client: KubeClient, target: Target) -> None:
        self.client = client
        self.target = target

    @classmethod
    @asynccontextmanager
    async def connect(cls, target: Target) -> AsyncIterator[Cluster]:
        client = KubeClient.from_connection_info(
            target.connection, user_agent=f"kubectl-federator/{__version__}"
        )
        try:
            yield cls(client, target)
        finally:
            await client.close()

    async def items(self, ref: ResourceRef, namespace: str | None, selector: str | None = None) -> list[Obj]:
        query = f"?labelSelector={urllib.parse.quote(selector)}" if selector else ""
        listing = await self._call(self.client.get, ref.path(namespace) + query)
        items = (listing or {}).get("items") or []
        kind = _item_kind(listing)
        # Items of a list carry no apiVersion/kind of their own; a support bundle or `-o yaml` wants them.
        return [{"apiVersion": ref.api_version, "kind": kind, **item} for item in items]

    async def get(self, ref: ResourceRef, namespace: str, name: str) -> Obj | None:
        found: Obj | None = await self._call(self.client.get, ref.path(namespace, name))
        return found

    async def patch(self, ref: ResourceRef, namespace: str, name: str, body: Any, content_type: str) -> Obj:
        found: Obj = await self._call(self.client.patch, ref.path(namespace, name), body, content_type)
        return found

    async def text(self, path: str) -> str | None:
        found: str | None = await self._call(self.client.get_text, path)
        return found

    async def serves(self, ref: ResourceRef) -> bool:
        served: bool = await self._call(self.client.serves, ref.api_version, ref.plural)
        return served

    async def snapshot(self, namespace: str | None) -> Snapshot:
        """`namespace` None: every namespace."""
        return Snapshot(
            groups=await self.items(ref_of(BY_KIND["FailoverGroup"]), namespace),
            mirrors=await self.items(ref_of(BY_KIND["ServiceBusMirror"]), namespace),
            tasks=await self.items(ref_of(BY_KIND["ReplicationTask"]), namespace),
            spark_pods=await self.items(PODS, namespace, TASK_LABEL),
        )

    async def events(self, namespace: str | None) -> list[Obj]:
        return await self.items(EVENTS, namespace)

    async def _call(self, method: Any, *args: Any) -> Any:
        try:
            return await method(*args)
        except ApiError as err:
            raise PluginError(_explain(err, self.target)) from None
        except aiohttp.ClientError as err:
            raise PluginError(
                f"cannot reach the API server {self.target.connection.server} "
                f"(context {self.target.context}): {err}"
            ) from None


def _item_kind(listing: Obj | None) -> str:
    kind = str((listing or {}).get("kind", ""))
    return kind.removesuffix("List")


def _explain(err: ApiError, target: Target) -> str:
    if err.status == 401:
        return f"the API server refused the credentials of context {target.context}: {err.message}"
    if err.status == 403:
        return f"forbidden (context {target.context}): {err.message}"
    return f"the API server answered {err.status}: {err.message}"
