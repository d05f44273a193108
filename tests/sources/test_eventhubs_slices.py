"""How a batch's slices are spread over a bounded number of write tasks: every slice in exactly one
task, task loads as even as the slice sizes allow, partitions in order inside a task."""

from __future__ import annotations

import pytest

from federator_spark.connections import Connection
from federator_spark.sources.eventhubs import HubPartition
from federator_spark.sources.eventhubs_settings import HubSourceSettings
from federator_spark.sources.eventhubs_slices import EventHubsSliceReader, SliceGroup, spread


def slices(*sizes: int) -> list[HubPartition]:
    return [HubPartition(str(i), len(sizes), 100, 100 + size) for i, size in enumerate(sizes)]


def ids(groups: list[list[HubPartition]]) -> list[list[str]]:
    return [[p.partition_id for p in group] for group in groups]


def test_equal_slices_are_dealt_out_evenly_and_kept_in_partition_order() -> None:
    assert ids(spread(slices(10, 10, 10, 10), 2)) == [["0", "2"], ["1", "3"]]


def test_the_largest_slices_go_first_each_to_the_lightest_task() -> None:
    groups = spread(slices(100, 10, 10, 10, 60, 30), 2)
    assert sorted(sum(p.end - p.start for p in group) for group in groups) == [110, 110]
    assert sorted(p.partition_id for group in groups for p in group) == ["0", "1", "2", "3", "4", "5"]


def test_fewer_slices_than_tasks_give_a_task_per_slice() -> None:
    assert ids(spread(slices(5, 7), 8)) == [["1"], ["0"]]


CONNECTION = Connection(connection_string="Endpoint=sb://h/;SharedAccessKeyName=k;SharedAccessKey=v")


@pytest.mark.parametrize(("tasks", "expected"), [(None, 4), (2, 2), (1, 1)])
def test_the_reader_plans_at_most_slice_tasks_tasks_over_partitions_with_new_events(tasks, expected) -> None:
    reader = EventHubsSliceReader(HubSourceSettings(CONNECTION, "hub", slice_tasks=tasks))
    reader._partition_count = 5
    start = {"0": -1, "1": 900, "2": 400, "3": 0, "4": 700}
    end = {"0": 999, "1": 900, "2": 1400, "3": 500, "4": 800}  # partition 1 has nothing new

    planned = reader.partitions(start, end)

    assert len(planned) == expected and all(isinstance(group, SliceGroup) for group in planned)
    rows = [row for group in planned for row in reader.read(group)]
    assert sorted(rows) == [("0", 5, -1, 999), ("2", 5, 400, 1400), ("3", 5, 0, 500), ("4", 5, 700, 800)]


def test_slice_tasks_must_be_positive() -> None:
    with pytest.raises(ValueError, match="slice_tasks must be at least 1"):
        HubSourceSettings(CONNECTION, "hub", slice_tasks=0)
