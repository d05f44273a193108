"""Helpers for editor unit tests: events, task configs with Secret env vars and ConfigMap files, and
running a built editor over events the way a write task does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from federator_contract.api.editors import Editor
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.taskconfig import TaskConfig, TaskMetadata
from federator_spark.editors.base import EditorStep, EventEditor, TaskScope
from federator_spark.editors.building import build_chain
from federator_spark.event_messages import EventMessage
from federator_spark.events import Event

T0 = datetime(2026, 11, 1, tzinfo=UTC)
_SPEC = {
    "source": {"eventHub": {"connection": {"emulator": {"namespace": "ns1"}}, "eventHubName": "a"}},
    "targets": [
        {"name": "b", "eventHub": {"connection": {"emulator": {"namespace": "ns1"}}, "eventHubName": "b"}}
    ],
}


def event(
    body: bytes | str = b"{}",
    *,
    key: str | None = None,
    properties: dict[str, str] | None = None,
    system: dict[str, str] | None = None,
    sequence: int = 0,
    partition: str = "0",
    at: float = 0.0,
) -> Event:
    """An event of source `host/hub`, enqueued ``at`` seconds after T0."""
    return Event(
        body=body.encode() if isinstance(body, str) else body,
        source="host/hub",
        partition=partition,
        partition_count=2,
        sequence_number=sequence,
        offset=str(sequence * 100),
        enqueued_time=T0 + timedelta(seconds=at),
        partition_key=key,
        properties=dict(properties or {}),
        system_properties=dict(system or {}),
    )


def task_config(
    tmp_path: Path,
    *,
    config_maps: dict[str, str] | None = None,
    secret_env: dict[str, str] | None = None,
) -> TaskConfig:
    """``config_maps``: `<ConfigMap>/<key>` → content, written to files as the pods see them."""
    files = {}
    for ref, content in (config_maps or {}).items():
        path = tmp_path / "config-maps" / ref
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        files[ref] = str(path)
    return TaskConfig(
        metadata=TaskMetadata(name="task", namespace="default"),
        spec=ReplicationTaskSpec.model_validate(_SPEC),
        checkpoint_location=str(tmp_path / "checkpoint"),
        secret_env=dict(secret_env or {}),
        config_map_files=files,
    )


def build(spec: dict[str, Any], config: TaskConfig) -> EventEditor:
    """One editor, built from its spec as `build_chain` builds it."""
    [editor] = build_chain([Editor.model_validate(spec)], config)
    return editor


def open_step(
    editor: EventEditor, *, batch: int = 0, partition: str = "0", state_dir: Path | None = None
) -> tuple[EditorStep, TaskScope]:
    scope = TaskScope(partition, batch, str(state_dir) if state_dir else None)
    return editor.open(scope), scope


def apply(step: EditorStep, item: Event) -> Event | None:
    return step.apply(item, EventMessage(item))


def run_batch(
    editor: EventEditor, events: list[Event], *, batch: int, state_dir: Path, partition: str = "0"
) -> list[Event | None]:
    """One write task: open, apply to each event in order, then report everything published."""
    step, scope = open_step(editor, batch=batch, partition=partition, state_dir=state_dir)
    results = [apply(step, item) for item in events]
    scope.published()
    return results
