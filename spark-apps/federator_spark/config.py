"""The task config as the app reads it: validated once at start-up (`federator_contract.taskconfig`), plus
what only a running app does with it: reading the ConfigMap files it names, and where its files go under
the checkpoint location."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from federator_contract.api.base import ConfigMapKeySelector
from federator_contract.checkpoints import CheckpointLayout, local_checkpoint_path
from federator_contract.taskconfig import TaskConfig, TaskConfigError


def load_task_config(source: str) -> TaskConfig:
    """``source`` is a path to the JSON file or the JSON text itself."""
    text = source if source.lstrip().startswith("{") else Path(source).read_text(encoding="utf-8")
    return TaskConfig.from_json(text)


def config_map_text(config: TaskConfig, selector: ConfigMapKeySelector) -> str:
    """A ConfigMap key's content: the pods (and local mode) see each key as a file."""
    path = config.config_map_path(selector)
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        ref = f"{selector.name}/{selector.key}"
        raise TaskConfigError(f"ConfigMap key {ref!r}: cannot read {path}: {error}") from None


def config_map_json(config: TaskConfig, selector: ConfigMapKeySelector) -> Any:
    text = config_map_text(config, selector)
    try:
        return json.loads(text)
    except ValueError as error:
        ref = f"{selector.name}/{selector.key}"
        raise TaskConfigError(f"ConfigMap key {ref!r} is not JSON: {error}") from None


def local_path(location: str) -> Path:
    """A task's checkpoint location as a local path; commit records and status live next to Spark's own
    files. A location the app cannot use is a :class:`TaskConfigError`."""
    try:
        return local_checkpoint_path(location)
    except ValueError as error:
        raise TaskConfigError(str(error)) from None


def checkpoint_layout(config: TaskConfig) -> CheckpointLayout:
    """The task's paths under its checkpoint (a following source's positions under its member's)."""
    member = config.following.member if config.following is not None else None
    return CheckpointLayout(local_path(config.checkpoint_location), member, config.status_file)
