"""How the app's Python processes reach the JVM (``federator_spark.spark_settings``): over Unix domain
sockets, not TCP on loopback, where Nagle's algorithm and delayed acknowledgements held every write
task's first rows about 40 ms (``python -m bench.spark_floor``)."""

from __future__ import annotations

from collections.abc import Iterator

from federator_spark import spark_settings
from federator_spark.spark_settings import UNIX_SOCKETS_SETTING


def test_the_settings_ask_for_unix_domain_sockets():
    assert spark_settings.settings()[UNIX_SOCKETS_SETTING] == "true"


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
