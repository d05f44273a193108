"""The app parses and plans a task's config once per run, on the driver: its data sources are handed the
plan, never the config. Every Python process of the run counts: the driver, the processes Spark starts
for the query's source and sink and the executors' workers (they find the counting hook on PYTHONPATH,
which Spark passes on to the Python processes it starts)."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.jvm]

HUBS = {"namespaces": [{"name": "ns1", "eventHubs": [{"name": "src", "partitionCount": 2}, {"name": "dst"}]}]}

# Imported first by every Python process that finds it on its path: once the task config's module or
# the write plan's is loaded, each call of its parser or planner is recorded as "<what> <pid>".
COUNTING_HOOK = """
import importlib.abc, importlib.util, os, sys

WATCHED = {
    "federator_contract.taskconfig": ("TaskConfig", "from_raw", "parsed"),
    "federator_spark.planning": (None, "plan_from_task", "planned"),
}


def record(what):
    with open(os.environ["FEDERATOR_TEST_COUNTS"], "a", encoding="utf-8") as counts:
        counts.write(f"{what} {os.getpid()}\\n")


def wrap(module, holder, name, what):
    owner = getattr(module, holder) if holder else module
    original = getattr(owner, name)
    function = original.__func__ if holder else original

    def counted(*args, **kw):
        record(what)
        return function(*args, **kw)

    setattr(owner, name, classmethod(counted) if holder else counted)


class Counting(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname not in WATCHED:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            wrap(module, *WATCHED[fullname])

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, Counting())
"""


def test_a_run_parses_and_plans_its_task_once(
    emulator_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from spark_helpers import eh_endpoint, read_all, run_app_to_end, send, task_config

    emulator = emulator_factory(HUBS)
    connection = emulator.connection_string("ns1")
    send(connection, "src", [{"body": f"e{i}", "partition": str(i % 2)} for i in range(20)])
    config = task_config(
        tmp_path,
        emulator,
        {"source": eh_endpoint("ns1", "src"), "targets": [{"name": "copy", **eh_endpoint("ns1", "dst")}]},
    )
    config_path = tmp_path / "task.json"
    config_path.write_text(json.dumps(config), encoding="utf-8")
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(COUNTING_HOOK, encoding="utf-8")
    counts = tmp_path / "counts"
    monkeypatch.setenv("FEDERATOR_TEST_COUNTS", str(counts))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])))

    driver = run_app_to_end(config_path, tmp_path / "replicate.log")

    assert sorted(
        e.body_as_str() for events in read_all(connection, "dst").values() for e in events
    ) == sorted(f"e{i}" for i in range(20))
    calls = [line.split() for line in counts.read_text(encoding="utf-8").splitlines()]
    assert Counter(what for what, _ in calls) == {"parsed": 1, "planned": 1}, calls
    assert {pid for _, pid in calls} == {str(driver)}  # the driver's
