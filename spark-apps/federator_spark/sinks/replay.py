"""Effectively-once on Event Hubs targets: what an earlier attempt of a batch already published.

An event hub cannot refuse a duplicate, so a write task must know, when Spark runs a batch again after a
crash (same batchId, same offsets), which of its events an earlier attempt got to the targets. Reading
the targets back costs a receiver per target partition; doing it in every batch would cost more than the
batch. So each write task leaves an *intent* before its first send, and reads back only when it finds one:

1. Before anything of source partition *p* in batch *N* is sent to an Event Hubs endpoint, the task
   reads the endpoints' last sequence numbers on the partitions *p* can reach (partition *p* itself when
   the partition counts are equal, else all of them) and writes ``<state>/intents/<p>.json`` =
   ``{"batchId": N, "tails": …}`` durably. It does so on a thread while its source delivers the first
   events; the first send waits for it.
2. A task of batch *N* that finds the intent of batch *N* for its partition is a replay: an earlier
   attempt may have published anything after those tails. It reads each endpoint from there, collects
   the ``repl-source-id`` of events from its own source partition, and skips those (:meth:`published`).
   It keeps that intent: its tails are still from before the first attempt's sends.
3. An intent of an earlier batch means nothing of *N* was sent before (step 1 comes first).

A send that fails and is tried again within a run may also have been delivered (the broker took it,
the answer was lost): before that attempt, the publisher reads its destination back the same way
(:meth:`recheck`).

A batch whose commit record exists was published whole before the crash; the write tasks skip it without
reading anything (``sinks/replication.py``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

from federator_contract.files import write_atomically
from federator_spark import failpoints
from federator_spark.events import Event
from federator_spark.outages import Endpoint, retrying
from federator_spark.plan import TargetPlan, WritePlan

logger = logging.getLogger(__name__)

INTENTS_DIR = "intents"

Tails = dict[str, int]  # target partition → last sequence number


class Intents:
    """The newest intent per source partition: one small file each, replaced every batch."""

    def __init__(self, state_dir: str) -> None:
        self.directory = Path(state_dir) / INTENTS_DIR

    def read(self, partition: str) -> dict[str, Any] | None:
        try:
            intent: dict[str, Any] = json.loads((self.directory / f"{partition}.json").read_text())
        except FileNotFoundError:
            return None
        return intent

    def write(self, partition: str, batch_id: int, tails: dict[str, Tails]) -> None:
        content = json.dumps({"batchId": batch_id, "tails": tails}, sort_keys=True)
        write_atomically(self.directory / f"{partition}.json", content, durable=True)


class ReplayGuard:
    """One source partition's part of batch ``batch_id`` on the task's Event Hubs endpoints."""

    def __init__(self, plan: WritePlan, batch_id: int, first: Event) -> None:
        assert plan.state_dir is not None  # effectively-once plans have one
        self.plan = plan
        self.batch_id = batch_id
        self.partition = first.partition
        self.partition_count = first.partition_count
        self.prefix = f"{first.source}/{first.partition}/"
        self.hubs = {name: t for name, t in plan.endpoints.items() if t.kind == "eventHub"}
        self.published: dict[str, set[int]] = {}
        self.tails: dict[str, Tails] = {}
        # Time spent: making the intent (tail reads, fsync), sends waiting for it, reading back.
        self.seconds = {"intent": 0.0, "intentWait": 0.0, "readBack": 0.0}
        self._intents = Intents(plan.state_dir)
        self._armed = threading.Event()
        self._error: BaseException | None = None
        intent = self._intents.read(self.partition)
        if intent is not None and intent["batchId"] == batch_id:
            self.tails = intent["tails"]
            self.published = {name: self.recheck(name) for name in self.tails if name in self.hubs}
            found = sum(map(len, self.published.values()))
            logger.info(
                "batch %d partition %s is a replay: %d of its events were published before",
                batch_id,
                self.partition,
                found,
            )
            self._armed.set()
        else:
            threading.Thread(target=self._arm, daemon=True, name=f"intent-{self.partition}").start()

    def _arm(self) -> None:
        started = time.perf_counter()
        try:
            self.tails = {name: self._destination_tails(name, target) for name, target in self.hubs.items()}
            self._intents.write(self.partition, self.batch_id, self.tails)
            failpoints.reached("intent-written", self.batch_id)
        except BaseException as error:  # the first send raises it
            self._error = error
        finally:
            self.seconds["intent"] = time.perf_counter() - started
            self._armed.set()

    def _destination_tails(self, name: str, target: TargetPlan) -> Tails:
        from federator_spark.sinks.eventhubs_producers import prepare

        producer = prepare(target)

        def read() -> Tails:
            ids = producer.partition_ids()
            reachable = [self.partition] if len(ids) == self.partition_count else ids
            return producer.last_sequence_numbers(reachable)

        return retrying(read, self._endpoint(name), f"reading the positions of {target.entity}")

    def wait_armed(self) -> None:
        """Returns once the intent is durable (raises what kept it from being written)."""
        if not self._armed.is_set():
            waiting = time.perf_counter()
            self._armed.wait()
            self.seconds["intentWait"] += time.perf_counter() - waiting
        if self._error is not None:
            raise self._error

    def recheck(self, name: str, partition: str | None = None) -> set[int]:
        """Source sequence numbers of this partition at endpoint ``name`` since the intent (on one target
        partition, or all the intent names)."""
        from federator_spark.sinks.eventhubs import published_sequences

        tails = self.tails.get(name, {})
        if partition is not None:
            tails = {p: s for p, s in tails.items() if p == partition}
        target = self.hubs[name]
        started = time.perf_counter()
        try:
            return retrying(
                lambda: published_sequences(target, tails, self.prefix),
                self._endpoint(name),
                f"reading back {target.entity}",
            )
        finally:
            self.seconds["readBack"] += time.perf_counter() - started

    def _endpoint(self, name: str) -> Endpoint:
        return Endpoint("target", name, self.plan.status_file)
