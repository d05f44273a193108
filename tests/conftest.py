"""Fixtures shared by the whole suite: the Azure messaging emulator and a faithful fake Kubernetes API.

``./dev test`` runs the suite on two pytest-xdist workers (``-n 2``). The tests in ``tests/spark`` and
``tests/local`` (an in-process Spark session, the replication app, local mode's tasks: 22 of the 37 minutes
the suite took in one process) all go to one worker and run one at a time there, as their deadlines were
set for: no two of them compete for the two cores. The other worker runs every other test file meanwhile,
including the few that start Spark too (``tests/translation``, ``tests/bench``), so both finish together."""

from typing import Any

import pytest

pytest_plugins = ["federator_emulator.testing", "support.kube", "support.postgres", "support.azurite"]

TOGETHER = frozenset({"spark", "local"})  # folders under tests/


def work_unit(nodeid: str) -> str:
    """What a worker takes at once: the tests in ``TOGETHER`` as one unit, else a test file."""
    path = nodeid.split("::", 1)[0]
    folders = path.split("/")
    if folders[0] == "tests" and len(folders) > 2 and folders[1] in TOGETHER:
        return "together"
    return path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    # Not xdist's own `--dist loadgroup`: it groups through `item._nodeid`, which pytest 9.2 no longer reads.
    from xdist.scheduler import LoadScopeScheduling

    class SparkTestsTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return SparkTestsTogether(config, log)
