"""Semantic slips are warnings: printed with their field path, exit code 0 unless `--strict`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner
from validation_helpers import group, spillover_mirror, task, warnings

from federator.cli.main import app

runner = CliRunner()
HUB = {"connection": {"emulator": {"namespace": "primary"}}, "eventHubName": "orders"}


def source_hub(**fields: Any) -> dict[str, Any]:
    return {"eventHub": {**HUB, **fields}}


def test_a_target_that_is_the_source_itself() -> None:
    obj = task(targets=[{"name": "loop", "eventHub": HUB}])
    assert warnings(obj) == [
        "spec.targets[0]: writes to the source event hub itself: every event written would be read again"
    ]


def test_a_dead_letter_target_that_is_the_source_subscriptions_topic() -> None:
    source = {
        "serviceBus": {
            "connection": {"emulator": {"namespace": "a"}},
            "topicName": "t",
            "subscriptionName": "s",
        }
    }
    bus = {"serviceBus": {"connection": {"emulator": {"namespace": "a"}}, "topicName": "t"}}
    obj = task(source=source, deadLetter=bus)
    assert warnings(obj) == [
        "spec.deadLetter: writes to the entity the source reads: messages written there are read again, "
        "unless a subscription rule filters them out"
    ]


def test_two_targets_writing_to_one_entity() -> None:
    other = {"connection": {"emulator": {"namespace": "b"}}, "eventHubName": "copy"}
    obj = task(targets=[{"name": "one", "eventHub": other}, {"name": "two", "eventHub": other}])
    assert warnings(obj) == ["spec.targets[1]: writes to the same entity as spec.targets[0]"]


def test_duplicate_partition_ids() -> None:
    obj = task(source=source_hub(partitionIds=["0", "1", "01"]))
    assert warnings(obj) == [
        "spec.source.eventHub.partitionIds[2]: names the partition of partitionIds[1] again"
    ]


def test_a_start_time_in_the_future() -> None:
    later = (datetime.now(UTC) + timedelta(days=3 * 365)).replace(microsecond=0)
    start = {"position": "enqueuedTime", "enqueuedTime": later.isoformat()}
    assert warnings(task(source=source_hub(startPosition=start))) == [
        f"spec.source.eventHub.startPosition.enqueuedTime: is in the future ({later.isoformat()}): "
        "nothing enqueued before then will be replicated"
    ]
    soon = {"position": "enqueuedTime", "enqueuedTime": datetime.now(UTC).isoformat()}
    assert warnings(task(source=source_hub(startPosition=soon))) == []


def test_a_probe_timeout_longer_than_its_period() -> None:
    obj = group(probe={"periodSeconds": 5, "timeoutSeconds": 30, "entity": {"queueName": "q"}})
    assert warnings(obj) == [
        "spec.probe.timeoutSeconds: is longer than periodSeconds (30 > 5): "
        "a slow member is probed again before its last probe timed out"
    ]


def test_a_spillover_auxiliary_queue_that_is_a_spilled_queue() -> None:
    assert warnings(spillover_mirror(auxiliaryQueueName="orders")) == [
        "spec.spillover.auxiliaryQueueName: is one of the spilled queues: messages that dead-letter again "
        "after a spill would land in the queue they came from"
    ]


def test_a_resource_group_name_azure_refuses() -> None:
    zone = {
        "subscriptionId": "00000000-0000-0000-0000-000000000000",
        "resourceGroup": "dns-rg.",
        "zoneName": "messaging.example.com",
        "credential": {"servicePrincipalSecretRef": {"name": "arm"}},
    }
    dns = {"zone": zone, "producerRecordName": "send", "consumerRecordName": "receive"}
    assert warnings(group(publishing={"dns": dns})) == [
        "spec.publishing.dns.zone.resourceGroup: 'dns-rg.' ends in a period, which Azure refuses in a "
        "resource group name"
    ]


def test_validate_prints_warnings_and_fails_on_them_only_when_strict(tmp_path: Path) -> None:
    manifest = tmp_path / "task.yaml"
    manifest.write_text(yaml.safe_dump(task(targets=[{"name": "loop", "eventHub": HUB}])), encoding="utf-8")
    lenient = runner.invoke(app, ["validate", str(manifest)])
    strict = runner.invoke(app, ["validate", "--strict", str(manifest)])
    assert lenient.exit_code == 0 and strict.exit_code == 1
    for result in (lenient, strict):
        assert "WARN" in result.output and "spec.targets[0]: writes to the source event hub" in result.output
        assert "1 valid (1 with warnings), 0 invalid" in result.output


def test_render_renders_and_prints_the_warnings_beside(tmp_path: Path) -> None:
    hub = {"connection": {"secretRef": {"name": "orders"}}, "eventHubName": "orders"}
    obj = task(source={"eventHub": hub}, targets=[{"name": "loop", "eventHub": hub}])
    manifest = tmp_path / "task.yaml"
    manifest.write_text(yaml.safe_dump(obj), encoding="utf-8")
    result = runner.invoke(app, ["render", "-f", str(manifest)])
    assert result.exit_code == 0
    assert "warning: spec.targets[0]: writes to the source event hub itself" in result.output
    assert "kind: ConfigMap" in result.output
