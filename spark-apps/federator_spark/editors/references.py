"""Values editors read from an event by reference (the spec's ``ValueReference``): a user property,
``sys.<SystemProperty>`` or ``body.<path>``, resolved exactly as routing conditions resolve them."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from federator_contract.checks.editors import reference_problem
from federator_contract.sql import ast
from federator_contract.sql.evaluate import MISSING, lookup
from federator_contract.sql.system_properties import find_system_property
from federator_spark.event_messages import EventMessage
from federator_spark.events import iso


def parse_reference(text: str) -> ast.Reference:
    """Raises ValueError for an unknown system property."""
    problem = reference_problem(text)
    if problem is not None:
        raise ValueError(f"{text!r}: {problem}")
    scope, dot, rest = text.partition(".")
    system = find_system_property(rest) if dot and scope == "sys" else None
    if system is not None:
        return ast.Property.system(system.name)
    if dot and scope == "body":
        return ast.BodyPath(tuple(rest.split(".")))
    return ast.Property.user(text)


def resolve(reference: ast.Reference, message: EventMessage) -> str | None:
    """The referenced value as text (JSON for objects and arrays); None when absent or null."""
    found = lookup(reference, message)
    if found is MISSING or found is None:
        return None
    return as_text(found)


def as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return str(value)
