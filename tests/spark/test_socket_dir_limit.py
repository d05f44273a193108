"""The temporary directory the app's Unix domain sockets go to (``federator_spark.spark_settings``) is one
Spark accepts: at most 61 characters, Spark's own check of ``spark.python.unix.domain.socket.dir``. A
longer one (local mode's state dir nested a little deeper) keeps TCP instead of failing every query."""

from __future__ import annotations

import tempfile

import pytest

from federator_spark import spark_settings
from federator_spark.spark_settings import UNIX_SOCKETS_DIR_SETTING, UNIX_SOCKETS_SETTING


@pytest.mark.parametrize(
    ("directory", "sockets"),
    [
        ("/tmp/fleet-6pjxf8av/local-state/applications/default/fleet", True),  # 58
        ("/tmp/fleet-6pjxf8av/local-state/applications/default/fleet-61", True),  # Spark's limit
        ("/tmp/fleet-6pjxf8av/local-state/applications/default/fleet/tmp", False),  # 62: Spark refused it
    ],
)
def test_the_sockets_go_only_to_a_directory_spark_accepts(
    monkeypatch: pytest.MonkeyPatch, directory: str, sockets: bool
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", directory)

    chosen = spark_settings.python_sockets()

    expected = (
        {UNIX_SOCKETS_SETTING: "true", UNIX_SOCKETS_DIR_SETTING: directory}
        if sockets
        else {UNIX_SOCKETS_SETTING: "false"}
    )
    assert chosen == expected
