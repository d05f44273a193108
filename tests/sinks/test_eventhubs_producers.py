"""A producer the worker closes because no task used it for a while closes every connection it opened:
the client's and the management link's (which the SDK's close leaves), none left to the garbage collector."""

from __future__ import annotations

import gc
import time
import warnings
from typing import Any

import pytest

from federator_spark.connections import Connection
from federator_spark.plan import TargetPlan
from federator_spark.sinks import eventhubs_producers
from federator_spark.sinks.kept_clients import IDLE_CLOSE_SECONDS

pytestmark = pytest.mark.slow  # an emulator, a few seconds


def test_a_producer_closed_as_idle_leaves_no_connection_open(emulator_factory: Any) -> None:
    hubs = [{"name": "out", "partitionCount": 2}]
    emulator = emulator_factory({"namespaces": [{"name": "ns", "eventHubs": hubs}]})
    connection = Connection(connection_string=emulator.connection_string("ns"))
    target = TargetPlan("out", "eventHub", connection, "out")
    with eventhubs_producers.leased(target) as producer:
        producer.ready()
        assert producer.partition_ids() == ["0", "1"]  # over the management link
    del producer

    later = time.monotonic() + IDLE_CLOSE_SECONDS + 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        assert eventhubs_producers._producers.close_idle(now=later) == 1
        gc.collect()

    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
