"""The `dedupe` editor: drops an event whose key (a property, ``sys.<Name>`` or ``body.<path>``;
default ``sys.MessageId``) was let through less than ``windowSeconds`` earlier.

Time is the source enqueue time, not the clock, so a replayed batch decides exactly as before.
Keys are remembered per source partition (repeats across partitions are not seen: a keyed stream
stays in one partition) and forgotten once older than the window, so memory holds only the keys of
one window. Events without the key pass. The state survives restarts and replays: see
:mod:`federator_spark.editors.state`.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import ClassVar

from federator_contract.api.editors import DedupeEditor
from federator_contract.sql import ast
from federator_contract.taskconfig import TaskConfigError
from federator_spark.editors.base import EditorStep, TaskScope
from federator_spark.editors.references import parse_reference, resolve
from federator_spark.editors.state import PartitionState
from federator_spark.event_messages import EventMessage
from federator_spark.events import Event


@dataclass(frozen=True)
class DedupeStep:
    kind: ClassVar[str] = "dedupe"
    key: ast.Reference
    window_seconds: float
    state_name: str  # `<editor index>-dedupe`: the state directory

    @classmethod
    def build(cls, spec: DedupeEditor, state_name: str) -> DedupeStep:
        try:
            key = parse_reference(spec.key)
        except ValueError as error:
            raise TaskConfigError(f"key {error}") from None
        return cls(key, float(spec.window_seconds), state_name)

    def open(self, scope: TaskScope) -> EditorStep:
        state = PartitionState(scope.state_dir, self.state_name, scope.partition, scope.batch_id)
        deduper = _Deduper(self.key, self.window_seconds, OrderedDict(state.load() or {}))
        scope.when_published(lambda: state.save(deduper.seen))
        return deduper


class _Deduper:
    def __init__(self, key: ast.Reference, window: float, seen: OrderedDict[str, float]) -> None:
        self.key = key
        self.window = window
        self.seen = seen  # key → enqueue time (epoch seconds) it was let through, oldest first

    def apply(self, event: Event, message: EventMessage) -> Event | None:
        key = resolve(self.key, message)
        if key is None:
            return event
        now = event.enqueued_time.timestamp()
        seen = self.seen
        while seen:  # forget what left the window
            oldest, at = next(iter(seen.items()))
            if at > now - self.window:
                break
            del seen[oldest]
        if key in seen:
            return None
        seen[key] = now
        return event
