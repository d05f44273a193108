"""The ARM REST subset ``azure-mgmt-servicebus`` uses for queues, topics, subscriptions and rules.

Paths are ``/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.ServiceBus/namespaces/{ns}/…``.
PUT upserts and echoes the resource; lists have ``value`` and no ``nextLink``; DELETE answers
200, or 404 if the resource is missing. Any ``api-version`` is accepted. Bearer tokens from the
emulated tenant are verified, and the caller's role checked (``mgmt.authorization``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from federator_contract.emulatorconfig import QueueConfig, SubscriptionConfig, TopicConfig
from federator_emulator.mgmt import authorization, entities
from federator_emulator.mgmt.common import Backend, MgmtError, as_mgmt_error
from federator_emulator.mgmt.entities import Counts, Put, QueueView, SubscriptionView, TopicView
from federator_emulator.mgmt.mapping import config_from_properties, properties_of, rule_from_arm, rule_to_arm
from federator_emulator.state.namespace import NamespaceState

logger = logging.getLogger(__name__)

NAMESPACE_PATH = "/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.ServiceBus/namespaces/{ns}"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Params = dict[str, str]


def error_response(error: MgmtError) -> web.Response:
    """ARM's error body, which azure-mgmt clients turn into ``HttpResponseError`` messages."""
    return web.json_response({"error": {"code": error.code, "message": error.message}}, status=error.status)


def guarded(handler: Handler) -> Handler:
    """Refuse requests without a valid bearer token or role, and render errors in ARM's shape."""

    async def wrapper(request: web.Request) -> web.StreamResponse:
        try:
            request.app[authorization.KEY].resource_manager(request)
            return await handler(request)
        except Exception as exc:
            error = as_mgmt_error(exc)
            if error is None:
                logger.exception("ARM %s %s failed", request.method, request.path)
                error = MgmtError(500, "InternalServerError", str(exc))
            return error_response(error)

    return wrapper


async def json_body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except json.JSONDecodeError as exc:
        raise MgmtError(400, "InvalidRequestContent", f"the request body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise MgmtError(400, "InvalidRequestContent", "the request body must be a JSON object")
    return body


def _count_details(counts: Counts) -> dict[str, int]:
    return {
        "activeMessageCount": counts.active,
        "deadLetterMessageCount": counts.dead_letter,
        "scheduledMessageCount": counts.scheduled,
        "transferMessageCount": 0,
        "transferDeadLetterMessageCount": 0,
    }


def _queue(view: QueueView) -> dict[str, Any]:
    return {
        **properties_of(view.config),
        "status": "Active",
        "messageCount": view.counts.total,
        "sizeInBytes": view.counts.size_bytes,
        "countDetails": _count_details(view.counts),
    }


def _topic(view: TopicView) -> dict[str, Any]:
    return {
        **properties_of(view.config),
        "status": "Active",
        "subscriptionCount": view.subscription_count,
        "sizeInBytes": view.counts.size_bytes,
        "countDetails": _count_details(view.counts),
    }


def _subscription(view: SubscriptionView) -> dict[str, Any]:
    return {
        **properties_of(view.config),
        "status": "Active",
        "messageCount": view.counts.total,
        "countDetails": _count_details(view.counts),
    }


@dataclass(frozen=True)
class _Kind:
    """One ARM resource type: its path below the namespace and its operations on the state."""

    type: str
    list_path: str
    item: str  # the path parameter naming one resource
    get: Callable[[NamespaceState, Params], Any]
    list: Callable[[NamespaceState, Params], list[Any]]
    put: Callable[[NamespaceState, Params, dict[str, Any]], tuple[bool, Any]]
    delete: Callable[[NamespaceState, Params], None]
    name: Callable[[Any], str]
    properties: Callable[[Any], dict[str, Any]]


_SUBS = "/topics/{topic}/subscriptions"
_KINDS = [
    _Kind(
        type="Microsoft.ServiceBus/Namespaces/Queues",
        list_path="/queues",
        item="queue",
        get=lambda s, p: entities.queue_view(s, p["queue"]),
        list=lambda s, p: entities.list_queues(s),
        put=lambda s, p, props: entities.put_queue(
            s, config_from_properties(QueueConfig, p["queue"], props), Put.UPSERT
        ),
        delete=lambda s, p: s.delete_queue(p["queue"]),
        name=lambda v: str(v.config.name),
        properties=_queue,
    ),
    _Kind(
        type="Microsoft.ServiceBus/Namespaces/Topics",
        list_path="/topics",
        item="topic",
        get=lambda s, p: entities.topic_view(s, p["topic"]),
        list=lambda s, p: entities.list_topics(s),
        put=lambda s, p, props: entities.put_topic(
            s, config_from_properties(TopicConfig, p["topic"], props), Put.UPSERT
        ),
        delete=lambda s, p: s.delete_topic(p["topic"]),
        name=lambda v: str(v.config.name),
        properties=_topic,
    ),
    _Kind(
        type="Microsoft.ServiceBus/Namespaces/Topics/Subscriptions",
        list_path=_SUBS,
        item="subscription",
        get=lambda s, p: entities.subscription_view(s, p["topic"], p["subscription"]),
        list=lambda s, p: entities.list_subscriptions(s, p["topic"]),
        put=lambda s, p, props: entities.put_subscription(
            s, p["topic"], config_from_properties(SubscriptionConfig, p["subscription"], props), Put.UPSERT
        ),
        delete=lambda s, p: s.delete_subscription(p["topic"], p["subscription"]),
        name=lambda v: str(v.config.name),
        properties=_subscription,
    ),
    _Kind(
        type="Microsoft.ServiceBus/Namespaces/Topics/Subscriptions/Rules",
        list_path=_SUBS + "/{subscription}/rules",
        item="rule",
        get=lambda s, p: entities.rule_view(s, p["topic"], p["subscription"], p["rule"]),
        list=lambda s, p: entities.list_rules(s, p["topic"], p["subscription"]),
        put=lambda s, p, props: entities.put_rule(
            s, p["topic"], p["subscription"], rule_from_arm(p["rule"], props), Put.UPSERT
        ),
        delete=lambda s, p: s.delete_rule(p["topic"], p["subscription"], p["rule"]),
        name=lambda v: str(v.name),
        properties=rule_to_arm,
    ),
]


class ArmApi:
    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def routes(self) -> list[web.RouteDef]:
        out = [web.get(NAMESPACE_PATH, guarded(self.get_namespace))]
        for kind in _KINDS:
            item_path = f"{NAMESPACE_PATH}{kind.list_path}/{{{kind.item}}}"
            out += [
                web.get(NAMESPACE_PATH + kind.list_path, guarded(self._list(kind))),
                web.get(item_path, guarded(self._get(kind))),
                web.put(item_path, guarded(self._put(kind))),
                web.delete(item_path, guarded(self._delete(kind))),
            ]
        return out

    def _state(self, request: web.Request) -> NamespaceState:
        m = request.match_info
        return self.backend.arm_namespace(m["sub"], m["rg"], m["ns"])

    @staticmethod
    def _resource(kind: _Kind, resource_id: str, view: Any) -> dict[str, Any]:
        return {
            "id": resource_id,
            "name": kind.name(view),
            "type": kind.type,
            "location": "emulator",
            "properties": kind.properties(view),
        }

    def _list(self, kind: _Kind) -> Handler:
        async def handler(request: web.Request) -> web.StreamResponse:
            state, params = self._state(request), dict(request.match_info)
            views = await self.backend.run(lambda: kind.list(state, params))
            value = [self._resource(kind, f"{request.path}/{kind.name(v)}", v) for v in views]
            return web.json_response({"value": value})

        return handler

    def _get(self, kind: _Kind) -> Handler:
        async def handler(request: web.Request) -> web.StreamResponse:
            state, params = self._state(request), dict(request.match_info)
            view = await self.backend.run(lambda: kind.get(state, params))
            return web.json_response(self._resource(kind, request.path, view))

        return handler

    def _put(self, kind: _Kind) -> Handler:
        async def handler(request: web.Request) -> web.StreamResponse:
            state, params = self._state(request), dict(request.match_info)
            properties = (await json_body(request)).get("properties") or {}
            created, view = await self.backend.run(lambda: kind.put(state, params, properties))
            logger.info("ARM %s %s", "created" if created else "updated", request.path)
            return web.json_response(self._resource(kind, request.path, view))

        return handler

    def _delete(self, kind: _Kind) -> Handler:
        async def handler(request: web.Request) -> web.StreamResponse:
            state, params = self._state(request), dict(request.match_info)
            await self.backend.run(lambda: kind.delete(state, params))
            return web.Response(status=200)

        return handler

    async def get_namespace(self, request: web.Request) -> web.StreamResponse:
        state = self._state(request)
        endpoint = self.backend.endpoints.get(state.name, "")
        return web.json_response(
            {
                "id": request.path,
                "name": state.config.arm_namespace_name,
                "type": "Microsoft.ServiceBus/Namespaces",
                "location": "emulator",
                "sku": {"name": "Standard", "tier": "Standard"},
                "properties": {
                    "provisioningState": "Succeeded",
                    "status": "Active",
                    "serviceBusEndpoint": f"{endpoint}/",
                },
            }
        )
