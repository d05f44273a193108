"""A ReplicationTask that follows a FailoverGroup, through a failover and a failback, with real Spark and
two emulated namespaces: the primary `weu` is geo-replicated to the secondary `neu` by our own
replication app, and the following task copies the consumers' member to a third namespace. On each
switch the task config changes as the operator writes it (the member's connection and `following`), and
the target must hold every event exactly once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import body, eh_endpoint, read_all, run_task, send, task_config

from federator_spark.commits import CommitLog

pytestmark = pytest.mark.slow

HUBS = {
    "namespaces": [
        {"name": "weu", "eventHubs": [{"name": "orders", "partitionCount": 2}]},
        {"name": "neu", "eventHubs": [{"name": "orders", "partitionCount": 2}]},
        {"name": "dr", "eventHubs": [{"name": "copy", "partitionCount": 2}]},
    ]
}
NAMESPACES = ("weu", "neu", "dr")


def events(prefix: str, count: int) -> list[dict[str, Any]]:
    return [{"body": f"{prefix}{i}", "key": f"k{i % 3}"} for i in range(count)]


class Deployment:
    """The geo-replication task weu → neu and the task that follows the group's consumers' member."""

    def __init__(self, spark: Any, emulator: Any, tmp_path: Path) -> None:
        self.spark, self.emulator, self.tmp_path = spark, emulator, tmp_path
        geo = {
            "source": eh_endpoint("weu", "orders"),
            "targets": [{"name": "neu", **eh_endpoint("neu", "orders")}],
        }
        self.geo = task_config(tmp_path, emulator, geo, namespaces=NAMESPACES, name="geo")

    def publish(self, member: str, prefix: str, count: int) -> None:
        send(self.emulator.connection_string(member), "orders", events(prefix, count))

    def geo_replicate(self) -> None:
        run_task(self.spark, self.geo)

    def follow(self, member: str) -> None:
        """Run the following task as the operator configures it while `member` is the consumers' member."""
        spec = {
            "source": eh_endpoint(member, "orders"),
            "targets": [{"name": "copy", **eh_endpoint("dr", "copy")}],
        }
        raw = task_config(self.tmp_path, self.emulator, spec, namespaces=NAMESPACES, name="orders")
        # skewSeconds 0 leaves the secondary's events from before the last replicated one unread: the seek
        # shows. The real margin re-reads a little more, which the skip drops.
        raw["following"] = {"group": "orders", "member": member, "switchedAt": None, "skewSeconds": 0}
        raw["followedMembers"] = {"spec.source.eventHub": f"orders/{member}"}
        run_task(self.spark, raw)

    def target(self) -> Counter[str]:
        found = read_all(self.emulator.connection_string("dr"), "copy")
        return Counter(body(event) for partition in found.values() for event in partition)

    def skipped(self, member: str) -> int:
        state_dir = self.tmp_path / "checkpoint-orders" / "members" / member / "federator"
        record = CommitLog(str(state_dir)).latest_before(2**62)
        assert record is not None
        return int(record["following"]["skipped"])


def expected(*groups: tuple[str, int]) -> Counter[str]:
    return Counter(f"{prefix}{i}" for prefix, count in groups for i in range(count))


def test_failover_and_failback_lose_and_duplicate_nothing(spark, emulator_factory, tmp_path):
    deployment = Deployment(spark, emulator_factory(HUBS), tmp_path)
    # The secondary's own history from before the task replicated anything: older than where it resumes.
    deployment.publish("neu", "old", 4)
    deployment.publish("weu", "a", 12)
    deployment.geo_replicate()
    deployment.follow("weu")
    deployment.publish("weu", "b", 6)  # reaches neu by geo-replication only: the task is failed over
    deployment.geo_replicate()

    deployment.publish("neu", "c", 5)  # failover: producers publish to neu
    deployment.follow("neu")

    assert deployment.target() == expected(("a", 12), ("b", 6), ("c", 5))
    assert deployment.skipped("neu") == 12  # the copies of a*, enqueued on neu after the last one replicated

    deployment.publish("weu", "d", 6)  # failing back: producers on weu, consumers still on neu
    deployment.geo_replicate()
    deployment.follow("neu")
    deployment.publish("weu", "e", 3)
    deployment.follow("weu")  # consumers back on weu: the task resumes where it left weu

    assert deployment.target() == expected(("a", 12), ("b", 6), ("c", 5), ("d", 6), ("e", 3))
    assert deployment.skipped("weu") == 12  # b* and d*, handled on neu meanwhile
