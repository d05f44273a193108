"""A run of the Event Hubs source answers its start positions once: Spark asks twice when a query starts
on a checkpoint without positions (a FailoverGroup member the follower had not read before), and each
answer costs the namespace's round trips (a receiver per partition for an ``enqueuedTime`` start); a
second answer, later, would not even be the first one for ``latest``. Real emulator."""

from __future__ import annotations

from azure.eventhub import EventData, EventHubProducerClient

from federator_emulator.server import RunningEmulator
from federator_spark.connections import Connection
from federator_spark.sources.eventhubs import EventHubsStreamReader
from federator_spark.sources.eventhubs_settings import HubSourceSettings


def test_the_start_positions_are_read_once_per_run(emulator: RunningEmulator) -> None:
    connection_string = emulator.connection_string()
    settings = HubSourceSettings(
        Connection(connection_string=connection_string), "hub1", start_position="latest"
    )
    reader = EventHubsStreamReader(settings)
    try:
        first = reader.initialOffset()
        producer = EventHubProducerClient.from_connection_string(connection_string, eventhub_name="hub1")
        with producer:
            batch = producer.create_batch(partition_id="0")
            batch.add(EventData("after the first answer"))
            producer.send_batch(batch)

        assert reader.initialOffset() == first
        assert first == {"0": -1, "1": -1}
    finally:
        reader.stop()
