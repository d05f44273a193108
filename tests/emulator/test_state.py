"""The state layer alone, on a fake clock: partition logs, locks, delivery counts, expiry and scheduling."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from federator_contract.emulatorconfig import QueueConfig, SubscriptionConfig, TopicConfig
from federator_emulator.state.eventhubs import PartitionLog, StoredEvent
from federator_emulator.state.journal import NullJournal
from federator_emulator.state.servicebus import MessageState, Queue
from federator_emulator.state.topics import Topic


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Plain:
    """An inbound message without SQL-visible properties (enough for queues)."""

    payload: bytes = b"m"
    message_id: str | None = None
    session_id: str | None = None
    ttl_seconds: float | None = None
    scheduled_at: float | None = None

    def sql_view(self) -> object:
        from federator_contract.sql import SqlMessage

        return SqlMessage(system={}, user={})

    def rewritten(self, view: object) -> Plain:
        return self


def make_queue(clock: FakeClock, **config) -> Queue:
    return Queue(QueueConfig(name="q", **config), NullJournal(), clock)


def test_lock_expiry_redelivers_with_a_counted_attempt_then_dead_letters():
    clock = FakeClock()
    queue = make_queue(clock, lock_duration_seconds=5, max_delivery_count=2)
    queue.send(Plain())
    first = queue.receive(peek_lock=True)
    assert first is not None and queue.receive(peek_lock=True) is None  # locked, not available
    clock.now += 5
    queue.tick()
    again = queue.receive(peek_lock=True)
    assert again is not None and again.delivery_count == 1
    clock.now += 5
    queue.tick()
    assert queue.receive(peek_lock=True) is None
    dead = queue.dead_letter.receive(peek_lock=False)
    assert dead is not None and dead.dead_letter_reason == "MaxDeliveryCountExceeded"


def test_release_does_not_count_an_attempt():
    clock = FakeClock()
    queue = make_queue(clock)
    queue.send(Plain())
    message = queue.receive(peek_lock=True)
    assert message is not None and message.lock_token is not None
    queue.release(message.lock_token)
    again = queue.receive(peek_lock=True)
    assert again is not None and again.delivery_count == 0


def test_scheduled_message_becomes_available_at_its_time():
    clock = FakeClock()
    queue = make_queue(clock)
    queue.send(Plain(scheduled_at=clock.now + 10))
    assert queue.peek(1, 10)[0].state is MessageState.SCHEDULED
    assert queue.receive(peek_lock=True) is None
    clock.now += 10
    queue.tick()
    assert queue.receive(peek_lock=True) is not None


def test_topic_default_ttl_expires_subscription_copies():
    clock = FakeClock()
    topic = Topic(
        TopicConfig(
            name="t",
            default_message_ttl_seconds=30,
            subscriptions=[SubscriptionConfig(name="s", dead_lettering_on_message_expiration=True)],
        ),
        NullJournal(),
        clock,
    )
    topic.send(Plain())
    sub = topic.subscription("s")
    clock.now += 30
    sub.tick()
    assert sub.receive(peek_lock=False) is None
    expired = sub.dead_letter.receive(peek_lock=False)
    assert expired is not None and expired.dead_letter_reason == "TTLExpiredException"


def test_duplicate_detection_forgets_ids_after_the_window():
    clock = FakeClock()
    queue = make_queue(clock, requires_duplicate_detection=True, duplicate_detection_window_seconds=60)
    assert queue.send(Plain(message_id="a")) is not None
    assert queue.send(Plain(message_id="a")) is None
    clock.now += 61
    queue.tick()
    assert queue.send(Plain(message_id="a")) is not None


def test_namespace_management_changes_apply_to_existing_entities():
    from federator_contract.emulatorconfig import EventHubConfig, NamespaceConfig
    from federator_emulator.state.eventhubs import UnknownEntity
    from federator_emulator.state.namespace import EntityExists, NamespaceState

    clock = FakeClock()
    ns = NamespaceState(NamespaceConfig(name="ns", queues=[QueueConfig(name="q")]), clock=clock)
    ns.update_queue(QueueConfig(name="q", lock_duration_seconds=5))
    ns.queue("q").send(Plain())
    locked = ns.queue("q").receive(peek_lock=True)
    assert locked is not None and locked.locked_until == clock.now + 5
    ns.create_event_hub(EventHubConfig(name="hub", partition_count=4))
    assert list(ns.event_hub("HUB").partitions) == ["0", "1", "2", "3"]
    with pytest.raises(EntityExists):
        ns.create_topic(TopicConfig(name="hub"))
    ns.delete_event_hub("hub")
    with pytest.raises(UnknownEntity):
        ns.event_hub("hub")


def test_a_partition_log_reads_ranges_of_the_events_it_retains():
    log = PartitionLog("0")
    log.extend([b"a", b"bb", b"ccc"], enqueued_time_ms=1)
    log.append(b"dddd", enqueued_time_ms=2)
    log.extend([b"ee", b"f"], enqueued_time_ms=3)

    events = log.read(1, 3)
    assert (events.first_sequence_number, events.next_sequence_number) == (1, 4)
    assert events.payloads == [b"bb", b"ccc", b"dddd"]
    assert list(events.offsets) == [1, 3, 6]  # byte positions in the partition, as on Azure
    assert list(events.enqueued_times_ms) == [1, 1, 2]
    assert log.read(4, 100).payloads == [b"ee", b"f"]  # no further than the last event
    assert log.read(6, 10).payloads == []
    assert log.get(5) == StoredEvent(5, 12, 3, b"f")

    assert log.expire_before(2) == 3
    assert log.read(0, 2).first_sequence_number == 3  # from the earliest retained
    assert log.read(0, 2).payloads == [b"dddd", b"ee"]
    assert log.last() == StoredEvent(5, 12, 3, b"f")
