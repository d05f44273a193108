"""What an editor step is."""

from __future__ import annotations

from typing import Protocol

from federator.sql import SqlMessage
from federator_spark.events import Event


class EventEditor(Protocol):
    def apply(self, event: Event, message: SqlMessage) -> Event | None:
        """The edited event, or None to drop it."""
