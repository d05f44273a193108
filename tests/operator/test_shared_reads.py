"""Reads the operator shares between passes for a while: an answer is read once for everyone who asks
within its time to live (Secrets, source probes), a failure or "missing" is asked again."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from federator.failover.connections import MemberConnection
from federator.failover.probes import EntityRef, Prober
from federator.failover.state import ProbeOutcome
from federator.kube.cached import CachedObjects
from federator.recent import Recent
from federator.reconcile.replicationtask_source import SourceProbes
from federator.validation.credential_scope import CredentialScope

pytestmark = pytest.mark.asyncio


class Reads:
    def __init__(self, answer: Any = "value", fail: bool = False) -> None:
        self.count = 0
        self.answer, self.fail = answer, fail

    async def __call__(self) -> Any:
        self.count += 1
        await asyncio.sleep(0.01)
        if self.fail:
            raise RuntimeError("the read failed")
        return self.answer


async def test_concurrent_and_later_asks_within_the_ttl_share_one_read() -> None:
    recent: Recent[str, Any] = Recent(ttl=60)
    reads = Reads()
    answers = await asyncio.gather(*(recent.get("k", reads) for _ in range(10)))
    assert answers == ["value"] * 10 and reads.count == 1
    assert await recent.get("k", reads) == "value" and reads.count == 1
    assert await recent.get("other", reads) == "value" and reads.count == 2


async def test_an_expired_answer_is_read_again_and_forgotten() -> None:
    recent: Recent[str, Any] = Recent(ttl=0.05)
    reads = Reads()
    await recent.get("k", reads)
    await asyncio.sleep(0.06)
    await recent.get("k", reads)
    assert reads.count == 2
    await asyncio.sleep(0.06)
    await recent.get("another", reads)  # sweeps what expired
    assert len(recent) == 1


async def test_failures_and_unkept_answers_are_read_again() -> None:
    failing: Recent[str, Any] = Recent(ttl=60)
    reads = Reads(fail=True)
    for _ in range(2):
        with pytest.raises(RuntimeError):
            await failing.get("k", reads)
    assert reads.count == 2

    missing: Recent[str, Any] = Recent(ttl=60, keep=lambda found: found is not None)
    reads = Reads(answer=None)
    assert await missing.get("k", reads) is None and await missing.get("k", reads) is None
    assert reads.count == 2


class FakeClient:
    def __init__(self, stored: dict[str, Any]) -> None:
        self.stored, self.gets = stored, 0

    async def get(self, path: str) -> dict[str, Any] | None:
        self.gets += 1
        return self.stored.get(path)


async def test_a_secret_is_read_once_per_ttl_and_a_missing_one_at_every_read() -> None:
    client = FakeClient({"/api/v1/namespaces/ns/secrets/found": {"data": {}}})
    secrets = CachedObjects(client, ttl=60)  # type: ignore[arg-type]
    for _ in range(3):
        assert await secrets.get("/api/v1/namespaces/ns/secrets/found") is not None
        assert await secrets.get("/api/v1/namespaces/ns/secrets/missing") is None
    assert client.gets == 1 + 3


class CountingProber(Prober):
    def __init__(self) -> None:
        super().__init__()
        self.probes: list[EntityRef] = []

    async def probe(self, connection: MemberConnection, entity: EntityRef, timeout: float) -> ProbeOutcome:
        self.probes.append(entity)
        return ProbeOutcome(True)


async def test_one_probe_answers_every_task_reading_the_same_entity_with_the_same_credentials() -> None:
    prober = CountingProber()
    probes = SourceProbes(prober, CredentialScope(), ttl=60)
    orders = EntityRef("eventHub", "orders", consumer_group="a")
    same, other_key = MemberConnection(connection_string="Endpoint=sb://x/;k"), MemberConnection("sb://y")
    await asyncio.gather(probes.probe(same, orders), probes.probe(same, orders))
    await probes.probe(same, EntityRef("eventHub", "orders", consumer_group="b"))
    await probes.probe(other_key, orders)
    assert len(prober.probes) == 3
