"""A member's entities through the Service Bus administration API (`ServiceBusAdministrationClient`,
async), with a connection string that carries Manage rights."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Awaitable

from azure.core.exceptions import ResourceNotFoundError
from azure.servicebus.aio.management import ServiceBusAdministrationClient
from azure.servicebus.management import RuleProperties, SqlRuleAction, SqlRuleFilter

from federator import reasons
from federator.planning.mirror import RulePlan
from federator.provision.environment import ManagementEnvironment
from federator.provision.errors import ManagementError
from federator.provision.model import (
    CreateQueue,
    CreateSubscription,
    DeleteQueue,
    DeleteRule,
    DeleteSubscription,
    ObservedQueue,
    Operation,
    PutRule,
)
from federator.provision.transport import CountingTransport


class DataPlaneManagement:
    def __init__(self, client: ServiceBusAdministrationClient, host: str) -> None:
        self._client = client
        self.where = f"namespace {host}"

    @classmethod
    def open(cls, connection_string: str, env: ManagementEnvironment, source: str) -> DataPlaneManagement:
        """`source` names where the connection string came from (a Secret key), for error messages; the
        value itself never appears in one."""
        host = _endpoint_host(connection_string)
        if host is None or "SharedAccessKey" not in connection_string:
            raise ManagementError(
                reasons.CONNECTION_STRING_INVALID,
                f"{source} is not a Service Bus connection string (Endpoint=sb://…;SharedAccessKeyName=…;"
                "SharedAccessKey=…)",
            )
        try:
            client = ServiceBusAdministrationClient.from_connection_string(
                connection_string,
                connection_verify=env.connection_verify,
                retry_total=env.retry_total,
                transport=CountingTransport("dataPlane", connection_verify=env.connection_verify),
            )
        except ValueError:
            raise ManagementError(
                reasons.CONNECTION_STRING_INVALID, f"{source} is not a valid Service Bus connection string"
            ) from None
        return cls(client, host)

    async def close(self) -> None:
        await self._client.close()

    async def subscriptions(self, topic: str) -> list[tuple[str, str | None]]:
        """(name, user metadata) of every subscription; ResourceNotFoundError if the topic does not exist."""
        await self._client.get_topic(topic)
        return [(s.name, s.user_metadata) async for s in self._client.list_subscriptions(topic)]

    async def rules(self, topic: str, subscription: str) -> tuple[RulePlan, ...]:
        return tuple([_rule_plan(r) async for r in self._client.list_rules(topic, subscription)])

    async def queue(self, name: str) -> ObservedQueue | None:
        try:
            queue = await self._client.get_queue(name)
        except ResourceNotFoundError:
            return None
        return ObservedQueue(queue.name, queue.user_metadata)

    async def apply(self, op: Operation) -> None:
        client = self._client
        match op:
            case CreateSubscription(topic, name, metadata):
                await client.create_subscription(topic, name, user_metadata=metadata)
            case PutRule(topic, subscription, rule, False):
                await client.create_rule(
                    topic,
                    subscription,
                    rule.name,
                    filter=SqlRuleFilter(rule.sql_filter),
                    action=_action(rule),
                )
            case PutRule(topic, subscription, rule, True):
                properties = RuleProperties(
                    rule.name,
                    filter=SqlRuleFilter(rule.sql_filter),
                    action=_action(rule),
                    created_at_utc=None,
                )
                await client.update_rule(topic, subscription, properties)
            case DeleteRule(topic, subscription, name):
                await _absent_ok(client.delete_rule(topic, subscription, name))
            case DeleteSubscription(topic, name):
                await _absent_ok(client.delete_subscription(topic, name))
            case CreateQueue(name, metadata):
                await client.create_queue(name, user_metadata=metadata)
            case DeleteQueue(name):
                await _absent_ok(client.delete_queue(name))


async def _absent_ok(call: Awaitable[None]) -> None:
    """A delete whose target is already gone has done its job."""
    with contextlib.suppress(ResourceNotFoundError):
        await call


def _action(rule: RulePlan) -> SqlRuleAction | None:
    return SqlRuleAction(rule.sql_action) if rule.sql_action else None


def _rule_plan(rule: RuleProperties) -> RulePlan:
    # True/False/SQL filters all carry their SQL; a correlation filter (set by hand) never equals a
    # planned SQL rule, so it counts as drift.
    sql = getattr(rule.filter, "sql_expression", None) or f"<{type(rule.filter).__name__}>"
    action = getattr(rule.action, "sql_expression", None)
    return RulePlan(rule.name, sql, action)


def _endpoint_host(connection_string: str) -> str | None:
    found = re.search(r"(?:^|;)\s*Endpoint\s*=\s*sb://([^/;]+)", connection_string, flags=re.IGNORECASE)
    return found.group(1) if found else None
