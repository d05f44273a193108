"""A Python worker keeps the clients its tasks write with (producers, Service Bus senders) open for its next
tasks, and closes one once no task has used it for a while: a worker of a shared application outlives the
tasks it served, and an edited, removed or switched task leaves clients nobody will use again."""

from __future__ import annotations

import time

from federator_spark.sinks.kept_clients import IDLE_CLOSE_SECONDS, KeptClients


class Client:
    opened = 0

    def __init__(self) -> None:
        Client.opened += 1
        self.closed = False

    def close(self) -> None:
        self.closed = True


def kept() -> KeptClients[str, Client]:
    return KeptClients("client", Client.close)


def later(seconds: float) -> float:
    return time.monotonic() + seconds


def used(clients: KeptClients[str, Client], key: str) -> Client:
    """A task's use of ``key``'s client: held, then released."""
    with clients.lease(key, Client) as client:
        return client


def test_the_next_task_writes_with_the_client_the_last_one_released() -> None:
    clients = kept()
    first, second = used(clients, "hub"), used(clients, "hub")

    assert second is first and not first.closed
    assert clients.close_idle() == 0  # used just now


def test_a_client_no_task_used_for_a_while_is_closed_and_the_next_task_opens_another() -> None:
    clients = kept()
    old, current = used(clients, "old-target"), used(clients, "target")

    assert clients.close_idle(now=later(IDLE_CLOSE_SECONDS / 2)) == 0
    assert clients.close_idle(now=later(IDLE_CLOSE_SECONDS + 1)) == 2
    assert old.closed and current.closed and len(clients) == 0
    reopened = used(clients, "target")
    assert reopened is not current and not reopened.closed


def test_a_client_a_task_holds_is_never_closed_however_long_the_task() -> None:
    clients = kept()
    held = clients.acquire("hub", Client)
    assert used(clients, "hub") is held  # a second writer to the same target in the task

    assert clients.close_idle(now=later(10 * IDLE_CLOSE_SECONDS)) == 0
    assert not held.closed
    clients.release("hub", held)
    assert clients.close_idle(now=later(IDLE_CLOSE_SECONDS + 1)) == 1 and held.closed


def test_a_forgotten_client_is_closed_at_once_and_a_late_release_of_it_changes_nothing() -> None:
    clients = kept()
    failed = clients.acquire("queue", Client)
    clients.forget("queue")  # a send failed on it for good

    assert failed.closed
    replacement = clients.acquire("queue", Client)
    clients.release("queue", failed)  # the failed task's publisher closes afterwards
    assert clients.close_idle(now=later(IDLE_CLOSE_SECONDS + 1)) == 0  # the replacement is still held
    assert not replacement.closed


def test_a_client_that_fails_to_close_is_dropped_all_the_same() -> None:
    def refuse(client: Client) -> None:
        raise OSError("the connection is gone already")

    clients: KeptClients[str, Client] = KeptClients("client", refuse)
    used(clients, "hub")

    assert clients.close_idle(now=later(IDLE_CLOSE_SECONDS + 1)) == 1
    assert len(clients) == 0
