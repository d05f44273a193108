"""The pieces a failover drill reads a local run with: outages, the group's records, and what the
switches did to the events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from federator.local.drill import (
    Archived,
    GroupFiles,
    Sent,
    damage,
    detection_goal,
    left_behind,
    percentiles,
    wait_until,
)
from federator.local.outage import down_namespaces, set_outage
from federator.local.state import StateDir
from federator_contract.api.failovergroup import Probe, SwitchRecord


def test_an_outage_names_the_namespace_until_it_is_brought_back(tmp_path: Path) -> None:
    state = StateDir(tmp_path)
    state.emulator_outages.parent.mkdir(parents=True)
    set_outage(state, "primary", True)
    set_outage(state, "archive", True)
    assert state.emulator_outages.read_text() == "archive\nprimary\n"
    set_outage(state, "primary", False)
    assert down_namespaces(state) == {"archive"}


def test_the_detection_goal_is_the_failing_probes_and_a_second() -> None:
    assert detection_goal(Probe(period_seconds=2, failure_threshold=3)) == 7.0


def test_a_switch_record_counts_from_the_second_it_was_decided_in(tmp_path: Path) -> None:
    group = GroupFiles(StateDir(tmp_path), "default", "orders")
    group.state.group_dir("default", "orders").mkdir(parents=True)
    switch = {"roles": "both", "cause": "requested", "detected": "2027-01-15T08:00:00Z", "decidedSeconds": 0}
    records = [
        {**switch, "target": "secondary", "decided": "2027-01-15T08:00:00Z", "eventsLeftBehind": 3},
        {**switch, "target": "primary", "decided": "2027-01-15T08:00:10Z"},
    ]
    (group.state.group_dir("default", "orders") / "status.json").write_text(json.dumps({"switches": records}))
    decided = 1_800_000_000.0  # 2027-01-15T08:00:00Z

    def events_left(record: SwitchRecord | None) -> int | str | None:
        return "no record" if record is None else record.events_left_behind

    assert events_left(group.switch_to("secondary", decided + 0.7)) == 3
    assert events_left(group.switch_to("secondary", decided + 1)) == "no record"
    assert [r.target for r in group.switches_to("primary", decided)] == ["primary"]
    assert events_left(group.switch_to("primary", decided + 1)) is None


def test_events_lost_duplicated_out_of_order_and_left_behind_are_counted_per_key() -> None:
    sent = [Sent(0, n, "primary", float(n)) for n in range(4)]
    archived = [
        Archived(0, 0, "primary", 0.0, 1.0),
        Archived(0, 2, "primary", 2.0, 3.0),
        Archived(0, 0, "primary", 0.0, 3.5),  # again
        Archived(0, 1, "primary", 1.0, 9.0),  # after a later one, and after the switch flowed
    ]

    assert damage(sent, archived).__dict__ == {"lost": 1, "duplicated": 1, "out_of_order": 2}

    class Moved:
        to, flowing = "secondary", 5.0

    assert left_behind(sent, archived, [Moved()]) == [2]  # number 1 (archived later) and 3 (never)


def test_percentiles_of_nothing_say_so() -> None:
    assert percentiles([]) == {"p50": None, "p99": None, "n": 0}
    assert percentiles([3.0, 1.0, 2.0]) == {"p50": 2.0, "p99": 3.0, "n": 3}


def test_waiting_names_what_did_not_happen() -> None:
    with pytest.raises(TimeoutError, match="the group did not switch"):
        wait_until(lambda: None, "the group did not switch", 0.1)
