"""A member of a shared application reads its event hub in batches of a bounded size
(``federator_spark.scheduling``), so that a member catching up a backlog holds the application's task
slots for a fraction of a second at a time, not for the whole backlog. A limit the task sets itself
stands; the application's ``sparkConf`` may change the bound or lift it. No JVM here."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from pyspark.sql.streaming.datasource import ReadMaxRows

from federator_contract.taskconfig import TaskConfig
from federator_spark import pipeline
from federator_spark.scheduling import (
    MEMBER_EVENTS_PER_TRIGGER,
    MEMBER_EVENTS_SETTING,
    bounded,
    member_events_per_trigger,
    paced,
    phased,
)
from federator_spark.sources.eventhubs import EventHubsStreamReader, cap
from federator_spark.sources.eventhubs_settings import HubSourceSettings
from federator_spark.sources.eventhubs_slices import EventHubsSliceReader, SliceGroup
from federator_spark.sources.servicebus_settings import SourceSettings
from federator_spark.sources.trigger_phase import TriggerPhase
from support.connections import write_connection_files

KEY = "Endpoint=sb://{host}/;SharedAccessKeyName=k;SharedAccessKey=a2V5;UseDevelopmentEmulator=true"
HUB = {"eventHub": {"eventHubName": "orders"}}
QUEUE = {"serviceBus": {"queueName": "orders"}}
PARTITIONS = 4
START = dict.fromkeys(map(str, range(PARTITIONS)), -1)
FULL = {p: MEMBER_EVENTS_PER_TRIGGER // PARTITIONS - 1 for p in START}  # a whole bound over four partitions


class Slots:
    """What ``pipeline.task_slots`` reads of a session: ``local[slots]``, no executors configured."""

    def __init__(self, slots: int) -> None:
        self.sparkContext = SimpleNamespace(getConf=lambda: {}, defaultParallelism=slots)


def slice_groups(source: HubSourceSettings, start: dict[str, int], end: dict[str, int]) -> list[SliceGroup]:
    """The Spark tasks (groups of slices) a batch from ``start`` to ``end`` of ``source`` is written in."""
    reader = EventHubsSliceReader(source)
    reader._partition_count = PARTITIONS
    groups = reader.partitions(start, end)
    assert all(isinstance(group, SliceGroup) for group in groups)
    return cast(list[SliceGroup], groups)


def plan(tmp_path: Path, source: dict[str, Any], runtime: dict[str, Any] | None = None, **extra: Any) -> Any:
    connection = {"emulator": {"namespace": "a"}}
    target = {"eventHub": {"connection": {"emulator": {"namespace": "b"}}, "eventHubName": "copy"}}
    config = TaskConfig.from_raw(
        {
            "metadata": {"name": "orders", "namespace": "shop"},
            "spec": {
                "source": {kind: {"connection": connection, **value} for kind, value in source.items()},
                "targets": [{"name": "copy", **target}],
                **({"runtime": runtime} if runtime else {}),
            },
            "checkpointLocation": f"file://{tmp_path / 'checkpoint'}",
            "emulatorConnectionFiles": write_connection_files(
                tmp_path / "connections",
                {"a": KEY.format(host="a.example"), "b": KEY.format(host="b.example")},
            ),
            **extra,
        }
    )
    return pipeline.plan_task(config)


def test_a_member_without_a_limit_of_its_own_reads_its_event_hub_in_bounded_batches(tmp_path: Path) -> None:
    alone = plan(tmp_path, HUB)
    member = bounded(alone, member_events_per_trigger(None))

    assert alone.source.max_events is None  # a task alone reads everything pending at once, as before
    assert isinstance(member.source, HubSourceSettings)
    assert member.source.max_events == MEMBER_EVENTS_PER_TRIGGER
    assert member.source == HubSourceSettings(
        **{**vars(alone.source), "max_events": MEMBER_EVENTS_PER_TRIGGER, "slice_tasks": 1}
    )
    assert (member.write, member.layout, member.key) == (alone.write, alone.layout, alone.key)


def test_a_backlog_batch_of_a_member_holds_at_most_the_bound_across_its_partitions(tmp_path: Path) -> None:
    member = bounded(plan(tmp_path, HUB), member_events_per_trigger(None))
    assert isinstance(member.source, HubSourceSettings)
    limit = EventHubsStreamReader(member.source).getDefaultReadLimit()
    start = {"0": -1, "1": -1, "2": -1, "3": -1}
    backlog = {partition: 24_999 for partition in start}  # 100,000 events pending

    assert isinstance(limit, ReadMaxRows) and limit.max_rows == MEMBER_EVENTS_PER_TRIGGER
    ends = cap(start, backlog, limit.max_rows)
    assert {p: ends[p] - start[p] for p in start} == dict.fromkeys(start, MEMBER_EVENTS_PER_TRIGGER // 4)


def test_a_members_bounded_batch_is_one_task_so_the_others_keep_the_other_slots(tmp_path: Path) -> None:
    member = bounded(plan(tmp_path, HUB), member_events_per_trigger(None))

    source = pipeline.starting_source(Slots(2), member, None)

    assert isinstance(source, HubSourceSettings) and source.slice_tasks == 1
    assert [len(group.slices) for group in slice_groups(source, START, FULL)] == [PARTITIONS]


def test_a_task_alone_or_with_a_limit_of_its_own_spreads_a_batch_over_the_slots(tmp_path: Path) -> None:
    own = bounded(plan(tmp_path, HUB, {"maxEventsPerTrigger": 50_000}), member_events_per_trigger(None))

    for task in (plan(tmp_path, HUB), own):
        source = pipeline.starting_source(Slots(2), task, None)
        assert isinstance(source, HubSourceSettings) and source.slice_tasks == 2
        assert [len(group.slices) for group in slice_groups(source, START, FULL)] == [2, 2]


def test_a_limit_the_task_sets_itself_stands(tmp_path: Path) -> None:
    own = plan(tmp_path, HUB, {"maxEventsPerTrigger": 50_000})

    assert bounded(own, member_events_per_trigger(None)) == own


def test_a_service_bus_member_keeps_its_batches_of_at_most_max_messages_per_batch(tmp_path: Path) -> None:
    queue = plan(tmp_path, QUEUE)

    assert isinstance(queue.source, SourceSettings)
    assert bounded(queue, member_events_per_trigger(None)) == queue


def test_a_follower_bounded_no_longer_counts_on_each_batch_reading_every_partition_to_its_end(
    tmp_path: Path,
) -> None:
    follower = plan(tmp_path, HUB, following={"group": "orders", "member": "east", "skewSeconds": 5})
    member = bounded(follower, member_events_per_trigger(None))

    assert follower.write.following is not None and member.write.following is not None
    assert follower.write.following.covers_all_partitions is True
    assert member.write.following.covers_all_partitions is False
    assert member.write.following.member == "east"


@pytest.mark.parametrize(
    ("setting", "events"), [(None, MEMBER_EVENTS_PER_TRIGGER), ("500", 500), (" 0 ", None)]
)
def test_the_application_settings_change_the_bound_or_lift_it(
    setting: str | None, events: int | None
) -> None:
    assert member_events_per_trigger(setting) == events


def test_a_lifted_bound_leaves_the_plan_as_a_task_alone_has_it(tmp_path: Path) -> None:
    alone = plan(tmp_path, HUB)

    assert bounded(alone, member_events_per_trigger("0")) == alone


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("many", "a whole number of events (0: no bound), got 'many'"),
        ("-5", "0 (no bound) or more events, got -5"),
    ],
)
def test_a_bound_that_is_not_a_count_of_events_is_refused_naming_the_setting(
    setting: str, message: str
) -> None:
    with pytest.raises(ValueError, match=f"^{MEMBER_EVENTS_SETTING}: ") as raised:
        member_events_per_trigger(setting)

    assert message in str(raised.value)


def test_a_paced_member_begins_its_batches_at_its_phase_of_the_interval(tmp_path: Path) -> None:
    alone = plan(tmp_path / "hub", HUB)
    member = paced(alone, 500)
    queue = paced(plan(tmp_path / "queue", QUEUE), 500)

    assert phased(member, 0.5).source.phase == TriggerPhase(interval=0.5, offset=0.25)
    assert phased(queue, 0.25).source.phase == TriggerPhase(interval=0.5, offset=0.125)
    assert phased(alone, 0.5) == alone  # no trigger interval: batches back to back, nothing to spread
