"""The operator runs a FailoverGroup over two emulators: it fails over when the producers' member stops
answering, fails back producers first and consumers only once the secondary is drained, publishes every
switch (ConfigMap, Azure DNS, Events, status, metric), and re-plans a ReplicationTask that follows it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.core.exceptions import ResourceNotFoundError
from azure.mgmt.dns import DnsManagementClient
from azure.servicebus import ServiceBusClient, ServiceBusMessage

from federator import metrics
from federator.handlers.context import OperatorContext
from federator.provision.environment import ManagementEnvironment
from federator.settings import OperatorSettings
from federator_emulator.server import RunningEmulator
from federator_emulator.testing import AsyncEmulatorCredential, EmulatorCredential, EmulatorFactory
from support.kopf_runner import reconcile_passes, running_operator
from support.kube import KubeServer
from support.polling import eventually, eventually_more

pytestmark = pytest.mark.slow

NS = "default"
GROUPS = f"/apis/federator.io/v1alpha1/namespaces/{NS}/failovergroups"
RT = f"/apis/federator.io/v1alpha1/namespaces/{NS}/replicationtasks"
APPS = f"/apis/sparkoperator.k8s.io/v1beta2/namespaces/{NS}/sparkapplications"
CONFIGMAPS = f"/api/v1/namespaces/{NS}/configmaps"
SECRETS = f"/api/v1/namespaces/{NS}/secrets"
EVENTS = f"/api/v1/namespaces/{NS}/events"
MERGE = "application/merge-patch+json"
ZONE = "federator.test"
SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"


class Members:
    """Two namespaces, each in its own emulator so that one can be stopped; the secondary serves DNS."""

    def __init__(self, factory: EmulatorFactory) -> None:
        def config(name: str) -> dict[str, Any]:
            return {"namespaces": [{"name": name, "queues": [{"name": "orders"}]}]}

        self.weu = factory(config("weu"))
        self.neu = factory({**config("neu"), "dnsZones": [{"name": ZONE, "subscriptionId": SUBSCRIPTION}]})

    def __getitem__(self, name: str) -> RunningEmulator:
        return {"weu": self.weu, "neu": self.neu}[name]


@pytest.fixture
def members(emulator_factory: EmulatorFactory) -> Members:
    return Members(emulator_factory)


@pytest.fixture
def operator(
    members: Members, kube: KubeServer, kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[KubeServer]:
    """Federator's handlers with Azure DNS pointed at the secondary's emulator."""
    import federator.handlers  # noqa: F401 — registers the handlers

    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    management = ManagementEnvironment(
        arm_endpoint=members.neu.arm_endpoint,
        connection_verify=str(members.neu.ca_path),
        credential_factory=lambda source: AsyncEmulatorCredential(members.neu),
    )
    settings = OperatorSettings(observe_interval_seconds=1, retry_seconds=1)
    memo = OperatorContext(settings, management, serve_metrics=False)
    for name in ("weu", "neu"):
        kube.request(
            "POST", SECRETS, secret(f"{name}-conn", {"connectionString": members[name].connection_string()})
        )
    kube.request("POST", SECRETS, secret("dns-sp", {"tenantId": "t", "clientId": "c", "clientSecret": "s"}))
    with running_operator(namespaces=[NS], memo=memo):
        yield kube


def secret(name: str, values: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": values}


def group(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "federator.io/v1alpha1",
        "kind": "FailoverGroup",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "primaryMember": "weu",
            "members": [
                {
                    "name": m,
                    "endpoint": f"orders-{m}.servicebus.windows.net",
                    "connection": {"secretRef": {"name": f"{m}-conn"}},
                }
                for m in ("weu", "neu")
            ],
            "probe": {"periodSeconds": 1, "timeoutSeconds": 3, "failureThreshold": 2},
            "failback": {"drainEntities": [{"queueName": "orders"}], "drainTimeoutSeconds": 300},
            **spec,
        },
    }


def get(kube: KubeServer, path: str) -> dict[str, Any] | None:
    status, body = kube.request("GET", path)
    return body if status == 200 else None


def status(kube: KubeServer, name: str) -> dict[str, Any]:
    return (get(kube, f"{GROUPS}/{name}") or {}).get("status") or {}


def condition(found: dict[str, Any], type_: str) -> dict[str, Any]:
    return next((c for c in found.get("conditions") or [] if c["type"] == type_), {})


def endpoints(kube: KubeServer, name: str) -> dict[str, str]:
    return (get(kube, f"{CONFIGMAPS}/{name}") or {}).get("data") or {}


def events(kube: KubeServer, name: str) -> list[tuple[str, str, str]]:
    return [
        (e.get("type", ""), e.get("reason", ""), e.get("message", ""))
        for e in kube.request("GET", EVENTS)[1]["items"]
        if e.get("involvedObject", {}).get("name") == name
    ]


def failovers(name: str, source: str, target: str) -> float:
    labels = {"namespace": NS, "group": name, "from": source, "to": target}
    return metrics.REGISTRY.get_sample_value("federator_failovers_total", labels) or 0.0


def phase_count(name: str, phase: str) -> float:
    labels = {"namespace": NS, "group": name, "phase": phase}
    return metrics.REGISTRY.get_sample_value("federator_failover_phase_seconds_count", labels) or 0.0


def dns_records(members: Members) -> dict[str, Any]:
    client = DnsManagementClient(
        EmulatorCredential(members.neu),
        SUBSCRIPTION,
        base_url=members.neu.arm_endpoint,
        connection_verify=str(members.neu.ca_path),
    )
    with client:
        return {
            "send": client.record_sets.get("emulator", ZONE, "orders-send", "CNAME").cname_record.cname,
            "receive": client.record_sets.get("emulator", ZONE, "orders-receive", "CNAME").cname_record.cname,
            "srv": sorted(
                (r.priority, r.port, r.target)
                for r in client.record_sets.get(
                    "emulator", ZONE, "_azure_servicebus._amqp.weu", "SRV"
                ).srv_records
            ),
        }


DNS = {
    "dns": {
        "zone": {
            "subscriptionId": SUBSCRIPTION,
            "resourceGroup": "emulator",
            "zoneName": ZONE,
            "credential": {"servicePrincipalSecretRef": {"name": "dns-sp"}},
        },
        "producerRecordName": "orders-send",
        "consumerRecordName": "orders-receive",
    }
}


def test_the_group_fails_over_when_the_primary_stops_and_publishes_the_switch(
    operator: KubeServer, members: Members
) -> None:
    kube = operator
    # The counter is process-wide: other tests (tests/kubectl) fail an `orders` group over too.
    failovers_before = failovers("orders", "weu", "neu")
    detections_before = phase_count("orders", "detected_to_decided")
    kube.request(
        "POST",
        GROUPS,
        group("orders", mode="automatic", publishing={"configMapName": "orders-endpoints", **DNS}),
    )
    eventually(lambda: condition(status(kube, "orders"), "Ready").get("reason") == "Active", timeout=30)
    published = endpoints(kube, "orders-endpoints")
    assert published["producerMember"] == published["consumerMember"] == "weu"
    assert published["producerEndpoint"] == "orders-weu.servicebus.windows.net"
    assert published["producerSecretRef"] == "weu-conn/connectionString"
    assert "SharedAccessKey" not in json.dumps(published), "a connection string must never be published"
    assert dns_records(members) == {
        "send": f"weu.{ZONE}",
        "receive": f"weu.{ZONE}",
        "srv": [
            (1, 5671, "orders-weu.servicebus.windows.net"),
            (2, 443, "orders-weu.servicebus.windows.net"),
        ],
    }

    members.weu.stop()
    found = eventually(lambda: (s := status(kube, "orders")).get("phase") == "FailedOver" and s, timeout=30)
    assert (found["producerMember"], found["consumerMember"]) == ("neu", "neu")
    [weu] = [p for p in found["probes"] if p["member"] == "weu"]
    assert not weu["healthy"] and weu["consecutiveFailures"] >= 2 and weu["message"]
    assert condition(found, "Ready")["status"] == "True"
    failed_over = condition(found, "FailedOver")
    assert (failed_over["status"], failed_over["reason"]) == ("True", "OnSecondary")
    assert "set spec.activeMember to weu" in failed_over["message"]
    published = endpoints(kube, "orders-endpoints")
    assert (published["producerMember"], published["consumerMember"], published["phase"]) == (
        "neu",
        "neu",
        "FailedOver",
    )
    assert published["consumerEndpoint"] == "orders-neu.servicebus.windows.net"
    eventually(
        lambda: (
            dns_records(members)["send"] == f"neu.{ZONE}" and dns_records(members)["receive"] == f"neu.{ZONE}"
        )
    )
    said = events(kube, "orders")
    assert any(kind == "Warning" and reason == "FailedOver" and "weu" in text for kind, reason, text in said)
    assert ("Warning", "MemberUnhealthy") in {(kind, reason) for kind, reason, _ in said}
    assert failovers("orders", "weu", "neu") - failovers_before == 1
    # Measured: from the first failed probe to the decision (two probes 1 s apart), then the publishing.
    [measured] = found["switches"]
    assert (measured["source"], measured["target"], measured["cause"]) == ("weu", "neu", "failover")
    assert measured["detected"] == weu["failingSince"] and 0.5 <= measured["decidedSeconds"] <= 10
    assert 0 <= measured["publishedSeconds"] < 10 and measured["complete"]
    told = [text for _, reason, text in said if reason == "SwitchMeasured"]
    assert told and told[0].startswith("switch weu → neu (failover, both): detected → decided ")
    assert phase_count("orders", "detected_to_decided") - detections_before == 1

    kube.request("DELETE", f"{GROUPS}/orders")
    eventually(lambda: get(kube, f"{GROUPS}/orders") is None, message="the group was not released")
    assert endpoints(kube, "orders-endpoints") == {}
    with pytest.raises(ResourceNotFoundError):
        dns_records(members)
    assert kube.server_errors() == []


def test_failback_moves_producers_first_and_a_following_task_after_the_drain(
    operator: KubeServer, members: Members
) -> None:
    kube = operator
    kube.request("POST", GROUPS, group("billing", activeMember="neu"))
    kube.request("POST", RT, following_task())
    eventually(lambda: status(kube, "billing").get("phase") == "FailedOver", timeout=30)
    task = eventually(lambda: task_config(kube), timeout=30)
    assert task["spec"]["source"]["serviceBus"]["connection"] == {
        "secretRef": {"name": "neu-conn", "key": "connectionString"}
    }
    assert task["following"]["group"] == "billing" and task["following"]["member"] == "neu"
    assert task["following"]["skewSeconds"] == 30
    assert task["following"]["switchedAt"] == status(kube, "billing")["consumerSince"]
    rt = eventually(
        lambda: (
            (r := get(kube, f"{RT}/archive")) and condition(r.get("status") or {}, "SourceReachable") and r
        )
    )
    assert rt["status"]["activeSourceMember"] == "neu"
    assert condition(rt["status"], "SourceReachable")["status"] == "True"
    # Its own host watches the task's config: the switch back must leave its SparkApplication as it is.
    app_before = eventually(lambda: (a := get(kube, f"{APPS}/archive")) and a["spec"])

    # Published directly to the secondary while failed over: consumers must read it before they move.
    with ServiceBusClient.from_connection_string(members.neu.connection_string()) as bus:
        with bus.get_queue_sender("orders") as sender:
            sender.send_messages([ServiceBusMessage("a"), ServiceBusMessage("b")])
        kube.request("PATCH", f"{GROUPS}/billing", {"spec": {"activeMember": "weu"}}, MERGE)
        found = eventually(lambda: (s := status(kube, "billing")).get("drainPending") and s, timeout=30)
        assert (found["phase"], found["producerMember"], found["consumerMember"]) == (
            "FailingBack",
            "weu",
            "neu",
        )
        assert found["drainPending"] == [{"entity": "orders"}]
        reconciling = condition(found, "Reconciling")
        assert (reconciling["status"], reconciling["reason"]) == ("True", "FailingBack")
        published = endpoints(kube, "billing-endpoints")
        assert (published["producerMember"], published["consumerMember"]) == ("weu", "neu")
        eventually(lambda: ("Normal", "FailingBack") in {(k, r) for k, r, _ in events(kube, "billing")})
        assert failovers("billing", "neu", "weu") == 1

        before = status(kube, "billing")["lastTransitionTime"]
        # Three more passes of each counted: the first two are done, their writes included.
        eventually_more(lambda: reconcile_passes("FailoverGroup"), 3, message="the group made no more rounds")
        eventually_more(lambda: reconcile_passes("ReplicationTask"), 3, message="the task is not observed")
        assert status(kube, "billing")["phase"] == "FailingBack", (
            "consumers stay while the secondary holds messages"
        )
        assert get(kube, f"{RT}/archive")["status"]["activeSourceMember"] == "neu"  # type: ignore[index]

        with bus.get_queue_receiver("orders", max_wait_time=5) as receiver:
            received = receiver.receive_messages(max_message_count=2, max_wait_time=5)
            assert len(received) == 2
            for message in received:
                receiver.complete_message(message)

    found = eventually(lambda: (s := status(kube, "billing")).get("phase") == "Normal" and s, timeout=30)
    assert found["consumerMember"] == "weu" and found["lastTransitionTime"] != before
    assert endpoints(kube, "billing-endpoints")["consumerMember"] == "weu"
    assert any(reason == "FailbackComplete" for _, reason, _ in events(kube, "billing"))

    task = eventually(
        lambda: (t := task_config(kube)) and t["following"]["member"] == "weu" and t, timeout=30
    )
    assert task["spec"]["source"]["serviceBus"]["connection"] == {
        "secretRef": {"name": "weu-conn", "key": "connectionString"}
    }

    assert get(kube, f"{APPS}/archive")["spec"] == app_before  # type: ignore[index]
    eventually(lambda: get(kube, f"{RT}/archive")["status"]["activeSourceMember"] == "weu")  # type: ignore[index]
    task_events = events(kube, "archive")
    assert any(
        reason == "FollowedMemberSwitched" and "billing/weu (was billing/neu)" in text
        for _, reason, text in task_events
    )
    assert not any(reason == "DriftCorrected" for _, reason, _ in task_events), "a switch is no drift"


def following_task() -> dict[str, Any]:
    return {
        "apiVersion": "federator.io/v1alpha1",
        "kind": "ReplicationTask",
        "metadata": {"name": "archive", "namespace": NS},
        "spec": {
            "source": {
                "serviceBus": {
                    "connection": {"failoverGroupRef": {"name": "billing", "resumeSkewSeconds": 30}},
                    "queueName": "orders",
                }
            },
            "targets": [
                {
                    "name": "archive",
                    "eventHub": {
                        "connection": {"secretRef": {"name": "weu-conn"}},
                        "eventHubName": "archive",
                    },
                }
            ],
        },
    }


def task_config(kube: KubeServer) -> dict[str, Any] | None:
    found = get(kube, f"{CONFIGMAPS}/archive-task")
    return json.loads(found["data"]["task.json"]) if found else None
