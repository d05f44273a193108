"""Azure management failures as condition reasons: permanent ones stall a resource until a human acts,
retryable ones (throttling, 5xx, connection problems) are retried with backoff."""

from __future__ import annotations

import re

from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceExistsError,
    ResourceNotFoundError,
    ServiceRequestError,
    ServiceResponseError,
)

from federator import reasons

RETRYABLE_STATUS = frozenset({408, 409, 429})


class ManagementError(Exception):
    """A failed management step: a condition reason, a message safe to show (never a secret's value), and
    whether it is transient (Reconciling: it passes by itself) or needs a human (Stalled). Both are tried
    again with backoff, so a fix (a role assignment, a Secret) is picked up without touching the resource."""

    def __init__(self, reason: str, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.retryable = retryable


def classify(err: Exception, doing: str) -> ManagementError:
    """`err` raised while `doing` (e.g. "reading topic orders") as a ManagementError."""
    if isinstance(err, ManagementError):
        return err
    detail = summary(err)
    if isinstance(err, ClientAuthenticationError):
        return ManagementError(reasons.MANAGEMENT_AUTH_FAILED, f"{doing}: authentication failed: {detail}")
    if isinstance(err, ResourceNotFoundError):
        return ManagementError(reasons.ENTITY_NOT_FOUND, f"{doing}: not found: {detail}")
    if isinstance(err, ResourceExistsError):
        # Created concurrently (another pass, or a human): the next pass reads it and decides.
        return ManagementError(reasons.MANAGEMENT_UNAVAILABLE, f"{doing}: conflict: {detail}", retryable=True)
    if isinstance(err, HttpResponseError) and err.status_code is not None:
        status = err.status_code
        if status == 403:
            return ManagementError(
                reasons.MANAGEMENT_AUTH_FAILED, f"{doing}: not authorized (HTTP 403): {detail}"
            )
        if status in RETRYABLE_STATUS or status >= 500:
            return ManagementError(
                reasons.MANAGEMENT_UNAVAILABLE, f"{doing}: HTTP {status}: {detail}", retryable=True
            )
        return ManagementError(reasons.MANAGEMENT_REQUEST_REJECTED, f"{doing}: HTTP {status}: {detail}")
    if isinstance(err, FileNotFoundError):  # e.g. workload identity's projected token file
        return ManagementError(reasons.MANAGEMENT_AUTH_FAILED, f"{doing}: {detail}")
    if isinstance(err, ServiceRequestError | ServiceResponseError | OSError | TimeoutError):
        return ManagementError(reasons.MANAGEMENT_UNAVAILABLE, f"{doing}: {detail}", retryable=True)
    raise err


def summary(err: Exception) -> str:
    """What an Azure error says, in one line (never a request's headers or body)."""
    # Azure errors append the response body over many lines; the first line says what happened, except
    # for the administration API, whose first line is generic and whose XML body has the detail.
    text = str(getattr(err, "message", None) or err).strip()
    detail = re.search(r"<Detail>(.*?)</Detail>", text, flags=re.DOTALL)
    if detail:
        return detail.group(1).strip().splitlines()[0]
    return text.splitlines()[0] if text else type(err).__name__


def backoff_seconds(attempt: int, base: float, cap: float) -> float:
    """Exponential backoff: `base`, twice that, four times… capped at `cap` (attempt 0 waits `base`)."""
    return float(min(cap, base * 2 ** min(attempt, 16)))
