"""An Event Hubs source that follows a FailoverGroup shows its arrival on a member even when the member
has nothing new for it: Spark makes no batch for an idle hub whose checkpoint has one (a member the task
read before, as after a failback), and the group times a follower by its first batch there. The run's
first answer with nothing new is that moment (``firstBatchOnMemberTime``); an answer with news leaves it
to the batch it brings."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable
from test_eventhubs_polling import OPTIONS

from federator_contract.driverstatus import FIRST_BATCH_ON_MEMBER
from federator_spark import metrics
from federator_spark.sources.eventhubs import EventHubsStreamReader
from federator_spark.sources.eventhubs_settings import HubSourceSettings

START = {"0": 5, "1": 7}


def reader(
    monkeypatch: pytest.MonkeyPatch, status: Path, answers: list[dict[str, int]]
) -> EventHubsStreamReader:
    """A run of the source whose hub answers ``answers`` in turn (its partitions' last sequence numbers)."""
    found = EventHubsStreamReader(HubSourceSettings.from_options({**OPTIONS, "statusFile": str(status)}))
    monkeypatch.setattr(found, "_last_sequence_numbers", lambda: answers.pop(0))
    return found


def stay_begun(tmp_path: Path) -> Path:
    """The status of a task whose query has just started on another member (``following.prepare``)."""
    status = tmp_path / "status.json"
    metrics.begin_stay(str(status))
    return status


def test_a_member_with_nothing_new_is_arrived_at_with_the_first_answer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    status = stay_begun(tmp_path)
    run = reader(monkeypatch, status, [dict(START)])

    assert run.latestOffset(START, ReadAllAvailable()) == START  # no batch

    assert FIRST_BATCH_ON_MEMBER in metrics.read_status(str(status))


def test_an_answer_with_news_leaves_the_timing_to_its_batch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    status = stay_begun(tmp_path)
    run = reader(monkeypatch, status, [{"0": 6, "1": 7}, {"0": 6, "1": 7}])

    assert run.latestOffset(START, ReadAllAvailable()) == {"0": 6, "1": 7}
    run._next_idle_poll = 0.0  # Spark asks again after the batch
    assert run.latestOffset({"0": 6, "1": 7}, ReadAllAvailable()) == {"0": 6, "1": 7}

    assert FIRST_BATCH_ON_MEMBER not in metrics.read_status(str(status))
