"""The ATOM API of ``ServiceBusAdministrationClient`` for one namespace (queues, topics,
subscriptions, rules, and their runtime properties).

Requests carry a SAS token with the Manage claim, or a bearer token whose principal has it (the
Azure Service Bus Data Owner role; see ``mgmt.authorization``). A PUT without
``If-Match`` creates (409 if the entity exists); with ``If-Match: *`` it updates (404 if it
does not), as on Azure. Paths are case-insensitive entity names, like the data plane's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web

from federator_contract.emulatorconfig import QueueConfig, SubscriptionConfig, TopicConfig
from federator_emulator.mgmt import atomxml, authorization, entities
from federator_emulator.mgmt.arm import Handler
from federator_emulator.mgmt.common import Backend, MgmtError, as_mgmt_error
from federator_emulator.mgmt.entities import Put, QueueView, SubscriptionView, TopicView
from federator_emulator.mgmt.mapping import config_from_properties, properties_of
from federator_emulator.state.eventhubs import UnknownEntity
from federator_emulator.state.namespace import NamespaceState

logger = logging.getLogger(__name__)

_XML = "application/atom+xml"
_DEFAULT_PAGE = 100


def _queue_xml(view: QueueView) -> str:
    extra = {"messageCount": view.counts.total, "sizeInBytes": view.counts.size_bytes}
    return atomxml.entity_description("QueueDescription", properties_of(view.config), view.counts, extra)


def _topic_xml(view: TopicView) -> str:
    extra = {"sizeInBytes": view.counts.size_bytes, "subscriptionCount": view.subscription_count}
    return atomxml.entity_description("TopicDescription", properties_of(view.config), view.counts, extra)


def _subscription_xml(view: SubscriptionView) -> str:
    extra = {"messageCount": view.counts.total}
    return atomxml.entity_description(
        "SubscriptionDescription", properties_of(view.config), view.counts, extra
    )


def _xml_response(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type=_XML)


class AtomApi:
    def __init__(self, backend: Backend, namespace: str) -> None:
        self.backend = backend
        self.state: NamespaceState = backend.namespaces[namespace]

    def routes(self) -> list[web.RouteDef]:
        subs = "/{topic}/subscriptions"
        rules = subs + "/{subscription}/rules"
        return [
            web.get("/$Resources/{kind}", self._guard(self.list_entities)),
            web.get("/{entity}", self._guard(self.get_entity)),
            web.put("/{entity}", self._guard(self.put_entity)),
            web.delete("/{entity}", self._guard(self.delete_entity)),
            web.get(subs, self._guard(self.list_subscriptions)),
            web.get(subs + "/{subscription}", self._guard(self.get_subscription)),
            web.put(subs + "/{subscription}", self._guard(self.put_subscription)),
            web.delete(subs + "/{subscription}", self._guard(self.delete_subscription)),
            web.get(rules, self._guard(self.list_rules)),
            web.get(rules + "/{rule}", self._guard(self.get_rule)),
            web.put(rules + "/{rule}", self._guard(self.put_rule)),
            web.delete(rules + "/{rule}", self._guard(self.delete_rule)),
        ]

    def _guard(self, handler: Handler) -> Handler:
        """Verify the SAS token and render errors as ATOM ``<Error>`` bodies."""

        async def wrapper(request: web.Request) -> web.StreamResponse:
            try:
                self._authorize(request)
                return await handler(request)
            except Exception as exc:
                error = as_mgmt_error(exc)
                if error is None:
                    logger.exception("ATOM %s %s failed", request.method, request.path)
                    error = MgmtError(500, "InternalServerError", str(exc))
                return _xml_response(atomxml.error(error.status, error.message), error.status)

        return wrapper

    def _authorize(self, request: web.Request) -> None:
        request.app[authorization.KEY].administration(request, self.state)

    @staticmethod
    def _mode(request: web.Request) -> Put:
        return Put.UPDATE if "If-Match" in request.headers else Put.CREATE

    def _url(self, request: web.Request) -> str:
        return f"https://{request.host}{request.path}"

    async def _run(self, function: Callable[[NamespaceState], Any]) -> Any:
        state = self.state
        return await self.backend.run(lambda: function(state))

    # -- queues and topics ---------------------------------------------------------------------
    async def list_entities(self, request: web.Request) -> web.StreamResponse:
        kind = request.match_info["kind"].lower()
        if kind not in ("queues", "topics"):
            raise MgmtError(404, "NotFound", f"unsupported resource collection {kind!r}")
        skip = int(request.query.get("$skip", 0))
        top = int(request.query.get("$top", _DEFAULT_PAGE))
        base = f"https://{request.host}"
        if kind == "queues":
            views: list[Any] = await self._run(entities.list_queues)
            items = [(f"{base}/{v.config.name}", v.config.name, _queue_xml(v)) for v in views]
        else:
            views = await self._run(entities.list_topics)
            items = [(f"{base}/{v.config.name}", v.config.name, _topic_xml(v)) for v in views]
        return _xml_response(self._page(request, kind, items, skip, top))

    def _page(
        self, request: web.Request, title: str, items: list[tuple[str, str, str]], skip: int, top: int
    ) -> str:
        next_url = None
        if skip + top < len(items):
            next_url = str(request.url.update_query({"$skip": str(skip + top), "$top": str(top)}))
        return atomxml.feed(self._url(request), title, items[skip : skip + top], next_url)

    def _entity_xml(self, state: NamespaceState, name: str) -> str:
        """A queue's or topic's description (the same path serves both, as on Azure)."""
        if name.lower() in state.queues:
            return _queue_xml(entities.queue_view(state, name))
        if name.lower() in state.topics:
            return _topic_xml(entities.topic_view(state, name))
        raise UnknownEntity(f"entity {name!r} not found in namespace {state.name!r}")

    async def get_entity(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["entity"]
        description = await self._run(lambda s: self._entity_xml(s, name))
        return _xml_response(atomxml.entry(self._url(request), name, description))

    async def put_entity(self, request: web.Request) -> web.StreamResponse:
        name, mode = request.match_info["entity"], self._mode(request)
        kind, description = atomxml.parse_description(await request.read())
        properties = atomxml.description_properties(description)
        if kind == "QueueDescription":
            queue = config_from_properties(QueueConfig, name, properties)
            created, view = await self._run(lambda s: entities.put_queue(s, queue, mode))
            text = _queue_xml(view)
        elif kind == "TopicDescription":
            topic = config_from_properties(TopicConfig, name, properties)
            created, view = await self._run(lambda s: entities.put_topic(s, topic, mode))
            text = _topic_xml(view)
        else:
            raise MgmtError(400, "BadRequest", f"unsupported description {kind!r}")
        return _xml_response(atomxml.entry(self._url(request), name, text), 201 if created else 200)

    async def delete_entity(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["entity"]

        def delete(state: NamespaceState) -> None:
            if name.lower() in state.topics:
                state.delete_topic(name)
            else:
                state.delete_queue(name)

        await self._run(delete)
        return web.Response(status=200)

    # -- subscriptions -------------------------------------------------------------------------
    async def list_subscriptions(self, request: web.Request) -> web.StreamResponse:
        topic = request.match_info["topic"]
        views: list[SubscriptionView] = await self._run(lambda s: entities.list_subscriptions(s, topic))
        url = self._url(request)
        items = [(f"{url}/{v.config.name}", v.config.name, _subscription_xml(v)) for v in views]
        return _xml_response(self._page(request, "subscriptions", items, *self._paging(request)))

    @staticmethod
    def _paging(request: web.Request) -> tuple[int, int]:
        return int(request.query.get("$skip", 0)), int(request.query.get("$top", _DEFAULT_PAGE))

    async def get_subscription(self, request: web.Request) -> web.StreamResponse:
        topic, name = request.match_info["topic"], request.match_info["subscription"]
        view = await self._run(lambda s: entities.subscription_view(s, topic, name))
        return _xml_response(atomxml.entry(self._url(request), name, _subscription_xml(view)))

    async def put_subscription(self, request: web.Request) -> web.StreamResponse:
        topic, name, mode = (
            request.match_info["topic"],
            request.match_info["subscription"],
            self._mode(request),
        )
        _, description = atomxml.parse_description(await request.read())
        config = config_from_properties(SubscriptionConfig, name, atomxml.description_properties(description))
        created, view = await self._run(lambda s: entities.put_subscription(s, topic, config, mode))
        return _xml_response(
            atomxml.entry(self._url(request), name, _subscription_xml(view)), 201 if created else 200
        )

    async def delete_subscription(self, request: web.Request) -> web.StreamResponse:
        topic, name = request.match_info["topic"], request.match_info["subscription"]
        await self._run(lambda s: s.delete_subscription(topic, name))
        return web.Response(status=200)

    # -- rules ---------------------------------------------------------------------------------
    async def list_rules(self, request: web.Request) -> web.StreamResponse:
        topic, sub = request.match_info["topic"], request.match_info["subscription"]
        rules = await self._run(lambda s: entities.list_rules(s, topic, sub))
        url = self._url(request)
        items = [(f"{url}/{r.name}", r.name, atomxml.rule_description(r)) for r in rules]
        return _xml_response(self._page(request, "rules", items, *self._paging(request)))

    async def get_rule(self, request: web.Request) -> web.StreamResponse:
        m = request.match_info
        topic, sub, name = m["topic"], m["subscription"], m["rule"]
        rule = await self._run(lambda s: entities.rule_view(s, topic, sub, name))
        return _xml_response(atomxml.entry(self._url(request), name, atomxml.rule_description(rule)))

    async def put_rule(self, request: web.Request) -> web.StreamResponse:
        m = request.match_info
        topic, sub, name, mode = m["topic"], m["subscription"], m["rule"], self._mode(request)
        _, description = atomxml.parse_description(await request.read())
        config = atomxml.parse_rule(name, description)
        created, rule = await self._run(lambda s: entities.put_rule(s, topic, sub, config, mode))
        return _xml_response(
            atomxml.entry(self._url(request), name, atomxml.rule_description(rule)), 201 if created else 200
        )

    async def delete_rule(self, request: web.Request) -> web.StreamResponse:
        m = request.match_info
        topic, sub, name = m["topic"], m["subscription"], m["rule"]
        await self._run(lambda s: s.delete_rule(topic, sub, name))
        return web.Response(status=200)
