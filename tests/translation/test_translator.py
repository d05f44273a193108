"""Checkpoint translation against the emulator and Azurite, with the unmodified SDKs on both ends: a
consumer that checkpointed on the primary resumes on the secondary from the translated checkpoints
(the SDK's own BlobCheckpointStore reads them), losing nothing and repeating exactly what it processed
after its last checkpoints — for partition i → i and for a re-hashed 4 → 2 mapping."""

from __future__ import annotations

from collections import Counter

import pytest
from azure.eventhub.extensions.checkpointstoreblob import BlobCheckpointStore
from consumers import consume, copy_with_provenance, produce_rounds

from federator_spark.connections import Connection
from federator_spark.translation.layout import ConsumerGroupRef
from federator_spark.translation.store import BlobLocation
from federator_spark.translation.translator import TranslationPlan, Translator

ROUNDS = 30
GROUP = "orders-app"


def emulator_config(target_partitions):
    return {
        "namespaces": [
            {
                "name": "primary",
                "eventHubs": [{"name": "orders", "partitionCount": 4, "consumerGroups": [GROUP]}],
            },
            {
                "name": "secondary",
                "eventHubs": [
                    {"name": "orders", "partitionCount": target_partitions, "consumerGroups": [GROUP]}
                ],
            },
        ]
    }


def translation_plan(primary, secondary, container, state_dir):
    source, target = Connection(connection_string=primary), Connection(connection_string=secondary)
    store = BlobLocation(container.name, connection_string=container.connection_string)
    return TranslationPlan(
        groups=(GROUP,),
        source=ConsumerGroupRef(source.host, "orders", ""),
        target=ConsumerGroupRef(target.host, "orders", ""),
        origin_prefix=f"{source.host}/orders/",
        target_connection=target,
        index_consumer_group="$Default",
        source_store=store,
        target_store=store,
        interval_seconds=1,
        state_dir=str(state_dir),
    )


@pytest.mark.parametrize("target_partitions", [4, 2], ids=["i-to-i", "rehashed-4-to-2"])
def test_a_consumer_resumes_on_the_secondary_where_it_left_the_primary(
    emulator_factory, blob_container, tmp_path, target_partitions
):
    emulator = emulator_factory(emulator_config(target_partitions))
    primary, secondary = emulator.connection_string("primary"), emulator.connection_string("secondary")
    store = (blob_container.connection_string, blob_container.name)
    produce_rounds(primary, "orders", range(ROUNDS), 4)
    copy_with_provenance(primary, secondary, "orders", 4, target_partitions, ROUNDS)

    # The application consumed rounds 0..21 everywhere, checkpointing every 5 events (last: round 19).
    before = consume(primary, "orders", GROUP, store, stop_at={str(p): 22 for p in range(4)})
    assert before.checkpointed == {str(p): 19 for p in range(4)}

    translator = Translator(translation_plan(primary, secondary, blob_container, tmp_path))
    try:
        report = translator.cycle()
    finally:
        translator.close()
    cycle = report.groups[GROUP]
    assert (cycle.source_checkpoints, cycle.written, cycle.reads) == (4, target_partitions, 0)
    assert report.index_events_read == 4 * ROUNDS

    after = consume(secondary, "orders", GROUP, store, origin_of="copy")
    everything = {f"{p}/{s}" for p in range(4) for s in range(ROUNDS)}
    assert everything - set(before.origins) - set(after.origins) == set()  # nothing lost
    assert Counter(after.origins).most_common(1)[0][1] == 1  # the secondary delivered each copy once
    duplicates = set(before.origins) & set(after.origins)
    assert duplicates == before.after_checkpoints()  # exactly what was processed after the checkpoints
    assert len(duplicates) == 4 * 2


def test_the_translated_checkpoints_are_where_the_sdk_reads_them(emulator_factory, blob_container, tmp_path):
    emulator = emulator_factory(emulator_config(4))
    primary, secondary = emulator.connection_string("primary"), emulator.connection_string("secondary")
    store = (blob_container.connection_string, blob_container.name)
    produce_rounds(primary, "orders", range(10), 4)
    copy_with_provenance(primary, secondary, "orders", 4, 4, 10)
    consume(primary, "orders", GROUP, store, stop_at={str(p): 5 for p in range(4)})
    translator = Translator(translation_plan(primary, secondary, blob_container, tmp_path))
    try:
        first = translator.cycle().groups[GROUP]
        again = translator.cycle().groups[GROUP]
    finally:
        translator.close()
    assert (first.written, again.written, again.unchanged) == (
        4,
        0,
        4,
    )  # an unchanged translation is not rewritten
    secondary_host = Connection(connection_string=secondary).host
    checkpoints = BlobCheckpointStore.from_connection_string(*store).list_checkpoints(
        secondary_host, "orders", GROUP
    )
    assert sorted((c["partition_id"], c["sequence_number"]) for c in checkpoints) == [
        (str(p), 4) for p in range(4)
    ]
    # The offset is the copy's own offset on the secondary (a byte position there), not the source's.
    assert all(c["offset"] != "-1" for c in checkpoints)
