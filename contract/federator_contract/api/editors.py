"""The editor chain of a ReplicationTask: each step filters, reshapes, checks or annotates events."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StringConstraints

from federator_contract.api.base import (
    ConfigMapKeySelector,
    FedModel,
    PropertyName,
    SecretKeySelector,
    SqlExpression,
    ValueReference,
    cel,
    exactly_one,
)


class FilterEditor(FedModel):
    """Drops events for which the condition does not hold."""

    condition: SqlExpression
    """Predicate in the same syntax as a target condition."""


class FlattenSpec(FedModel):
    """Flatten nested JSON objects into top-level fields."""

    separator: Annotated[str, StringConstraints(min_length=1, max_length=4)] = "_"
    """Joins nested names: `{"a": {"b": 1}}` becomes `{"a_b": 1}`. Default: `_`."""


JsonPath = Annotated[
    str, StringConstraints(min_length=1, max_length=256, pattern=r"^[A-Za-z0-9_$\-]+(\.[A-Za-z0-9_$\-]+)*$")
]


class TransformEditor(FedModel):
    """Reshapes a JSON body: project, then rename, then flatten. Non-JSON bodies are dead-lettered."""

    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "has(self.project) || has(self.rename) || has(self.flatten)",
                "set at least one of project, rename, flatten",
            )
        )
    )

    project: Annotated[list[JsonPath], Field(min_length=1, max_length=256)] | None = None
    """Keep only these dotted paths (`order.id`)."""
    rename: Annotated[dict[str, JsonPath], Field(max_length=256)] | None = None
    """Rename fields: `{old.path: new.path}`."""
    flatten: FlattenSpec | None = None
    """Flatten nested objects."""


class ValidateEditor(FedModel):
    """Checks a JSON body against a JSON Schema. Invalid events go to the task's dead-letter target with
    the reason (or are dropped), and the task keeps running."""

    model_config = ConfigDict(json_schema_extra=cel(exactly_one("jsonSchema", "schemaConfigMapRef")))

    json_schema: (
        Annotated[dict[str, Any], Field(json_schema_extra={"x-kubernetes-preserve-unknown-fields": True})]
        | None
    ) = None
    """The JSON Schema (draft 2020-12), inline."""
    schema_config_map_ref: ConfigMapKeySelector | None = None
    """A ConfigMap key holding the JSON Schema."""
    on_invalid: Literal["deadLetter", "drop"] = "deadLetter"
    """What happens to an invalid event. Default: deadLetter (requires `spec.deadLetter`)."""


class LookupSpec(FedModel):
    """Adds a property looked up in a table: the value of `keyFrom` is the row key."""

    config_map_ref: ConfigMapKeySelector
    """A ConfigMap key holding a JSON object `{key: value}`."""
    key_from: ValueReference
    """Where the lookup key comes from: a property name, `sys.<SystemProperty>` or `body.<path>`."""
    into: PropertyName
    """Property that receives the value."""
    on_missing: Literal["skip", "drop", "deadLetter"] = "skip"
    """When the key is absent from the table: leave the event as is, drop it or dead-letter it.
    Default: skip."""


class EnrichEditor(FedModel):
    """Adds properties: static values and values looked up in a ConfigMap table."""

    model_config = ConfigDict(
        json_schema_extra=cel(("has(self.properties) || has(self.lookup)", "set properties, lookup or both"))
    )

    properties: (
        Annotated[dict[str, Annotated[str, StringConstraints(max_length=4096)]], Field(max_length=64)] | None
    ) = None
    """Static properties to set on every event."""
    lookup: LookupSpec | None = None
    """A table lookup."""


class ConfigMapOrInline(FedModel):
    """A document given inline or by ConfigMap reference."""

    model_config = ConfigDict(json_schema_extra=cel(exactly_one("inline", "configMapRef")))

    inline: Annotated[str, StringConstraints(min_length=1, max_length=65536)] | None = None
    """The document itself."""
    config_map_ref: ConfigMapKeySelector | None = None
    """A ConfigMap key holding the document."""


class TranscodeEditor(FedModel):
    """Converts bodies between encodings: Avro (binary, with a schema) and JSON; gzip and plain."""

    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "(self.input == 'avro' || self.output == 'avro') == has(self.avroSchema)",
                "avroSchema is required when input or output is avro, and only then",
            ),
            (
                "self.input != self.output || self.inputCompression != self.outputCompression",
                "transcode must change the format or the compression",
            ),
        )
    )

    input: Literal["json", "avro", "bytes"] = "bytes"
    """Encoding of incoming bodies. Default: bytes (left as is)."""
    output: Literal["json", "avro", "bytes"] = "bytes"
    """Encoding of outgoing bodies. Default: bytes."""
    input_compression: Literal["none", "gzip"] = "none"
    """Compression of incoming bodies. Default: none."""
    output_compression: Literal["none", "gzip"] = "none"
    """Compression of outgoing bodies. Default: none."""
    avro_schema: ConfigMapOrInline | None = None
    """The Avro schema (JSON) for avro input or output."""


class AttestEditor(FedModel):
    """Signs each event: an HMAC-SHA256 over body and properties in a property, verifiable downstream."""

    key_secret_ref: SecretKeySelector
    """A Secret key holding the HMAC key."""
    property: PropertyName = "repl-signature"
    """Property that carries the signature. Default: `repl-signature`."""


class VerifyEditor(FedModel):
    """Checks the signature an attest editor added upstream; tampered or unsigned events are dropped or
    dead-lettered."""

    key_secret_ref: SecretKeySelector
    """A Secret key holding the HMAC key."""
    property: PropertyName = "repl-signature"
    """Property that carries the signature. Default: `repl-signature`."""
    on_failure: Literal["deadLetter", "drop"] = "deadLetter"
    """What happens to an event that fails verification. Default: deadLetter."""


class ChainEditor(FedModel):
    """Adds a running SHA-256 over each partition-key stream, so a consumer can detect a gap."""

    property: PropertyName = "repl-chain"
    """Property that carries the running hash. Default: `repl-chain`."""


class DedupeEditor(FedModel):
    """Drops repeats of a key seen within a window."""

    key: ValueReference = "sys.MessageId"
    """What identifies a repeat: a property name, `sys.<SystemProperty>` or `body.<path>`.
    Default: `sys.MessageId`."""
    window_seconds: Annotated[int, Field(ge=1, le=604800)] = 600
    """How long a key is remembered. Default: 600."""


class Editor(FedModel):
    """One step of the editor chain. Set exactly one editor."""

    model_config = ConfigDict(
        json_schema_extra=cel(
            exactly_one(
                "filter",
                "transform",
                "validate",
                "enrich",
                "transcode",
                "attest",
                "verify",
                "chain",
                "dedupe",
            )
        )
    )

    filter: FilterEditor | None = None
    """Drop events by condition."""
    transform: TransformEditor | None = None
    """Project, rename, flatten JSON fields."""
    validate_: Annotated[ValidateEditor | None, Field(alias="validate")] = None
    """Validate JSON bodies against a schema."""
    enrich: EnrichEditor | None = None
    """Add static or looked-up properties."""
    transcode: TranscodeEditor | None = None
    """Avro ↔ JSON, gzip ↔ plain."""
    attest: AttestEditor | None = None
    """Sign events (HMAC)."""
    verify: VerifyEditor | None = None
    """Verify signatures."""
    chain: ChainEditor | None = None
    """Running hash per stream."""
    dedupe: DedupeEditor | None = None
    """Drop repeats within a window."""
