"""The `chain` editor: a running SHA-256 per partition-key stream, in a property (default
`repl-chain`), so that a consumer can prove it saw every event of a stream.

    h_1 = sha256(body_1),  h_n = sha256(h_{n-1} || body_n)     (h as 32 raw bytes; the property is hex)

A stream is the events of one partition key; keyless events form one stream per source partition
(a consumer tells them apart by the `<host>/<entity>/<partition>/` prefix of `repl-source-id`). The
body hashed is the body as it leaves this editor: put `chain` after every editor that changes it.

A consumer keeps the last value per stream and checks, for each event, that
``sha256(bytes.fromhex(last) + body).hexdigest()`` equals the event's property; a mismatch means an
event of the stream is missing (or was changed) between the two. The state (the last hash of every
stream seen) survives restarts and replays: see :mod:`federator_spark.editors.state`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, ClassVar

from federator_spark.editors.base import EditorStep, TaskScope
from federator_spark.editors.state import PartitionState
from federator_spark.event_messages import EventMessage
from federator_spark.events import Event


@dataclass(frozen=True)
class ChainStep:
    kind: ClassVar[str] = "chain"
    property: str
    state_name: str  # `<editor index>-chain`: the state directory

    def open(self, scope: TaskScope) -> EditorStep:
        state = PartitionState(scope.state_dir, self.state_name, scope.partition, scope.batch_id)
        chainer = _Chainer.restore(self.property, state.load())
        scope.when_published(lambda: state.save(chainer.snapshot()))
        return chainer


class _Chainer:
    def __init__(self, property_name: str, heads: dict[str, bytes], keyless: bytes) -> None:
        self.property = property_name
        self.heads = heads
        self.keyless = keyless

    @classmethod
    def restore(cls, property_name: str, snapshot: Any) -> _Chainer:
        if snapshot is None:
            return cls(property_name, {}, b"")
        heads = {key: bytes.fromhex(value) for key, value in snapshot["keys"].items()}
        return cls(property_name, heads, bytes.fromhex(snapshot["keyless"]))

    def snapshot(self) -> dict[str, Any]:
        return {
            "keys": {key: value.hex() for key, value in self.heads.items()},
            "keyless": self.keyless.hex(),
        }

    def apply(self, event: Event, message: EventMessage) -> Event | None:
        key = event.partition_key
        digest = hashlib.sha256(self.keyless if key is None else self.heads.get(key, b""))
        digest.update(event.body)
        head = digest.digest()
        if key is None:
            self.keyless = head
        else:
            self.heads[key] = head
        return event.edited(properties={**event.properties, self.property: head.hex()})
