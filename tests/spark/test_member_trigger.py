"""A member of a shared application that sets no trigger interval of its own is paced: a batch at most
every ``MEMBER_TRIGGER_MS`` (``federator_spark.scheduling``), so that many quiet members do not each make
a batch, at a fixed cost, for every few events. A task's own interval stands; the application's
``sparkConf`` may change the pace or lift it, and a setting that is not a duration is refused naming the
setting. No JVM here (``test_member_trigger_started.py`` starts the queries)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from test_member_batches import HUB, QUEUE, plan

from federator_spark.scheduling import (
    MEMBER_TRIGGER_MS,
    MEMBER_TRIGGER_SETTING,
    member_trigger_ms,
    paced,
)


def test_a_member_without_a_trigger_of_its_own_is_paced(tmp_path: Path) -> None:
    alone = plan(tmp_path, HUB)
    member = paced(alone, member_trigger_ms(None))

    assert alone.trigger_seconds == 0  # a task alone starts its next batch as soon as one ends
    assert member.trigger_seconds == MEMBER_TRIGGER_MS / 1000 == 0.5
    assert member == dataclasses.replace(alone, trigger_seconds=0.5)  # nothing else changes


def test_a_member_of_a_service_bus_entity_is_paced_alike(tmp_path: Path) -> None:
    assert paced(plan(tmp_path, QUEUE), member_trigger_ms(None)).trigger_seconds == 0.5


def test_a_trigger_interval_the_task_sets_itself_stands(tmp_path: Path) -> None:
    own = plan(tmp_path, HUB, {"triggerIntervalSeconds": 3})

    assert paced(own, member_trigger_ms(None)) == own


@pytest.mark.parametrize(("setting", "seconds"), [(None, 0.5), ("250", 0.25), (" 2000 ", 2.0), ("0", 0)])
def test_the_application_settings_change_the_pace_or_lift_it(
    tmp_path: Path, setting: str | None, seconds: float
) -> None:
    alone = plan(tmp_path, HUB)

    assert paced(alone, member_trigger_ms(setting)) == dataclasses.replace(alone, trigger_seconds=seconds)


def test_a_driver_given_a_pace_that_is_not_a_count_of_milliseconds_refuses_it_naming_the_setting() -> None:
    # The operator refuses it when the application is applied (test_member_settings_checked.py); a JVM
    # started otherwise (a benchmark, a hand-made spark-submit) fails the member's start with this.
    with pytest.raises(ValueError, match=f"^{MEMBER_TRIGGER_SETTING}: a whole number of milliseconds"):
        member_trigger_ms("250ms")
