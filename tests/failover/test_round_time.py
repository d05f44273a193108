"""A FailoverGroup round in a cluster runs at the time it runs, to the microsecond: a failed probe is
recorded (`failingSince`, where a failover's detection starts) no earlier than the moment it was made, so
a switch's `decidedSeconds` is not up to a second longer than it took."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from test_reconcile import body, client, emulator, runtime  # noqa: F401 - fixtures

from federator.kube.client import KubeClient
from federator.kube.reads import ClusterReads
from federator.reconcile.failovergroup import reconcile
from federator_emulator.server import RunningEmulator

pytestmark = [pytest.mark.slow, pytest.mark.asyncio]


def parsed(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


async def test_a_failed_probe_is_recorded_no_earlier_than_the_round_that_made_it(
    client: KubeClient,  # noqa: F811 - the fixture
    emulator: RunningEmulator,  # noqa: F811 - the fixture
) -> None:
    emulator.set_outage("neu", True)
    began = datetime.now(UTC)
    done = await reconcile(ClusterReads.direct(client), runtime(emulator), body())
    ended = datetime.now(UTC)
    [neu] = [p for p in done.result.status_patch["probes"] if p["member"] == "neu"]
    assert neu["healthy"] is False
    assert began <= parsed(neu["failingSince"]) <= ended
    assert began <= parsed(done.result.status_patch["producerSince"]) <= ended
