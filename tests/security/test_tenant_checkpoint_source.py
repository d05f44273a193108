"""A tenant re-points its task's Secret to another namespace (or renames the entity, or the consumer group):
the checkpoint's positions belong to the old source and applied to the new one would skip or repeat events.
The app refuses before anything is read (`CheckpointSourceMismatch` in its status, naming both sources)
until positions are reset with the `federator.io/reset-positions` annotation, which sets the old checkpoint
aside (kept) and starts afresh. A FailoverGroup member switch is not a change of source."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tenant_manifests import NAMESPACE, replication_task

from federator_contract.appstatus import CHECKPOINT_SOURCE_MISMATCH, read_status
from federator_contract.checkpoints import CheckpointLayout
from federator_contract.taskconfig import RESET_POSITIONS_ANNOTATION, TaskConfig, secret_env_var
from federator_spark import pipeline
from federator_spark.connections import Connection
from federator_spark.source_binding import (
    CheckpointSourceMismatchError,
    Recorded,
    SourceBinding,
    bind,
    binding_of,
    decide,
    differences,
    read_binding,
)
from federator_spark.sources.eventhubs_settings import HubSourceSettings
from federator_spark.sources.servicebus_settings import SourceSettings

SECRET_ENV = secret_env_var("orders-src", "connectionString")


def connection_string(host: str) -> str:
    return f"Endpoint=sb://{host}/;SharedAccessKeyName=send;SharedAccessKey=not-a-real-key"


def tenant_config(tmp_path: Path, reset: str | None = None) -> TaskConfig:
    body = replication_task()
    raw: dict[str, Any] = {
        "metadata": {"name": "orders", "namespace": NAMESPACE},
        "spec": body["spec"],
        "checkpointLocation": f"file://{tmp_path / 'checkpoint'}",
        "secretEnv": {
            "orders-src/connectionString": SECRET_ENV,
            "orders-dst/connectionString": secret_env_var("orders-dst", "connectionString"),
        },
        "statusFile": str(tmp_path / "status.json"),
    }
    if reset is not None:
        raw["resetPositions"] = reset
    return TaskConfig.from_raw(raw)


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The Secret's value as the Spark pods see it, first on the namespace the task was created with."""
    monkeypatch.setenv(SECRET_ENV, connection_string("orders-weu.servicebus.windows.net"))
    monkeypatch.setenv(secret_env_var("orders-dst", "connectionString"), connection_string("dst.example"))
    return monkeypatch


def test_a_secret_re_pointed_to_another_namespace_is_refused_before_anything_is_read(
    tmp_path: Path, secret: pytest.MonkeyPatch
) -> None:
    pipeline.plan_task(tenant_config(tmp_path))  # the first start records the source
    secret.setenv(SECRET_ENV, connection_string("attacker.servicebus.windows.net"))

    with pytest.raises(CheckpointSourceMismatchError) as refused:
        pipeline.plan_task(tenant_config(tmp_path))

    assert refused.value.reason == CHECKPOINT_SOURCE_MISMATCH
    [outage] = read_status(tmp_path / "status.json")["unavailable"]
    assert outage["reason"] == CHECKPOINT_SOURCE_MISMATCH
    message = outage["message"]
    assert "positions of orders on orders-weu.servicebus.windows.net, consumer group $Default" in message
    assert "reads orders on attacker.servicebus.windows.net" in message
    assert RESET_POSITIONS_ANNOTATION in message
    assert "not-a-real-key" not in message
    recorded = read_binding(CheckpointLayout(tmp_path / "checkpoint").source_binding_file)
    assert recorded is not None and recorded.source.namespace == "orders-weu.servicebus.windows.net"

    secret.setenv(SECRET_ENV, connection_string("orders-weu.servicebus.windows.net"))  # put back
    pipeline.plan_task(tenant_config(tmp_path))
    assert "unavailable" not in read_status(tmp_path / "status.json")


def hub(host: str = "a.example", event_hub: str = "orders", group: str = "federator") -> SourceBinding:
    return binding_of(HubSourceSettings(Connection(connection_string(host)), event_hub, group))


def entity(tmp_path: Path, **where: Any) -> SourceBinding:
    where = {"queue": None, "topic": None, "subscription": None, "dead_letter": False, **where}
    layout = CheckpointLayout(tmp_path)
    return binding_of(
        SourceSettings(Connection(connection_string("a.example")), max_messages=10, layout=layout, **where)
    )


@pytest.mark.parametrize(
    ("now", "field"),
    [
        (hub(host="b.example"), "namespace"),
        (hub(event_hub="payments"), "entity"),
        (hub(group="$Default"), "consumer group"),
    ],
)
def test_each_field_of_the_source_binds_the_positions(now: SourceBinding, field: str) -> None:
    before = Recorded(hub(), None)
    assert decide(before, now, None) == "refuse"
    assert [d.split(":")[0] for d in differences(before.source, now)] == [field]


def test_service_bus_entities_differ_by_queue_subscription_and_dead_letter_sub_queue(tmp_path: Path) -> None:
    queue = entity(tmp_path, queue="orders")
    subscription = entity(tmp_path, topic="orders", subscription="eu")
    dead_letters = entity(tmp_path, topic="orders", subscription="eu", dead_letter=True)
    assert (queue.entity, subscription.entity) == ("orders", "orders/subscriptions/eu")
    assert dead_letters.entity == "orders/subscriptions/eu/$deadletterqueue"
    assert decide(Recorded(subscription, None), dead_letters, None) == "refuse"
    assert decide(Recorded(queue, None), subscription, None) == "refuse"


def test_the_same_source_keeps_its_positions_whatever_the_host_s_case() -> None:
    assert decide(Recorded(hub(), None), hub(host="A.Example"), None) == "keep"
    assert decide(Recorded(hub(), "t1"), hub(), "t1") == "keep"  # a token once used resets once


def test_a_new_reset_token_resets_whatever_the_source_and_no_record_is_recorded() -> None:
    assert decide(Recorded(hub(), None), hub(host="b.example"), "t1") == "reset"
    assert decide(Recorded(hub(), "t1"), hub(), "t2") == "reset"
    assert decide(None, hub(), None) == "record"
    assert decide(None, hub(), "t1") == "record"  # a checkpoint from before bindings is adopted, not reset


def hub_settings(host: str) -> HubSourceSettings:
    return HubSourceSettings(Connection(connection_string(host)), "orders", "federator")


def test_a_failover_group_member_switch_is_not_a_change_of_source(tmp_path: Path) -> None:
    on_a = CheckpointLayout(tmp_path, member="weu")
    on_b = CheckpointLayout(tmp_path, member="neu")
    bind(on_a, hub_settings("weu.example"), None)
    bind(on_b, hub_settings("neu.example"), None)  # the switch: the other member's positions, its binding
    bind(on_a, hub_settings("weu.example"), None)  # failback
    assert on_a.source_binding_file != on_b.source_binding_file
    with pytest.raises(CheckpointSourceMismatchError):  # but a member's own Secret re-pointed is refused
        bind(on_b, hub_settings("elsewhere.example"), None)


def test_a_reset_sets_the_old_checkpoint_aside_and_records_the_new_source_once(tmp_path: Path) -> None:
    layout = CheckpointLayout(tmp_path / "checkpoint")
    bind(layout, hub_settings("a.example"), None)
    offsets = layout.query_dir / "offsets"
    offsets.mkdir()
    (offsets / "0").write_text("positions of a.example")

    bind(layout, hub_settings("b.example"), "2026-11-29")

    [aside] = list(layout.previous_dir.iterdir())
    assert (aside / "offsets" / "0").read_text() == "positions of a.example"
    assert read_binding(aside / "federator" / "source.json") == Recorded(hub(host="a.example"), None)
    assert not offsets.exists()
    assert read_binding(layout.source_binding_file) == Recorded(hub(host="b.example"), "2026-11-29")
    offsets.mkdir()
    bind(layout, hub_settings("b.example"), "2026-11-29")  # restarts with the same token keep positions
    assert offsets.is_dir() and len(list(layout.previous_dir.iterdir())) == 1
    with pytest.raises(CheckpointSourceMismatchError):
        bind(layout, hub_settings("a.example"), "2026-11-29")


def test_the_reset_token_is_validated_by_the_task_config(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="resetPositions"):
        tenant_config(tmp_path, reset=" padded ")
    assert json.loads(tenant_config(tmp_path, reset="r1").to_json())["resetPositions"] == "r1"
