"""Event Hubs → PostgreSQL log projection through the replication app: a history table with every
event once and a compacted table with the newest event per partition key, both unchanged by a full
replay of the hub."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from spark_helpers import eh_endpoint, read_all, run_task, send, task_config

pytestmark = pytest.mark.slow

URI_ENV = "FEDERATOR_SECRET_projection_db__dsn"  # the name the operator gives Secret projection-db/dsn
CONFIG = {"namespaces": [{"name": "ns1", "eventHubs": [{"name": "readings", "partitionCount": 2}]}]}
SECRET_REF = {"name": "projection-db", "key": "dsn"}
SPEC = {
    "source": eh_endpoint("ns1", "readings"),
    "targets": [
        {
            "name": "history",
            "postgres": {"connectionSecretRef": SECRET_REF, "table": "telemetry.readings_history"},
        },
        {
            "name": "latest",
            "postgres": {
                "connectionSecretRef": SECRET_REF,
                "table": "telemetry.readings_latest",
                "mode": "compacted",
            },
        },
    ],
}


@pytest.fixture
def projection_dsn(spark, postgres_uri, monkeypatch) -> Iterator[str]:
    """The Secret's value in the driver's and the executors' environment, as the pod spec puts it.
    Python workers get the environment the JVM started with plus the SparkContext's executor
    environment (taken when a data source is registered, which every task start does)."""
    monkeypatch.setenv(URI_ENV, postgres_uri)
    spark.sparkContext.environment[URI_ENV] = postgres_uri
    yield postgres_uri
    del spark.sparkContext.environment[URI_ENV]


def projection_task(tmp_path, emulator, name: str) -> dict[str, Any]:
    raw = task_config(tmp_path, emulator, SPEC, name=name)
    raw["secretEnv"] = {"projection-db/dsn": URI_ENV}
    return raw


def table(dsn: str, query: str) -> list[dict[str, Any]]:
    with psycopg.connect(dsn, row_factory=dict_row) as connection:
        return connection.execute(query).fetchall()  # type: ignore[arg-type]


def readings(device: str, start: int, count: int) -> list[dict[str, Any]]:
    return [
        {"body": json.dumps({"device": device, "n": n}), "key": device} for n in range(start, start + count)
    ]


def test_history_and_latest_per_key_survive_a_full_replay(spark, emulator_factory, tmp_path, projection_dsn):
    emulator = emulator_factory(CONFIG)
    cs = emulator.connection_string("ns1")
    send(cs, "readings", readings("dev-1", 0, 4) + readings("dev-2", 0, 3) + readings("dev-3", 0, 2))
    send(cs, "readings", [{"body": f"keyless-{i}", "partition": "1"} for i in range(3)])

    run_task(spark, projection_task(tmp_path, emulator, "projection"))

    history = table(projection_dsn, "SELECT * FROM telemetry.readings_history")
    hub = read_all(cs, "readings")
    assert sorted((r["partition"], r["sequence_number"]) for r in history) == sorted(
        (p, e.sequence_number) for p, events in hub.items() for e in events
    )
    assert len(history) == 12
    assert {r["task"] for r in history} == {"default/projection"}
    source = history[0]["source"]
    assert source.endswith("/readings") and {r["source"] for r in history} == {source}
    assert {r["body_json"]["n"] for r in history if r["partition_key"] == "dev-1"} == {0, 1, 2, 3}
    assert sorted(bytes(r["body"]) for r in history if r["partition_key"] is None) == [
        f"keyless-{i}".encode() for i in range(3)
    ]
    assert all(r["properties"]["repl-sequence"] == str(r["sequence_number"]) for r in history)

    latest = {r["key"]: r for r in table(projection_dsn, "SELECT * FROM telemetry.readings_latest")}
    assert {k: r["body_json"]["n"] for k, r in latest.items() if r["partition_key"]} == {
        "dev-1": 3,
        "dev-2": 2,
        "dev-3": 1,
    }
    keyless = latest[f"{source}/1"]
    assert (keyless["partition_key"], bytes(keyless["body"])) == (None, b"keyless-2")

    # New readings, then a second task over the same hub from the beginning: a replay of everything.
    send(cs, "readings", readings("dev-1", 4, 2))
    run_task(spark, projection_task(tmp_path, emulator, "replay"))

    assert table(projection_dsn, "SELECT count(*) AS n FROM telemetry.readings_history") == [{"n": 14}]
    latest = {r["key"]: r for r in table(projection_dsn, "SELECT * FROM telemetry.readings_latest")}
    assert {k: r["body_json"]["n"] for k, r in latest.items() if r["partition_key"]} == {
        "dev-1": 5,
        "dev-2": 2,
        "dev-3": 1,
    }
    assert bytes(latest[f"{source}/1"]["body"]) == b"keyless-2"
