"""Planning mirrors and failover groups for a local run: a mirror becomes its generated tasks, with the
user's entities laid out in the emulator and what the mirror provisions left to the management plane; a
group is registered with what its probes read; a task that follows a group is planned for every member
the group may publish, and again with the one it does. Pure: no process starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from federator import reasons
from federator.local.mirrors import mirror_row
from federator.local.model import BlockedTask, LocalPlan, TaskRun
from federator.local.observe import TaskRow
from federator.local.plan import plan_local_run
from federator.local.state import StateDir
from federator.provision.members import MemberOutcome
from federator.validation.documents import Document, load_documents
from federator_contract.taskconfig import FollowingSource

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def plan_of(tmp_path: Path, *names: str, environ: dict[str, str] | None = None) -> LocalPlan:
    documents = [d for name in names for d in load_documents(EXAMPLES / name)]
    return plan_local_run(documents, state=StateDir(tmp_path / "state"), environ=environ or {})


def plan_text(tmp_path: Path, text: str, environ: dict[str, str] | None = None) -> LocalPlan:
    documents = [Document("test.yaml", i, b) for i, b in enumerate(yaml.safe_load_all(text))]
    return plan_local_run(documents, state=StateDir(tmp_path / "state"), environ=environ or {})


def entities(plan: LocalPlan) -> dict[str, dict[str, Any]]:
    """Emulator namespace → its topics (with subscriptions), queues and event hubs."""
    assert plan.emulator is not None
    return {
        ns.name: {
            "topics": {t.name: [s.name for s in t.subscriptions] for t in ns.topics},
            "queues": [q.name for q in ns.queues],
            "eventHubs": [h.name for h in ns.event_hubs],
        }
        for ns in plan.emulator.namespaces
    }


# ------------------------------------------------------------------------------------------- mirrors


def test_an_all_active_mirror_runs_one_task_per_ordered_pair_on_the_members_topics(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, "sb-all-active.yaml")

    (mirror,) = plan.mirrors
    assert mirror.key == "default/orders"
    assert sorted((t.name, t.pair) for t in plan.tasks) == sorted(
        (f"orders-{a}-{b}", (a, b))
        for a in ("west", "east", "north")
        for b in ("west", "east", "north")
        if a != b
    )
    assert {t.mirror for t in plan.tasks} == {"default/orders"}
    # The topics are the user's; the replication subscriptions are the mirror's to create and own.
    assert entities(plan) == {
        ns: {"topics": {"orders": []}, "queues": [], "eventHubs": []} for ns in ("west", "east", "north")
    }
    west_east = next(t for t in plan.tasks if t.name == "orders-west-east")
    west_east_source = west_east.task_config.spec.source.service_bus
    assert west_east_source is not None and west_east_source.subscription_name == "repl-east"
    assert west_east.emulator_namespaces == ("west", "east")
    assert not plan.failed


def test_a_spillover_mirror_leaves_its_auxiliary_queues_to_provisioning(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, "sb-spillover.yaml")

    assert entities(plan) == {
        ns: {"topics": {}, "queues": ["shipments"], "eventHubs": []} for ns in ("left", "right")
    }
    (mirror,) = plan.mirrors
    assert [(q.member, q.name) for q in mirror.plan.queues] == [
        ("left", "shipments-aux"),
        ("right", "shipments-aux"),
    ]
    assert [t.pair for t in plan.tasks] == [("left", "right"), ("right", "left")]


def test_a_mirror_member_whose_secret_is_nowhere_is_reported_and_runs_nothing(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, "sb-all-active-cluster.yaml")

    (note,) = plan.notes
    assert note.failed and note.message.startswith(
        f"{reasons.SECRET_NOT_FOUND}: Secret messaging/payments-neu"
    )
    assert "FEDERATOR_SECRET_payments_neu_manage__connectionString" in note.message
    assert not plan.tasks and not plan.mirrors


def test_a_mirror_members_secret_can_come_from_the_environment(tmp_path: Path) -> None:
    value = "Endpoint=sb://contoso-neu.servicebus.windows.net/;SharedAccessKeyName=m;SharedAccessKey=k"
    environ = {"FEDERATOR_SECRET_payments_neu_manage__connectionString": value}

    plan = plan_of(tmp_path, "sb-all-active-cluster.yaml", environ=environ)

    (mirror,) = plan.mirrors
    assert not plan.notes
    secret = mirror.secrets.by_path["/api/v1/namespaces/messaging/secrets/payments-neu-manage"]
    assert secret == {"stringData": {"connectionString": value}}
    assert "SharedAccessKey=k" not in repr(mirror)


# ------------------------------------------------------------------------------------------- groups


def test_a_group_and_its_following_task_lay_out_every_member_they_may_use(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, "failover-group.yaml")

    (group,) = plan.groups
    (following,) = plan.following
    assert (group.key, following.key, following.groups) == (
        "default/orders",
        "default/orders-archive",
        ("orders",),
    )
    assert not plan.tasks and not plan.blocked
    assert entities(plan) == {
        "primary": {"topics": {}, "queues": ["orders"], "eventHubs": []},
        "secondary": {"topics": {}, "queues": ["orders"], "eventHubs": []},
        "archive": {"topics": {}, "queues": [], "eventHubs": ["orders-archive"]},
    }


def group_status(producer: str, consumer: str) -> dict[str, Any]:
    return {"producerMember": producer, "consumerMember": consumer, "consumerSince": "2026-11-01T12:03:10Z"}


def test_a_following_task_runs_with_the_member_the_group_publishes(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, "failover-group.yaml")
    (group,) = plan.groups
    body = next(yaml.safe_load_all((EXAMPLES / "failover-group.yaml").read_text()))

    run = plan.following[0].replan(
        {"orders": {"spec": body["spec"], "status": group_status("primary", "secondary")}}
    )

    assert isinstance(run, TaskRun)
    source = run.task_config.spec.source.service_bus
    assert source is not None and source.connection.emulator is not None
    assert source.connection.emulator.namespace == "secondary"  # the consumers' member for sources
    assert run.emulator_namespaces == ("secondary", "archive")
    assert run.followed_members == {"spec.source.serviceBus": "orders/secondary"}
    assert run.task_config.following == FollowingSource(
        group="orders", member="secondary", switched_at="2026-11-01T12:03:10Z", skew_seconds=30
    )
    # One checkpoint location whichever member it reads: the app keeps each member's positions under it.
    assert run.task_config.checkpoint_location.endswith("/tasks/default/orders-archive/checkpoint")
    assert group.spec.mode == "automatic"


def test_a_following_task_waits_while_its_group_has_chosen_no_member(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, "failover-group.yaml")
    body = next(yaml.safe_load_all((EXAMPLES / "failover-group.yaml").read_text()))

    waiting = plan.following[0].replan({"orders": {"spec": body["spec"], "status": {}}})

    assert isinstance(waiting, BlockedTask)
    assert waiting.reason == reasons.FAILOVER_GROUP_PENDING


def test_following_a_group_that_is_not_among_the_files_is_stalled(tmp_path: Path) -> None:
    text = (EXAMPLES / "failover-group.yaml").read_text().split("---", 1)[1]

    plan = plan_text(tmp_path, text)

    (blocked,) = plan.blocked
    assert blocked.reason == reasons.FAILOVER_GROUP_NOT_FOUND
    assert "FailoverGroup default/orders, which is not among the manifest files" in blocked.message
    assert not plan.following


# ------------------------------------------------------------------------------------------- the view


def test_a_mirror_is_ready_once_every_member_is_provisioned_and_every_pair_runs(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, "sb-all-active.yaml")
    (mirror,) = plan.mirrors
    provisioned = [MemberOutcome(m, "Provisioned", reasons.PROVISIONED) for m in ("west", "east", "north")]
    running = {
        t.key: TaskRow(t.key, "Ready", reasons.RUNNING, replicated=2, dead_lettered=0) for t in plan.tasks
    }

    row = mirror_row(mirror, provisioned, running)

    assert (row.key, row.condition, row.reason) == ("mirror default/orders", "Ready", reasons.MIRRORING)
    assert row.replicated == 12 and row.dead_lettered == 0
    assert row.info.startswith("members provisioned: west, east, north of 3; pairs running: 6 of 6")


def test_a_member_that_needs_a_human_stalls_the_mirror_with_its_reason(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, "sb-all-active.yaml")
    (mirror,) = plan.mirrors
    message = "member east: topics/orders/subscriptions/repl-west exists and was not created by this mirror"
    outcomes = [
        MemberOutcome("west", "Provisioned", reasons.PROVISIONED),
        MemberOutcome("east", "Failed", reasons.ENTITY_NOT_OWNED, message),
        MemberOutcome("north", "Provisioned", reasons.PROVISIONED),
    ]

    row = mirror_row(mirror, outcomes, {})

    assert (row.condition, row.reason, row.message) == ("Stalled", reasons.ENTITY_NOT_OWNED, message)
    assert "members provisioned: west, north of 3; pairs running: 0 of 6" in row.info
