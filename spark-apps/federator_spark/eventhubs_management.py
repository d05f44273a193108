"""Partition list and positions of an event hub, read over one long-lived management link.

The SDK's ``get_partition_ids`` and ``get_partition_properties`` open a connection, a CBS session and
a management link for every call, and its handshake loop sleeps 50 ms per frame: about 0.35 s per
call, so a trigger that asks for four partitions' tails spent ~1.5 s before reading anything.
:class:`HubManagement` keeps one management client open and sends READ requests on it (a few ms
each). That client comes from the SDK's transport internals; if they change (or a request fails,
unless the caller would rather ask again itself) the public call answers instead: slower, never wrong.

A read has ``timeout`` seconds to be answered, the connection's opening included: the SDK's loops wait
for ever for a peer that accepted the connection and then says nothing (a network partition; a stopped
namespace refuses at once instead). On a link that answered before, the request's own timeout bounds it;
until then (opening, attaching the link) a timer shuts the connection down under the read once its time
is up, which ends the SDK's wait (a thread per connection opened, none per read). Either way the read
raises :class:`TimeoutError`, never asked again through the SDK's calls (whose wait has no end either).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

logger = logging.getLogger(__name__)
T = TypeVar("T")

# What the readers use from a partition's properties (the SDK's names), and `last_enqueued_time` (epoch
# seconds) for the lag.
PROPERTY_NAMES = ("beginning_sequence_number", "last_enqueued_sequence_number", "is_empty")
READ_TIMEOUT_SECONDS = 10.0
"""A read answers in milliseconds (the emulator) to a few hundred (Azure, a new connection's handshake)."""


class HubManagement:
    """Management reads for one event hub through ``client`` (a producer or consumer client, which
    stays owned by the caller). Not thread-safe: one caller at a time.

    ``sdk_retry``: a read that fails on the kept link is asked again through the SDK's call (which
    opens a connection of its own, retried with backoff, and leaves its socket open if that connection
    breaks). False: the failure is the caller's and the next read opens a new link; for a caller that
    asks again soon anyway (the lag monitor), so that an outage neither holds it up nor leaks sockets.
    ``timeout``: seconds a read may take (see the module's docstring)."""

    def __init__(self, client: Any, *, sdk_retry: bool = True, timeout: float = READ_TIMEOUT_SECONDS) -> None:
        self._client = client
        self._sdk_retry = sdk_retry
        self._timeout = timeout
        self._timed_out = threading.Event()
        self._answered = False
        """The kept link answered a read (reset when it closes)."""
        self._mgmt: Any = None
        self._auth: Any = None
        self._fast = True
        self._partition_ids: list[str] | None = None

    def partition_ids(self) -> list[str]:
        """The hub's partition ids in numeric order (read once: a partition count only grows with a
        hub update, which a running query does not follow anyway)."""
        if self._partition_ids is None:
            ids = self._fast_or_sdk(
                lambda: [p.decode() for p in self._read(None)[b"partition_ids"]],
                self._client.get_partition_ids,
                "the partition list",
            )
            self._partition_ids = sorted(ids, key=int)
        return self._partition_ids

    def partition_properties(self, partition: str) -> dict[str, Any]:
        def fast() -> dict[str, Any]:
            value = self._read(partition)
            return {
                "beginning_sequence_number": value[b"begin_sequence_number"],
                "last_enqueued_sequence_number": value[b"last_enqueued_sequence_number"],
                "is_empty": value[b"is_partition_empty"],
                "last_enqueued_time": _epoch(value.get(b"last_enqueued_time_utc")),
            }

        def sdk() -> dict[str, Any]:
            properties = self._client.get_partition_properties(partition)
            found = {name: properties[name] for name in PROPERTY_NAMES}
            moment = properties.get("last_enqueued_time_utc")
            found["last_enqueued_time"] = moment.timestamp() if moment is not None else None
            return found

        return self._fast_or_sdk(fast, sdk, f"partition {partition}")

    def last_sequence_numbers(self, partitions: list[str]) -> dict[str, int]:
        return {p: self.partition_properties(p)["last_enqueued_sequence_number"] for p in partitions}

    def _fast_or_sdk(self, fast: Callable[[], T], sdk: Callable[[], T], what: str) -> T:
        if self._fast:
            try:
                return fast()
            except (AttributeError, ImportError, TypeError, KeyError) as error:
                logger.warning("fast management reads unavailable (%r); using the SDK's calls", error)
                self._fast = False
                self.close()
            except TimeoutError:  # a silent peer: the SDK's call would wait for it for ever
                self.close()
                raise
            except Exception as error:  # the link broke or the service refused: reconnect next time
                self.close()
                if not self._sdk_retry:
                    raise
                logger.info("management read of %s failed (%r); retrying via the SDK", what, error)
        return sdk()

    def _read(self, partition: str | None) -> Any:
        """A READ of the hub (``partition`` None) or of one partition, within ``timeout`` seconds."""
        if self._answered:  # the link is up: the request's timeout is enough
            try:
                return self._request(partition)
            except TimeoutError as error:
                raise self._late() from error
        self._timed_out.clear()
        watchdog = threading.Timer(self._timeout, self._time_out)
        watchdog.daemon = True
        watchdog.start()
        try:
            value = self._request(partition)
            self._answered = True
            return value
        except Exception as error:
            if self._timed_out.is_set():
                raise self._late() from error
            raise
        finally:
            watchdog.cancel()

    def _late(self) -> TimeoutError:
        return TimeoutError(f"no answer to a management read within {self._timeout:g}s")

    def _time_out(self) -> None:
        """The read is late: shut its connection's socket down (the reading thread's next wait on it
        fails; the socket stays the reader's to close)."""
        self._timed_out.set()
        connection = getattr(self._mgmt, "_connection", None)
        sock = getattr(getattr(connection, "_transport", None), "sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError as error:  # already closed
                logger.debug("shutting a late management read's socket down: %r", error)

    def _request(self, partition: str | None) -> Any:
        """The READ itself: the response's value map."""
        from azure.eventhub._constants import (
            MGMT_OPERATION,
            MGMT_PARTITION_OPERATION,
            MGMT_STATUS_CODE,
            MGMT_STATUS_DESC,
            READ_OPERATION,
        )

        client = self._client
        transport = client._amqp_transport
        if self._mgmt is None:
            self._auth = client._create_auth()
            mgmt = transport.create_mgmt_client(client._address, mgmt_auth=self._auth, config=client._config)
            self._mgmt = mgmt  # before it opens: an open that fails half way is closed too
            mgmt.open()
            # The management link may only attach once the CBS token is in place.
            while not mgmt.client_ready():
                if self._timed_out.is_set():
                    raise TimeoutError("the management connection did not open")
                time.sleep(0.01)  # the SDK's own loops poll every 50 ms: seconds over a handshake
        properties = {"name": client.eventhub_name}
        if partition is not None:
            properties["partition"] = partition
        message = transport.build_message(application_properties=properties)
        message.application_properties["security_token"] = transport.get_updated_token(self._auth)
        status, description, response = transport.mgmt_client_request(
            self._mgmt,
            message,
            operation=READ_OPERATION,
            operation_type=MGMT_OPERATION if partition is None else MGMT_PARTITION_OPERATION,
            status_code_field=MGMT_STATUS_CODE,
            description_fields=MGMT_STATUS_DESC,
            timeout=self._timeout,  # seconds (the SDK's message says ms)
        )
        if int(status) >= 400:
            raise RuntimeError(f"status {status}: {description!r}")
        return response.value

    def close(self) -> None:
        """Close the management client and, whatever state it is in, its connection's socket: once a
        read or write on a connection has failed, the SDK (pyamqp, azure-eventhub 5.15) marks it ended
        without closing its transport, and the socket is left to the garbage collector."""
        mgmt, self._mgmt = self._mgmt, None
        self._answered = False
        if mgmt is None:
            return
        connection = getattr(mgmt, "_connection", None)  # the client forgets it as it closes
        try:
            mgmt.close()
        except Exception as error:  # closing a broken link must not hide why it broke
            logger.debug("closing the management client: %r", error)
        finally:
            close_transport(connection)


def handler_connection(client: Any) -> Any:
    """The pyamqp connection of an SDK producer, consumer or sender (None before its link opens): closing the
    client forgets it, so it is taken first, for :func:`close_transport`."""
    return getattr(getattr(client, "_handler", None), "_connection", None)


def close_transport(connection: Any) -> None:
    """Close a pyamqp connection's socket (closing it twice is harmless: the transport forgets it)."""
    transport = getattr(connection, "_transport", None)
    if transport is None:
        return
    try:
        transport.close()
    except Exception as error:  # the socket is gone either way
        logger.debug("closing a connection's socket: %r", error)


def _epoch(milliseconds: int | None) -> float | None:
    """An AMQP timestamp (ms since the epoch) in seconds; an empty partition has none."""
    return milliseconds / 1000 if milliseconds else None


class PartitionPositions:
    """The last sequence numbers of several partitions at once: a management client per partition, asked
    side by side (one link answers one request at a time: four partitions took four round trips, about
    22 ms on the emulator, against 7 ms side by side). Not thread-safe: one caller at a time."""

    def __init__(self, open_client: Callable[[], Any]) -> None:
        self._open_client = open_client
        self._reads: dict[str, HubManagement] = {}
        self._pool: ThreadPoolExecutor | None = None

    def last_sequence_numbers(self, partitions: list[str]) -> dict[str, int]:
        if len(partitions) == 1:
            return {partitions[0]: self._read(partitions[0])}
        if self._pool is None:
            self._pool = ThreadPoolExecutor(len(partitions), thread_name_prefix="eventhubs-positions")
        return dict(zip(partitions, self._pool.map(self._read, partitions), strict=True))

    def _read(self, partition: str) -> int:
        reads = self._reads.get(partition)
        if reads is None:
            reads = self._reads[partition] = HubManagement(self._open_client())
        value: int = reads.partition_properties(partition)["last_enqueued_sequence_number"]
        return value
