"""Pattern metadata on forwarded events: provenance (`repl-*`, appended with `;` per hop) and the
loop-prevention marker that keeps mirrored entities from bouncing events back (merge pattern)."""

from __future__ import annotations

from dataclasses import dataclass

from federator_contract.names import SOURCE_ID_PROPERTY
from federator_spark.events import Event, iso

SEPARATOR = ";"


@dataclass(frozen=True)
class ProvenanceSettings:
    enabled: bool = True
    enqueue_time_property: str = "repl-enqueue-time"
    sequence_property: str = "repl-sequence"
    offset_property: str = "repl-offset"


@dataclass(frozen=True)
class LoopSettings:
    marker_property: str = "repl-target"
    forward_replicated: bool = True


def _append(properties: dict[str, str], name: str, value: str) -> None:
    existing = properties.get(name)
    properties[name] = f"{existing}{SEPARATOR}{value}" if existing else value


def forwarded_properties(
    event: Event, target: str, provenance: ProvenanceSettings, loop: LoopSettings | None
) -> dict[str, str]:
    """The user properties the target receives: the source's, plus this hop's metadata."""
    properties = dict(event.properties)
    if provenance.enabled:
        _append(properties, provenance.enqueue_time_property, iso(event.enqueued_time))
        _append(properties, provenance.sequence_property, str(event.sequence_number))
        _append(properties, provenance.offset_property, event.offset)
    if loop is not None:
        marked = _entities(properties.get(loop.marker_property))
        for entity in (event.source, target):
            if entity not in marked:
                marked.append(entity)
        properties[loop.marker_property] = SEPARATOR.join(marked)
    properties[SOURCE_ID_PROPERTY] = event.identity
    return properties


def is_loop(event: Event, target: str, loop: LoopSettings | None) -> bool:
    """True when forwarding ``event`` to ``target`` would bounce it (or chain it when that is off)."""
    if loop is None:
        return False
    marked = _entities(event.properties.get(loop.marker_property))
    if not loop.forward_replicated and marked:
        return True
    return target in marked


def _entities(marker: str | None) -> list[str]:
    return [entity for entity in (marker or "").split(SEPARATOR) if entity]
