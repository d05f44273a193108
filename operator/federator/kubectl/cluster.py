"""What the plugin reads and writes in the cluster, over the operator's own REST client: Federator's
kinds, the Spark pods and Events around them. Errors become `PluginError`s with a message for a human."""

from __future__ import annotations

import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from federator import __version__
from federator.kube.client import ApiError, KubeClient, open_session
from federator.kube.resources import EVENTS, NAMESPACES, PODS, ResourceRef
from federator.kubectl.kubeconfig import Target
from federator.kubectl.model import Obj, meta
from federator.planning.launchers import LAUNCHERS
from federator.planning.task import APPLICATION_LABEL, MANAGED_BY
from federator_contract.api.kinds import BY_KIND, KINDS, Kind

SPARK_APPLICATIONS = tuple(ResourceRef(m.API_VERSION, m.PLURAL) for m in LAUNCHERS.values())
"""The Spark applications of every launcher the operator can render a task with."""
TASK_LABEL = "federator.io/replication-task"
# The chart's operator Deployment (charts/federator/templates/_helpers.tpl, selectorLabels).
OPERATOR_SELECTOR = "app.kubernetes.io/name=federator,app.kubernetes.io/component=operator"
MANAGED_SELECTOR = f"app.kubernetes.io/managed-by={MANAGED_BY}"


class PluginError(Exception):
    """A failure the plugin reports in one line and exits 1 for."""


def ref_of(kind: Kind) -> ResourceRef:
    return ResourceRef.of(kind)


def kind_named(word: str) -> Kind:
    """`fg`, `failovergroup`, `FailoverGroups`, `failovergroups.federator.io` → the kind."""
    wanted = word.lower().split(".", 1)[0]
    for kind in KINDS:
        if wanted in {kind.plural, kind.singular, *kind.short_names}:
            return kind
    names = ", ".join(f"{k.singular} ({'/'.join(k.short_names)})" for k in KINDS)
    raise PluginError(f"unknown kind {word!r}: use one of {names}")


def parse_reference(text: str) -> tuple[Kind | None, str]:
    """`KIND/NAME` → (kind, name); a bare `NAME` → (None, name): any of our kinds, as kubectl plugins
    take a bare name."""
    kind, slash, name = text.partition("/")
    if not slash:
        return None, text
    if not name or not kind or "/" in name:
        raise PluginError(f"{text!r} is neither NAME nor KIND/NAME (e.g. orders, fg/orders, rt/archive)")
    return kind_named(kind), name


def group_name(text: str) -> str:
    """A FailoverGroup given as `NAME` or `fg/NAME` (any spelling of the kind)."""
    kind, name = parse_reference(text)
    if kind is not None and kind is not BY_KIND["FailoverGroup"]:
        raise PluginError(f"{text!r} is a {kind.singular}, not a FailoverGroup")
    return name


@dataclass
class Snapshot:
    """Federator's objects in one namespace (or all), read together."""

    groups: list[Obj] = field(default_factory=list)
    mirrors: list[Obj] = field(default_factory=list)
    tasks: list[Obj] = field(default_factory=list)
    spark_pods: list[Obj] = field(default_factory=list)
    """Of tasks running on their own (label `federator.io/replication-task`) and of ReplicationApplications
    (label `federator.io/application`)."""
    applications: list[Obj] = field(default_factory=list)


class Cluster:
    def __init__(self, client: KubeClient, target: Target) -> None:
        self.client = client
        self.target = target

    @classmethod
    @asynccontextmanager
    async def connect(cls, target: Target) -> AsyncIterator[Cluster]:
        client = KubeClient(target.connection.server, _session(target))
        try:
            yield cls(client, target)
        finally:
            await client.close()

    async def items(
        self, ref: ResourceRef, namespace: str | None, selector: str | None = None, required: bool = True
    ) -> list[Obj]:
        """The objects (None: of every namespace). A list the cluster does not serve is an error when
        `required` (Federator's CRDs are not installed: not the same as none found), else empty."""
        query = f"?labelSelector={urllib.parse.quote(selector)}" if selector else ""
        listing = await self._call(self.client.get, ref.path(namespace) + query)
        if listing is None and required:
            raise PluginError(_not_served(ref, self.target))
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
            spark_pods=await self._spark_pods(namespace),
            # Not required: Federator's CRDs may predate the kind (an operator not yet upgraded).
            applications=await self.items(
                ref_of(BY_KIND["ReplicationApplication"]), namespace, required=False
            ),
        )

    async def _spark_pods(self, namespace: str | None) -> list[Obj]:
        found: dict[tuple[str, str], Obj] = {}
        for label in (TASK_LABEL, APPLICATION_LABEL):
            found.update((meta(p), p) for p in await self.items(PODS, namespace, label))
        return list(found.values())

    async def events(self, namespace: str | None) -> list[Obj]:
        return await self.items(EVENTS, namespace)

    async def require_namespace(self, name: str | None) -> None:
        """A namespace that does not exist is an error, not an empty one (without the right to read
        namespaces, it is taken to exist)."""
        if name is None:
            return
        try:
            found = await self._call(self.client.get, NAMESPACES.path(None, name))
        except PluginError:
            return
        if found is None:
            raise PluginError(f"namespace {name} not found (context {self.target.context})")

    async def require(self, kind: Kind, namespace: str, name: str) -> Obj:
        """One of our objects; its absence explained: no CRDs, no namespace, or no such object."""
        ref = ref_of(kind)
        found = await self.get(ref, namespace, name)
        if found is not None:
            return found
        await self.items(ref, namespace)  # raises when the kind is not served
        await self.require_namespace(namespace)
        raise PluginError(f"{kind.kind} {name} not found in namespace {namespace}")

    async def _call(self, method: Any, *args: Any) -> Any:
        server, context = self.target.connection.server, self.target.context
        try:
            return await method(*args)
        except ApiError as err:
            raise PluginError(_explain(err, self.target)) from None
        except TimeoutError:
            raise PluginError(
                f"the API server {server} (context {context}) did not answer within "
                f"{self.target.request_timeout:g}s (--request-timeout)"
            ) from None
        except aiohttp.ClientError as err:
            raise PluginError(f"cannot reach the API server {server} (context {context}): {err}") from None
        except ValueError as err:  # a body that is not JSON: something else listens there
            raise PluginError(
                f"{server} (context {context}) does not answer as a Kubernetes API server: {err}"
            ) from None


def _session(target: Target) -> aiohttp.ClientSession:
    """An HTTP session as kubectl would open it: credentials, TLS, impersonation, the request timeout."""
    # Impersonate-Group repeats: one header per group, as client-go sends them.
    impersonation = [
        (name, one)
        for name, value in target.headers.items()
        for one in ([value] if isinstance(value, str) else value)
    ]
    try:
        return open_session(
            target.connection, f"kubectl-federator/{__version__}", impersonation, target.request_timeout
        )
    except (OSError, ValueError) as err:  # ssl.SSLError is an OSError
        raise PluginError(f"cannot use the TLS settings of context {target.context}: {err}") from None


def _not_served(ref: ResourceRef, target: Target) -> str:
    if ref.api_version.startswith("federator.io/"):
        return (
            f"the cluster of context {target.context} does not serve {ref.plural}.{ref.api_version}: "
            "Federator's CRDs are not installed there (kubectl apply -f crds/, or install the chart)"
        )
    return f"the cluster of context {target.context} does not serve {ref.plural} ({ref.api_version})"


def _item_kind(listing: Obj | None) -> str:
    kind = str((listing or {}).get("kind", ""))
    return kind.removesuffix("List")


def _explain(err: ApiError, target: Target) -> str:
    if err.status == 401:
        return f"the API server refused the credentials of context {target.context}: {err.message}"
    if err.status == 403:
        return f"forbidden (context {target.context}): {err.message}"
    return f"the API server answered {err.status}: {err.message}"
