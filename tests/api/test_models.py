"""The typed models read manifests as the API server defaults them, and write them back in camelCase."""

from __future__ import annotations

from pathlib import Path

import yaml

from federator_contract.api.failovergroup import FailoverGroupSpec
from federator_contract.api.kinds import BY_KIND
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _spec(file: str, index: int = 0) -> dict:
    docs = [d for d in yaml.safe_load_all((EXAMPLES / file).read_text(encoding="utf-8")) if d]
    federator_docs = [d for d in docs if d["apiVersion"].startswith("federator.io/")]
    return federator_docs[index]["spec"]


def test_every_example_parses_into_its_model() -> None:
    files = sorted(EXAMPLES.glob("*.yaml"))
    assert files, f"no examples found in {EXAMPLES}"
    kinds: dict[str, list[str]] = {}
    for path in files:
        docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
        ours = [d for d in docs if d["apiVersion"].startswith("federator.io/")]
        for doc in ours:
            BY_KIND[doc["kind"]].spec.model_validate(doc["spec"])
        kinds[path.name] = [d["kind"] for d in ours]
    assert [name for name, found in kinds.items() if not found] == [], "examples without a Federator resource"
    assert {kind for found in kinds.values() for kind in found} == set(BY_KIND), "a kind without an example"


def test_task_defaults_lose_nothing_and_copy_metadata() -> None:
    spec = ReplicationTaskSpec.model_validate(_spec("eh-to-sb-queue.yaml"))
    assert spec.source.event_hub is not None
    assert spec.source.event_hub.start_position.position == "earliest"
    assert spec.provenance.enqueue_time_property == "repl-enqueue-time"
    assert (spec.provenance.sequence_property, spec.provenance.offset_property) == (
        "repl-sequence",
        "repl-offset",
    )
    assert spec.delivery.effectively_once is False
    assert spec.loop_prevention is None
    assert spec.runtime.driver.memory == "1g" and spec.runtime.executor.instances == 1


def test_default_consumer_group_is_the_event_hubs_default() -> None:
    spec = ReplicationTaskSpec.model_validate(_spec("eh-merge.yaml"))
    assert spec.source.event_hub is not None and spec.source.event_hub.consumer_group == "merge"
    bare = {**_spec("eh-merge.yaml")}
    bare["source"] = {
        "eventHub": {k: v for k, v in bare["source"]["eventHub"].items() if k != "consumerGroup"}
    }
    parsed = ReplicationTaskSpec.model_validate(bare).source.event_hub
    assert parsed is not None and parsed.consumer_group == "$Default"


def test_editor_chain_keeps_its_order() -> None:
    spec = ReplicationTaskSpec.model_validate(_spec("eh-editor-chain.yaml"))
    kinds = [
        next(k for k, v in e.model_dump(by_alias=True, exclude_none=True).items() if v is not None)
        for e in spec.editors
    ]
    assert kinds == ["filter", "validate", "transform", "enrich", "dedupe", "attest", "chain"]


def test_models_round_trip_in_camel_case() -> None:
    raw = _spec("eh-replication-cluster.yaml")
    spec = ReplicationTaskSpec.model_validate(raw)
    dumped = spec.model_dump(by_alias=True, exclude_defaults=True, mode="json")
    assert dumped["source"]["eventHub"]["startPosition"] == {
        "position": "enqueuedTime",
        "enqueuedTime": "2026-11-01T00:00:00Z",
    }
    assert ReplicationTaskSpec.model_validate(dumped) == spec


def test_mirror_and_failover_group_defaults() -> None:
    mirror = ServiceBusMirrorSpec.model_validate(_spec("sb-all-active.yaml"))
    assert mirror.replication_property == "replication" and len(mirror.members) == 3
    group = FailoverGroupSpec.model_validate(_spec("failover-group.yaml"))
    assert group.mode == "automatic" and group.active_member is None
    assert group.probe.failure_threshold == 3 and group.failback.drain_timeout_seconds == 300
