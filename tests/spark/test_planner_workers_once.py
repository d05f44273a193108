"""The Python worker of Spark's lookup of registered data sources, which a session runs once, is not kept
after its use (``worker_exit.USED_ONCE_PLANNERS``, through ``pyspark_federator``): the JVM stops it at once
instead of keeping it idle a minute (docs/replication.md, "Memory of one application")."""

from __future__ import annotations

from pathlib import Path

import pytest
from planner_sessions import planner_processes, session

from support.polling import eventually

pytestmark = [pytest.mark.jvm, pytest.mark.timeout(600)]

LOOKUP = "pyspark.sql.worker.lookup_data_sources"

# A data source read by name, which is when Spark runs its lookup (the suite's session did long before).
READ_BY_NAME = """
class One(DataSource):
    @classmethod
    def name(cls):
        return "test-one-row"

    def schema(self):
        return "n int"

    def reader(self, schema):
        return Rows()

spark.dataSource.register(One)
assert spark.read.format("test-one-row").load().collect()[0].n == 1
"""


def test_the_worker_of_the_session_s_data_source_lookup_is_stopped_after_its_use(tmp_path: Path) -> None:
    with session(READ_BY_NAME, tmp_path / "session.log") as jvm:
        assert planner_processes(jvm, LOOKUP)[0] == 1  # the lookup ran, in a worker its daemon forked
        # Kept, the worker would stay a minute (PythonWorkerFactory's idle timeout, checked every 10 s).
        stayed = "the lookup's worker stayed after its use"
        eventually(lambda: planner_processes(jvm, LOOKUP) == (1, 0), 20, stayed)
