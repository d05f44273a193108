"""What a Service Bus stream reader reads: typed, checked once. A ReplicationTask's driver plans it from the
task config; the ``servicebus`` data source reads it from its string options (a wrong option fails the
query at start)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from federator_contract.checkpoints import CheckpointLayout
from federator_spark.connections import Connection
from federator_spark.sources.trigger_phase import TriggerPhase

SUB_QUEUES = ("none", "deadLetter")
WAIT_SECONDS = 1.0  # how long an idle poll waits
LOCK_RENEWAL_SECONDS = 600.0  # how long locks are renewed without any call from Spark


@dataclass(frozen=True)
class SourceSettings:
    connection: Connection
    queue: str | None
    topic: str | None
    subscription: str | None
    dead_letter: bool
    max_messages: int
    layout: CheckpointLayout
    """The query's checkpoint: Spark's commit log there decides completion; the spool lives under it."""
    wait_seconds: float = WAIT_SECONDS
    max_lock_renewal_seconds: float = LOCK_RENEWAL_SECONDS
    status_file: str | None = None
    phase: TriggerPhase | None = None
    """Where in each trigger interval the batches begin (a paced member of a shared application)."""

    @classmethod
    def from_options(cls, options: Any) -> SourceSettings:
        for required in ("connection", "checkpointLocation"):
            if required not in options:
                raise ValueError(f"servicebus source needs the option {required!r}")
        queue, topic, subscription = (
            options.get("queueName"),
            options.get("topicName"),
            options.get("subscriptionName"),
        )
        if (queue is None) == (topic is None) or (topic is None) != (subscription is None):
            raise ValueError("servicebus source needs 'queueName', or 'topicName' with 'subscriptionName'")
        sub_queue = options.get("subQueue", "none")
        if sub_queue not in SUB_QUEUES:
            raise ValueError(f"subQueue must be one of {SUB_QUEUES}, not {sub_queue!r}")
        max_messages = int(options.get("maxMessagesPerBatch", "1000"))
        if max_messages < 1:
            raise ValueError("maxMessagesPerBatch must be at least 1")
        return cls(
            connection=Connection.from_option(options["connection"]),
            queue=queue,
            topic=topic,
            subscription=subscription,
            dead_letter=sub_queue == "deadLetter",
            max_messages=max_messages,
            layout=CheckpointLayout.at(options["checkpointLocation"]),
            wait_seconds=float(options.get("receiveWaitSeconds", WAIT_SECONDS)),
            max_lock_renewal_seconds=float(options.get("maxLockRenewalSeconds", LOCK_RENEWAL_SECONDS)),
            status_file=options.get("statusFile"),
        )

    @property
    def entity_path(self) -> str:
        path = self.queue or f"{self.topic}/Subscriptions/{self.subscription}"
        return f"{path}/$DeadLetterQueue" if self.dead_letter else path

    @property
    def checkpoint(self) -> Path:
        return self.layout.query_dir

    @property
    def spool_dir(self) -> Path:
        return self.layout.spool_dir
