"""Failing back, producers move first and the consumers follow once the member they leave is drained: for
an event hub, once every ReplicationTask whose source follows the group has replicated what producers
sent to that member, as its lag there shows, measured after the producers left (a lag measured before
then is no proof). Until then the group stays FailingBack and `status.drainPending` says which task
holds it up; `drainTimeoutSeconds` still moves the consumers, with a Warning naming them. Rounds of a
group in local mode's ports against emulator members; the task's status is set as its driver writes
it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from test_reconcile import NS, client, emulator, local_ports  # noqa: F401 - fixtures

from federator import reasons
from federator.failover.draining import followers_pending
from federator.failover.state import GroupState
from federator.kube.client import KubeClient
from federator.reconcile.failovergroup import GroupRound, group_round
from federator_contract.api.failovergroup import DrainHold, DrainingTask, FailoverGroupSpec
from federator_emulator.server import RunningEmulator

pytestmark = pytest.mark.slow

MEMBERS = [
    {"name": m, "endpoint": f"{m}.servicebus.windows.net", "connection": {"emulator": {"namespace": m}}}
    for m in ("weu", "neu")
]


def spec(active: str, timeout: int = 600) -> FailoverGroupSpec:
    return FailoverGroupSpec.model_validate(
        {
            "primaryMember": "weu",
            "activeMember": active,
            "members": MEMBERS,
            "probe": {"entity": {"queueName": "orders"}, "timeoutSeconds": 2},
            "failback": {"drainTimeoutSeconds": timeout},
        }
    )


def stamp(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def archive(status: dict[str, Any], group: str = "orders", source: str = "eventHub") -> dict[str, Any]:
    """ReplicationTask archive, whose source follows ``group``."""
    entity = {"eventHubName": "orders"} if source == "eventHub" else {"queueName": "orders"}
    return {
        "metadata": {"name": "archive", "namespace": NS},
        "spec": {
            "source": {source: {"connection": {"failoverGroupRef": {"name": group}}, **entity}},
            "targets": [
                {"name": "a", "eventHub": {"connection": {"emulator": {"namespace": "dr"}}, **entity}}
            ],
        },
        "status": status,
    }


class Rounds:
    def __init__(self, client: KubeClient, emulator: RunningEmulator) -> None:  # noqa: F811 - fixtures
        self.follower: dict[str, Any] = {"activeSourceMember": "weu"}
        self.state = GroupState()
        self.ports = local_ports(client, emulator, self.tasks)

    async def tasks(self, namespace: str) -> list[dict[str, Any]]:
        return [archive(self.follower)]

    async def round(
        self, active: str, timeout: int = 600, after_producers_left: float | None = None
    ) -> GroupRound:
        """A round now, or ``after_producers_left`` seconds after the producers left neu."""
        now = datetime.now(UTC)
        if after_producers_left is not None:
            assert self.state.producer_since is not None
            now = self.state.producer_since + timedelta(seconds=after_producers_left)
        done = await group_round(
            self.ports,
            name="orders",
            namespace=NS,
            uid=None,
            spec=spec(active, timeout),
            state=self.state,
            now=now,
        )
        assert done.state is not None
        self.state = done.state
        return done

    async def failed_back(self, timeout: int = 600) -> None:
        """On neu, then asked back to weu: producers move, consumers stay."""
        await self.round("weu", timeout)
        await self.round("neu", timeout)
        self.follower = {"activeSourceMember": "neu"}
        await self.round("weu", timeout)
        assert (self.state.phase, self.state.producer, self.state.consumer) == ("FailingBack", "weu", "neu")

    def lag(self, events: int, after_producers_left: float) -> None:
        assert self.state.producer_since is not None
        measured = self.state.producer_since + timedelta(seconds=after_producers_left)
        self.follower = {
            "activeSourceMember": "neu",
            "lag": {"eventsBehind": events, "measuredAt": stamp(measured)},
        }


@pytest.fixture
def rounds(client: KubeClient, emulator: RunningEmulator) -> Rounds:  # noqa: F811 - fixtures
    return Rounds(client, emulator)


def archive_on_neu(*, measured: bool = True, behind: int | None = None) -> DrainHold:
    """`drainPending`'s entry for the archive task still reading neu."""
    task = DrainingTask(
        namespace=NS, name="archive", member="neu", lag_measured=measured, events_behind=behind
    )
    return DrainHold(task=task)


@pytest.mark.asyncio
async def test_consumers_follow_once_the_following_task_replicated_what_producers_left_there(
    rounds: Rounds,
) -> None:
    await rounds.failed_back()
    rounds.lag(0, after_producers_left=-0.5)  # caught up, but before the producers' last events
    await rounds.round("weu")
    assert rounds.state.drain_pending == (archive_on_neu(measured=False),)
    rounds.lag(37, after_producers_left=2.5)
    done = await rounds.round("weu")
    assert rounds.state.drain_pending == (archive_on_neu(behind=37),)
    assert rounds.state.consumer == "neu"
    [reconciling] = [u for u in done.findings.condition_updates if u.type == "Reconciling"]
    assert f"still to drain: task {NS}/archive still 37 behind on neu" in reconciling.message
    rounds.lag(0, after_producers_left=4.0)
    done = await rounds.round("weu", after_producers_left=4.5)
    assert (rounds.state.phase, rounds.state.consumer) == ("Normal", "weu")
    assert [(r.roles, r.cause) for r in rounds.state.switches][-1] == ("consumers", "drained")
    [note] = [n for n in done.findings.notes if n.reason == reasons.FAILBACK_COMPLETE]
    assert (note.type, note.message) == (
        "Normal",
        "consumers switched from member neu to weu: neu is drained",
    )


@pytest.mark.asyncio
async def test_the_drain_timeout_moves_consumers_with_a_warning_naming_the_tasks_not_drained(
    rounds: Rounds,
) -> None:
    await rounds.failed_back(timeout=0)
    rounds.lag(12, after_producers_left=2.5)
    done = await rounds.round("weu", timeout=0)
    assert (rounds.state.phase, rounds.state.consumer) == ("Normal", "weu")
    [note] = [n for n in done.findings.notes if n.reason == reasons.DRAIN_TIMEOUT]
    assert note.type == "Warning"
    assert f"(task {NS}/archive still 12 behind on neu)" in note.message


def test_only_tasks_reading_an_event_hub_of_the_group_on_the_consumers_member_are_waited_for() -> None:
    left = datetime(2026, 11, 30, tzinfo=UTC)
    lag = {"eventsBehind": 3, "measuredAt": stamp(left + timedelta(seconds=3))}
    on_neu = {"activeSourceMember": "neu", "lag": lag}
    assert followers_pending("orders", "neu", left, [archive(on_neu)]) == (archive_on_neu(behind=3),)
    assert followers_pending("orders", "neu", left, [archive(on_neu, group="other")]) is None
    assert (
        followers_pending("orders", "neu", left, [archive(on_neu, source="serviceBus")]) is None
    )  # drainEntities
    assert (
        followers_pending("orders", "neu", left, [archive({**on_neu, "activeSourceMember": "weu"})]) is None
    )
    assert followers_pending("orders", "neu", left, []) is None
