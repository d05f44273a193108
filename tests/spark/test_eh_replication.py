"""Event Hubs → Event Hubs replication patterns: partition mapping, per-key order, provenance on
every hop, routing with an `unrouted` target, the filter editor, and merge without bouncing."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import body, eh_endpoint, prop, read_all, run_task, send, task_config

pytestmark = pytest.mark.slow


def hubs(*specs: tuple[str, int]) -> dict[str, Any]:
    return {
        "namespaces": [{"name": "ns1", "eventHubs": [{"name": n, "partitionCount": c} for n, c in specs]}]
    }


def eh_task(source: str, *targets: str, **extra: Any) -> dict[str, Any]:
    return {
        "source": eh_endpoint("ns1", source),
        "targets": [{"name": t, **eh_endpoint("ns1", t)} for t in targets],
        **extra,
    }


def keyed_events(keys: int, per_key: int) -> list[dict[str, Any]]:
    """Interleaved keyed streams: k0-0, k1-0, ..., k0-1, k1-1, ..."""
    return [{"body": f"k{k}-{i}", "key": f"k{k}"} for i in range(per_key) for k in range(keys)]


AT = datetime(2026, 5, 1, 12, 30, tzinfo=UTC)
TYPED = {"count": 7, "ratio": 0.25, "urgent": True, "at": AT, "note": "x"}


def test_equal_partition_counts_map_partition_i_to_i_keeping_order_and_keys(
    spark, emulator_factory, tmp_path
):
    emulator = emulator_factory(hubs(("a", 2), ("b", 2)))
    cs = emulator.connection_string("ns1")
    typed = [{"body": f"p1-{i}", "partition": "1", "properties": TYPED} for i in range(3)]
    send(cs, "a", keyed_events(keys=4, per_key=5) + typed)

    run_task(spark, task_config(tmp_path, emulator, eh_task("a", "b")))

    source, target = read_all(cs, "a"), read_all(cs, "b")
    for partition in ("0", "1"):
        assert [body(e) for e in target[partition]] == [body(e) for e in source[partition]]
        assert [e.partition_key for e in target[partition]] == [e.partition_key for e in source[partition]]
        assert [prop(e, "repl-sequence") for e in target[partition]] == [
            str(e.sequence_number) for e in source[partition]
        ]
        assert [prop(e, "repl-offset") for e in target[partition]] == [
            str(e.offset) for e in source[partition]
        ]
    # Property values keep their types: a consumer filtering on `count = 7` still matches. The SDK reads
    # a timestamp as milliseconds, beyond 32 bits: it is forwarded as a long.
    at_ms = int(AT.timestamp() * 1000)
    copies = [e for e in target["1"] if body(e).startswith("p1-")]
    own = [{k.decode(): v for k, v in e.properties.items() if not k.startswith(b"repl-")} for e in copies]
    assert own == [{"count": 7, "ratio": 0.25, "urgent": True, "at": at_ms, "note": b"x"}] * 3


def test_different_partition_counts_keep_each_key_together_and_in_order(spark, emulator_factory, tmp_path):
    emulator = emulator_factory(hubs(("a", 2), ("c", 3)))
    cs = emulator.connection_string("ns1")
    send(
        cs,
        "a",
        keyed_events(keys=6, per_key=4) + [{"body": f"loose-{i}", "partition": "1"} for i in range(3)],
    )

    run_task(spark, task_config(tmp_path, emulator, eh_task("a", "c")))

    target = read_all(cs, "c")
    partitions_of_key: dict[str, set[str]] = {}
    order_of_key: dict[str, list[str]] = {}
    for partition, events in target.items():
        for event in events:
            key = event.partition_key.decode() if event.partition_key else "-"
            partitions_of_key.setdefault(key, set()).add(partition)
            order_of_key.setdefault(key, []).append(body(event))
    assert sum(len(v) for v in target.values()) == 27
    assert all(len(p) == 1 for p in partitions_of_key.values())
    for k in range(6):
        assert order_of_key[f"k{k}"] == [f"k{k}-{i}" for i in range(4)]
    assert order_of_key["-"] == ["loose-0", "loose-1", "loose-2"]  # keyless: source partition 1 → 1 mod 3
    assert len({p for k, p in partitions_of_key.items() if k != "-" for p in p}) > 1  # really re-hashed


def test_provenance_is_appended_with_a_semicolon_on_every_hop(spark, emulator_factory, tmp_path):
    emulator = emulator_factory(hubs(("a", 1), ("b", 1), ("c", 1)))
    cs = emulator.connection_string("ns1")
    send(cs, "b", [{"body": "already-in-b", "partition": "0"}])  # shifts b's sequence numbers
    send(cs, "a", [{"body": "e0", "partition": "0"}, {"body": "e1", "partition": "0"}])

    run_task(spark, task_config(tmp_path, emulator, eh_task("a", "b"), name="a-to-b"))
    run_task(spark, task_config(tmp_path, emulator, eh_task("b", "c"), name="b-to-c"))

    source = read_all(cs, "a")["0"]
    middle = read_all(cs, "b")["0"]
    final = {body(e): e for e in read_all(cs, "c")["0"]}
    assert prop(final["e1"], "repl-sequence") == "1;2"
    assert prop(final["e0"], "repl-sequence") == "0;1"
    assert prop(final["e1"], "repl-offset") == f"{source[1].offset};{middle[2].offset}"
    times = prop(final["e1"], "repl-enqueue-time").split(";")
    assert [t.endswith("Z") for t in times] == [True, True]
    assert times[0] <= times[1]
    assert prop(final["already-in-b"], "repl-sequence") == "0"


def test_routing_sends_each_event_to_every_matching_target_and_the_rest_to_unrouted(
    spark, emulator_factory, tmp_path
):
    emulator = emulator_factory(hubs(("src", 2), ("eu", 2), ("big", 2), ("rest", 2)))
    cs = emulator.connection_string("ns1")
    orders = [
        {"body": json.dumps({"total": 500}), "partition": "0", "properties": {"region": "eu"}},
        {"body": json.dumps({"total": 5}), "partition": "0", "properties": {"region": "eu"}},
        {"body": json.dumps({"total": 900}), "partition": "1", "properties": {"region": "us"}},
        {"body": json.dumps({"total": 1}), "partition": "1", "properties": {"region": "us"}},
        {"body": "ping", "partition": "1", "properties": {"kind": "heartbeat"}},
    ]
    send(cs, "src", orders)
    spec = eh_task(
        "src",
        "eu",
        "big",
        editors=[{"filter": {"condition": "kind IS NULL OR kind <> 'heartbeat'"}}],
        unrouted=eh_endpoint("ns1", "rest"),
    )
    spec["targets"][0]["condition"] = "region = 'eu'"
    spec["targets"][1]["condition"] = "body.total > 100"
    config = task_config(tmp_path, emulator, spec)

    run_task(spark, config)

    def totals(hub: str) -> list[int]:
        return sorted(json.loads(body(e))["total"] for events in read_all(cs, hub).values() for e in events)

    assert totals("eu") == [5, 500]
    assert totals("big") == [500, 900]
    assert totals("rest") == [1]
    status = json.loads(Path(config["statusFile"]).read_text())
    out = {name: counts["eventsOut"] for name, counts in status["targets"].items()}
    assert out == {"eu": 2, "big": 2, "unrouted": 1}
    assert status["eventsIn"] == 5
    assert status["replicationLagSeconds"] >= 0 and status["batchDurationSeconds"] > 0


def test_mirrored_hubs_replicated_both_ways_hold_each_event_exactly_once(spark, emulator_factory, tmp_path):
    emulator = emulator_factory(hubs(("east", 2), ("west", 2)))
    cs = emulator.connection_string("ns1")
    loop = {"loopPrevention": {"markerProperty": "repl-target"}}
    east_to_west = task_config(tmp_path, emulator, eh_task("east", "west", **loop), name="east-west")
    west_to_east = task_config(tmp_path, emulator, eh_task("west", "east", **loop), name="west-east")
    send(cs, "east", [{"body": f"east-{i}", "key": f"k{i % 3}"} for i in range(6)])
    send(cs, "west", [{"body": f"west-{i}", "key": f"k{i % 3}"} for i in range(4)])

    for _round in range(2):  # a second round would forward any bounced copies again
        run_task(spark, east_to_west)
        run_task(spark, west_to_east)

    expected = sorted([f"east-{i}" for i in range(6)] + [f"west-{i}" for i in range(4)])
    for hub in ("east", "west"):
        assert sorted(body(e) for events in read_all(cs, hub).values() for e in events) == expected
