"""A group's rounds, against emulator members, carry a forced switch's loss from the estimate to the count:
the failover's record names the task copying to the member switched to and its estimate (counted from
what the task had read), and the round after that task's driver counted the outage of the member left
confirms it in `status.switches` with the Event `SwitchLossConfirmed`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from test_reconcile import NS, client, emulator, local_ports  # noqa: F401 - fixtures

from federator.failover.state import GroupState
from federator.kube.client import KubeClient
from federator.reconcile.failovergroup import GroupRound, group_round
from federator_contract.api.failovergroup import FailoverGroupSpec
from federator_emulator.server import RunningEmulator

pytestmark = [pytest.mark.slow, pytest.mark.asyncio]

SPEC = FailoverGroupSpec.model_validate(
    {
        "mode": "automatic",
        "primaryMember": "weu",
        "members": [
            {
                "name": m,
                "endpoint": f"{m}.servicebus.windows.net",
                "connection": {"emulator": {"namespace": m}},
            }
            for m in ("weu", "neu")
        ],
        "probe": {"entity": {"queueName": "orders"}, "timeoutSeconds": 2, "failureThreshold": 1},
    }
)


def stamp(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


class Rounds:
    """Rounds of the group, in local mode's ports, with the geo task's status as the test sets it."""

    def __init__(self, client: KubeClient, emulator: RunningEmulator) -> None:  # noqa: F811 - fixtures
        self.lag: dict[str, Any] = {}
        self.state = GroupState()
        self.ports = local_ports(client, emulator, self.tasks)

    async def tasks(self, namespace: str) -> list[dict[str, Any]]:
        hub = {"eventHubName": "orders"}
        return [
            {
                "metadata": {"name": "geo", "namespace": namespace},
                "spec": {
                    "source": {"eventHub": {"connection": {"emulator": {"namespace": "weu"}}, **hub}},
                    "targets": [
                        {"name": "neu", "eventHub": {"connection": {"emulator": {"namespace": "neu"}}, **hub}}
                    ],
                },
                "status": {"lag": self.lag},
            }
        ]

    async def round(self) -> GroupRound:
        done = await group_round(
            self.ports,
            name="orders",
            namespace=NS,
            uid=None,
            spec=SPEC,
            state=self.state,
            now=datetime.now(UTC),
        )
        assert done.state is not None
        self.state = done.state
        return done


async def test_the_failovers_estimate_is_confirmed_by_the_count_of_the_outage(
    client: KubeClient,  # noqa: F811 - the fixture
    emulator: RunningEmulator,  # noqa: F811 - the fixture
) -> None:
    rounds = Rounds(client, emulator)
    seen_up = datetime.now(UTC)
    rounds.lag = {"eventsBehind": 180, "eventsUnread": 40, "rpoSeconds": 0.9, "measuredAt": stamp(seen_up)}
    await rounds.round()
    assert rounds.state.producer == "weu"

    emulator.set_outage("weu", True)
    await rounds.round()
    [record] = [r for r in rounds.state.switches if r.cause == "failover"]
    assert (record.source, record.target, record.loss_tasks) == ("weu", "neu", ["geo"])
    assert (record.events_left_behind, record.events_left_behind_confirmed) == (40, None)

    emulator.set_outage("weu", False)
    up_again = record.decided + timedelta(seconds=20)
    rounds.lag = {
        "eventsBehind": 0,
        "eventsUnread": 0,
        "measuredAt": stamp(up_again),
        "lastOutage": {
            "lastSeenUp": stamp(seen_up),
            "downSince": stamp(record.decided + timedelta(seconds=1)),
            "downUntil": stamp(up_again - timedelta(seconds=1)),
            "upAgain": stamp(up_again),
            "eventsLeftBehind": 57,
            "eventsExpired": 0,
            "rpoSeconds": 0.4,
            "exact": True,
        },
    }
    done = await rounds.round()
    [confirmed] = [r for r in rounds.state.switches if r.cause == "failover"]
    assert (confirmed.events_left_behind_confirmed, confirmed.events_lost) == (57, 0)
    assert confirmed.confirmed_at == up_again
    notes = [n for n in done.findings.notes if n.reason == "SwitchLossConfirmed"]
    assert [n.type for n in notes] == ["Normal"]
    assert "weu answers again; it held 57 events (0.4s of enqueue time) not copied to neu" in notes[0].message
    written = done.findings.status_fields["switches"]
    assert [s.get("eventsLeftBehindConfirmed") for s in written if s["cause"] == "failover"] == [57]
    again = await rounds.round()
    assert [n for n in again.findings.notes if n.reason == "SwitchLossConfirmed"] == []
