"""Azure failures become condition reasons: permanent ones stall, transient ones are retried with
backoff, and a failing member is re-read sooner than a healthy one."""

from __future__ import annotations

import pytest
from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceExistsError,
    ResourceNotFoundError,
    ServiceRequestError,
)

from federator.provision.errors import ManagementError, backoff_seconds, classify
from federator.provision.schedule import ProvisionSchedule


def http_error(status: int) -> HttpResponseError:
    err = HttpResponseError(message=f"Operation returned status {status}\nContent: {{...}}")
    err.status_code = status
    return err


@pytest.mark.parametrize(
    ("error", "reason", "transient"),
    [
        (ClientAuthenticationError("bad token"), "ManagementAuthFailed", False),
        (http_error(403), "ManagementAuthFailed", False),
        (ResourceNotFoundError("no such topic"), "EntityNotFound", False),
        (http_error(400), "ManagementRequestRejected", False),
        (http_error(429), "ManagementUnavailable", True),
        (http_error(503), "ManagementUnavailable", True),
        (ResourceExistsError("created concurrently"), "ManagementUnavailable", True),
        (ServiceRequestError("connection refused"), "ManagementUnavailable", True),
        (TimeoutError(), "ManagementUnavailable", True),
        (
            FileNotFoundError("/var/run/secrets/azure/tokens/azure-identity-token"),
            "ManagementAuthFailed",
            False,
        ),
    ],
)
def test_failures_map_to_reasons(error: Exception, reason: str, transient: bool) -> None:
    found = classify(error, "member a: reading topic orders")
    assert (found.reason, found.retryable) == (reason, transient)
    assert found.message.startswith("member a: reading topic orders: ")
    assert "\n" not in found.message, "only the first line of Azure's multi-line errors"


def test_the_administration_apis_xml_detail_is_what_is_shown() -> None:
    err = ResourceNotFoundError(
        "Operation returned an invalid status 'Not Found'\nContent: <Error><Code>404</Code>"
        "<Detail>topic 'orders' not found</Detail></Error>"
    )
    assert classify(err, "x").message == "x: not found: topic 'orders' not found"


def test_programming_errors_are_not_disguised_as_azure_failures() -> None:
    with pytest.raises(KeyError):
        classify(KeyError("bug"), "x")
    already = ManagementError("SecretNotFound", "m")
    assert classify(already, "x") is already


def test_failures_back_off_exponentially_up_to_the_drift_interval() -> None:
    assert [backoff_seconds(n, 30, 300) for n in range(6)] == [30, 60, 120, 240, 300, 300]
    schedule = ProvisionSchedule()
    assert schedule.due(0)
    assert schedule.record(100, failed=True, retry_seconds=30, drift_interval=300) == 30
    assert not schedule.due(129) and schedule.due(130)
    assert schedule.record(130, failed=True, retry_seconds=30, drift_interval=300) == 60
    assert schedule.record(190, failed=False, retry_seconds=30, drift_interval=300) == 300
    assert schedule.failures == 0
