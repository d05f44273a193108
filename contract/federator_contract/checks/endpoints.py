"""Names an endpoint must leave to the app: properties it writes itself, the unrouted endpoint's name."""

from __future__ import annotations

from collections.abc import Iterator

from federator_contract.api.replicationtask import Endpoint, ReplicationTaskSpec
from federator_contract.checks.findings import Finding
from federator_contract.names import DEAD_LETTER_REASON_PROPERTY, SOURCE_ID_PROPERTY, UNROUTED


def reserved_properties(spec: ReplicationTaskSpec) -> dict[str, str]:
    """Property → what the app writes in it, for this spec."""
    reserved = {
        SOURCE_ID_PROPERTY: "the source identity of each event (effectively-once replay)",
        DEAD_LETTER_REASON_PROPERTY: "the reason of a dead-lettered event",
    }
    provenance = spec.provenance
    if provenance.enabled:
        for name in (
            provenance.enqueue_time_property,
            provenance.sequence_property,
            provenance.offset_property,
        ):
            reserved[name] = "provenance (spec.provenance)"
    if spec.loop_prevention is not None:
        reserved[spec.loop_prevention.marker_property] = "the loop-prevention marker (spec.loopPrevention)"
    return reserved


def reserved_property_findings(spec: ReplicationTaskSpec) -> Iterator[Finding]:
    """`setProperties` must not overwrite what the app itself writes on every event and reads back."""
    reserved = reserved_properties(spec)
    for path, endpoint in endpoints(spec):
        for name in endpoint.set_properties or {}:
            if name in reserved:
                yield Finding(
                    (*path, "setProperties", name),
                    f"{name!r} is written by Federator itself ({reserved[name]}); choose another property",
                )


def reserved_target_findings(spec: ReplicationTaskSpec) -> Iterator[Finding]:
    """With `spec.unrouted`, no target may take its name: status and metrics would mix the two."""
    if spec.unrouted is None:
        return
    for i, target in enumerate(spec.targets):
        if target.name == UNROUTED:
            yield Finding(
                ("targets", i, "name"),
                f"{UNROUTED!r} is the name of spec.unrouted in status and metrics; choose another name",
            )


def endpoints(spec: ReplicationTaskSpec) -> Iterator[tuple[tuple[str | int, ...], Endpoint]]:
    """Everything a task writes to, with its path under `spec`: the targets, `unrouted`, `deadLetter`."""
    for i, target in enumerate(spec.targets):
        yield ("targets", i), target
    if spec.unrouted is not None:
        yield ("unrouted",), spec.unrouted
    if spec.dead_letter is not None:
        yield ("deadLetter",), spec.dead_letter
