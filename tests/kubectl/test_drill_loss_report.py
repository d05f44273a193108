"""The drill reports (`kubectl federator drill`, and `federator drill -f … --kill` in local mode) give what
a forced switch left behind as the group's record has it: the count once the member left answered again
(`eventsLeftBehindConfirmed`, with what of it is lost), which replaces the estimate made at the switch;
until then the estimate, said to be one, with how old the lag it came from was at the switch."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from federator.kubectl.drill_report import Leg, Report, render
from federator.local.drillrun import Drill, DrillGroup, RunProcess, describe
from federator.local.state import StateDir
from federator_contract.api.failovergroup import FailoverGroupSpec, SwitchRecord

DECIDED = datetime(2026, 11, 29, 23, 20, 36, tzinfo=UTC)
SPEC = {
    "mode": "automatic",
    "primaryMember": "primary",
    "members": [
        {"name": m, "endpoint": "localhost", "connection": {"emulator": {"namespace": m}}}
        for m in ("primary", "secondary")
    ],
    "probe": {"entity": {"eventHubName": "orders"}},
}


def failover(**confirmed: Any) -> SwitchRecord:
    """primary → secondary by the probes; the geo task's lag, measured 5.9 s before, said 44 events."""
    return SwitchRecord(
        source="primary",
        target="secondary",
        roles="both",
        cause="failover",
        detected=DECIDED - timedelta(seconds=2.4),
        decided=DECIDED,
        decided_seconds=2.4,
        published_seconds=0.01,
        events_left_behind=44,
        rpo_seconds=0.948,
        left_behind_measured_at=DECIDED - timedelta(seconds=5.9),
        loss_tasks=["orders-geo"],
        **confirmed,
    )


def reported(record: SwitchRecord) -> tuple[str, list[str]]:
    """The report's RPO row for the record, and the drill's reasons to fail."""
    report = Report("default", "orders", legs=[Leg("primary", "secondary", True, [record])]).judge()
    rows = [line.plain.strip() for line in render(report) if line.plain.strip().startswith("RPO")]
    assert len(rows) == 1, rows
    return rows[0].removeprefix("RPO").strip(), report.reasons


def test_before_the_member_left_answers_again_the_estimate_is_said_to_be_one_with_its_age() -> None:
    row, reasons = reported(failover())
    assert row == "44 events left behind (0.948s), an estimate from a lag measured 5.9s before the switch"
    assert reasons == [f"switch 1 (primary → secondary, both): RPO not 0: {row}"]
    assert f"; {row};" in describe(failover(), killed=DECIDED.timestamp() - 2.4)


def test_the_count_replaces_the_estimate_once_the_member_left_answered_again() -> None:
    record = failover(events_left_behind_confirmed=156, events_lost=0, confirmed_rpo_seconds=0.495)
    row, reasons = reported(record)
    assert (
        row == "156 events left behind (0.495s), counted once primary answered again; none lost, copied late"
    )
    assert reasons == [f"switch 1 (primary → secondary, both): RPO not 0: {row}"]
    assert f"; {row};" in describe(record)


def test_what_retention_removed_is_reported_lost() -> None:
    record = failover(events_left_behind_confirmed=60, events_lost=12, confirmed_rpo_seconds=1.5)
    row, _ = reported(record)
    lost = "12 of them lost (gone from primary)"
    assert row == f"60 events left behind (1.5s), counted once primary answered again; {lost}"


def test_a_count_of_nothing_passes_whatever_the_estimate_said() -> None:
    row, reasons = reported(failover(events_left_behind_confirmed=0, events_lost=0))
    assert row == "0 events left behind, counted once primary answered again; none lost, copied late"
    assert reasons == []


def test_the_local_drill_reports_the_failover_again_once_the_count_is_in_the_groups_record(
    tmp_path: Path,
) -> None:
    state = StateDir(tmp_path)
    group = DrillGroup(tmp_path / "group.yaml", "default", "orders", FailoverGroupSpec.model_validate(SPEC))
    drill = Drill(group, tmp_path / "copy.yaml", RunProcess([], tmp_path, tmp_path / "run.log"), print)
    status = state.group_dir("default", "orders") / "status.json"
    status.parent.mkdir(parents=True)

    def record(**confirmed: Any) -> None:
        written = failover(**confirmed).model_dump(mode="json", by_alias=True, exclude_none=True)
        status.write_text(json.dumps({"switches": [written]}))

    record()
    assert drill.confirmed(failover(), limit=0.5) == failover()  # not counted in time: as it was
    record(events_left_behind_confirmed=156, events_lost=0)
    assert drill.confirmed(failover(), limit=5).events_left_behind_confirmed == 156
