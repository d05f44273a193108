"""The producer clients a Python worker keeps, one per target event hub, opened ahead of the first send.

The SDK opens what a producer needs lazily and one piece after the other: the partition list (a
management request on a connection of its own), the link ``create_batch`` reads the size limit from,
then a connection and link per partition at its first send, each handshake polled every 50 ms. On the
emulator that is 0.37 s + 0.46 s + 0.46 s per partition before a fresh worker's first event reaches
the target. :func:`prepare`, called when a write task starts, does all of it on a thread while the
task's source is still opening: the list over the kept management link (``eventhubs_management``),
the links side by side; the first send waits
for it (:meth:`Producer.ready`). A worker's client then serves its later tasks, links open, until no task
used it for a while (``kept_clients``).

If opening ahead fails, nothing is lost: the error is logged and the sends open the links (and report
the error) as the SDK does.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from federator_spark.connections import eventhub_producer
from federator_spark.eventhubs_management import HubManagement, close_transport, handler_connection
from federator_spark.plan import TargetPlan
from federator_spark.sinks.kept_clients import KeptClients

logger = logging.getLogger(__name__)

_OPEN_TIMEOUT_SECONDS = 60.0


class Producer:
    """A producer client for one event hub and management reads through it."""

    def __init__(self, target: TargetPlan) -> None:
        self.name = target.entity
        self.client = eventhub_producer(target.connection, target.entity)
        self.management = HubManagement(self.client)
        self._partition_ids: list[str] | None = None
        self._listed = threading.Event()
        self._opened = threading.Event()
        self._management_lock = threading.Lock()  # one request at a time on the management link
        threading.Thread(target=self._open, daemon=True, name=f"eventhubs-open-{self.name}").start()

    def partition_ids(self) -> list[str]:
        """The hub's partition ids in numeric order."""
        self._listed.wait(_OPEN_TIMEOUT_SECONDS)
        if self._partition_ids is None:  # listing ahead failed: ask again, and let its error surface
            with self._management_lock:
                self._partition_ids = self.management.partition_ids()
        return self._partition_ids

    def last_sequence_numbers(self, partitions: list[str]) -> dict[str, int]:
        """The partitions' last sequence numbers, over the kept management link."""
        with self._management_lock:
            return self.management.last_sequence_numbers(partitions)

    def ready(self) -> None:
        """Returns once the links are open, or opening them ahead has failed."""
        self._opened.wait(_OPEN_TIMEOUT_SECONDS)

    def _open(self) -> None:
        client = self.client
        try:
            self._partition_ids = self.management.partition_ids()
            self._listed.set()
            # The SDK's own list, which its sends check partition ids against (``_get_partitions``
            # would ask again, on a connection of its own).
            client._partition_ids = list(self._partition_ids)
            client._producers.update(dict.fromkeys(self._partition_ids))
            for partition in self._partition_ids:
                client._start_producer(partition)  # creates the partition's producer, does not open it
            steps = [client._get_max_message_size]
            steps += [client._producers[p]._open_with_retry for p in self._partition_ids]
            threads = [threading.Thread(target=self._attempt, args=(step,), daemon=True) for step in steps]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(_OPEN_TIMEOUT_SECONDS)
        except Exception as error:  # the sends open what is missing, and report their own errors
            logger.info("opening the links to %s ahead failed: %r", self.name, error)
        finally:
            self._listed.set()
            self._opened.set()

    def _attempt(self, step: Any) -> None:
        try:
            step()
        except Exception as error:
            logger.info("opening a link to %s ahead failed: %r", self.name, error)

    def close(self) -> None:
        """Close the management link, the partitions' links and every connection's socket: once a read
        or write on a connection has failed, the SDK ends it without closing its socket."""
        self.management.close()
        connections = [handler_connection(p) for p in list(self.client._producers.values())]
        try:
            self.client.close()
        finally:
            for connection in connections:  # the client forgets them as it closes
                close_transport(connection)


_producers: KeptClients[tuple[str, str], Producer] = KeptClients("event hub producers", Producer.close)


def prepare(target: TargetPlan) -> Producer:
    """This worker's producer for ``target``, created (and opening) on first use."""
    return _producers.get((target.connection.to_option(), target.entity), lambda: Producer(target))
