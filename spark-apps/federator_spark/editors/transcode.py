"""The `transcode` editor: gunzips, converts between Avro binary and JSON, gzips, in that order.

* Avro is the schemaless binary encoding of one datum of the schema (no container file header).
* The JSON side is the Avro JSON encoding without union type wrappers, i.e. plain JSON: `bytes` and
  `fixed` values are strings of code points 0-255, logical types carry their underlying Avro type
  (`timestamp-millis` a number, `decimal` its bytes).
* `bytes` on either side means "leave the format as it is": only the compression changes.
* gzip output has a zero timestamp, so the same input always gives the same bytes (replays,
  `chain` hashes). ContentType is left as it is.

A body that does not decode (not gzip, not JSON, not Avro of the schema, JSON that does not fit the
schema) is rejected with the reason.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from dataclasses import dataclass
from typing import Any, ClassVar

from federator_contract.api.editors import TranscodeEditor
from federator_contract.checks.editors import parse_avro_schema
from federator_contract.taskconfig import TaskConfig, TaskConfigError
from federator_spark.config import config_map_json
from federator_spark.editors.base import EditorStep, Rejected, TaskScope
from federator_spark.event_messages import EventMessage
from federator_spark.events import Event, NotJson


@dataclass(frozen=True)
class TranscodeStep:
    kind: ClassVar[str] = "transcode"
    conversion: tuple[str, str] | None  # (input, output) when the format changes
    gunzip: bool
    gzip: bool
    avro_schema: Any  # parsed by fastavro (a plain, picklable dict)

    @classmethod
    def build(cls, spec: TranscodeEditor, config: TaskConfig) -> TranscodeStep:
        formats = (spec.input, spec.output)
        schema = None
        if "avro" in formats:
            schema = _avro_schema(spec, config)
        convert = spec.input != spec.output and "bytes" not in formats
        return cls(
            formats if convert else None,
            spec.input_compression == "gzip",
            spec.output_compression == "gzip",
            schema,
        )

    def open(self, scope: TaskScope) -> EditorStep:
        return self

    def apply(self, event: Event, message: EventMessage) -> Event | None:
        body = event.body
        if self.gunzip:
            try:
                body = gzip.decompress(body)
            except (OSError, EOFError, zlib.error) as error:
                raise Rejected(f"body is not gzip: {error}") from None
        if self.conversion == ("avro", "json"):
            body = _avro_to_json(body, self.avro_schema)
        elif self.conversion == ("json", "avro"):
            try:
                document = json.loads(body) if self.gunzip else event.json()
            except NotJson as error:
                raise Rejected(str(error)) from None
            except ValueError as error:  # JSONDecodeError, UnicodeDecodeError
                raise Rejected(f"body is not JSON: {error}") from None
            body = _json_to_avro(document, self.avro_schema)
        if self.gzip:
            body = gzip.compress(body, mtime=0)
        return event.edited(body=body)


def _avro_schema(spec: TranscodeEditor, config: TaskConfig) -> Any:
    source = spec.avro_schema
    if source is None or (source.inline is None) == (source.config_map_ref is None):
        raise TaskConfigError("avroSchema needs exactly one of inline and configMapRef")
    raw = (
        config_map_json(config, source.config_map_ref) if source.config_map_ref is not None else source.inline
    )
    try:
        return parse_avro_schema(raw)
    except ValueError as error:
        raise TaskConfigError(str(error)) from None


def _avro_to_json(body: bytes, schema: Any) -> bytes:
    import fastavro

    buffer = io.BytesIO(body)
    try:
        datum = fastavro.schemaless_reader(buffer, schema)
    except Exception as error:  # a truncated or foreign body fails in many ways (EOF, index, decode)
        raise Rejected(f"body is not Avro of the schema: {type(error).__name__}: {error}") from None
    if buffer.tell() != len(body):
        raise Rejected(f"body is not Avro of the schema: {len(body) - buffer.tell()} bytes left over")
    text = io.StringIO()
    fastavro.json_writer(text, schema, [datum], write_union_type=False)
    return text.getvalue().rstrip("\n").encode()


def _json_to_avro(document: Any, schema: Any) -> bytes:
    import fastavro

    buffer = io.BytesIO()
    try:
        datum = _from_json(document, schema, schema.get("__named_schemas", {}))
        fastavro.schemaless_writer(buffer, schema, datum, strict=True)
    except Exception as error:  # ValueError, TypeError, ValidationError... on the field that misfits
        raise Rejected(f"body does not fit the Avro schema: {error}") from None
    return buffer.getvalue()


def _from_json(value: Any, schema: Any, named: dict[str, Any]) -> Any:
    """Plain JSON → the Python datum fastavro writes: `bytes`/`fixed` strings become bytes (code
    points 0-255); everything else is taken as it is."""
    if isinstance(schema, str):
        if schema == "bytes":
            return _bytes(value)
        return _from_json(value, named[schema], named) if schema in named else value
    if isinstance(schema, list):
        branch = _branch(value, schema, named)
        return value if branch is None else _from_json(value, branch, named)
    kind = schema.get("type")
    if kind in ("bytes", "fixed"):
        return _bytes(value)
    if kind in ("record", "error") and isinstance(value, dict):
        types = {f["name"]: f["type"] for f in schema["fields"]}
        return {k: _from_json(v, types[k], named) if k in types else v for k, v in value.items()}
    if kind == "array" and isinstance(value, list):
        return [_from_json(v, schema["items"], named) for v in value]
    if kind == "map" and isinstance(value, dict):
        return {k: _from_json(v, schema["values"], named) for k, v in value.items()}
    return value


def _branch(value: Any, union: list[Any], named: dict[str, Any]) -> Any:
    """The union branch whose conversion a plain JSON string, object or array needs (a string
    prefers string and enum branches); None when the value is taken as it is."""
    kinds = []
    for branch in union:
        resolved = named.get(branch, branch) if isinstance(branch, str) else branch
        kinds.append((resolved if isinstance(resolved, str) else resolved.get("type"), branch))
    if isinstance(value, str):
        if any(kind in ("string", "enum") for kind, _ in kinds):
            return None
        fits: tuple[str, ...] = ("bytes", "fixed")
    elif isinstance(value, dict):
        fits = ("record", "error", "map")
    elif isinstance(value, list):
        fits = ("array",)
    else:
        return None  # numbers, booleans and null: fastavro picks the branch itself
    return next((branch for kind, branch in kinds if kind in fits), None)


def _bytes(value: Any) -> Any:
    return value.encode("latin-1") if isinstance(value, str) else value
