"""Retries with exponential backoff for transient broker errors (on top of the SDKs' own retries)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

logger = logging.getLogger(__name__)
T = TypeVar("T")


def with_retries(
    action: Callable[[], T],
    transient: tuple[type[BaseException], ...],
    *,
    attempts: int = 5,
    base_delay: float = 0.5,
    what: str = "send",
) -> T:
    for attempt in range(1, attempts + 1):
        try:
            return action()
        except transient as error:
            if attempt == attempts:
                raise
            delay = base_delay * 2 ** (attempt - 1)
            logger.warning(
                "%s failed (%s), attempt %d/%d, retrying in %.1fs", what, error, attempt, attempts, delay
            )
            time.sleep(delay)
    raise AssertionError("unreachable")
