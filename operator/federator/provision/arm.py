"""A member's entities through Azure Resource Manager (`azure-mgmt-servicebus`, async)."""

from __future__ import annotations

import contextlib
from typing import Any

from azure.core.credentials_async import AsyncTokenCredential
from azure.core.exceptions import ResourceNotFoundError
from azure.mgmt.servicebus.aio import ServiceBusManagementClient
from azure.mgmt.servicebus.models import (
    Action,
    Rule,
    Ruleproperties,
    SBQueue,
    SBQueueProperties,
    SBSubscription,
    SBSubscriptionProperties,
    SqlFilter,
)

from federator.planning.mirror import RulePlan
from federator.provision.environment import ManagementEnvironment
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
from federator_contract.api.servicebusmirror import ArmManagement as ArmCoordinates


class ArmManagement:
    def __init__(
        self,
        client: ServiceBusManagementClient,
        credential: AsyncTokenCredential,
        coordinates: ArmCoordinates,
    ) -> None:
        self._client = client
        self._credential = credential
        self._rg = coordinates.resource_group
        self._ns = coordinates.namespace_name
        self.where = f"namespace {coordinates.namespace_name} (resource group {coordinates.resource_group})"

    @classmethod
    def open(
        cls, credential: AsyncTokenCredential, coordinates: ArmCoordinates, env: ManagementEnvironment
    ) -> ArmManagement:
        client = ServiceBusManagementClient(
            credential,
            coordinates.subscription_id,
            base_url=env.arm_endpoint,
            credential_scopes=[env.arm_scope],
            connection_verify=env.connection_verify,
            retry_total=env.retry_total,
            transport=CountingTransport("arm", connection_verify=env.connection_verify),
        )
        return cls(client, credential, coordinates)

    async def close(self) -> None:
        await self._client.close()
        await self._credential.close()

    async def subscriptions(self, topic: str) -> list[tuple[str, str | None]]:
        """(name, user metadata) of every subscription; ResourceNotFoundError if the topic does not exist."""
        await self._client.topics.get(self._rg, self._ns, topic)
        found = []
        async for sub in self._client.subscriptions.list_by_topic(self._rg, self._ns, topic):
            found.append((str(sub.name), sub.properties.user_metadata if sub.properties else None))
        return found

    async def rules(self, topic: str, subscription: str) -> tuple[RulePlan, ...]:
        found = []
        async for rule in self._client.rules.list_by_subscriptions(self._rg, self._ns, topic, subscription):
            found.append(_rule_plan(str(rule.name), rule.properties))
        return tuple(found)

    async def queue(self, name: str) -> ObservedQueue | None:
        try:
            queue = await self._client.queues.get(self._rg, self._ns, name)
        except ResourceNotFoundError:
            return None
        return ObservedQueue(str(queue.name), queue.properties.user_metadata if queue.properties else None)

    async def apply(self, op: Operation) -> None:
        rg, ns = self._rg, self._ns
        match op:
            case CreateSubscription(topic, name, metadata):
                await self._client.subscriptions.create_or_update(
                    rg,
                    ns,
                    topic,
                    name,
                    SBSubscription(properties=SBSubscriptionProperties(user_metadata=metadata)),
                )
            case PutRule(topic, subscription, rule, _):
                await self._client.rules.create_or_update(
                    rg, ns, topic, subscription, rule.name, _arm_rule(rule)
                )
            case DeleteRule(topic, subscription, name):
                await _absent_ok(self._client.rules.delete(rg, ns, topic, subscription, name))
            case DeleteSubscription(topic, name):
                await _absent_ok(self._client.subscriptions.delete(rg, ns, topic, name))
            case CreateQueue(name, metadata):
                await self._client.queues.create_or_update(
                    rg, ns, name, SBQueue(properties=SBQueueProperties(user_metadata=metadata))
                )
            case DeleteQueue(name):
                await _absent_ok(self._client.queues.delete(rg, ns, name))


async def _absent_ok(call: Any) -> None:
    """A delete whose target is already gone has done its job."""
    with contextlib.suppress(ResourceNotFoundError):
        await call


def _arm_rule(rule: RulePlan) -> Rule:
    action = Action(sql_expression=rule.sql_action) if rule.sql_action else None
    return Rule(
        properties=Ruleproperties(
            filter_type="SqlFilter", sql_filter=SqlFilter(sql_expression=rule.sql_filter), action=action
        )
    )


def _rule_plan(name: str, props: Ruleproperties | None) -> RulePlan:
    action = props.action.sql_expression if props and props.action else None
    if props is not None and props.sql_filter is not None and props.filter_type in (None, "SqlFilter"):
        return RulePlan(name, props.sql_filter.sql_expression or "", action)
    # A correlation filter (set by hand): never equal to a planned SQL rule, so it counts as drift.
    return RulePlan(name, f"<{props.filter_type if props else 'unknown'} filter>", action)
