"""Fixtures shared by the whole suite: the Azure messaging emulator and a faithful fake Kubernetes API.

``./dev test`` runs the suite on two pytest-xdist workers (``-n 2``). The tests that run Spark (an
in-process session, the replication app, local mode's tasks, the benchmark) all go to one worker and run
one at a time there, as in a single process: two of them side by side on two cores starve each other's
JVMs, and local mode's end-to-end tests then missed their deadlines. The other worker runs every other
test file meanwhile."""

from typing import Any

import pytest

pytest_plugins = ["federator_emulator.testing", "support.kube", "support.postgres", "support.azurite"]

SPARK_RUNNING = frozenset({"spark", "local", "translation", "bench"})  # folders under tests/


def work_unit(nodeid: str) -> str:
    """What a worker takes at once: every Spark-running test together, else a test file."""
    folders = nodeid.split("::", 1)[0].split("/")
    if folders[0] == "tests" and len(folders) > 2 and folders[1] in SPARK_RUNNING:
        return "spark"
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    # xdist's own `--dist loadgroup` cannot be used: it renames node ids in a way pytest 9.2 ignores.
    from xdist.scheduler import LoadScopeScheduling

    class SparkTestsTogether(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return SparkTestsTogether(config, log)
