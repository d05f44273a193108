"""Waiting for asynchronous outcomes in tests without fixed sleeps."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(check: Callable[[], T], timeout: float = 15, message: str = "condition not met in time") -> T:
    """Poll `check` until it returns something truthy, and return that."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, message
        time.sleep(0.1)


def eventually_more(
    count: Callable[[], float], more: int, timeout: float = 15, message: str = "it did not happen in time"
) -> None:
    """Wait until `count` has grown by `more` from its value now: the rounds a daemon made, the requests
    a server received. What must not happen is asserted once they have demonstrably happened."""
    target = count() + more
    eventually(lambda: count() >= target, timeout, message)
