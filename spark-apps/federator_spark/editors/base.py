"""What an editor is.

An editor is built once on the driver from its spec (picklable: it holds no secret and no open
resource) and opened once per write task, which yields the step that edits that task's events. A
step's ``apply`` returns the event unchanged (the same object), a changed copy (``Event.edited``: the
input is never mutated, so the writer knows when to rebuild the message routing conditions read), or
None to drop it; it raises :class:`Rejected` to send the event to the dead-letter target. Any other
exception from ``apply`` rejects that one event too; exceptions from ``open`` (a missing key, an
unreadable state file) fail the task, since every event would fail the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from federator_spark.event_messages import EventMessage
from federator_spark.events import Event


class Rejected(Exception):
    """The event goes to the dead-letter target; the message is the reason."""


@dataclass
class TaskScope:
    """What a step may know about its write task: one source partition of one micro-batch."""

    partition: str
    batch_id: int
    state_dir: str | None
    _on_published: list[Callable[[], None]] = field(default_factory=list)

    def when_published(self, action: Callable[[], None]) -> None:
        """Run ``action`` once every event of the task reached its targets (stateful steps save here)."""
        self._on_published.append(action)

    def published(self) -> None:
        for action in self._on_published:
            action()


class EditorStep(Protocol):
    def apply(self, event: Event, message: EventMessage) -> Event | None:
        """The event (the same object when unchanged), a changed copy, or None to drop it."""


class EventEditor(Protocol):
    kind: ClassVar[str]  # the spec's name, used in dead-letter reasons

    def open(self, scope: TaskScope) -> EditorStep:
        """The step that edits one write task's events (``self`` for editors without keys or state)."""
