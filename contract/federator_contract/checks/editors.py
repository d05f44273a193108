"""What the editor chain needs before it runs: a JSON Schema that is one, an Avro schema that parses,
system properties that exist. Each single-value function is what the app calls on a ConfigMap's content
too; the spec-level functions check what the spec holds inline."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from typing import Any

from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.checks.findings import Finding
from federator_contract.checks.schema_patterns import regex_problem
from federator_contract.sql.system_properties import SYSTEM_PROPERTIES, find_system_property


def json_schema_problem(schema: Any) -> str | None:
    """Why `schema` is not a JSON Schema (draft 2020-12) the `validate` editor can use, or None."""
    from jsonschema import Draft202012Validator  # an optional dependency: only this check needs it
    from jsonschema.exceptions import SchemaError

    if not isinstance(schema, dict):
        return f"the JSON Schema is a {type(schema).__name__}, not an object"
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        return f"invalid JSON Schema at {error.json_path}: {error.message}"
    return regex_problem(schema)


def parse_avro_schema(raw: Any) -> Any:
    """The Avro schema (a JSON document, or its text) as fastavro uses it; ValueError says why not."""
    import fastavro  # an optional dependency: only this check needs it

    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as error:
            raise ValueError(f"the Avro schema is not JSON: {error}") from None
    try:
        return fastavro.parse_schema(raw)
    except Exception as error:  # fastavro raises several types (SchemaParseException, ValueError...)
        raise ValueError(f"invalid Avro schema: {error}") from None


def reference_problem(reference: str) -> str | None:
    """Why a value reference (`name`, `sys.<Name>`, `body.<path>`) cannot be resolved, or None."""
    scope, dot, rest = reference.partition(".")
    if not dot or scope != "sys" or find_system_property(rest) is not None:
        return None
    close = difflib.get_close_matches(rest, list(SYSTEM_PROPERTIES), 1, 0.6)
    hint = f"; did you mean sys.{close[0]}?" if close else ""
    return f"unknown system property {rest!r}{hint}"


def json_schema_findings(spec: ReplicationTaskSpec) -> Iterator[Finding]:
    """An inline `validate.jsonSchema` that is not a valid JSON Schema."""
    for i, editor in enumerate(spec.editors):
        schema = editor.validate_.json_schema if editor.validate_ is not None else None
        problem = json_schema_problem(schema) if schema is not None else None
        if problem is not None:
            yield Finding(("editors", i, "validate", "jsonSchema"), problem)


def avro_schema_findings(spec: ReplicationTaskSpec) -> Iterator[Finding]:
    """An inline `transcode.avroSchema` that does not parse."""
    for i, editor in enumerate(spec.editors):
        source = editor.transcode.avro_schema if editor.transcode is not None else None
        if source is None or source.inline is None:
            continue
        try:
            parse_avro_schema(source.inline)
        except ValueError as error:
            yield Finding(("editors", i, "transcode", "avroSchema", "inline"), str(error))


def reference_findings(spec: ReplicationTaskSpec) -> Iterator[Finding]:
    """`dedupe.key` and `enrich.lookup.keyFrom` naming a system property that does not exist."""
    for i, editor in enumerate(spec.editors):
        references: list[tuple[tuple[str | int, ...], str]] = []
        if editor.dedupe is not None:
            references.append((("editors", i, "dedupe", "key"), editor.dedupe.key))
        if editor.enrich is not None and editor.enrich.lookup is not None:
            references.append((("editors", i, "enrich", "lookup", "keyFrom"), editor.enrich.lookup.key_from))
        for path, reference in references:
            problem = reference_problem(reference)
            if problem is not None:
                yield Finding(path, problem)
