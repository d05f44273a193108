"""Checkpoints bound to their source: positions are applied only to the source they were taken from.

A query's checkpoint holds Event Hubs offsets or Service Bus sequence numbers of one entity on one
namespace. Re-pointing the task's Secret (or connection) to another namespace would apply them to a
different entity: events skipped or repeated without a word. So the query's state dir records the source
its positions belong to (:class:`SourceBinding`, ``CheckpointLayout.source_binding_file``), and at every
start, before anything is read:

* the same source: the query starts from its checkpoint;
* another source: refused (``CheckpointSourceMismatch`` in the app's status, naming both), nothing is
  read, until the user resets positions with the task's ``federator.io/reset-positions`` annotation;
* a reset token the checkpoint has not recorded: the checkpoint is moved aside (kept under
  ``previous/<time>``), the current source and the token are recorded, and the query starts from the
  spec's start position.

A FailoverGroup member switch is not a change of source: each member's positions live in a query location
of their own, each with its own binding. A checkpoint written before bindings existed is taken to belong
to the source the task reads now (recorded as such at its first start here).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from federator_contract.appstatus import CHECKPOINT_SOURCE_MISMATCH, clear_outage, report_outage
from federator_contract.checkpoints import CheckpointLayout
from federator_contract.files import write_atomically
from federator_contract.taskconfig import RESET_POSITIONS_ANNOTATION
from federator_spark.datasources import SliceSource
from federator_spark.sources.eventhubs_settings import HubSourceSettings

logger = logging.getLogger(__name__)

ENDPOINT = "checkpoint"  # what the source's refusal is reported for (appstatus outages): not an entity

Decision = Literal["keep", "record", "reset", "refuse"]


class CheckpointSourceMismatchError(RuntimeError):
    """The checkpoint's positions belong to another source: the task must not read until they are reset."""

    def __init__(self, message: str) -> None:
        super().__init__(f"{CHECKPOINT_SOURCE_MISMATCH}: {message}")
        self.reason = CHECKPOINT_SOURCE_MISMATCH


@dataclass(frozen=True)
class SourceBinding:
    """What a query's positions are positions of."""

    namespace: str
    """The fully qualified namespace (``host[:port]``, lower case)."""
    entity: str
    """``<hub>``, ``<queue>`` or ``<topic>/subscriptions/<subscription>``; a dead-letter sub-queue adds
    ``/$deadletterqueue`` (its sequence numbers are its own)."""
    consumer_group: str | None
    """Event Hubs only: positions are kept per consumer group."""

    def describe(self) -> str:
        group = f", consumer group {self.consumer_group}" if self.consumer_group is not None else ""
        return f"{self.entity} on {self.namespace}{group}"


@dataclass(frozen=True)
class Recorded:
    """A query's binding file: the source and the reset token it was recorded with."""

    source: SourceBinding
    reset_token: str | None


def binding_of(source: SliceSource) -> SourceBinding:
    """The source a query reads (its connection resolved on the driver: a Secret's value, a file)."""
    namespace = source.connection.host.lower().rstrip("/")
    if isinstance(source, HubSourceSettings):
        return SourceBinding(namespace, source.event_hub, source.consumer_group)
    entity = (
        source.queue if source.queue is not None else f"{source.topic}/subscriptions/{source.subscription}"
    )
    return SourceBinding(namespace, f"{entity}/$deadletterqueue" if source.dead_letter else entity, None)


def differences(recorded: SourceBinding, current: SourceBinding) -> list[str]:
    """The fields in which the source read now differs from the one the positions belong to."""
    return [
        f"{name}: {before} → {now}"
        for name, before, now in (
            ("namespace", recorded.namespace, current.namespace),
            ("entity", recorded.entity, current.entity),
            ("consumer group", recorded.consumer_group, current.consumer_group),
        )
        if before != now
    ]


def decide(recorded: Recorded | None, current: SourceBinding, token: str | None) -> Decision:
    """What a start does with its checkpoint. Pure: the rules of the module's docstring."""
    if recorded is None:
        # Nothing recorded: a new checkpoint, or one from before bindings, adopted as it is (a token set
        # long ago must not discard it at an upgrade).
        return "record"
    if token is not None and token != recorded.reset_token:
        return "reset"
    return "keep" if recorded.source == current else "refuse"


def mismatch_message(layout: CheckpointLayout, recorded: SourceBinding, current: SourceBinding) -> str:
    changed = "; ".join(differences(recorded, current))
    return (
        f"the checkpoint at {layout.query_dir} holds positions of {recorded.describe()}, but the task now "
        f"reads {current.describe()} ({changed}); nothing is read until positions are reset: set the "
        f"ReplicationTask's annotation {RESET_POSITIONS_ANNOTATION} to a new value (the old checkpoint is "
        f"kept under {layout.previous_dir})"
    )


def bind(layout: CheckpointLayout, source: SliceSource, token: str | None) -> None:
    """Before the query reads: check the checkpoint against ``source``, reset it for a new ``token``, or
    raise :class:`CheckpointSourceMismatchError` after reporting the refusal in the app's status."""
    current = binding_of(source)
    recorded = read_binding(layout.source_binding_file)
    decision = decide(recorded, current, token)
    if decision != "refuse":  # a refusal reported at an earlier start is over
        clear_outage(layout.status_file, "source", ENDPOINT)
    if decision == "keep":
        return
    if decision == "refuse":
        assert recorded is not None
        message = mismatch_message(layout, recorded.source, current)
        try:
            report_outage(layout.status_file, "source", ENDPOINT, CHECKPOINT_SOURCE_MISMATCH, message)
        except OSError as error:  # the refusal stands, and the error says why; only the status is missing
            logger.warning("could not update the status: %s", error)
        raise CheckpointSourceMismatchError(message)
    if decision == "reset":
        aside = set_aside(layout)
        logger.warning(
            "positions reset (%s %s): checkpoint moved to %s", RESET_POSITIONS_ANNOTATION, token, aside
        )
    write_binding(layout.source_binding_file, Recorded(current, token))
    logger.info("checkpoint %s: positions of %s", layout.query_dir, current.describe())


def set_aside(layout: CheckpointLayout) -> Path:
    """Move everything of the query's checkpoint (but earlier ones set aside) to ``previous/<time>``."""
    aside = _fresh(layout.previous_dir / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    aside.mkdir(parents=True)
    for entry in layout.query_dir.iterdir():
        if entry != layout.previous_dir:
            entry.rename(aside / entry.name)
    return aside


def _fresh(path: Path) -> Path:
    """``path``, or ``path-<n>`` when a reset within the same second took it."""
    candidate, n = path, 1
    while candidate.exists():
        candidate, n = path.with_name(f"{path.name}-{n}"), n + 1
    return candidate


def read_binding(path: Path) -> Recorded | None:
    try:
        raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    source = SourceBinding(raw["namespace"], raw["entity"], raw.get("consumerGroup"))
    return Recorded(source, raw.get("resetToken"))


def write_binding(path: Path, recorded: Recorded) -> None:
    fields = asdict(recorded.source)
    raw = {
        "namespace": fields["namespace"],
        "entity": fields["entity"],
        "consumerGroup": fields["consumer_group"],
        "resetToken": recorded.reset_token,
        "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(raw, indent=2, sort_keys=True) + "\n", durable=True)
