"""The `enrich` editor: sets static properties, then one property looked up in a ConfigMap table
(a JSON object ``{key: value}``; non-string values are stored as text, objects and arrays as JSON).

The lookup key is read from the event as it entered the editor (a property, ``sys.<Name>`` or
``body.<path>``, as conditions read them). A key that is absent from the event or from the table is
handled by ``onMissing``: skip (the static properties are still set), drop or deadLetter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from federator_contract.api.editors import EnrichEditor, LookupSpec
from federator_contract.sql import ast
from federator_contract.taskconfig import TaskConfig, TaskConfigError
from federator_spark.config import config_map_json
from federator_spark.editors.base import EditorStep, Rejected, TaskScope
from federator_spark.editors.references import as_text, parse_reference, resolve
from federator_spark.event_messages import EventMessage
from federator_spark.events import Event


@dataclass(frozen=True)
class Lookup:
    table: dict[str, str]
    key: ast.Reference
    key_from: str
    into: str
    on_missing: Literal["skip", "drop", "deadLetter"]
    source: str  # `<ConfigMap>/<key>`, for reasons

    @classmethod
    def build(cls, spec: LookupSpec, config: TaskConfig) -> Lookup:
        ref = spec.config_map_ref
        raw = config_map_json(config, ref)
        if not isinstance(raw, dict):
            raise TaskConfigError(f"lookup table {ref.name}/{ref.key} is not a JSON object")
        table = {key: as_text(value) for key, value in raw.items() if value is not None}
        try:
            key = parse_reference(spec.key_from)
        except ValueError as error:
            raise TaskConfigError(f"keyFrom {error}") from None
        return cls(table, key, spec.key_from, spec.into, spec.on_missing, f"{ref.name}/{ref.key}")


@dataclass(frozen=True)
class EnrichStep:
    kind: ClassVar[str] = "enrich"
    properties: dict[str, str]
    lookup: Lookup | None

    @classmethod
    def build(cls, spec: EnrichEditor, config: TaskConfig) -> EnrichStep:
        lookup = Lookup.build(spec.lookup, config) if spec.lookup is not None else None
        return cls(dict(spec.properties or {}), lookup)

    def open(self, scope: TaskScope) -> EditorStep:
        return self

    def apply(self, event: Event, message: EventMessage) -> Event | None:
        properties = {**event.properties, **self.properties} if self.properties else None
        lookup = self.lookup
        if lookup is not None:
            key = resolve(lookup.key, message)
            value = lookup.table.get(key) if key is not None else None
            if value is not None:
                properties = properties if properties is not None else dict(event.properties)
                properties[lookup.into] = value
            elif lookup.on_missing == "drop":
                return None
            elif lookup.on_missing == "deadLetter":
                if key is None:
                    raise Rejected(f"lookup key {lookup.key_from} has no value")
                raise Rejected(f"lookup key {lookup.key_from} = {key!r} is not in {lookup.source}")
        return event if properties is None else event.edited(properties=properties)
