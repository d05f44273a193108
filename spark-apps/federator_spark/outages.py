"""Riding out outages: a source or target that cannot be reached (connection refused, link detached, server
busy, timeouts) is tried again with capped exponential backoff, forever, on top of the SDKs' own retries.
The query keeps running and keeps its place; the batch in progress waits, so the lag grows, and the app's
status names the endpoint (``SourceUnavailable``/``TargetUnavailable`` with the broker's words,
``federator_contract.appstatus``) until it answers again.

Only configuration errors stop the query: the namespace refused our credentials, or the entity does not
exist (:class:`EndpointRefusedError`, with a specific reason). Anything else that is not a broker's
transient failure (a bug, a refused event) is raised as it is.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from federator_contract.appstatus import REFUSED, UNAVAILABLE, Role, clear_outage, report_outage

logger = logging.getLogger(__name__)
T = TypeVar("T")

BASE_DELAY_SECONDS = 0.5
MAX_DELAY_SECONDS = 30.0

Kind = Literal["transient", "auth", "notFound", "other"]

# Words the SDKs put in the errors of a refused token or a missing entity (the status the CBS answered
# with, or the AMQP condition), whatever exception class carries them.
_AUTH_WORDS = ("status code: 401", "status code: 403", "amqp:unauthorized-access", "unauthorized")
_NOT_FOUND_WORDS = ("status code: 404", "amqp:not-found", "could not be found", "does not exist")


class TransientError(Exception):
    """Raised by an action to have it retried (e.g. a database error known to pass)."""


class RefusalError(Exception):
    """Raised by an action whose endpoint refused it for good: ``kind`` is ``auth`` or ``notFound``."""

    def __init__(self, kind: Literal["auth", "notFound"], message: str) -> None:
        super().__init__(message)
        self.kind = kind


class EndpointRefusedError(RuntimeError):
    """The endpoint refused our credentials or does not exist: retrying cannot help."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason


@dataclass(frozen=True)
class Endpoint:
    """What is reported while it is unavailable: the task's source or one of its targets."""

    role: Role
    name: str  # "source", or the target's name
    status_file: str | None = None

    def unavailable(self, message: str) -> None:
        self._report(UNAVAILABLE[self.role], message)

    def refused(self, kind: Literal["auth", "notFound"], message: str) -> str:
        reason = REFUSED[(self.role, kind)]
        self._report(reason, message)
        return reason

    def available(self) -> None:
        if self.status_file is not None:
            _quietly(clear_outage, self.status_file, self.role, self.name)

    def _report(self, reason: str, message: str) -> None:
        if self.status_file is not None:
            _quietly(report_outage, self.status_file, self.role, self.name, reason, message)


def _quietly(action: Callable[..., None], *args: str) -> None:
    """Reporting must never turn an outage into a failure (the status may sit on the broken disk)."""
    try:
        action(*args)
    except OSError as error:
        logger.warning("could not update the status: %s", error)


def classify(error: BaseException) -> Kind:
    """What kind of failure ``error`` is: retried (transient), a refusal (auth, notFound), or neither."""
    if isinstance(error, TransientError):
        return "transient"
    if isinstance(error, RefusalError):
        return error.kind
    names = {cls.__name__ for cls in type(error).__mro__}
    text = str(error).lower()
    if names & {"MessagingEntityNotFoundError"}:
        return "notFound"
    if names & {"ServiceBusAuthenticationError", "ServiceBusAuthorizationError"}:
        return "auth"
    if names & {"AuthenticationError"} or any(word in text for word in _AUTH_WORDS + _NOT_FOUND_WORDS):
        if any(word in text for word in _NOT_FOUND_WORDS):
            return "notFound"
        if any(word in text for word in _AUTH_WORDS):
            return "auth"
    if names & {"EventDataError", "MessageSizeExceededError", "MessageAlreadySettled"}:
        return "other"  # the event or message itself, not the broker
    if names & {"EventHubError", "ServiceBusError", "AMQPError", "AMQPException"} or isinstance(
        error, (OSError, TimeoutError)
    ):
        return "transient"
    return "other"


def words(error: BaseException) -> str:
    """The broker's words: the error's first lines, up to where the SDK repeats itself (its description
    of a refusal, e.g. which entity could not be found, is on the third)."""
    lines: list[str] = []
    for line in (line.strip() for line in str(error).splitlines()):
        if line in lines or len(lines) == 3:
            break
        if line:
            lines.append(line)
    return f"{type(error).__name__}: {' '.join(lines)}"[:1024]


class Backoff:
    """Capped exponential delays with a little jitter (so many tasks do not retry in step)."""

    def __init__(self, base: float = BASE_DELAY_SECONDS, cap: float = MAX_DELAY_SECONDS) -> None:
        self.base, self.cap = base, cap
        self.failures = 0

    def next(self) -> float:
        self.failures += 1
        delay = min(self.cap, self.base * 2 ** (self.failures - 1))
        return float(min(self.cap, delay * random.uniform(0.9, 1.1)))

    def reset(self) -> None:
        self.failures = 0


def retrying(
    action: Callable[[], T],
    endpoint: Endpoint,
    what: str,
    *,
    before_retry: Callable[[], None] | None = None,
) -> T:
    """``action()``, tried again after transient failures until it succeeds; ``before_retry`` runs (inside
    the same protection) before each new attempt, e.g. to find out what a failed send already delivered."""
    backoff = Backoff()
    while True:
        try:
            if backoff.failures and before_retry is not None:
                before_retry()
            result = action()
        except BaseException as error:
            failure(error, endpoint, what)
            delay = backoff.next()
            logger.warning(
                "%s: %s unavailable (%s); attempt %d, next in %.1f s",
                what,
                endpoint.name,
                words(error),
                backoff.failures,
                delay,
            )
            time.sleep(delay)
            continue
        if backoff.failures:
            endpoint.available()
            logger.info("%s: %s available again after %d attempts", what, endpoint.name, backoff.failures + 1)
        return result


def failure(error: BaseException, endpoint: Endpoint, what: str) -> None:
    """Report a transient failure of ``endpoint``; raise anything else (a refusal as
    :class:`EndpointRefusedError`)."""
    kind = classify(error)
    if kind in ("auth", "notFound"):
        reason = endpoint.refused(kind, words(error))
        raise EndpointRefusedError(
            reason, f"{what}: {endpoint.role} {endpoint.name}: {words(error)}"
        ) from error
    if kind != "transient":
        raise error
    endpoint.unavailable(words(error))
