"""`federator drill` refuses, with the reason, a group it cannot drill: before anything runs (the files),
and once the run shows the group is not healthy enough."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from federator.cli.main import app
from federator.local.drillrun import DrillRefused, describe, find_group, late_decisions, not_ready, tell
from federator_contract.api.failovergroup import FailoverGroupSpec, FailoverGroupStatus, SwitchRecord

GROUP = """
apiVersion: federator.io/v1alpha1
kind: FailoverGroup
metadata: {{name: {name}}}
spec:
  mode: {mode}
  primaryMember: primary
  members:
    - {{name: primary, connection: {primary}, endpoint: localhost}}
    - {{name: secondary, connection: {{emulator: {{namespace: secondary}}}}, endpoint: localhost}}
  probe: {{periodSeconds: 1, entity: {{eventHubName: orders}}}}
"""
EMULATOR = "{emulator: {namespace: primary}}"
SECRET = "{secretRef: {name: primary, key: connectionString}}"


def manifest(tmp_path: Path, *groups: str) -> Path:
    path = tmp_path / "drill.yaml"
    path.write_text("---".join(groups))
    return path


def group(name: str = "orders", mode: str = "automatic", primary: str = EMULATOR) -> str:
    return GROUP.format(name=name, mode=mode, primary=primary)


def refusal(files: list[Path], name: str | None = None, kill: bool = False) -> str:
    with pytest.raises(DrillRefused) as refused:
        find_group(files, name, kill)
    return str(refused.value)


def test_files_without_a_group_are_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    assert refusal([empty]) == "no FailoverGroup in the files: a drill switches one"


def test_several_groups_need_a_name_and_the_name_must_be_there(tmp_path: Path) -> None:
    files = [manifest(tmp_path, group("orders"), group("billing"))]
    assert refusal(files) == "several FailoverGroups (billing, orders): name one with --group"
    assert (
        refusal(files, "payments")
        == "no FailoverGroup named payments in the files (they have billing, orders)"
    )
    assert find_group(files, "billing", kill=False).name == "billing"


FOLLOWER = """
apiVersion: federator.io/v1alpha1
kind: ReplicationTask
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  source: {{serviceBus: {{connection: {{failoverGroupRef: {{name: {group}}}}}, queueName: orders}}}}
  targets: [{{name: copy, eventHub: {{connection: {{emulator: {{namespace: archive}}}}, eventHubName: a}}}}]
"""


def test_the_drill_waits_for_the_tasks_whose_source_follows_the_group_in_its_namespace(
    tmp_path: Path,
) -> None:
    files = [
        manifest(tmp_path, group("orders"), group("billing")),
        tmp_path / "tasks.yaml",
    ]
    files[1].write_text(
        "---".join(
            FOLLOWER.format(name=name, namespace=namespace, group=followed)
            for name, namespace, followed in [
                ("archive", "default", "orders"),
                ("elsewhere", "other", "orders"),  # another namespace's group of that name
                ("billing-archive", "default", "billing"),
                ("audit", "default", "orders"),
            ]
        )
    )
    assert find_group(files, "orders", kill=False).followers == ("archive", "audit")


def test_an_invalid_group_is_refused_with_its_problem(tmp_path: Path) -> None:
    files = [manifest(tmp_path, group(mode="sometimes"))]
    assert "the FailoverGroup is not valid" in refusal(files) and "mode" in refusal(files)


def test_a_kill_needs_automatic_mode(tmp_path: Path) -> None:
    files = [manifest(tmp_path, group(mode="manual"))]
    assert refusal(files, kill=True).startswith("--kill needs spec.mode: automatic on FailoverGroup orders")
    assert find_group(files, None, kill=False).spec.mode == "manual"  # a planned drill is fine


def test_a_kill_needs_the_primary_in_the_emulator(tmp_path: Path) -> None:
    files = [manifest(tmp_path, group(primary=SECRET))]
    assert refusal(files, kill=True) == (
        "--kill takes the primary's emulator namespace down, and member primary is not in the emulator "
        "(spec.members[0].connection.emulator)"
    )


SPEC = FailoverGroupSpec.model_validate(yaml.safe_load(group())["spec"])


def condition(status: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": "Ready",
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2027-01-15T08:00:00Z",
    }


def status(**changes: Any) -> FailoverGroupStatus:
    healthy = [{"member": "primary", "healthy": True}, {"member": "secondary", "healthy": True}]
    ready = [condition("True", "Active", "")]
    base = {"phase": "Normal", "producerMember": "primary", "consumerMember": "primary", "probes": healthy}
    return FailoverGroupStatus.model_validate({**base, "conditions": ready, **changes})


def test_a_healthy_group_on_its_primary_may_be_drilled() -> None:
    assert not_ready(status(), SPEC) is None


@pytest.mark.parametrize(
    ("found", "reason"),
    [
        (None, "the group has not chosen its members yet"),
        (
            status(conditions=[condition("False", "ActiveMemberUnhealthy", "m")]),
            "the group is not Ready (ActiveMemberUnhealthy: m)",
        ),
        (
            status(consumerMember="secondary"),
            "producers use primary and consumers secondary: a failback is under way",
        ),
        (
            status(producerMember="secondary", consumerMember="secondary"),
            "the group is on secondary, not on its primary primary: fail back first",
        ),
        (
            status(
                probes=[
                    {"member": "primary", "healthy": True},
                    {"member": "secondary", "healthy": False, "message": "refused"},
                ]
            ),
            "member secondary fails its probes (refused)",
        ),
    ],
)
def test_a_group_not_healthy_enough_is_refused_with_the_reason(
    found: FailoverGroupStatus | None, reason: str
) -> None:
    assert not_ready(found, SPEC) == reason


def killed_switch(**changes: Any) -> SwitchRecord:
    return SwitchRecord.model_validate(
        {
            "source": "primary",
            "target": "secondary",
            "roles": "both",
            "cause": "failover",
            "detected": "2027-01-15T08:00:00Z",
            "decided": "2027-01-15T08:00:03.500000Z",
            "decidedSeconds": 3.5,
            **changes,
        }
    )


def test_a_follower_that_never_flowed_or_a_late_decision_fails_the_drill() -> None:
    killed = 1_800_000_000.0  # 2027-01-15T08:00:00Z
    flowing = killed_switch(followers=[{"task": "orders-archive", "flowingSeconds": 4.0}])
    stuck = killed_switch(followers=[{"task": "orders-archive"}])

    assert tell(lambda _: None, "killed", [flowing], killed) == []
    assert tell(lambda _: None, "killed", [stuck], killed) == [
        "killed to secondary: not flowing there: orders-archive"
    ]
    assert late_decisions([flowing], killed, goal=4.0) == []
    assert late_decisions([flowing], killed, goal=3.0) == ["killed: decided 3.5s after the kill, goal 3s"]


def test_a_switch_is_told_with_its_phases_followers_and_what_it_left() -> None:
    record = SwitchRecord.model_validate(
        {
            "source": "primary",
            "target": "secondary",
            "roles": "both",
            "cause": "failover",
            "detected": "2027-01-15T08:00:00.400000Z",
            "decided": "2027-01-15T08:00:03.500000Z",
            "decidedSeconds": 3.1,
            "publishedSeconds": 0.01,
            "followers": [{"task": "orders-archive", "flowingSeconds": 4.25}],
            "eventsLeftBehind": 40,
            "rpoSeconds": 0.8,
        }
    )
    told = describe(record, killed=1_800_000_000.0)
    assert told.startswith(
        "primary → secondary (failover): killed → decided 3.5s, endpoints published 0.0s later"
    )
    assert "; orders-archive flowing after 4.2s; 40 events left behind (0.8s), an estimate;" in told


def test_the_command_refuses_before_anything_runs(tmp_path: Path) -> None:
    files = manifest(tmp_path, group(mode="manual"))
    result = CliRunner().invoke(
        app, ["drill", "-f", str(files), "--kill", "--state-dir", str(tmp_path / "s")]
    )
    assert result.exit_code == 2
    assert "--kill needs spec.mode: automatic" in result.output
    assert not (tmp_path / "s").exists()
