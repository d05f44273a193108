"""A query whose source holds Spark's ask for new offsets (an Event Hubs source that has had nothing new for
a while waits until its next poll is due, up to 3 s) stops without waiting for the answer: Spark
interrupts the ask. So holding the ask costs a query's stop nothing (a config edit, a follower's switch),
and each ask that finds nothing costs the JVM a trigger: fewer asks, less idle CPU."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit

pytestmark = pytest.mark.slow

HELD_SECONDS = 120.0  # far longer than the test waits for anything


class HeldReader(DataSourceStreamReader):
    """Notes each ask in ``marks`` and holds it for ``HELD_SECONDS``; notes the answer as it goes."""

    def __init__(self, marks: str) -> None:
        self.marks = Path(marks)

    def initialOffset(self) -> dict[str, int]:
        return {"n": 0}

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        (self.marks / "asked").touch()
        time.sleep(HELD_SECONDS)
        (self.marks / "answered").touch()
        return {"n": 0}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        return []

    def read(self, partition: InputPartition) -> Any:
        return iter([])


class Held(DataSource):
    @classmethod
    def name(cls) -> str:
        return "held"

    def schema(self) -> str:
        return "n int"

    def streamReader(self, schema: Any) -> HeldReader:
        return HeldReader(self.options["marks"])


def test_a_query_stops_while_its_source_holds_sparks_ask(spark: Any, tmp_path: Path) -> None:
    # The source runner cannot import the tests: the reader goes to it by value.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]
    spark.dataSource.register(Held)
    query = (
        spark.readStream.format("held")
        .option("marks", str(tmp_path))
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    deadline = time.monotonic() + 120
    while not (tmp_path / "asked").exists() and query.isActive and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (tmp_path / "asked").exists(), query.exception()

    query.stop()

    assert not query.isActive and query.exception() is None
    assert not (tmp_path / "answered").exists()  # the stop did not wait for the held ask
