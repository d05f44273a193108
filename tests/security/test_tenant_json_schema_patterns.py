"""A tenant's JSON Schema regexes: matched in linear time by the replication app, or refused by name.

A `validate` editor's schema (inline, or from a ConfigMap the tenant controls) is matched against every
event, and the events come from whoever may send to the source. A pattern that makes a backtracking
engine try every split (`^(\\w+\\s?)*$`, `^(a+)+$`) would stall the task on one crafted event: the app
matches them with RE2 and answers at once. What RE2 cannot match linearly (backreferences,
lookaround, `unevaluatedProperties` beside `patternProperties`) is refused by `federator validate` and
by the app's start-up check, at the field, with the reason. The app's attempts run in a child process
(tenant_guard), so that a backtracking matcher fails the test ("ReDoS") instead of hanging it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from tenant_guard import answer_of
from tenant_manifests import NAMESPACE, replication_task

from federator.planning.task import plan_replication_task
from federator.settings import OperatorSettings
from federator.validation import check_object
from federator_contract.api.editors import ValidateEditor
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.taskconfig import TaskConfig, TaskConfigError
from federator_spark.editors.base import Rejected
from federator_spark.editors.validate import ValidateStep
from federator_spark.events import Event

EDITOR_PATH = "spec.editors[0].validate.jsonSchema"

# (schema, body): each body is the one that makes Python's `re` backtrack through every split.
CATASTROPHIC = [
    pytest.param(
        {"properties": {"note": {"type": "string", "pattern": r"^(\w+\s?)*$"}}},
        {"note": "a" * 40 + "!"},
        "$.note: 'aaaa",
        id="nested-quantifier-pattern",
    ),
    pytest.param(
        {"patternProperties": {"^(a+)+$": {"type": "integer"}}, "additionalProperties": False},
        {"a" * 40 + "!": 1},
        "$: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!' does not match any of the regexes: '^(a+)+$'",
        id="pattern-properties-with-additional-properties",
    ),
    pytest.param(
        {"properties": {"note": {"pattern": "^(a|a)*$"}}},
        {"note": "a" * (1 << 20) + "!"},
        "$.note: 'aaaa",
        id="megabyte-against-an-alternation",
    ),
]


def task_config() -> TaskConfig:
    """The task config the operator plans for the tenant's task."""
    spec = ReplicationTaskSpec.model_validate(replication_task()["spec"])
    plan = plan_replication_task(name="orders", namespace=NAMESPACE, spec=spec, settings=OperatorSettings())
    return plan.task_config


def validation_verdict(schema: dict[str, Any], body: dict[str, Any]) -> str:
    """The app's `validate` editor, built from the tenant's schema, on one event: why it was rejected."""
    editor = ValidateEditor.model_validate({"jsonSchema": schema})  # invalid events are dead-lettered
    event = Event(
        body=json.dumps(body).encode(),
        source="host/orders",
        partition="0",
        partition_count=1,
        sequence_number=0,
        offset="0",
        enqueued_time=datetime(2026, 11, 1, tzinfo=UTC),
        partition_key=None,
    )
    try:
        ValidateStep.build(editor, task_config()).open(None).apply(event, None)  # type: ignore[arg-type]
    except Rejected as rejected:
        return str(rejected)
    return "accepted"


@pytest.mark.parametrize(("schema", "body", "reason"), CATASTROPHIC)
def test_a_crafted_event_is_rejected_at_once(schema: dict[str, Any], body: Any, reason: str) -> None:
    assert answer_of(validation_verdict, schema, body).startswith(reason)


REFUSED = [
    pytest.param(
        {"properties": {"id": {"type": "string", "pattern": r"^(\w)\1$"}}},
        "invalid JSON Schema at $.properties.id.pattern: RE2 cannot compile",
        id="backreference",
    ),
    pytest.param(
        {"patternProperties": {"^(?!internal)": {"type": "string"}}},
        "invalid JSON Schema at $.patternProperties: RE2 cannot compile '^(?!internal)'",
        id="lookahead-property-name",
    ),
    pytest.param(
        {"patternProperties": {"^x-": {}}, "unevaluatedProperties": False},
        "unevaluatedProperties cannot be used with patternProperties",
        id="unevaluated-properties-beside-pattern-properties",
    ),
]


@pytest.mark.parametrize(("schema", "message"), REFUSED)
def test_validate_refuses_a_regex_it_cannot_match_linearly(schema: dict[str, Any], message: str) -> None:
    manifest = replication_task(editors=[{"validate": {"jsonSchema": schema, "onInvalid": "drop"}}])
    problems = [(p.path, p.message) for p in check_object(manifest).problems]
    assert [path for path, _ in problems] == [EDITOR_PATH]
    assert problems[0][1].startswith(message)


@pytest.mark.parametrize(("schema", "message"), REFUSED)
def test_the_app_refuses_it_at_start_up_too(schema: dict[str, Any], message: str) -> None:
    """A schema from a ConfigMap reaches the app without `validate`: its own start-up check refuses it."""
    editor = ValidateEditor.model_validate({"jsonSchema": schema})
    with pytest.raises(TaskConfigError) as refused:
        ValidateStep.build(editor, task_config())
    assert str(refused.value).startswith(message)
