"""A follower's own host runs that one task: its event hub is read as a task alone would read it, without
the bound a host gives each member so that a backlog does not hold the others' slots (a backlog left on a
member is then caught up in one batch after a switch, not in batches of 2,000 events that each pay a
batch's fixed cost). A shared application's host keeps the bound. No JVM: the settings the host would be
started with."""

from __future__ import annotations

import shlex
from pathlib import Path

from test_local_applications import example, plan_of, shared_example

from federator.local.apps import alone, app_environment, home_of
from federator.local.groups import group_object
from federator.local.model import TaskRun
from federator.local.state import StateDir
from federator_contract.api.failovergroup import FailoverGroupStatus
from federator_contract.api.replicationapplication import MEMBER_EVENTS_SETTING, MEMBER_TRIGGER_SETTING


def host_settings(task: TaskRun, tmp_path: Path) -> list[str]:
    home = home_of(task, StateDir(tmp_path / "state"))
    environment = app_environment([task], {}, tmp_path, alone=alone(task, home))
    return shlex.split(environment["PYSPARK_SUBMIT_ARGS"])


def test_a_followers_own_host_reads_its_hub_unbounded(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, example("failover-group.yaml"))
    [follower], [group] = plan.following, plan.groups
    status = FailoverGroupStatus(producer_member="primary", consumer_member="primary")
    run = follower.replan({"orders": group_object(group, status)})
    assert isinstance(run, TaskRun)

    settings = host_settings(run, tmp_path)
    assert f"{MEMBER_EVENTS_SETTING}=0" in settings and f"{MEMBER_TRIGGER_SETTING}=0" in settings, "nor paced"


def test_a_shared_applications_host_keeps_the_bound_for_its_members(tmp_path: Path) -> None:
    application, tasks = shared_example()
    member = plan_of(tmp_path, [application, *tasks]).tasks[0]

    settings = host_settings(member, tmp_path)
    assert not any(s.startswith((MEMBER_EVENTS_SETTING, MEMBER_TRIGGER_SETTING)) for s in settings)
