"""How the app tells an outage (retried, forever) from a refusal (the query stops) and from anything else,
and what it says in its status meanwhile."""

from __future__ import annotations

import pytest
from azure.eventhub.exceptions import AuthenticationError, ConnectError, ConnectionLostError, EventDataError
from azure.servicebus.exceptions import (
    MessagingEntityNotFoundError,
    ServiceBusAuthenticationError,
    ServiceBusConnectionError,
    ServiceBusServerBusyError,
)

from federator_contract.appstatus import read_status
from federator_spark import outages
from federator_spark.outages import Backoff, Endpoint, EndpointRefusedError, classify, retrying, words

NOT_FOUND = (
    "CBS Token authentication failed.\nStatus code: 404\n"
    "Description: The messaging entity 'sb://localhost:1/orders' could not be found.\nError: client-error\n"
    "CBS Token authentication failed.\nStatus code: 404"
)
REFUSED_KEY = "CBS Token authentication failed.\nStatus code: 401\nDescription: invalid SAS signature"


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (
            ConnectError(
                "Failed to initiate the connection due to exception: [Errno 111] Connection refused"
            ),
            "transient",
        ),
        (ConnectionLostError("Link detached"), "transient"),
        (ServiceBusServerBusyError(message="ServerBusy"), "transient"),
        (ServiceBusConnectionError(message="connection lost"), "transient"),
        (TimeoutError("no events for 60 s"), "transient"),
        (ConnectionRefusedError(111, "refused"), "transient"),
        (AuthenticationError(REFUSED_KEY), "auth"),
        (ServiceBusAuthenticationError(message="Unauthorized"), "auth"),
        (AuthenticationError(NOT_FOUND), "notFound"),
        (MessagingEntityNotFoundError(message="subscription x not found"), "notFound"),
        (EventDataError("bad event"), "other"),
        (ValueError("a bug"), "other"),
    ],
)
def test_each_failure_is_classified(error: BaseException, kind: str) -> None:
    assert classify(error) == kind


def test_the_brokers_words_stop_where_the_sdk_repeats_itself() -> None:
    assert words(AuthenticationError(NOT_FOUND)) == (
        "AuthenticationError: CBS Token authentication failed. Status code: 404 "
        "Description: The messaging entity 'sb://localhost:1/orders' could not be found."
    )


def test_the_backoff_doubles_up_to_thirty_seconds() -> None:
    backoff = Backoff()
    delays = [backoff.next() for _ in range(10)]
    assert 0.45 <= delays[0] <= 0.55 and 0.9 <= delays[1] <= 1.1
    assert max(delays) == pytest.approx(30, rel=0.1) and all(d <= 30 for d in delays)


def test_an_outage_is_retried_reported_and_cleared_once_the_endpoint_answers(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(outages.time, "sleep", lambda seconds: None)
    status_file = str(tmp_path / "status.json")
    endpoint = Endpoint("target", "replica", status_file)
    seen: list[list[str]] = []
    attempts = iter([ConnectError("Connection refused"), ConnectionLostError("Link detached"), None])

    def send() -> str:
        seen.append([o["reason"] for o in read_status(status_file).get("unavailable", [])])
        failure = next(attempts)
        if failure is not None:
            raise failure
        return "sent"

    assert retrying(send, endpoint, "sending to orders") == "sent"
    assert seen == [[], ["TargetUnavailable"], ["TargetUnavailable"]]  # reported while it lasted
    assert "unavailable" not in read_status(status_file)  # and cleared


def test_a_refusal_stops_with_its_reason_and_says_so_in_the_status(tmp_path) -> None:
    status_file = str(tmp_path / "status.json")

    def send() -> None:
        raise AuthenticationError(NOT_FOUND)

    with pytest.raises(
        EndpointRefusedError, match="TargetNotFound: sending to orders: target replica"
    ) as raised:
        retrying(send, Endpoint("target", "replica", status_file), "sending to orders")

    assert raised.value.reason == "TargetNotFound"
    (outage,) = read_status(status_file)["unavailable"]
    assert (outage["reason"], outage["endpoint"]) == ("TargetNotFound", "replica")
    assert "could not be found" in outage["message"]


def test_anything_else_is_raised_as_it_is() -> None:
    def send() -> None:
        raise ValueError("a bug")

    with pytest.raises(ValueError, match="a bug"):
        retrying(send, Endpoint("target", "replica"), "sending to orders")
