"""The ATOM API of ``ServiceBusAdministrationClient`` for one namespace (queues, topics,
subscriptions, rules, and their runtime properties).

Requests carry a SAS token with the Manage claim, or a bearer token whose principal has it (the
Azure Service Bus Data Owner role; see ``mgmt.authorization``). A PUT without
``If-Match`` creates (409 if the entity exists); with ``If-Match: *`` it updates (404 if it
does not), as on Azure. Paths are case-insensitive, entity names like the data plane's and the words
between them (``Subscriptions``, ``Rules``, ``$Resources``) as Azure takes them, a list path with or without
its trailing slash; entry ids name the entities as they were created, under Azure's spelling of those
words (the JS SDK reads the names out of the id). Errors, a path no route serves included, are ATOM
``<Error>`` bodies.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web

from federator_contract.emulatorconfig import QueueConfig, RuleConfig, SubscriptionConfig, TopicConfig
from federator_emulator.mgmt import atomxml, authorization, descriptions, entities
from federator_emulator.mgmt.arm import Handler
from federator_emulator.mgmt.common import Backend, MgmtError, as_mgmt_error
from federator_emulator.mgmt.entities import Put, SubscriptionView
from federator_emulator.mgmt.mapping import config_from_properties
from federator_emulator.state.eventhubs import UnknownEntity
from federator_emulator.state.namespace import NamespaceState

logger = logging.getLogger(__name__)

_XML = "application/atom+xml"
_DEFAULT_PAGE = 100
# Path words matched in any case; a list path may end in a slash (the JS SDK writes one).
_RESOURCES = r"/{_resources:(?i:\$resources)}"
_SUBSCRIPTIONS = "/{_subscriptions:(?i:subscriptions)}"
_RULES = "/{_rules:(?i:rules)}"
_SLASH = "{_slash:/?}"
_NAMESPACE_INFO = r"/{_info:(?i:\$namespaceinfo)}"
# ARM's and DNS's paths: their own APIs answer for them, in JSON.
_ARM_PREFIXES = ("/subscriptions/", "/providers/")


def _xml_response(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type=_XML)


def entity_url(request: web.Request, topic_or_entity: str, subscription: str = "", rule: str = "") -> str:
    """An entry's id as Azure writes it: ``https://host/t/Subscriptions/s/Rules/r``."""
    url = f"https://{request.host}/{topic_or_entity}"
    if subscription:
        url += f"/Subscriptions/{subscription}"
    if rule:
        url += f"/Rules/{rule}"
    return url


@web.middleware
async def unrouted_as_atom(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A path no route serves is answered as Service Bus does, with an ATOM ``<Error>`` (the SDK cannot
    read aiohttp's text/plain 404)."""
    try:
        return await handler(request)
    except web.HTTPNotFound as exc:
        if request.path.lower().startswith(_ARM_PREFIXES):
            raise
        detail = f"No service is hosted at the specified address {request.path!r}."
        return _xml_response(atomxml.error(exc.status, detail), exc.status)


class AtomApi:
    def __init__(self, backend: Backend, namespace: str) -> None:
        self.backend = backend
        self.state: NamespaceState = backend.namespaces[namespace]

    def routes(self) -> list[web.RouteDef]:
        subs = "/{topic}" + _SUBSCRIPTIONS
        rules = subs + "/{subscription}" + _RULES
        return [
            web.get(_RESOURCES + "/{kind}" + _SLASH, self._guard(self.list_entities)),
            web.get(_NAMESPACE_INFO, self._guard(self.get_namespace_info)),
            web.get("/{entity}", self._guard(self.get_entity)),
            web.put("/{entity}", self._guard(self.put_entity)),
            web.delete("/{entity}", self._guard(self.delete_entity)),
            web.get(subs + _SLASH, self._guard(self.list_subscriptions)),
            web.get(subs + "/{subscription}", self._guard(self.get_subscription)),
            web.put(subs + "/{subscription}", self._guard(self.put_subscription)),
            web.delete(subs + "/{subscription}", self._guard(self.delete_subscription)),
            web.get(rules + _SLASH, self._guard(self.list_rules)),
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
        if kind == "queues":
            views: list[Any] = await self._run(entities.list_queues)
            render: Callable[[Any], str] = descriptions.queue
        else:
            views = await self._run(entities.list_topics)
            render = descriptions.topic
        items = [(entity_url(request, v.config.name), v.config.name, render(v)) for v in views]
        return _xml_response(self._page(request, kind, items, skip, top))

    def _page(
        self, request: web.Request, title: str, items: list[tuple[str, str, str]], skip: int, top: int
    ) -> str:
        next_url = None
        if skip + top < len(items):
            next_url = str(request.url.update_query({"$skip": str(skip + top), "$top": str(top)}))
        return atomxml.feed(self._url(request), title, items[skip : skip + top], next_url)

    def _entity_xml(self, state: NamespaceState, name: str) -> tuple[str, str]:
        """A queue's or topic's name as created and description (the same path serves both, as on Azure)."""
        if name.lower() in state.queues:
            queue = entities.queue_view(state, name)
            return queue.config.name, descriptions.queue(queue)
        if name.lower() in state.topics:
            topic = entities.topic_view(state, name)
            return topic.config.name, descriptions.topic(topic)
        raise UnknownEntity(f"entity {name!r} not found in namespace {state.name!r}")

    async def get_entity(self, request: web.Request) -> web.StreamResponse:
        name, description = await self._run(lambda s: self._entity_xml(s, request.match_info["entity"]))
        return _xml_response(atomxml.entry(entity_url(request, name), name, description))

    async def get_namespace_info(self, request: web.Request) -> web.StreamResponse:
        """``$namespaceinfo`` (``getNamespaceProperties``): a Standard messaging namespace."""
        name = self.state.config.arm_namespace_name
        created = atomxml.timestamp_text(self.state.created_at)
        info = atomxml.namespace_info(name, created)
        return _xml_response(atomxml.entry(f"https://{request.host}/$namespaceinfo", name, info))

    async def put_entity(self, request: web.Request) -> web.StreamResponse:
        name, mode = request.match_info["entity"], self._mode(request)
        kind, description = atomxml.parse_description(await request.read())
        properties = atomxml.description_properties(description)
        if kind == "QueueDescription":
            queue = config_from_properties(QueueConfig, name, properties)
            created, view = await self._run(lambda s: entities.put_queue(s, queue, mode))
            text = descriptions.queue(view)
        elif kind == "TopicDescription":
            topic = config_from_properties(TopicConfig, name, properties)
            created, view = await self._run(lambda s: entities.put_topic(s, topic, mode))
            text = descriptions.topic(view)
        else:
            raise MgmtError(400, "BadRequest", f"unsupported description {kind!r}")
        name = view.config.name
        return _xml_response(atomxml.entry(entity_url(request, name), name, text), 201 if created else 200)

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
        items = [
            (self._subscription_url(request, v), v.config.name, descriptions.subscription(v)) for v in views
        ]
        return _xml_response(self._page(request, "subscriptions", items, *self._paging(request)))

    @staticmethod
    def _paging(request: web.Request) -> tuple[int, int]:
        return int(request.query.get("$skip", 0)), int(request.query.get("$top", _DEFAULT_PAGE))

    @staticmethod
    def _subscription_url(request: web.Request, view: SubscriptionView) -> str:
        return entity_url(request, view.topic, view.config.name)

    def _subscription_entry(self, request: web.Request, view: SubscriptionView) -> str:
        url = self._subscription_url(request, view)
        return atomxml.entry(url, view.config.name, descriptions.subscription(view))

    async def get_subscription(self, request: web.Request) -> web.StreamResponse:
        topic, name = request.match_info["topic"], request.match_info["subscription"]
        view = await self._run(lambda s: entities.subscription_view(s, topic, name))
        return _xml_response(self._subscription_entry(request, view))

    async def put_subscription(self, request: web.Request) -> web.StreamResponse:
        topic, name, mode = (
            request.match_info["topic"],
            request.match_info["subscription"],
            self._mode(request),
        )
        _, description = atomxml.parse_description(await request.read())
        config = config_from_properties(SubscriptionConfig, name, atomxml.description_properties(description))
        default_rule = atomxml.default_rule(description)
        if default_rule is not None:
            config = config.model_copy(update={"rules": [default_rule]})
        created, view = await self._run(lambda s: entities.put_subscription(s, topic, config, mode))
        return _xml_response(self._subscription_entry(request, view), 201 if created else 200)

    async def delete_subscription(self, request: web.Request) -> web.StreamResponse:
        topic, name = request.match_info["topic"], request.match_info["subscription"]
        await self._run(lambda s: s.delete_subscription(topic, name))
        return web.Response(status=200)

    # -- rules ---------------------------------------------------------------------------------
    async def list_rules(self, request: web.Request) -> web.StreamResponse:
        topic, sub = request.match_info["topic"], request.match_info["subscription"]
        rules = await self._run(lambda s: entities.list_rules(s, topic, sub))
        items = [
            (entity_url(request, topic, sub, r.name), r.name, atomxml.rule_description(r)) for r in rules
        ]
        return _xml_response(self._page(request, "rules", items, *self._paging(request)))

    async def get_rule(self, request: web.Request) -> web.StreamResponse:
        m = request.match_info
        topic, sub, name = m["topic"], m["subscription"], m["rule"]
        rule = await self._run(lambda s: entities.rule_view(s, topic, sub, name))
        return _xml_response(self._rule_entry(request, topic, sub, rule))

    @staticmethod
    def _rule_entry(request: web.Request, topic: str, subscription: str, rule: RuleConfig) -> str:
        url = entity_url(request, topic, subscription, rule.name)
        return atomxml.entry(url, rule.name, atomxml.rule_description(rule))

    async def put_rule(self, request: web.Request) -> web.StreamResponse:
        m = request.match_info
        topic, sub, name, mode = m["topic"], m["subscription"], m["rule"], self._mode(request)
        _, description = atomxml.parse_description(await request.read())
        config = atomxml.parse_rule(name, description)
        created, rule = await self._run(lambda s: entities.put_rule(s, topic, sub, config, mode))
        return _xml_response(self._rule_entry(request, topic, sub, rule), 201 if created else 200)

    async def delete_rule(self, request: web.Request) -> web.StreamResponse:
        m = request.match_info
        topic, sub, name = m["topic"], m["subscription"], m["rule"]
        await self._run(lambda s: s.delete_rule(topic, sub, name))
        return web.Response(status=200)
