"""The options of a Service Bus stream reader, checked once (a wrong option fails the query at start)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from federator_contract.checkpoints import STATE_DIR, local_checkpoint_path
from federator_spark.connections import Connection

SUB_QUEUES = ("none", "deadLetter")


@dataclass(frozen=True)
class SourceSettings:
    connection: Connection
    queue: str | None
    topic: str | None
    subscription: str | None
    dead_letter: bool
    max_messages: int
    checkpoint: Path
    wait_seconds: float
    max_lock_renewal_seconds: float
    status_file: str | None = None

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
            checkpoint=local_checkpoint_path(options["checkpointLocation"]),
            wait_seconds=float(options.get("receiveWaitSeconds", "1")),
            max_lock_renewal_seconds=float(options.get("maxLockRenewalSeconds", "600")),
            status_file=options.get("statusFile"),
        )

    @property
    def entity_path(self) -> str:
        path = self.queue or f"{self.topic}/Subscriptions/{self.subscription}"
        return f"{path}/$DeadLetterQueue" if self.dead_letter else path

    @property
    def spool_dir(self) -> Path:
        return self.checkpoint / STATE_DIR / "servicebus"
