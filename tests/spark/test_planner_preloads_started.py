"""In a session of the app, the daemon Spark starts for a data source planner imports the app's modules before
it forks (``planner_site/sitecustomize.py`` on the workers' path, ``spark_settings``), and the planner a query
uses at its start is not kept: each use is a fresh fork that imports nothing, and none idles a minute after
it (docs/replication.md, "Memory of one application")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from planner_sessions import planner_processes, session

from support.polling import eventually

pytestmark = [pytest.mark.jvm, pytest.mark.timeout(600)]

CREATE = "pyspark.sql.worker.create_data_source"

# A data source read twice by name: each read makes it in Spark's ``create_data_source`` planner, whose
# ``schema()`` reports, from the worker, what it found there (to the file the session's argument names).
READ_TWICE = """
class Reported(DataSource):
    @classmethod
    def name(cls):
        return "test-reported"

    def schema(self):
        import gc, json, os, sys
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as cmdline:
            daemon = [part.decode() for part in cmdline.read().split(b"\\0") if part]
        report = {
            "pid": os.getpid(),
            "daemon": daemon[1:],
            "plan_loaded": "federator_spark.plan" in sys.modules,
            "frozen": gc.get_freeze_count(),
        }
        with open(self.options["report"], "a") as out:
            out.write(json.dumps(report) + "\\n")
        return "n int"

    def reader(self, schema):
        return Rows()

spark.dataSource.register(Reported)
for _ in range(2):
    assert spark.read.format("test-reported").option("report", sys.argv[1]).load().collect()[0].n == 1
"""


def test_a_query_start_planner_runs_in_fresh_forks_of_a_daemon_that_imported_the_app(tmp_path: Path) -> None:
    report, log = tmp_path / "report.jsonl", tmp_path / "session.log"
    with session(READ_TWICE, log, str(report)) as jvm:
        uses = [json.loads(use) for use in report.read_text().splitlines()]
        assert uses, log.read_text()[-3000:]
        for use in uses:
            assert use["daemon"] == ["-m", "pyspark.daemon", CREATE]
            assert use["plan_loaded"] is True  # imported by its daemon: the Reported source needs no plan
            assert use["frozen"] > 10_000
        assert len({use["pid"] for use in uses}) == len(uses)  # a fresh worker for every use
        # Kept, a worker would stay a minute after its use (PythonWorkerFactory's idle timeout).
        stayed = "a worker of the query-start planner stayed after its use"
        eventually(lambda: planner_processes(jvm, CREATE) == (1, 0), 20, stayed)
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]
