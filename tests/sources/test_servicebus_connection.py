"""The Service Bus source's receiver shares its connection between its own calls and the SDK's keep-alive
thread one at a time (real emulator): two threads handling transfers at once give a message another's
lock token."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from federator_spark.sources.servicebus_driver import SourceDriver
from support.polling import eventually


def keep_alive_reads(driver: SourceDriver) -> list[float]:
    """When the receiver's keep-alive thread reads the connection from now on."""
    handler = driver.receiver()._handler
    keep_alive_thread, connection = handler._keep_alive_thread, handler._connection
    assert keep_alive_thread is not None and keep_alive_thread.is_alive()
    reads: list[float] = []
    listen: Callable[..., Any] = connection.listen

    def recorded_listen(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is keep_alive_thread:
            reads.append(time.monotonic())
        return listen(*args, **kwargs)

    connection.listen = recorded_listen
    return reads


def test_the_sdk_keep_alive_reads_the_connection_only_while_no_call_of_the_source_runs(
    driver: SourceDriver, send: Callable[[range], None]
) -> None:
    send(range(1, 4))
    # Opens the receiver, and with it the SDK's keep-alive thread (again if its link did not open in time on
    # a loaded machine: the outage path drops the receiver).
    eventually(lambda: driver.latest(0, 10) == 1, timeout=60)
    driver._stop_receiving_ahead()  # (it holds the lock while it receives)
    reads = keep_alive_reads(driver)
    interval = driver.receiver()._handler._keep_alive_interval

    with driver.lock:  # what every call of the source holds while it uses the receiver
        time.sleep(interval + 2)  # the SDK's own loop reads at least once in any such span
    assert reads == []

    # Between the source's calls the keep-alive goes on keeping the connection alive.
    released = time.monotonic()
    eventually(lambda: [read for read in reads if read > released], timeout=interval + 5)
