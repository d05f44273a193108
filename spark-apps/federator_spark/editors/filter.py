"""The `filter` editor: drops events for which the condition does not hold."""

from __future__ import annotations

from dataclasses import dataclass

from federator.sql import Dialect, Filter, SqlMessage, parse_filter
from federator_spark.events import Event


@dataclass(frozen=True)
class FilterStep:
    condition: Filter

    @classmethod
    def build(cls, text: str) -> FilterStep:
        return cls(parse_filter(text, Dialect.FEDERATOR))

    def apply(self, event: Event, message: SqlMessage) -> Event | None:
        return event if self.condition.matches(message) else None
