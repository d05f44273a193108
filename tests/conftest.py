"""Fixtures shared by the whole suite: the Azure messaging emulator and a faithful fake Kubernetes API.

``./dev test`` runs the suite on two pytest-xdist workers (``-n 2``; ``FEDERATOR_TEST_WORKERS`` sets
another number): ``support/suite_split.py`` says which file goes where (the Spark JVM lane, longest first
from ``tests/durations.json``, kept by ``support/durations.py``), ``support/tiers.py`` which tests are left
to ``./dev test --full``, ``support/sigint.py`` that a run started in the background can still stop its
processes with SIGINT."""

pytest_plugins = [
    "federator_emulator.testing",
    "support.kube",
    "support.postgres",
    "support.azurite",
    "support.durations",
    "support.suite_split",
    "support.tiers",
    "support.jvm_guard",
    "support.sigint",
    "pytester",
]
