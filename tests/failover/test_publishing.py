"""What a group publishes: endpoints per role in its ConfigMap (never a secret), and DNS records as the
Event Hubs replication guidance lays them out (SRV per member, CNAME per role)."""

from __future__ import annotations

from datetime import UTC, datetime

from federator.failover.publishing import RecordSet, dns_record_sets, endpoints_config_map
from federator.failover.state import GroupState
from federator.planning.task import Owner
from federator_contract.api.failovergroup import FailoverGroupSpec

SINCE = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
SPEC = FailoverGroupSpec.model_validate(
    {
        "primaryMember": "weu",
        "members": [
            {
                "name": "weu",
                "endpoint": "orders-weu.servicebus.windows.net",
                "connection": {"secretRef": {"name": "w"}},
            },
            {
                "name": "neu",
                "endpoint": "localhost:5672",
                "connection": {"workloadIdentity": {"fullyQualifiedNamespace": "neu.servicebus.windows.net"}},
            },
        ],
        "probe": {"entity": {"eventHubName": "orders"}},
        "publishing": {
            "dns": {
                "zone": {
                    "subscriptionId": "00000000-0000-0000-0000-000000000000",
                    "resourceGroup": "dns",
                    "zoneName": "messaging.contoso.com",
                    "credential": {"servicePrincipalSecretRef": {"name": "sp"}},
                },
                "producerRecordName": "orders-send",
                "consumerRecordName": "orders-receive",
                "ttlSeconds": 20,
            }
        },
    }
)
FAILING_BACK = GroupState(
    phase="FailingBack", producer="weu", consumer="neu", producer_since=SINCE, consumer_since=SINCE
)


def test_the_config_map_names_each_roles_member_and_endpoint() -> None:
    owner = Owner("federator.io/v1alpha1", "FailoverGroup", "orders", "u-1")
    config_map = endpoints_config_map("orders", "ns", SPEC, FAILING_BACK, owner)
    assert config_map["metadata"]["name"] == "orders-endpoints"
    assert config_map["metadata"]["ownerReferences"] == [owner.reference()]
    assert config_map["data"] == {
        "phase": "FailingBack",
        "primaryMember": "weu",
        "producerMember": "weu",
        "producerEndpoint": "orders-weu.servicebus.windows.net",
        "producerSince": "2026-11-01T12:00:00Z",
        "producerSecretRef": "w/connectionString",
        "consumerMember": "neu",
        "consumerEndpoint": "localhost:5672",
        "consumerSince": "2026-11-01T12:00:00Z",
    }


def test_dns_has_srv_records_per_member_and_a_cname_per_role() -> None:
    assert dns_record_sets(SPEC, FAILING_BACK) == [
        RecordSet(
            "_azure_servicebus._amqp.weu",
            "SRV",
            20,
            srv=(
                (1, 1, 5671, "orders-weu.servicebus.windows.net"),
                (2, 2, 443, "orders-weu.servicebus.windows.net"),
            ),
        ),
        RecordSet(
            "_azure_servicebus._amqp.neu",
            "SRV",
            20,
            srv=((1, 1, 5671, "localhost"), (2, 2, 443, "localhost")),
        ),
        RecordSet("orders-send", "CNAME", 20, cname="weu.messaging.contoso.com"),
        RecordSet("orders-receive", "CNAME", 20, cname="neu.messaging.contoso.com"),
    ]
    without_dns = SPEC.model_copy(update={"publishing": SPEC.publishing.model_copy(update={"dns": None})})
    assert dns_record_sets(without_dns, FAILING_BACK) == []
