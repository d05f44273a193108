"""A run of the Event Hubs source answers its start positions once: Spark asks twice when a query starts
on a checkpoint without positions (a FailoverGroup member the follower had not read before), and each
answer costs the namespace's round trips (a receiver per partition for an ``enqueuedTime`` start); a
second answer, later, would not even be the first one for ``latest``. Real emulator."""

from __future__ import annotations

from pathlib import Path

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


def send_one(connection_string: str, text: str) -> None:
    producer = EventHubProducerClient.from_connection_string(connection_string, eventhub_name="hub1")
    with producer:
        batch = producer.create_batch(partition_id="0")
        batch.add(EventData(text))
        producer.send_batch(batch)


def first_answer(settings: HubSourceSettings) -> dict[str, int]:
    reader = EventHubsStreamReader(settings)
    try:
        return reader.initialOffset()
    finally:
        reader.stop()


def test_a_latest_start_is_kept_for_the_next_run_until_the_first_batch_is_committed(
    emulator: RunningEmulator, tmp_path: Path
) -> None:
    # Spark asks again at each start while the first batch is not committed, to run it again: answered
    # anew, a `latest` start would lie past the events that batch was planned to read (lost by a crash).
    connection_string = emulator.connection_string()
    connection = Connection(connection_string=connection_string)
    kept = HubSourceSettings(
        connection, "hub1", start_position="latest", start_file=str(tmp_path / "start.json")
    )
    planned = first_answer(kept)
    send_one(connection_string, "sent while the first batch ran, before the crash")

    assert first_answer(kept) == planned, "the restarted run starts where the first batch was planned"
    assert first_answer(HubSourceSettings(connection, "hub1", start_position="latest")) == {
        **planned,
        "0": planned["0"] + 1,
    }, "without a file each run reads the hub's end anew"


def test_a_start_the_spec_no_longer_asks_for_is_read_anew(emulator: RunningEmulator, tmp_path: Path) -> None:
    connection_string = emulator.connection_string()
    connection = Connection(connection_string=connection_string)
    start_file = str(tmp_path / "start.json")
    send_one(connection_string, "before the task began")
    latest = first_answer(
        HubSourceSettings(connection, "hub1", start_position="latest", start_file=start_file)
    )

    earliest = first_answer(
        HubSourceSettings(connection, "hub1", start_position="earliest", start_file=start_file)
    )

    assert earliest["0"] == latest["0"] - 1, "the edited start position counts, not the kept answer"
