"""How the app's Python processes reach the JVM (``federator_spark.spark_settings``): over Unix domain
sockets, not TCP on loopback, where Nagle's algorithm and delayed acknowledgements held every write
task's first rows about 40 ms (``python -m bench.spark_floor``)."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator

from federator_spark import spark_settings
from federator_spark.spark_settings import UNIX_SOCKETS_DIR_SETTING, UNIX_SOCKETS_SETTING


def test_the_sockets_go_to_the_temporary_directory_the_jvm_and_python_share(monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", "/tmp/app")  # TMPDIR, as local mode sets it for an app

    chosen = spark_settings.settings()

    assert chosen[UNIX_SOCKETS_SETTING] == "true"
    assert chosen[UNIX_SOCKETS_DIR_SETTING] == "/tmp/app"


def test_a_temporary_directory_too_long_for_a_sockets_path_keeps_tcp_and_says_so(monkeypatch, caplog):
    """Local mode keeps an app's temporary files beside its log, at whatever depth the state dir is."""
    deep = "/tmp/" + "state/" * 11  # 71 bytes: with Spark's ".<uuid4>.sock" past the 107 a path holds
    monkeypatch.setattr(tempfile, "tempdir", deep)

    with caplog.at_level(logging.WARNING, logger=spark_settings.__name__):
        chosen = spark_settings.python_sockets()

    assert chosen == {UNIX_SOCKETS_SETTING: "false"}
    assert f"{deep} is too long a path for Unix domain sockets" in caplog.text


def test_a_python_task_reaches_the_jvm_over_a_unix_domain_socket(spark):
    def connection(_: Iterator[int]) -> Iterator[tuple[str | None, int]]:
        """How pyspark's daemon was told to listen, and how many Unix domain sockets this worker holds."""
        import os

        with open("/proc/net/unix") as table:
            unix = {row.split()[6] for row in list(table)[1:]}
        held = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                held.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:  # the listing's own descriptor, closed by now
                continue
        inodes = [link[len("socket:[") : -1] for link in held if link.startswith("socket:[")]
        yield os.environ.get("PYTHON_UNIX_DOMAIN_ENABLED"), sum(inode in unix for inode in inodes)

    [(told, unix_sockets)] = spark.sparkContext.parallelize([0], 1).mapPartitions(connection).collect()

    assert (told or "").lower() == "true"  # as pyspark's daemon reads it (the JVM writes "True")
    assert unix_sockets >= 1
