"""Rows of events as the replication writer reads them (``federator_spark.events.SCHEMA``), for tests
that call a write task directly, without Spark."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def event_row(sequence: int, body: bytes | str, **properties: str) -> dict[str, Any]:
    """Event ``sequence`` of partition 0 of source ``host/src`` (one partition), keyless."""
    return {
        "body": body.encode() if isinstance(body, str) else body,
        "source": "host/src",
        "partition": "0",
        "partition_count": 1,
        "sequence_number": sequence,
        "offset": str(sequence),
        "enqueued_time": datetime(2026, 11, 1, tzinfo=UTC),
        "partition_key": None,
        "properties": properties,
        "system_properties": {},
        "property_types": {},
    }
