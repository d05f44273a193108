"""A new receiver of the Service Bus source opens its link with a budget of its own, not out of the
receive's wait: a broker that answers later than the wait still gives batches; a link that does not open
within the budget is an outage, reported and tried again with a new receiver, the dropped one's socket
closed; a missing queue or a wrong key is a refusal (real SDK and emulator, the broker's answers delayed
by a TCP proxy)."""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_servicebus_receive_ahead import available_now

from federator_contract.appstatus import current_outages
from federator_spark.outages import EndpointRefusedError
from federator_spark.sources import servicebus_driver
from federator_spark.sources.servicebus_driver import SourceDriver
from federator_spark.sources.spool import Spool, read_spool_file
from support.late_answers import LateAnswers
from support.polling import eventually
from support.sockets import unclosed_sockets

LATE_SECONDS = 1.0  # twice the drivers' receiveWaitSeconds (0.5)


@pytest.fixture
def late(emulator_connection_string: str) -> Iterator[LateAnswers]:
    proxy = LateAnswers(emulator_connection_string, LATE_SECONDS)
    try:
        yield proxy
    finally:
        proxy.close()


def first_batch(driver: SourceDriver, timeout: float) -> list[int]:
    """The first batch Spark's ``latestOffset`` calls make, asked for until there is one."""
    eventually(lambda: driver.latest(0, 10) == 1, timeout=timeout, message="no batch")
    _, records = read_spool_file(Spool(driver.settings.spool_dir).path(1))
    return [int(base64.b64decode(str(r["body"]))) for r in records]


def test_a_broker_answering_later_than_the_receive_wait_still_gives_batches(
    driver_on: Callable[..., SourceDriver], late: LateAnswers, send: Callable[[range], None]
) -> None:
    send(range(1, 6))
    driver = driver_on(late.connection_string)

    batch = first_batch(driver, timeout=90)

    assert batch and batch == list(range(1, len(batch) + 1)), batch


def test_a_link_not_open_within_its_budget_is_an_outage_that_does_not_end_an_available_now_run(
    driver_on: Callable[..., SourceDriver],
    late: LateAnswers,
    send: Callable[[range], None],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    # An opening takes several round trips (SASL, open, the token, the attach): more than 1 s at 1 s each.
    monkeypatch.setattr(servicebus_driver, "LINK_OPEN_SECONDS", 1.0)
    status = tmp_path / "status.json"
    driver = driver_on(late.connection_string, statusFile=str(status))
    send(range(1, 4))
    reported: list[list[dict[str, Any]]] = []

    def answer_in_time_once_reported() -> None:
        reported.append(eventually(lambda: current_outages(status), timeout=60, message="no outage"))
        late.delay = 0.0

    answering = threading.Thread(target=answer_in_time_once_reported, daemon=True)
    answering.start()
    batches = available_now(driver)
    answering.join()

    [[outage]] = reported
    assert (outage["role"], outage["reason"]) == ("source", "SourceUnavailable"), outage
    assert "OperationTimeoutError" in outage["message"], outage
    assert batches == [[1, 2, 3]], "the run ended before the source did"
    assert current_outages(status) == []
    assert unclosed_sockets() == [], "the receiver whose link did not open left its socket open"


WRONG_KEY = "SharedAccessKey=" + base64.b64encode(b"not the namespace's key").decode()


@pytest.mark.parametrize(
    ("queue", "key", "reason"),
    [("absent", None, "SourceNotFound"), ("q1", WRONG_KEY, "SourceAuthRefused")],
    ids=["missing-queue", "wrong-key"],
)
def test_a_link_the_broker_refuses_is_a_refusal_not_an_outage(
    driver_on: Callable[..., SourceDriver],
    emulator_connection_string: str,
    tmp_path: Path,
    queue: str,
    key: str | None,
    reason: str,
) -> None:
    status = tmp_path / "status.json"
    connection = (
        re.sub(r"SharedAccessKey=[^;]*", key, emulator_connection_string)
        if key
        else emulator_connection_string
    )
    driver = driver_on(connection, queueName=queue, statusFile=str(status))

    with pytest.raises(EndpointRefusedError):
        driver.latest(0, 10)
    [outage] = current_outages(status)
    assert (outage["role"], outage["reason"]) == ("source", reason), outage
    assert unclosed_sockets() == []
