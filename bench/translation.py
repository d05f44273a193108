"""Checkpoint translation benchmark: what one translation cycle costs per consumer group for an event hub
of 32 partitions — Blob requests (lists, writes), hub reads (refinement reads, events read) and time —
next to what the SDK's own BlobCheckpointStore costs that group for one round of checkpoints (a
checkpoint per partition and the listing an EventProcessor does at start), measured in the same run
against the same Azurite: the ratio is the figure. Final line: JSON.

    .venv/bin/python -m bench.translation [--partitions 32] [--events 4000] [--groups 4]

Phases, each a cycle of every group: ``first`` (the index is built from the whole target, then every
partition's checkpoint is written), ``moved`` (every consumer checkpointed again near the tail: answered
from the index's window), ``unchanged`` (nothing moved: nothing written), ``restarted`` (a new
translator from the saved index, whose window is empty, after the consumers moved: samples plus a
bounded read per partition).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.processes import emulators, load
from federator.local.azurite import start_azurite
from federator_spark.connections import Connection
from federator_spark.translation.layout import ConsumerGroupRef
from federator_spark.translation.store import BlobLocation
from federator_spark.translation.translator import CycleReport, TranslationPlan, Translator

SOURCE_HUB, TARGET_HUB = "orders", "orders-copy"
_SEND_CHUNK = 1000


def populate(target: str, source_host: str, partitions: int, events: int) -> None:
    """Copies as the replication app writes them (partition i → i, ``repl-source-id``)."""
    from azure.eventhub import EventData, EventHubProducerClient

    with EventHubProducerClient.from_connection_string(target, eventhub_name=TARGET_HUB) as producer:
        for partition in range(partitions):
            for first in range(0, events, _SEND_CHUNK):  # about 300 KB a send, under the 1 MB limit
                chunk: list[Any] = []
                origin = f"{source_host}/{SOURCE_HUB}/{partition}"
                for sequence in range(first, min(first + _SEND_CHUNK, events)):
                    event = EventData(b"x" * 200)
                    event.properties = {"repl-source-id": f"{origin}/{sequence}"}
                    chunk.append(event)
                producer.send_batch(chunk, partition_id=str(partition))


def checkpoint_all(store: Any, source_host: str, group: str, partitions: int, sequence: int) -> float:
    """One round of the SDK's own checkpointing: a checkpoint per partition, then the listing an
    EventProcessor does when it starts. Returns the seconds it took (the baseline)."""
    started = time.perf_counter()
    for partition in range(partitions):
        store.update_checkpoint(
            {
                "fully_qualified_namespace": source_host,
                "eventhub_name": SOURCE_HUB,
                "consumer_group": group,
                "partition_id": str(partition),
                "offset": str(sequence * 300),
                "sequence_number": sequence,
            }
        )
    store.list_checkpoints(source_host, SOURCE_HUB, group)
    return time.perf_counter() - started


def per_group(report: CycleReport) -> dict[str, float]:
    groups = list(report.groups.values())

    def mean(values: list[float]) -> float:
        return round(statistics.fmean(values), 4)

    return {
        "seconds": mean([g.seconds for g in groups]),
        "lists": mean([g.storage.lists for g in groups]),
        "writes": mean([g.storage.writes for g in groups]),
        "reads": mean([g.reads for g in groups]),
        "events_read": mean([g.events_read for g in groups]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=32)
    parser.add_argument("--events", type=int, default=4000, help="copies per target partition")
    parser.add_argument("--groups", type=int, default=4, help="consumer groups translated")
    args = parser.parse_args()
    from azure.eventhub.extensions.checkpointstoreblob import BlobCheckpointStore
    from azure.storage.blob import ContainerClient

    groups = [f"app-{i}" for i in range(args.groups)]
    with tempfile.TemporaryDirectory() as work:
        workdir = Path(work)
        layout = [{"primary": [SOURCE_HUB], "secondary": [TARGET_HUB]}]
        azurite = start_azurite(workdir / "azurite")
        try:
            with emulators(workdir, layout, args.partitions) as emus:
                connection = azurite.connection_string()
                ContainerClient.from_connection_string(connection, "checkpoints").create_container()
                store = BlobCheckpointStore.from_connection_string(connection, "checkpoints")
                source = Connection(connection_string=emus.cs(SOURCE_HUB))
                target = Connection(connection_string=emus.cs(TARGET_HUB))
                started = time.perf_counter()
                populate(target.connection_string or "", source.host, args.partitions, args.events)
                populate_seconds = time.perf_counter() - started
                location = BlobLocation("checkpoints", connection_string=connection)
                plan = TranslationPlan(
                    groups=tuple(groups),
                    source=ConsumerGroupRef(source.host, SOURCE_HUB, ""),
                    target=ConsumerGroupRef(target.host, TARGET_HUB, ""),
                    origin_prefix=f"{source.host}/{SOURCE_HUB}/",
                    target_connection=target,
                    index_consumer_group="$Default",
                    source_store=location,
                    target_store=location,
                    interval_seconds=10,
                    state_dir=str(workdir / "translation"),
                )
                baseline: list[float] = []

                def consumers_checkpoint(sequence: int) -> None:
                    for group in groups:
                        baseline.append(checkpoint_all(store, source.host, group, args.partitions, sequence))

                consumers_checkpoint(args.events // 2)
                translator = Translator(plan)
                phases: dict[str, dict[str, float]] = {}
                try:
                    started = time.perf_counter()
                    first = translator.cycle()
                    first_seconds = time.perf_counter() - started
                    phases["first"] = per_group(first)
                    consumers_checkpoint(args.events - 10)
                    phases["moved"] = per_group(translator.cycle())
                    phases["unchanged"] = per_group(translator.cycle())
                finally:
                    translator.close()
                consumers_checkpoint(args.events - 1500)
                restarted = Translator(plan)
                try:
                    phases["restarted"] = per_group(restarted.cycle())
                finally:
                    restarted.close()
                sdk_round = statistics.fmean(baseline)
                result = {
                    "partitions": args.partitions,
                    "groups": args.groups,
                    "copies": args.partitions * args.events,
                    "populate_s": round(populate_seconds, 2),
                    "index_build_s": first.index_seconds,
                    "index_events_per_s": round(first.index_events_read / max(first.index_seconds, 1e-9)),
                    "first_cycle_s": round(first_seconds, 2),
                    "sdk_checkpoint_round_s": round(sdk_round, 4),
                    "per_group_per_cycle": phases,
                    "ratio_to_sdk_round": {
                        name: round(phase["seconds"] / sdk_round, 2) for name, phase in phases.items()
                    },
                    "loadavg": load(),
                }
        finally:
            azurite.stop()
    for name, phase in result["per_group_per_cycle"].items():
        print(f"{name:>10}: {phase}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
