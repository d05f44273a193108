"""The editor chain end to end on Spark: filter, validate, transform, enrich (ConfigMap lookup), dedupe
and chain in front of routing, with a dead-letter event hub. Rejected and poison events go to the
dead-letter hub with their reason while the stream goes on; every key keeps its order; routing reads
the edited event; setProperties are stamped per endpoint; chain and dedupe state carry over to the
next run."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import body, eh_endpoint, prop, read_all, run_task, send, task_config

pytestmark = pytest.mark.slow

SCHEMA = {
    "type": "object",
    "required": ["id", "merchant", "amount"],
    "properties": {"amount": {"type": "number", "minimum": 0}},
}


def spec() -> dict[str, Any]:
    return {
        "source": eh_endpoint("ns1", "orders"),
        "editors": [
            {"filter": {"condition": "kind IS NULL OR kind <> 'heartbeat'"}},
            {"validate": {"jsonSchema": SCHEMA}},
            {"transform": {"project": ["id", "merchant", "amount"], "rename": {"merchant": "merchantId"}}},
            {
                "enrich": {
                    "properties": {"pipeline": "curated"},
                    "lookup": {
                        "configMapRef": {"name": "merchants", "key": "regions.json"},
                        "keyFrom": "body.merchantId",
                        "into": "region",
                        "onMissing": "deadLetter",
                    },
                }
            },
            {"dedupe": {"key": "body.id", "windowSeconds": 3600}},
            {"chain": {}},
        ],
        "targets": [
            # Conditions read what the editors made: a property enrich added, a field transform renamed.
            {
                "name": "eu",
                **eh_endpoint("ns1", "eu"),
                "condition": "region = 'eu'",
                "setProperties": {"lane": "eu"},
            },
            {"name": "us", **eh_endpoint("ns1", "us"), "condition": "body.merchantId = 'm-2'"},
        ],
        "deadLetter": {**eh_endpoint("ns1", "dlq"), "setProperties": {"quarantine": "yes"}},
    }


def order(key: int, i: int, **extra: Any) -> dict[str, Any]:
    document = {
        "id": f"k{key}-{i}",
        "merchant": "m-1" if key % 2 == 0 else "m-2",
        "amount": i,
        "note": "x",
        **extra,
    }
    return {"body": json.dumps(document), "key": f"k{key}"}


def events(hub: str, cs: str) -> list[Any]:
    return [e for events in read_all(cs, hub).values() for e in events]


def by_key(received: list[Any]) -> dict[str, list[Any]]:
    streams: dict[str, list[Any]] = {}
    for event in received:
        streams.setdefault(event.partition_key.decode(), []).append(event)
    return streams


def chain_breaks(stream: list[Any], start: str | None = None) -> list[str]:
    """The events whose repl-chain does not follow from the previous one (what a consumer checks)."""
    last, breaks = start, []
    for event in stream:
        head = bytes.fromhex(last) if last is not None else b""
        if hashlib.sha256(head + event.body_as_str().encode()).hexdigest() != prop(event, "repl-chain"):
            breaks.append(body(event))
        last = prop(event, "repl-chain")
    return breaks


def test_editor_chain_dead_letters_rejects_keeps_order_and_carries_state_to_the_next_run(
    spark, emulator_factory, tmp_path
):
    emulator = emulator_factory(
        {
            "namespaces": [
                {
                    "name": "ns1",
                    "eventHubs": [
                        {"name": n, "partitionCount": c}
                        for n, c in [("orders", 2), ("eu", 2), ("us", 2), ("dlq", 1)]
                    ],
                }
            ]
        }
    )
    cs = emulator.connection_string("ns1")
    regions = tmp_path / "regions.json"
    regions.write_text(json.dumps({"m-1": "eu", "m-2": "us"}))
    config = task_config(tmp_path, emulator, spec())
    config["configMapFiles"] = {"merchants/regions.json": str(regions)}
    first = [order(k, i) for i in range(3) for k in range(3)]
    first[4:4] = [
        {"body": "ping", "key": "k0", "properties": {"kind": "heartbeat"}},  # filtered
        {"body": json.dumps({"id": "bad", "merchant": "m-2", "amount": -5}), "key": "k1"},  # invalid
        {"body": b"\xff\x00 poison", "key": "k2"},  # not JSON at all
        {"body": "[" * 5000 + "]" * 5000, "key": "k1"},  # the JSON decoder raises RecursionError
        order(0, 99, merchant="m-9"),  # no region for this merchant
        order(1, 0),  # a repeat of k1-0
    ]
    send(cs, "orders", first)

    run_task(spark, config)

    eu, us = by_key(events("eu", cs)), by_key(events("us", cs))
    assert sorted(eu) == ["k0", "k2"] and sorted(us) == ["k1"]
    for key, stream in [*eu.items(), *us.items()]:
        assert [json.loads(body(e))["id"] for e in stream] == [f"{key}-{i}" for i in range(3)]
        assert chain_breaks(stream) == []
    sample = eu["k0"][1]
    assert json.loads(body(sample)) == {"id": "k0-1", "amount": 1, "merchantId": "m-1"}
    assert [prop(sample, p) for p in ("region", "pipeline", "lane")] == ["eu", "curated", "eu"]
    assert prop(us["k1"][0], "lane") is None  # setProperties belong to their endpoint

    dead = {prop(e, "repl-dead-letter-reason"): e for e in events("dlq", cs)}
    reasons = sorted(dead)
    assert reasons[0] == "1:validate: $.amount: -5 is less than the minimum of 0"
    assert reasons[1].startswith("1:validate: RecursionError: maximum recursion depth exceeded")
    assert reasons[2].startswith("1:validate: body is not JSON:")
    assert reasons[3] == "3:enrich: lookup key body.merchantId = 'm-9' is not in merchants/regions.json"
    poison = dead[reasons[2]]
    assert poison.body_as_str(encoding="latin-1") == "\xff\x00 poison"  # as it entered the editor
    assert prop(poison, "quarantine") == "yes" and prop(poison, "repl-source-id").split("/")[-3] == "orders"
    status = json.loads(Path(config["statusFile"]).read_text())
    assert status["targets"]["deadLetter"] == {"eventsOut": 0, "deadLettered": 4}
    assert (status["targets"]["eu"]["eventsOut"], status["targets"]["us"]["eventsOut"]) == (6, 3)

    # The next run continues every chain and still remembers the ids it let through.
    last = {key: prop(stream[-1], "repl-chain") for key, stream in {**eu, **us}.items()}
    send(cs, "orders", [order(0, 3), order(1, 2), order(1, 3)])
    run_task(spark, config)

    eu, us = by_key(events("eu", cs)), by_key(events("us", cs))
    assert [json.loads(body(e))["id"] for e in eu["k0"][3:]] == ["k0-3"]
    assert [json.loads(body(e))["id"] for e in us["k1"][3:]] == ["k1-3"]
    assert chain_breaks(eu["k0"][3:], last["k0"]) == [] and chain_breaks(us["k1"][3:], last["k1"]) == []
