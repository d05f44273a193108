"""Task config loading (the JSON the operator's planning code writes) and connection resolution."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from federator.api.base import DNS_LABEL, ConfigMapKeySelector, EndpointConnection, SecretKeySelector
from federator.api.replicationtask import ReplicationTaskSpec
from federator_spark.connections import Connection

MEMBERS_DIR = "members"  # under the checkpoint location: one sub-location per followed member


class TaskConfigError(ValueError):
    """The task config cannot be run by this application."""


@dataclass(frozen=True)
class Following:
    """`following` in the task config: the source reads the member a FailoverGroup publishes for
    consumers (docs/patterns/failover.md; the app's side is `federator_spark.following`)."""

    group: str
    member: str
    skew_seconds: int
    switched_at: str | None = None

    @classmethod
    def parse(cls, raw: Any) -> Following:
        if not isinstance(raw, dict):
            raise TaskConfigError(f"following must be an object, not {type(raw).__name__}")
        skew = raw.get("skewSeconds", 60)
        if not isinstance(skew, int) or isinstance(skew, bool) or skew < 0:
            raise TaskConfigError(f"following.skewSeconds must be an integer >= 0, not {skew!r}")
        return cls(_label(raw, "group"), _label(raw, "member"), skew, raw.get("switchedAt"))


def _label(raw: dict[str, Any], name: str) -> str:
    value = raw.get(name)
    # The member names a checkpoint directory: nothing but a DNS label may get there.
    if not isinstance(value, str) or re.fullmatch(DNS_LABEL, value) is None:
        raise TaskConfigError(f"following.{name} must be a DNS label, not {value!r}")
    return value


@dataclass(frozen=True)
class TaskConfig:
    name: str
    namespace: str
    spec: ReplicationTaskSpec
    checkpoint_location: str
    secret_env: dict[str, str] = field(default_factory=dict)
    metrics_port: int | None = None
    emulator_connections: dict[str, str] = field(default_factory=dict)
    status_file: str | None = None
    config_map_files: dict[str, str] = field(default_factory=dict)
    following: Following | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def query_checkpoint_location(self) -> str:
        """Where the query keeps what is tied to its source and batch ids (Spark's offsets, the Service Bus
        spool, commit records, editor state): a following source gets one sub-location per member, since
        positions of one namespace mean nothing on another. The status file stays at the task's level."""
        if self.following is None:
            return self.checkpoint_location
        return f"{self.checkpoint_location.rstrip('/')}/{MEMBERS_DIR}/{self.following.member}"

    def secret_env_for(self, selector: SecretKeySelector) -> str:
        """The environment variable that holds a Secret key's value in the Spark pods."""
        ref = f"{selector.name}/{selector.key}"
        env = self.secret_env.get(ref)
        if env is None:
            raise TaskConfigError(f"secretEnv has no environment variable for secret {ref!r}")
        return env

    def config_map_text(self, selector: ConfigMapKeySelector) -> str:
        """A ConfigMap key's content: the pods (and local mode) see each key as a file."""
        ref = f"{selector.name}/{selector.key}"
        path = self.config_map_files.get(ref)
        if path is None:
            raise TaskConfigError(f"configMapFiles has no file for ConfigMap key {ref!r}")
        try:
            return Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise TaskConfigError(f"ConfigMap key {ref!r}: cannot read {path}: {error}") from None

    def config_map_json(self, selector: ConfigMapKeySelector) -> Any:
        text = self.config_map_text(selector)
        try:
            return json.loads(text)
        except ValueError as error:
            ref = f"{selector.name}/{selector.key}"
            raise TaskConfigError(f"ConfigMap key {ref!r} is not JSON: {error}") from None

    def connection(self, endpoint: EndpointConnection) -> Connection:
        """How executors reach ``endpoint``'s namespace."""
        if endpoint.secret_ref is not None:
            return Connection(connection_string_env=self.secret_env_for(endpoint.secret_ref))
        if endpoint.workload_identity is not None:
            identity = endpoint.workload_identity
            return Connection(
                fully_qualified_namespace=identity.fully_qualified_namespace, client_id=identity.client_id
            )
        if endpoint.emulator is not None:
            text = self.emulator_connections.get(endpoint.emulator.namespace)
            if text is None:
                raise TaskConfigError(
                    f"emulatorConnections has no connection for emulator namespace "
                    f"{endpoint.emulator.namespace!r} (emulator connections exist in local mode only)"
                )
            return Connection(connection_string=text)
        raise TaskConfigError(
            "a failoverGroupRef connection reaches the app unresolved: the operator writes the followed "
            "member's connection into the task config"
        )

    def to_json(self) -> str:
        return json.dumps(self.raw, sort_keys=True)


def parse_task_config(raw: dict[str, Any]) -> TaskConfig:
    if raw.get("kind") != "ReplicationTask":
        raise TaskConfigError(f"task config kind must be ReplicationTask, not {raw.get('kind')!r}")
    metadata = raw.get("metadata") or {}
    if "checkpointLocation" not in raw:
        raise TaskConfigError("task config has no checkpointLocation")
    return TaskConfig(
        name=metadata["name"],
        namespace=metadata["namespace"],
        spec=ReplicationTaskSpec.model_validate(raw["spec"]),
        checkpoint_location=raw["checkpointLocation"],
        secret_env=dict(raw.get("secretEnv") or {}),
        metrics_port=raw.get("metricsPort"),
        emulator_connections=dict(raw.get("emulatorConnections") or {}),
        status_file=raw.get("statusFile"),
        config_map_files=dict(raw.get("configMapFiles") or {}),
        following=Following.parse(raw["following"]) if raw.get("following") is not None else None,
        raw=raw,
    )


def load_task_config(source: str) -> TaskConfig:
    """``source`` is a path to the JSON file or the JSON text itself."""
    text = source if source.lstrip().startswith("{") else Path(source).read_text()
    return parse_task_config(json.loads(text))


def local_path(location: str) -> Path:
    """A checkpoint location as a local path; commit records and status live next to Spark's own files."""
    if location.startswith("file://"):
        return Path(location.removeprefix("file://"))
    if "://" in location:
        raise TaskConfigError(
            f"checkpoint location {location!r}: commit records need a local or mounted path (file://) for now"
        )
    return Path(location)
