"""Task config loading (the JSON the operator's planning code writes) and connection resolution."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from federator.api.base import ConfigMapKeySelector, EndpointConnection, SecretKeySelector
from federator.api.replicationtask import ReplicationTaskSpec
from federator_spark.connections import Connection


class TaskConfigError(ValueError):
    """The task config cannot be run by this application."""


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
    raw: dict[str, Any] = field(default_factory=dict)

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
        raise TaskConfigError("failoverGroupRef connections are not supported by the replication app yet")

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
