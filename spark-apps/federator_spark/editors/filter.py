"""The `filter` editor: drops events for which the condition does not hold."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from federator_contract.api.editors import FilterEditor
from federator_contract.sql import Dialect, Filter, parse_filter
from federator_spark.editors.base import EditorStep, TaskScope
from federator_spark.event_messages import EventMessage
from federator_spark.events import Event


@dataclass(frozen=True)
class FilterStep:
    kind: ClassVar[str] = "filter"
    condition: Filter

    @classmethod
    def build(cls, spec: FilterEditor) -> FilterStep:
        return cls(parse_filter(spec.condition, Dialect.FEDERATOR))

    def open(self, scope: TaskScope) -> EditorStep:
        return self

    def apply(self, event: Event, message: EventMessage) -> Event | None:
        return event if self.condition.matches(message) else None
