"""The `validate` editor: checks a JSON body against a JSON Schema (draft 2020-12, its regexes matched by
RE2). The reason of an invalid event names the failing location (a JSON path, ``$`` for the root) and what
failed there."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator

from federator_contract.api.editors import ValidateEditor
from federator_contract.checks.editors import json_schema_problem
from federator_contract.checks.schema_patterns import json_schema_validator
from federator_contract.taskconfig import TaskConfig, TaskConfigError
from federator_spark.config import config_map_json
from federator_spark.editors.base import EditorStep, Rejected, TaskScope
from federator_spark.event_messages import EventMessage
from federator_spark.events import Event, NotJson


@dataclass(frozen=True)
class ValidateStep:
    kind: ClassVar[str] = "validate"
    schema: dict[str, Any]
    drop_invalid: bool

    @classmethod
    def build(cls, spec: ValidateEditor, config: TaskConfig) -> ValidateStep:
        if (spec.json_schema is None) == (spec.schema_config_map_ref is None):
            raise TaskConfigError("set exactly one of jsonSchema and schemaConfigMapRef")
        schema: Any = spec.json_schema
        if spec.schema_config_map_ref is not None:
            schema = config_map_json(config, spec.schema_config_map_ref)
        problem = json_schema_problem(schema)  # a ConfigMap's schema is checked here only
        if problem is not None:
            raise TaskConfigError(problem)
        return cls(schema, spec.on_invalid == "drop")

    def open(self, scope: TaskScope) -> EditorStep:
        # A compiled validator does not pickle, so each task compiles its own: its regexes are RE2's,
        # linear in the text (federator_contract.checks.schema_patterns).
        return _Validator(json_schema_validator(self.schema), self.drop_invalid)


@dataclass(frozen=True)
class _Validator:
    validator: Validator
    drop_invalid: bool

    def apply(self, event: Event, message: EventMessage) -> Event | None:
        try:
            document = event.json()
        except NotJson as error:
            return self._invalid(str(error))
        if self.validator.is_valid(document):
            return event
        failure = best_match(self.validator.iter_errors(document))
        return self._invalid(f"{failure.json_path}: {failure.message}")

    def _invalid(self, reason: str) -> Event | None:
        if self.drop_invalid:
            return None
        raise Rejected(reason)
