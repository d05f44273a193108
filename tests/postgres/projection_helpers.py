"""Helpers for log projection tests: events as the replication writer hands them to a publisher, a
target plan whose URI comes from an environment variable, and the resulting rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg.rows import dict_row

from federator_spark.connections import Connection
from federator_spark.events import Event
from federator_spark.plan import TargetPlan
from federator_spark.sinks.postgres import PostgresPublisher

URI_ENV = "FEDERATOR_TEST_PG_URI"
SOURCE = "ns1.servicebus.windows.net/readings"
TASK = "default/readings-projection"
T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def event(
    sequence: int,
    *,
    partition: str = "0",
    key: str | None = None,
    body: bytes | None = None,
    enqueued: datetime | None = None,
    properties: dict[str, str] | None = None,
    types: dict[str, str] | None = None,
    source: str = SOURCE,
) -> Event:
    """By default enqueued ``sequence`` seconds after T0, as a partition's log would be."""
    return Event(
        body=body if body is not None else f'{{"reading": {sequence}}}'.encode(),
        source=source,
        partition=partition,
        partition_count=2,
        sequence_number=sequence,
        offset=str(sequence * 100),
        enqueued_time=enqueued or T0 + timedelta(seconds=sequence),
        partition_key=key,
        properties=properties or {},
        system_properties={"content_type": "application/json"},
        property_types=types or {},
    )


def target(table: str, mode: Literal["history", "compacted"], env: str = URI_ENV) -> TargetPlan:
    return TargetPlan(
        name=mode, kind="postgres", connection=Connection(connection_string_env=env), entity=table, mode=mode
    )


def publish(plan: TargetPlan, events: list[Event]) -> None:
    """One write task's worth: a publisher, every event added with its properties, flushed, closed."""
    publisher = PostgresPublisher(plan, task=TASK)
    try:
        for item in events:
            publisher.add(item, item.typed_properties())
        publisher.flush()
    finally:
        publisher.close()


def rows(uri: str, query: str) -> list[dict[str, Any]]:
    with psycopg.connect(uri, row_factory=dict_row) as connection:
        return connection.execute(query).fetchall()  # type: ignore[arg-type]


def with_credentials(uri: str, password: str, user: str | None = None) -> str:
    parts = urlsplit(uri)
    login = f"{user or parts.username}:{password}"
    return urlunsplit(parts._replace(netloc=f"{login}@{parts.hostname}:{parts.port}"))
