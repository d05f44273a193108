"""Rule parameters and typed property values, as Azure evaluates them: ``SqlRuleFilter`` and
``SqlRuleAction`` parameters through ATOM, empty expressions refused, and every AMQP type the SDKs
send compared and converted with Service Bus SQL's (C#'s) rules. Real ``azure-servicebus`` clients."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.mgmt.servicebus.models import Rule, Ruleproperties, SqlFilter
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus._pyamqp.types import TYPE, VALUE, AMQPTypes
from azure.servicebus.aio.management import (
    ServiceBusAdministrationClient as AsyncServiceBusAdministrationClient,
)
from azure.servicebus.management import CorrelationRuleFilter, SqlRuleAction, SqlRuleFilter

from support.azure_clients import (
    admin_client,
    arm_client,
    drain_subscription,
    management_connection_string,
    text_properties,
)

pytestmark = pytest.mark.timeout(90)

SINCE = datetime(2020, 1, 1)  # naive, as the SDK sends it: Service Bus reads it as UTC
WHEN = datetime(2021, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
GUID = uuid.UUID(int=42)


def typed(amqp_type: str, value: Any) -> dict[str, Any]:
    """A value the Python SDK encodes as ``amqp_type``: what the .NET and Java SDKs send for their types."""
    return {TYPE: amqp_type, VALUE: value}


def described(descriptor: str, value: Any) -> tuple[Any, Any]:
    """A described value (.NET's TimeSpan, DateTimeOffset and Uri), as the Python SDK encodes a tuple."""
    return typed(AMQPTypes.symbol, descriptor.encode()), value


# Application properties of every AMQP type the SDKs send (Python: string, int, double, bool, uuid,
# timestamp, decimal128, null; .NET/Java also long, ushort, float, binary, symbol and described types).
PROPERTIES: dict[str, Any] = {
    "s": "abc",
    "i": 5,
    "big": typed(AMQPTypes.long, 2**40),
    "us": typed(AMQPTypes.ushort, 7),
    "fl": typed(AMQPTypes.float, 0.1),
    "f": 1.5,
    "b": True,
    "u": GUID,
    "when": WHEN,
    "bin": typed(AMQPTypes.binary, b"\x01"),
    "d": Decimal("1.25"),
    "n": None,
    "sym": typed(AMQPTypes.symbol, b"symbolic"),
    "ts": described("com.microsoft:timespan", typed(AMQPTypes.long, HOUR // timedelta(microseconds=1) * 10)),
    "dto": described("com.microsoft:datetime-offset", typed(AMQPTypes.long, 637450560000000000)),
    "uri": described("com.microsoft:uri", "https://orders.example/1"),
}

# Filter -> whether it matches the message above. A subscription per filter; one message.
FILTERS: dict[str, bool] = {
    "when > @since": True,  # timestamp vs a datetime parameter
    "when - @since = @leapYear": True,  # datetime - datetime is a timespan
    "when + ts > when": True,
    "when = '2021-01-01T00:00:00Z'": False,  # no implicit conversion from string
    "dto = when": True,  # DateTimeOffset (UTC ticks) and timestamp are the same instant
    "ts = @hour": True,
    "big = 1099511627776 AND big > 1.5": True,  # long, promoted to double
    "i + big = 1099511627781": True,
    "us * 2 = 14": True,
    "fl = 0.1": False,  # a float is widened exactly: 0.1f is not the double 0.1, as in C#
    "fl < 0.11": True,
    "f = 1.5": True,
    "b = TRUE": True,
    "b = 1": False,
    "u = @guid": True,
    "bin = bin": False,  # binary never compares
    "EXISTS(bin) AND bin IS NOT NULL": True,
    "d > 1 AND d * 4 = 5": True,  # decimal with long
    "d = 1.25": False,  # decimal with double: no implicit conversion
    "n IS NULL AND EXISTS(n)": True,
    "sym = 'symbolic'": True,
    "uri = 'https://orders.example/1'": True,
    "s LIKE 'a%' AND s + 'd' = 'abcd'": True,
}
PARAMETERS = {"@since": SINCE, "@leapYear": timedelta(days=366), "@hour": HOUR, "@guid": GUID}


@pytest.fixture
def typed_emulator(emulator_factory: Any) -> Any:
    subscriptions = [
        {"name": f"f{i}", "rules": [{"name": "r", "sqlFilter": text, "sqlFilterParameters": PARAMETERS}]}
        for i, text in enumerate(FILTERS)
    ]
    subscriptions.append(
        {
            "name": "act",
            "rules": [
                {
                    "name": "act",
                    # azure-servicebus 7.15 cannot decode a decimal128 (not even its own): the copy
                    # this test receives must not carry one (``to_amqp`` is checked on its own).
                    "sqlAction": "SET later = when + @hour; SET span = ts; SET f = 2; REMOVE d",
                    "sqlActionParameters": {"@hour": HOUR},
                }
            ],
        }
    )
    return emulator_factory(
        {"namespaces": [{"name": "ns1", "topics": [{"name": "typed", "subscriptions": subscriptions}]}]}
    )


def test_every_amqp_type_compares_and_converts_with_service_bus_rules(typed_emulator: Any) -> None:
    with ServiceBusClient.from_connection_string(typed_emulator.connection_string()) as client:
        with client.get_topic_sender("typed") as sender:
            sender.send_messages(ServiceBusMessage("m", application_properties=PROPERTIES))
        with admin_client(typed_emulator) as admin:
            counts = {
                s.name: s.total_message_count for s in admin.list_subscriptions_runtime_properties("typed")
            }
        [acted] = drain_subscription(client, "typed", "act", 1)
    matched = {text: counts[f"f{i}"] == 1 for i, text in enumerate(FILTERS)}
    assert matched == FILTERS
    props = text_properties(acted)
    # Values an action computed go out as Service Bus sends their .NET types (the Python SDK reads
    # a timestamp as milliseconds and a described TimeSpan as its ticks) ...
    assert props["later"] == (WHEN + HOUR - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
    assert props["span"] == 36_000_000_000
    assert props["f"] == 2.0  # a long assigned to a double property stays a double
    # ... and the properties it left alone keep their AMQP types.
    assert (props["big"], props["us"], props["u"], props["b"], props["RuleName"]) == (
        2**40,
        7,
        GUID,
        True,
        "act",
    )
    assert props["fl"] == pytest.approx(0.1) and props["fl"] != 0.1  # still the float's value


def test_sql_rule_parameters_round_trip_through_atom_and_bind_at_evaluation(mgmt_emulator: Any) -> None:
    with admin_client(mgmt_emulator) as admin:
        admin.create_subscription("t1", "params")
        admin.delete_rule("t1", "params", "$Default")
        admin.create_rule(
            "t1",
            "params",
            "recent",
            filter=SqlRuleFilter(
                "region = @region AND at > @since AND qty >= @min AND ratio < @max AND vip = @vip",
                parameters={"@region": "eu", "@since": SINCE, "@min": 2**40, "@max": 0.75, "@vip": True},
            ),
            action=SqlRuleAction(
                "SET stamp = @stamp; SET delay = @delay", parameters={"@stamp": SINCE, "@delay": HOUR}
            ),
        )
        rule = admin.get_rule("t1", "params", "recent")
        assert rule.filter.parameters == {
            "@region": "eu",
            "@since": SINCE,
            "@min": 2**40,
            "@max": 0.75,
            "@vip": True,
        }
        assert rule.action.parameters == {"@stamp": SINCE, "@delay": HOUR}
    with ServiceBusClient.from_connection_string(mgmt_emulator.connection_string()) as client:
        base = {"region": "eu", "qty": typed(AMQPTypes.long, 2**41), "ratio": 0.5, "vip": True}
        with client.get_topic_sender("t1") as sender:
            sender.send_messages(
                [
                    ServiceBusMessage("new", application_properties={**base, "at": WHEN}),
                    ServiceBusMessage(
                        "old", application_properties={**base, "at": datetime(2019, 1, 1, tzinfo=UTC)}
                    ),
                    ServiceBusMessage("few", application_properties={**base, "at": WHEN, "qty": 1}),
                ]
            )
        [got] = drain_subscription(client, "t1", "params", 1)
    assert str(got) == "new"
    props = text_properties(got)
    assert (props["stamp"], props["delay"]) == (1577836800000, 36_000_000_000)


@pytest.mark.asyncio
async def test_async_correlation_properties_keep_their_types(mgmt_emulator: Any) -> None:
    properties = {"at": SINCE, "span": timedelta(days=1, hours=2, minutes=3), "big": 2**40, "ok": False}
    async with AsyncServiceBusAdministrationClient.from_connection_string(
        management_connection_string(mgmt_emulator), connection_verify=str(mgmt_emulator.ca_path)
    ) as admin:
        await admin.create_subscription("t1", "typed-correlation")
        await admin.create_rule(
            "t1", "typed-correlation", "exact", filter=CorrelationRuleFilter(label="x", properties=properties)
        )
        rule = await admin.get_rule("t1", "typed-correlation", "exact")
        await admin.delete_subscription("t1", "typed-correlation")
    assert rule.filter.properties == properties


@pytest.mark.parametrize("expression", ["", "   ", None])
def test_sql_filter_without_an_expression_is_refused_like_azure(
    mgmt_emulator: Any, expression: str | None
) -> None:
    with admin_client(mgmt_emulator) as admin:
        with pytest.raises(HttpResponseError) as caught:
            admin.create_rule("t1", "all", "empty", filter=SqlRuleFilter(expression))
        assert caught.value.status_code == 400
        assert "Value cannot be null. Parameter name: sqlExpression" in str(caught.value)
        with pytest.raises(HttpResponseError, match="sqlExpression"):
            admin.create_rule(
                "t1", "all", "empty", filter=SqlRuleFilter("1=1"), action=SqlRuleAction(expression)
            )
        with pytest.raises(ResourceNotFoundError):
            admin.get_rule("t1", "all", "empty")


def test_arm_sql_filter_without_an_expression_is_refused_like_azure(mgmt_emulator: Any) -> None:
    with arm_client(mgmt_emulator) as arm:
        for sql_filter in (SqlFilter(sql_expression=""), SqlFilter(), None):
            rule = Rule(properties=Ruleproperties(filter_type="SqlFilter", sql_filter=sql_filter))
            with pytest.raises(HttpResponseError) as caught:
                arm.rules.create_or_update("emulator", "ns1", "t1", "all", "empty", rule)
            assert caught.value.status_code == 400
            assert caught.value.error is not None and caught.value.error.code == "BadRequest"
            assert "Parameter name: sqlExpression" in str(caught.value)
